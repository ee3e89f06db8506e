"""Rank 1 dies before the collective: rank 0 must not hang."""
import os

import ember
import ember.distributed as dist

dist.init_process_group("mpi", timeout=5)
if dist.get_rank() == 1:
    os._exit(3)
try:
    dist.all_reduce(ember.ones(4))
except RuntimeError as e:
    print(f"rank 0: error: {e}", flush=True)
    raise SystemExit(2)
print("rank 0: no error", flush=True)
