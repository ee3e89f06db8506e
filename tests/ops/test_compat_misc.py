"""The less common top-level functions and Tensor methods (frontend/_ops_compat.py)
against PyTorch."""
import os
import warnings

import numpy as np
import pytest
import torch

import ember

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]


@pytest.mark.parametrize("src", DTYPES)
def test_can_cast_matches_torch(src):
    for dst in DTYPES:
        assert ember.can_cast(getattr(ember, src), getattr(ember, dst)) == \
            torch.can_cast(getattr(torch, src), getattr(torch, dst)), (src, dst)


@pytest.mark.parametrize("indices,shape", [([9, -1, 5, 0], (2, 4)), (3, (2, 2)),
                                           ([[1, 7], [11, 2]], (3, 2, 2)), ([4], 5)])
def test_unravel_index(indices, shape):
    got = ember.unravel_index(ember.tensor(indices), shape)
    want = torch.unravel_index(torch.tensor(indices), shape)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
        assert g.dtype == ember.int64


def test_unravel_index_rejects_float():
    with pytest.raises(TypeError):
        torch.unravel_index(torch.tensor([1.0]), (2,))
    with pytest.raises(TypeError):
        ember.unravel_index(ember.tensor([1.0]), (2,))


@pytest.mark.parametrize("size,fill", [(3, -1), (1, -1), (5, 7), (0, -1)])
def test_nonzero_static(size, fill):
    a = np.array([[0, 1, 0], [2, 0, 3]])
    got = ember.nonzero_static(ember.tensor(a), size=size, fill_value=fill)
    want = torch.nonzero_static(torch.tensor(a), size=size, fill_value=fill)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((7, 3), True), ((7, 3), False),
                                        ((3, 5), True), ((2, 2, 2), False), ((4, 3), True)])
def test_fill_diagonal_(shape, wrap):
    got = ember.zeros(*shape).fill_diagonal_(5.0, wrap=wrap)
    want = torch.zeros(*shape).fill_diagonal_(5.0, wrap=wrap)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    t = ember.zeros(4, 6).t()  # a non-contiguous view
    t.fill_diagonal_(2.0)
    np.testing.assert_array_equal(t.numpy(), torch.zeros(4, 6).t().fill_diagonal_(2.0).numpy())


def test_rsub_detach_get_device():
    a = np.array([1.0, 2.0])
    np.testing.assert_allclose(ember.rsub(ember.tensor(a), 3, alpha=2).numpy(),
                               torch.rsub(torch.tensor(a), 3, alpha=2).numpy())
    np.testing.assert_allclose(ember.rsub(ember.tensor(a), ember.tensor([5.0, 5.0])).numpy(),
                               torch.rsub(torch.tensor(a), torch.tensor([5.0, 5.0])).numpy())
    assert hasattr(ember.Tensor, "rsub") == hasattr(torch.Tensor, "rsub")
    x = ember.ones(2, requires_grad=True)
    assert not ember.detach(x * 2).requires_grad
    assert ember.get_device(x) == torch.get_device(torch.ones(2)) == -1
    assert ember.ones(2).is_distributed() is torch.ones(2).is_distributed()
    assert x.const_data_ptr() == x.data_ptr()


def test_as_subclass_keeps_data_and_graph():
    class Mine(ember.Tensor):
        pass
    x = ember.ones(3, requires_grad=True)
    y = x.as_subclass(Mine)
    assert type(y) is Mine and y.data_ptr() == x.data_ptr()
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])
    with pytest.raises(TypeError):
        x.as_subclass(int)


def test_cond_is_eager_branching():
    ops = (ember.tensor([1.0, 2.0]),)
    assert ember.cond(ember.tensor(True), lambda a: a + 1, lambda a: a - 1, ops)[0] == 2
    assert ember.cond(False, lambda a: a + 1, lambda a: a - 1, ops)[0] == 0
    with pytest.raises(RuntimeError):
        ember.cond(ember.tensor([True, False]), lambda a: a, lambda a: a, ops)


