"""Argument forms around the signature-parity fixes that tests/parity/test_signatures.py does
not reach: each call runs in torch and in ember; results (values, dtype, shape) or exception
classes must agree."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember


def _run(lib, fn):
    try:
        return "ok", fn(lib)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return "raised", e


def _same(fn):
    (tk, tv), (ek, ev) = _run(torch, fn), _run(ember, fn)
    assert tk == ek, f"torch {tk} {tv!r}, ember {ek} {ev!r}"
    if tk == "raised":
        assert isinstance(ev, type(tv)), f"torch {type(tv).__name__}, ember {type(ev).__name__}"
        return
    tv = tv if isinstance(tv, (tuple, list)) else (tv,)
    ev = ev if isinstance(ev, (tuple, list)) else (ev,)
    assert len(tv) == len(ev)
    for t, e in zip(tv, ev):
        assert tuple(t.shape) == tuple(e.shape)
        assert str(t.dtype).split(".")[-1] == e.dtype.name
        np.testing.assert_allclose(e.numpy().astype(np.float64),
                                   t.numpy().astype(np.float64), rtol=1e-6)


def _x(lib, *shape, dtype="float32"):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 1.0
    return lib.tensor(a).to(getattr(lib, dtype))


def _idx(lib):
    return lib.tensor([[0, 1], [1, 2], [3, 3]])


CASES = {
    # tensor(): one-element tensors of any shape are scalars; dtypes promote; else ValueError
    "tensor_1el_shapes": lambda L: L.tensor([L.tensor([1.0]), L.tensor([[2.0]]), 3.0]),
    "tensor_promote_int32_int16": lambda L: L.tensor([L.tensor(1, dtype=L.int32),
                                                      L.tensor(2, dtype=L.int16)]),
    "tensor_promote_int32_pyint": lambda L: L.tensor([L.tensor(1, dtype=L.int32), 2]),
    "tensor_promote_f64_pyfloat": lambda L: L.tensor([L.tensor(1.0, dtype=L.float64), 2.5]),
    "tensor_int_and_float": lambda L: L.tensor([[L.tensor(1), L.tensor(2.5)]]),
    "tensor_bool": lambda L: L.tensor([L.tensor(True), L.tensor(False)]),
    "tensor_dtype_kw": lambda L: L.tensor([L.tensor(1.0), 2], dtype=L.float64),
    "tensor_multi_element": lambda L: L.tensor([L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])]),
    # split / chunk / permute / reshape / tile keywords, function and method
    "split_method_split_size": lambda L: _x(L, 5, 2).split(split_size=2),
    "split_method_sections": lambda L: _x(L, 5, 2).split(split_size=[2, 3], dim=0),
    "split_method_long_name": lambda L: _x(L, 5, 2).split(split_size_or_sections=2),
    "split_fn_input_kw": lambda L: L.split(input=_x(L, 5, 2), split_size_or_sections=2),
    "reshape_shape_and_positional": lambda L: _x(L, 2, 3).reshape(6, shape=(6,)),
    "reshape_method_list": lambda L: _x(L, 2, 3).reshape(shape=[3, 2]),
    "permute_method_varargs": lambda L: _x(L, 2, 3, 4).permute(2, 0, 1),
    "permute_method_list": lambda L: _x(L, 2, 3, 4).permute([2, 0, 1]),
    "permute_dims_and_positional": lambda L: _x(L, 2, 3).permute(1, 0, dims=(1, 0)),
    "tile_method_varargs": lambda L: _x(L, 2, 3).tile(2, 1),
    "tile_method_tuple": lambda L: _x(L, 2, 3).tile((1, 2)),
    "tile_dims_and_positional": lambda L: _x(L, 2, 3).tile(2, dims=(2,)),
    "dot_other_kw": lambda L: L.dot(_x(L, 3), other=_x(L, 3)),
    "swapdims_kw": lambda L: L.swapdims(input=_x(L, 2, 3), dim0=0, dim1=1),
    "transpose_method_kw": lambda L: _x(L, 2, 3).transpose(dim0=1, dim1=0),
    "movedim_method_kw": lambda L: _x(L, 2, 3, 4).movedim(source=0, destination=2),
    # softmax: dim required for torch.softmax / Tensor.softmax, not for nn.functional's
    "softmax_dim_none": lambda L: L.softmax(_x(L, 2, 3), None),
    "softmax_method_no_dim": lambda L: _x(L, 2, 3).softmax(),
    "log_softmax_method_dim_kw": lambda L: _x(L, 2, 3).log_softmax(dim=0),
    "softmax_dtype_positional": lambda L: L.softmax(_x(L, 2, 3), 1, L.float64),
    "logsumexp_method_dim_none": lambda L: _x(L, 2, 3).logsumexp(dim=None),
    # scatter(reduce='multiply'), in place and with repeated indices; other reduce words
    "scatter_mul_repeated": lambda L: L.scatter(_x(L, 3, 4), 1, _idx(L),
                                                _x(L, 3, 2), reduce="multiply"),
    "scatter_mul_method_value": lambda L: _x(L, 3, 4).scatter(1, _idx(L), 0.5,
                                                              reduce="multiply"),
    "scatter_mul_inplace": lambda L: _x(L, 3, 4).scatter_(1, _idx(L), _x(L, 3, 2),
                                                          reduce="multiply"),
    "scatter_add_word": lambda L: _x(L, 3, 4).scatter(1, _idx(L), 2.0, reduce="add"),
    "scatter_bad_reduce": lambda L: _x(L, 3, 4).scatter(1, _idx(L), 2.0, reduce="mul"),
    # isclose: bool inputs, infinite tolerances, integers
    "isclose_bool": lambda L: L.isclose(L.tensor([True, False, True]),
                                        L.tensor([True, True, False]), rtol=1.0, atol=0.5),
    "isclose_rtol_inf": lambda L: L.isclose(L.tensor([float("inf"), 1.0, -float("inf")]),
                                            L.tensor([float("inf"), 5.0, float("inf")]),
                                            rtol=float("inf"), atol=0.0),
    "isclose_int": lambda L: L.isclose(L.tensor([1, 5, 100]), L.tensor([1, 6, 101]),
                                       rtol=0.0, atol=1.0),
    # flips, square of bool, unsupported dtypes
    "flipud_0d": lambda L: L.flipud(L.tensor(1.0)),
    "flipud_1d": lambda L: L.flipud(_x(L, 3)),
    "fliplr_method_1d": lambda L: _x(L, 3).fliplr(),
    "square_bool_method": lambda L: L.tensor([True, False]).square(),
    "square_bool_out_bool": lambda L: L.square(L.tensor([True, False]),
                                               out=L.empty(2, dtype=L.bool)),
    "abs_bool_method": lambda L: L.tensor([True, False]).abs(),
    "floor_divide_bool_scalar": lambda L: L.floor_divide(L.tensor([True, False]), True),
    "cat_empty_tuple": lambda L: L.cat(()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(CASES[case])


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_functional_softmax_without_dim_warns_and_picks_torchs_dim(name):
    for shape in ((4,), (2, 3), (2, 3, 4), (2, 3, 4, 5)):
        tx, ex = _x(torch, *shape), _x(ember, *shape)
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
            want = getattr(torch.nn.functional, name)(tx)
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
            got = getattr(ember.nn.functional, name)(ex)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_matrix_power_zero_keeps_the_graph():
    ta = torch.ones(2, 3, 3, dtype=torch.float64, requires_grad=True)
    ea = ember.ones(2, 3, 3, dtype=ember.float64, requires_grad=True)
    for lib, a in ((torch, ta), (ember, ea)):
        r = a.matrix_power(0)
        assert r.requires_grad
        r.sum().backward()
        assert a.grad is None or not np.any(a.grad.numpy())
    with ember.no_grad():
        assert not ember.matrix_power(ea, 0).requires_grad
    assert not ember.matrix_power(ea.detach(), 0).requires_grad
