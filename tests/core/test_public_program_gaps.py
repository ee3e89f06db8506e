"""Gaps found by running public PyTorch programs (pytorch/examples, nanoGPT, minGPT) under
``python -m ember.as_torch``; each test checks ember against PyTorch run the same way."""
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn as enn

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


def test_functional_data_parallel_needs_an_accelerator():
    """pytorch/examples dcgan (its older form) calls ``nn.parallel.data_parallel(self.main,
    input, None)``: PyTorch raises RuntimeError when no accelerator is present, while the
    ``DataParallel`` module runs on the CPU; ember does the same."""
    tm = torch.nn.Linear(3, 2)
    em = enn.Linear(3, 2)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    with ember.no_grad():
        em.weight.copy_(ember.tensor(tm.weight.detach().numpy()))
        em.bias.copy_(ember.tensor(tm.bias.detach().numpy()))
    want = tm(torch.from_numpy(x)).detach().numpy()
    # the module form runs wherever it is
    got = enn.DataParallel(em)(ember.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, torch.nn.DataParallel(tm)(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    if not torch.cuda.is_available() and not ember.accelerator.is_available():
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            torch.nn.parallel.data_parallel(tm, torch.from_numpy(x), None)
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            enn.parallel.data_parallel(em, ember.tensor(x), None)
    elif ember.accelerator.is_available():
        got = enn.parallel.data_parallel(em, ember.tensor(x)).detach().cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
