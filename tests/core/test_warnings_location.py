"""ember's warnings point at the user's line, as PyTorch's do (its C++ warnings are
attributed to the Python line that called the op), whichever path inside ember raised
them; and reading ``.grad`` of a non-leaf tensor warns as PyTorch does."""
import warnings

import pytest
import torch

import ember


def _caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return w


@pytest.mark.parametrize("lib", [torch, ember])
def test_op_warnings_name_this_file(lib):
    v1, v2 = lib.tensor([1.0, 0.0, 0.0]), lib.tensor([0.0, 1.0, 0.0])
    w = _caught(lambda: lib.cross(v2, v1))
    assert [x.filename for x in w] == [__file__]
    opt = lib.optim.SGD(lib.nn.Linear(2, 2).parameters(), lr=0.1)
    sched = lib.optim.lr_scheduler.StepLR(opt, 1)
    w = _caught(sched.step)   # (before optimizer.step(): PyTorch's warning)
    assert len(w) == 1 and w[0].filename == __file__


def test_non_leaf_grad_warns_as_pytorch():
    def cases(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        out = []
        for fn in (lambda: y.grad, lambda: x.grad, lambda: lib.ones(2).grad):
            out.append([str(m.message).split(". ")[0] for m in _caught(fn)])
        y.retain_grad()
        out.append([str(m.message).split(". ")[0] for m in _caught(lambda: y.grad)])
        return out
    assert cases(ember) == cases(torch)
