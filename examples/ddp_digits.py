"""The demo CNN trained data-parallel on N ranks (ember.distributed over MPI).

    python -m ember.distributed.run -n 2 examples/ddp_digits.py

Each rank reads its share of every epoch through a DistributedSampler (batch 64 / N per
rank, so the global batch matches the single-process demo); DistributedDataParallel
averages gradients across ranks during backward. Rank 0 prints the test accuracy.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import ember
import ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset

sys.path.insert(0, os.path.dirname(__file__))
from train_digits import DigitsCNN, evaluate, load_data  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=64, help="global batch size")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(args.seed)
    (xtr, ytr), (xte, yte) = load_data(args.seed)
    train = TensorDataset(ember.from_numpy(xtr), ember.from_numpy(ytr))
    sampler = DistributedSampler(train, seed=args.seed)
    loader = DataLoader(train, batch_size=args.batch_size // world, sampler=sampler)
    model = DDP(DigitsCNN())
    opt = ember.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = ember.nn.CrossEntropyLoss()
    if rank == 0:
        print(f"{world} ranks, {len(train)} training digits, {len(sampler)} per rank per epoch")
    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.step()
    elapsed = time.perf_counter() - start
    _, acc = evaluate(model.module, ember.from_numpy(xte), ember.from_numpy(yte), "cpu")
    accs = [ember.zeros(1, dtype=ember.float64) for _ in range(world)]
    dist.all_gather(accs, ember.tensor([acc], dtype=ember.float64))
    if rank == 0:
        same = all(a.item() == accs[0].item() for a in accs)
        print(f"test accuracy {acc:.2%} after {args.epochs} epochs in {elapsed:.1f} s "
              f"(replicas identical on every rank: {same})")
    dist.destroy_process_group()
    return acc


if __name__ == "__main__":
    main()
