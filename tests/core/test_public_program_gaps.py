"""Gaps found by running public PyTorch programs (pytorch/examples, nanoGPT, minGPT) under
``python -m ember.as_torch``; each test checks ember against PyTorch run the same way."""
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

_HOGWILD = '''
import torch
import torch.multiprocessing as mp


def work(model, queue):
    with torch.no_grad():
        model.weight.add_(1.0)  # written into the parent's shared memory
    queue.put(type(model.weight).__module__.split(".")[0])


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    model = torch.nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    model.share_memory()
    queue = mp.Queue()
    p = mp.Process(target=work, args=(model, queue))
    p.start()
    lib = queue.get(timeout=120)
    p.join()
    mine = type(model.weight).__module__.split(".")[0]
    print(p.exitcode, lib == mine, model.weight.sum().item())
'''


def test_spawned_children_import_the_same_torch(tmp_path):
    """pytorch/examples mnist_hogwild: with the "spawn" start method a child re-imports the
    parent's main script; under the alias its ``import torch`` must give ember too, and its
    in-place updates land in the parent's shared parameters, as under PyTorch."""
    script = tmp_path / "hogwild.py"
    script.write_text(_HOGWILD)
    ran = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path) for pre in ((), ("-m", "ember.as_torch"))]
    assert ran[0].returncode == 0, ran[0].stderr
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout == "0 True 4.0\n"
