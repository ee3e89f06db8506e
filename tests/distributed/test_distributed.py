"""ember.distributed on 2 MPI ranks launched with ``python -m ember.distributed.run``:
collectives against single-process references, DDP against single-process training, and
the error cases (mismatch, no init) ending in clear errors, never hangs (ranks that die or
leave early: test_abort.py)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
import ember.distributed as dist
from ember.utils.data import DistributedSampler

HERE = os.path.dirname(__file__)
pytestmark = pytest.mark.skipif(not dist.is_available(), reason="mpi4py not installed")


def launch(script, n=2, timeout=120, env=None):
    cmd = [sys.executable, "-m", "ember.distributed.run", "-n", str(n),
           "--timeout", str(timeout), os.path.join(HERE, script)]
    e = dict(os.environ, **(env or {}))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30, env=e)


def test_collectives_match_a_single_process_reference():
    r = launch("collectives_worker.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0:" in r.stdout and "rank 1:" in r.stdout
    assert r.stdout.count("checks passed") == 2
    assert "rank 0: carried on after rank 1 left" in r.stdout, r.stdout + r.stderr


def test_ddp_matches_single_process_training():
    r = launch("ddp_worker.py")
    assert r.returncode == 0, r.stdout + r.stderr
    for what in ("ddp parity ok", "no_sync ok", "find_unused_parameters ok"):
        assert r.stdout.count(what) == 2, r.stdout + r.stderr


def test_mismatched_shapes_are_a_clear_error_on_every_rank():
    r = launch("mismatch_worker.py", timeout=60)
    assert r.stdout.count("mismatched tensors across ranks") == 2, r.stdout + r.stderr
    assert "shape (3,)" in r.stdout and "shape (4,)" in r.stdout


def test_collective_before_init_is_a_clear_error():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(ember.ones(2))      # (PyTorch's error type)
    with pytest.raises(ValueError, match="init_process_group"):   # (as PyTorch)
        ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(2, 2))


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (7, 2, False),
                                                  (2, 4, False)])
def test_distributed_sampler_matches_torch_without_shuffle(n, replicas, drop_last):
    for rank in range(replicas):
        ours = list(DistributedSampler(range(n), replicas, rank, shuffle=False,
                                       drop_last=drop_last))
        ref = list(torch.utils.data.DistributedSampler(range(n), replicas, rank,
                                                       shuffle=False, drop_last=drop_last))
        assert ours == ref


def test_distributed_sampler_shuffles_per_epoch_and_partitions():
    n, replicas = 23, 3
    parts = [DistributedSampler(range(n), replicas, r, seed=4) for r in range(replicas)]
    got = [list(p) for p in parts]
    assert all(len(g) == 8 for g in got)
    flat = sum(got, [])
    assert set(flat) == set(range(n)) and len(flat) == 24          # one index padded
    again = [list(DistributedSampler(range(n), replicas, r, seed=4)) for r in range(replicas)]
    assert again == got                                               # reproducible
    for p in parts:
        p.set_epoch(1)
    assert [list(p) for p in parts] != got
    assert np.array_equal(sorted(sum([list(p) for p in parts], []))[:23], sorted(flat)[:23]) \
        or set(sum([list(p) for p in parts], [])) == set(range(n))


def test_object_collectives_all_to_all_groups_and_their_errors():
    r = launch("objects_worker.py", timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("checks passed") == 2, r.stdout + r.stderr


def test_ddp_before_init_raises_valueerror_as_pytorch():
    torch = pytest.importorskip("torch")
    for L in (torch, ember):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            L.nn.parallel.DistributedDataParallel(L.nn.Linear(2, 2))
