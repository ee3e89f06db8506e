"""Run on 2 ranks by test_abort.py: rank 1 ends abnormally in the way ``argv[1]`` names
while rank 0 waits for it in a collective, with the default 300 s timeout; the job must
end within seconds. ``hang``: both ranks sleep (for the launcher's --timeout)."""
import os
import signal
import sys
import time

import ember
import ember.distributed as dist

how = sys.argv[1]
dist.init_process_group("mpi")
rank = dist.get_rank()
dist.all_reduce(ember.ones(2))          # every rank is up and MPI's shared memory is in use
if rank == 0:
    backing = os.environ.get("OMPI_MCA_btl_sm_backing_directory", "")
    segments = [n for n in os.listdir(backing) if n.startswith("sm_segment")] \
        if backing else []
    print(f"rank 0: backing directory {backing} holds {len(segments)} segments", flush=True)
dist.barrier()
if how == "hang":
    time.sleep(600)
if rank == 1:
    time.sleep(0.2)                     # rank 0 is waiting in all_reduce by now
    print(f"rank 1 fails at {time.time():.3f}", flush=True)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif how == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
    elif how == "raise":
        raise ValueError("rank 1 failed on purpose")
    elif how == "exit0":
        sys.exit(0)
    elif how == "os_exit1":
        os._exit(1)
    raise AssertionError(f"unknown way to fail: {how}")
dist.all_reduce(ember.ones(4))          # rank 1 never comes
print("rank 0: no error", flush=True)
