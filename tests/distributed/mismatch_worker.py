"""Ranks call all_reduce with different shapes: both must get a clear error."""
import ember
import ember.distributed as dist

dist.init_process_group("mpi")
rank = dist.get_rank()
try:
    dist.all_reduce(ember.ones(3 + rank))
except RuntimeError as e:
    print(f"rank {rank}: error: {e}", flush=True)
else:
    print(f"rank {rank}: no error", flush=True)