def test_set_default_tensor_type_warns_and_sets():
    before = ember.get_default_dtype()
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.get_default_dtype() == ember.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ember.set_default_tensor_type("torch.FloatTensor")
            assert ember.get_default_dtype() == ember.float32
            with pytest.raises(TypeError, match="only floating-point"):
                ember.set_default_tensor_type(ember.LongTensor)
    finally:
        ember.set_default_dtype(before)


def test_from_file_shared_and_copied(tmp_path):
    p = str(tmp_path / "raw.bin")
    np.arange(6, dtype=np.float32).tofile(p)
    t = ember.from_file(p, shared=True, size=6, dtype=ember.float32)
    ref = torch.from_file(p, shared=False, size=6, dtype=torch.float32)
    np.testing.assert_array_equal(t.numpy(), ref.numpy())
    t[0] = 42.0
    del t
    assert np.fromfile(p, dtype=np.float32)[0] == 42.0   # shared: written through
    c = ember.from_file(p, size=2, dtype=ember.float32)
    c[1] = -1.0
    assert np.fromfile(p, dtype=np.float32)[1] == 1.0    # not shared: a copy
    with pytest.raises(RuntimeError):
        ember.from_file(p, size=100, dtype=ember.float32)
    with pytest.raises(RuntimeError):
        ember.from_file(os.path.join(str(tmp_path), "missing"), size=1)


def test_get_device_module_and_accelerator_error():
    assert ember.get_device_module("cuda") is ember.cuda
    with pytest.raises(RuntimeError):
        ember.get_device_module("nosuchdevice")
    assert issubclass(ember.AcceleratorError, RuntimeError)


def test_constants_match_torch():
    for name in ("pi", "e", "inf", "nan", "newaxis"):
        a, b = getattr(ember, name), getattr(torch, name)
        assert (a is b) or a == b or (a != a and b != b), name


def test_compiler_answers_outside_a_compiled_function():
    assert ember.compiler.is_compiling() is torch.compiler.is_compiling() is False
    assert ember.compiler.is_exporting() is False

    def f(x):
        return x + 1
    assert ember.compiler.allow_in_graph(f) is f
    assert ember.compiler.disable(f)(ember.ones(1)).item() == 2.0
    assert ember.compiler.disable(recursive=False)(f)(ember.ones(1)).item() == 2.0
    with pytest.raises(RuntimeError):
        ember.compiler.set_stance("nonsense")


def test_dlpack_round_trip_shares_memory():
    t = ember.arange(4.0)
    back = ember.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(t))
    t[0] = 7.0
    assert back[0].item() == 7.0   # the same memory
    tt = torch.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(ember.arange(3.0)))
    np.testing.assert_array_equal(tt.numpy(), [0.0, 1.0, 2.0])
    dl = ember.utils.dlpack.DLDeviceType
    assert int(dl.kDLCPU) == int(torch.utils.dlpack.DLDeviceType.kDLCPU)


def test_autograd_grad_signature_as_torch():
    """only_inputs (deprecated) in its position, allow_unused after it, is_grads_batched."""
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        unused = lib.tensor([1.0], requires_grad=True)
        g = lib.autograd.grad((x * 3).sum(), (x, unused), None, None, False, True, True)
        assert g[1] is None
        np.testing.assert_array_equal(g[0].detach().numpy(), [3.0, 3.0])
    xe = ember.tensor([1.0, 2.0], requires_grad=True)
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    ge = ember.autograd.grad(xe ** 3, xe, ember.eye(2), is_grads_batched=True)[0]
    gt = torch.autograd.grad(xt ** 3, xt, torch.eye(2), is_grads_batched=True)[0]
    np.testing.assert_allclose(ge.numpy(), gt.numpy())
    with pytest.warns(FutureWarning, match="only_inputs"):
        ember.autograd.grad((xe * 2).sum(), xe, only_inputs=False)
