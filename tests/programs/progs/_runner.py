"""Runs several programs in one interpreter (one import of the framework for all of them):
``python [-m ember.as_torch] _runner.py OUTDIR prog1 prog2 ...``. Each program runs as
``__main__`` with ``--init OUTDIR/<prog>.npz --log OUTDIR/<prog>.<framework>.json``; a
failure is written to ``OUTDIR/<prog>.<framework>.err`` and the next program runs."""
import os
import runpy
import sys
import traceback

import torch


def main():
    outdir, progs = sys.argv[1], sys.argv[2:]
    here = os.path.dirname(os.path.abspath(__file__))
    framework = "ember" if "+ember" in torch.__version__ else "torch"
    for prog in progs:
        base = os.path.join(outdir, prog)
        sys.argv = [prog + ".py", "--init", base + ".npz", "--log", f"{base}.{framework}.json"]
        try:
            torch.manual_seed(0)
            runpy.run_path(os.path.join(here, prog + ".py"), run_name="__main__")
        except BaseException:
            with open(f"{base}.{framework}.err", "w") as f:
                f.write(traceback.format_exc())


if __name__ == "__main__":
    main()
