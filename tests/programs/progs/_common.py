"""What every program here shares: argument parsing for the harness, a loss log, and initial
weights exchanged through a NumPy file (so that PyTorch's and ember's runs start from the
same parameters while each framework keeps its own random number generator).

Programs import only ``torch`` (and NumPy); the harness runs each once under PyTorch and once
under ``python -m ember.as_torch``.
"""
import argparse
import json
import os

import numpy as np


def parse(**defaults):
    p = argparse.ArgumentParser()
    p.add_argument("--init", required=True, help="npz of initial weights: written if absent")
    p.add_argument("--log", required=True, help="where the loss curve goes (JSON)")
    for k, v in defaults.items():
        p.add_argument(f"--{k.replace('_', '-')}", type=type(v), default=v)
    return p.parse_args()


def share_init(torch, modules, path):
    """The first run saves every module's state; the second loads it."""
    if os.path.exists(path):
        data = np.load(path)
        for i, m in enumerate(modules):
            state = {k[len(f"{i}."):]: torch.from_numpy(data[k].copy())
                     for k in data.files if k.startswith(f"{i}.")}
            m.load_state_dict(state)
    else:
        arrays = {f"{i}.{k}": v.detach().cpu().numpy()
                  for i, m in enumerate(modules) for k, v in m.state_dict().items()}
        np.savez(path, **arrays)


def write_log(path, losses, **extra):
    with open(path, "w") as f:
        json.dump({"losses": [float(v) for v in losses], **extra}, f)
