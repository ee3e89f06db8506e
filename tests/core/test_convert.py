"""``python -m ember.convert``: PyTorch checkpoints to safetensors and back, checked with
torch and the safetensors package as the oracles."""
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file, save_file

from ember.convert import convert


def _state():
    torch.manual_seed(0)
    return {"w": torch.randn(4, 3), "b": torch.randn(3).to(torch.bfloat16),
            "h": torch.randn(2, 2).half(), "steps": torch.tensor([7, 8], dtype=torch.int64),
            "mask": torch.tensor([True, False])}


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k


def test_torch_to_safetensors_and_back_on_the_command_line(tmp_path):
    sd = _state()
    torch.save(sd, tmp_path / "m.pt")
    r = subprocess.run([sys.executable, "-m", "ember.convert", str(tmp_path / "m.pt"),
                        str(tmp_path / "m.safetensors")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "5 tensors" in r.stdout
    _same(load_file(str(tmp_path / "m.safetensors")), sd)
    convert(str(tmp_path / "m.safetensors"), str(tmp_path / "back.pth"))
    _same(torch.load(tmp_path / "back.pth", weights_only=True), sd)


def test_safetensors_written_by_the_package_convert_to_torch(tmp_path):
    sd = _state()
    save_file(sd, str(tmp_path / "x.safetensors"))
    convert(str(tmp_path / "x.safetensors"), str(tmp_path / "x.bin"))
    _same(torch.load(tmp_path / "x.bin", weights_only=True), sd)


def test_nested_checkpoints_need_a_key(tmp_path):
    sd = _state()
    torch.save({"model": sd, "epoch": 3, "opt": {"lr": 0.1}}, tmp_path / "c.pt")
    with pytest.raises(ValueError, match=r"--key \(dicts of tensors in it: model\)"):
        convert(str(tmp_path / "c.pt"), str(tmp_path / "c.safetensors"))
    with pytest.raises(KeyError, match="no entry 'state'"):
        convert(str(tmp_path / "c.pt"), str(tmp_path / "c.safetensors"), key="state")
    convert(str(tmp_path / "c.pt"), str(tmp_path / "c.safetensors"), key="model")
    _same(load_file(str(tmp_path / "c.safetensors")), sd)
    r = subprocess.run([sys.executable, "-m", "ember.convert", str(tmp_path / "c.pt"),
                        str(tmp_path / "c.txt")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "cannot tell the format" in r.stderr


def test_files_that_would_run_code_are_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))
    torch.save({"w": torch.ones(1), "x": Evil()}, tmp_path / "e.pt")
    r = subprocess.run([sys.executable, "-m", "ember.convert", str(tmp_path / "e.pt"),
                        str(tmp_path / "e.safetensors")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "pwned" not in r.stdout
    assert "would run code" in r.stderr and "Traceback" not in r.stderr
