"""Run a worker script on n ranks twice, at once: under ember (MPI, through
``python -m ember.distributed.run``) and under PyTorch (gloo, one process per rank with a
file store). The worker reads ``<PREFIX>_FRAMEWORK``, ``<PREFIX>_OUT`` and, for PyTorch,
``<PREFIX>_STORE``, and writes ``<OUT>/<framework>_<rank>.npz``."""
import os
import subprocess
import sys

import numpy as np


def run_both(worker, prefix, n, out, timeout=120):
    """The workers' saved results: ``{"ember": [rank 0, ...], "torch": [...]}``."""
    env = dict(os.environ, OMP_NUM_THREADS="1", **{f"{prefix}_OUT": str(out)})
    procs = [subprocess.Popen([sys.executable, worker], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env=dict(env, RANK=str(r), WORLD_SIZE=str(n),
                                       **{f"{prefix}_FRAMEWORK": "torch",
                                          f"{prefix}_STORE": str(out / "store")}))
             for r in range(n)]
    ours = subprocess.run([sys.executable, "-m", "ember.distributed.run", "-n", str(n),
                           "--timeout", str(timeout), worker], capture_output=True, text=True,
                          timeout=timeout + 30,
                          env=dict(env, **{f"{prefix}_FRAMEWORK": "ember"}))
    theirs = [p.communicate(timeout=timeout)[0] for p in procs]
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert all(p.returncode == 0 for p in procs), "\n".join(theirs)
    return {fw: [dict(np.load(out / f"{fw}_{r}.npz")) for r in range(n)]
            for fw in ("ember", "torch")}
