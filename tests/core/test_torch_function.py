"""Tensor subclasses and the ``__torch_function__`` protocol (``ember.overrides``).

Each subclass or tensor-like type is written once, as a factory over the library module,
and the same program runs under ember and under PyTorch (the oracle): result types (by
class name) and values must agree.
"""
import copy
import functools
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember

LIBS = (ember, torch)


def _np(t):
    if isinstance(t, (ember.Tensor, torch.Tensor)):
        with (ember._C.DisableTorchFunction() if isinstance(t, ember.Tensor)
              else torch._C.DisableTorchFunction()):
            return np.asarray(t.detach().cpu().numpy() if isinstance(t, torch.Tensor)
                              else t.detach().numpy())
    return np.asarray(t)


def _kind(x):
    """A result's type by name (tensors, tuples of them), for comparing the two libraries."""
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_kind(i) for i in x))
    name = type(x).__name__
    return "Tensor" if name == "Tensor" else name


def _same(run):
    """Run ``run(lib)`` under both libraries; the types and values must match."""
    got, want = run(ember), run(torch)
    assert _kind(got) == _kind(want)
    flat_got = got if isinstance(got, (tuple, list)) else [got]
    flat_want = want if isinstance(want, (tuple, list)) else [want]
    for g, w in zip(flat_got, flat_want):
        if isinstance(w, (torch.Tensor, ember.Tensor, float, int)):
            np.testing.assert_allclose(_np(g), _np(w), rtol=1e-6)
    return got, want


# ---- the types, one factory each ----
def make_plain(lib):
    class M(lib.Tensor):
        pass
    return M


def make_logging(lib):
    class Logged(lib.Tensor):
        log = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.log.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)
    return Logged


def make_tagged(lib):
    """A wrapper that unwraps its arguments, runs the op on plain tensors and rewraps the
    results with the tags of its inputs joined (no ``__torch_dispatch__``)."""
    class Tagged(lib.Tensor):
        @staticmethod
        def __new__(cls, elem, tag):
            t = lib.Tensor._make_subclass(cls, elem, elem.requires_grad)
            t.tag = tag
            return t

        def __init__(self, elem, tag):
            pass

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            tags = []

            def unwrap(a):
                if isinstance(a, Tagged):
                    tags.append(a.tag)
                    with lib._C.DisableTorchFunctionSubclass():
                        return a.as_subclass(lib.Tensor)
                if isinstance(a, (list, tuple)):
                    return type(a)(unwrap(b) for b in a)
                return a
            args = tuple(unwrap(a) for a in args)
            with lib._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
            tag = "+".join(tags)
            if isinstance(out, lib.Tensor):
                return Tagged(out, tag)
            if isinstance(out, (tuple, list)) and not hasattr(out, "_fields"):
                return type(out)(Tagged(o, tag) if isinstance(o, lib.Tensor) else o
                                 for o in out)
            return out
    return Tagged


def make_scalar_tensor(lib):
    """PyTorch's documentation example: a tensor-like type that is no Tensor, with a table
    of the functions it implements."""
    handled = {}

    class ScalarTensor:
        def __init__(self, N, value):
            self._N = N
            self._value = value

        def tensor(self):
            return self._value * lib.eye(self._N)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            if func not in handled or not all(issubclass(t, (lib.Tensor, ScalarTensor))
                                              for t in types):
                return NotImplemented
            return handled[func](*args, **kwargs)

    def implements(torch_function):
        def decorator(func):
            functools.update_wrapper(func, torch_function)
            handled[torch_function] = func
            return func
        return decorator

    def ensure_tensor(data):
        return data.tensor() if isinstance(data, ScalarTensor) else data

    @implements(lib.mean)
    def mean(input):
        return float(input._value) / input._N

    @implements(lib.add)
    def add(input, other):
        if isinstance(input, ScalarTensor) and isinstance(other, ScalarTensor) and \
                input._N == other._N:
            return ScalarTensor(input._N, input._value + other._value)
        return lib.add(ensure_tensor(input), ensure_tensor(other))

    # (ember dispatches to a type that is no Tensor subclass once its hooks are armed:
    # a Tensor subclass or a mode does it, or this; the table above stays valid)
    lib.overrides.get_overridable_functions()
    return ScalarTensor


def make_counting_mode(lib):
    class Count(lib.overrides.TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.names.append(func.__name__)
            return func(*args, **(kwargs or {}))
    return Count


# ---- plain subclasses keep their type ----
@pytest.mark.parametrize("op", [
    lambda lib, x: x + 1,
    lambda lib, x: 2 * x,
    lambda lib, x: lib.sin(x),
    lambda lib, x: x[0],
    lambda lib, x: x[:, 1:],
    lambda lib, x: x.sum(),
    lambda lib, x: x.sum(dim=0),
    lambda lib, x: lib.cat([lib.ones(2, 3), x]),
    lambda lib, x: lib.stack((x, lib.zeros(2, 3))),
    lambda lib, x: lib.max(x, 0),
    lambda lib, x: x.split(1),
    lambda lib, x: lib.nn.functional.relu(x - 1.5),
    lambda lib, x: lib.nn.functional.softmax(x, dim=-1),
    lambda lib, x: lib.linalg.vector_norm(x),
    lambda lib, x: lib.special.expit(x),
    lambda lib, x: lib.fft.fft(x).real,
    lambda lib, x: x.T,
    lambda lib, x: x.mT,
    lambda lib, x: x @ lib.ones(3, 2),
    lambda lib, x: x > 2,
    lambda lib, x: x.shape,
    lambda lib, x: x.dim(),
    lambda lib, x: x.tolist(),
    lambda lib, x: [r for r in x],
    lambda lib, x: lib.where(x > 2, x, lib.zeros(())),
    lambda lib, x: lib.ones(2, 3) - x,
    # (an index made of lists, then a list of tensors: both are looked into)
    lambda lib, x: (x[[0, 1], [1, 2]], lib.cat([x, x])),
])
def test_plain_subclass_keeps_its_type(op):
    def run(lib):
        M = make_plain(lib)
        x = lib.arange(6.).view(2, 3).as_subclass(M)
        return op(lib, x)
    _same(run)


def test_plain_subclass_in_place_and_repr():
    def run(lib):
        M = make_plain(lib)
        x = lib.arange(6.).view(2, 3).as_subclass(M)
        y = x.add_(1)
        return y is x, type(y).__name__, repr(x), repr(x[0, 0]), str(x.sum(0))
    got, want = run(ember), run(torch)
    assert got == want


def test_plain_tensors_stay_plain():
    make_plain(ember)  # (the hooks are armed)
    x = ember.ones(2)
    assert type(x + 1) is ember.Tensor and type(ember.sin(x)) is ember.Tensor
    assert type(ember.cat([x, x])) is ember.Tensor and type(x.T) is ember.Tensor


def test_as_subclass_and_make_subclass():
    def run(lib):
        M = make_plain(lib)
        a = lib.ones(2).as_subclass(M)
        b = lib.Tensor._make_subclass(M, lib.ones(2), True)
        c = lib.Tensor._make_subclass(M, lib.ones(2))
        return (type(a).__name__, type(b).__name__, b.requires_grad, b.is_leaf,
                c.requires_grad, type(a.as_subclass(lib.Tensor)).__name__)
    assert run(ember) == run(torch)


# ---- the logging subclass: which function each op hands over ----
def test_logging_subclass_sees_each_call_once():
    def run(lib):
        Logged = make_logging(lib)
        x = lib.arange(6.).view(2, 3).as_subclass(Logged)
        out = [lib.sin(x), x + 1, x.sum(), lib.cat([x, x]), lib.nn.functional.relu(x),
               x.exp(), x[1], x.mean(dim=1)]
        return Logged.log, [_kind(o) for o in out]
    assert run(ember) == run(torch)


# ---- unwrap / rewrap ----
def test_wrapper_subclass_unwraps_and_rewraps():
    def run(lib):
        Tagged = make_tagged(lib)
        a = Tagged(lib.arange(3.), "a")
        b = Tagged(lib.ones(3), "b")
        s = a + b
        c = lib.cat([a, b])
        parts = lib.split(c, 2)
        return (type(s).__name__, s.tag, _np(s).tolist(), c.tag, [p.tag for p in parts],
                lib.sin(a).tag, (a * 2).tag, type(a.sum().item()).__name__)
    assert run(ember) == run(torch)


# ---- tensor-like types that are no Tensor ----
def test_scalar_tensor_documentation_example():
    def run(lib):
        ScalarTensor = make_scalar_tensor(lib)
        s = ScalarTensor(5, 2)
        out = [lib.mean(s), _np(lib.add(s, lib.ones(5, 5))).tolist()]
        both = lib.add(s, ScalarTensor(5, 3))
        out.append((type(both).__name__, both._value))
        with pytest.raises(TypeError, match="Multiple dispatch failed"):
            lib.sin(s)
        with pytest.raises(TypeError, match="no implementation found for "
                                             f"'{lib.__name__}.nn.functional.relu'"):
            lib.nn.functional.relu(s)
        return out
    assert run(ember) == run(torch)


# ---- ordering: subclasses first, then left to right; NotImplemented passes on ----
def make_pair(lib, calls, decline):
    class A(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(("A", cls.__name__, sorted(t.__name__ for t in types)))
            if "A" in decline:
                return NotImplemented
            return super().__torch_function__(func, types, args, kwargs)

    class B(A):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(("B", cls.__name__, sorted(t.__name__ for t in types)))
            if "B" in decline:
                return NotImplemented
            return super().__torch_function__(func, types, args, kwargs)

    class C(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(("C", cls.__name__, sorted(t.__name__ for t in types)))
            if "C" in decline:
                return NotImplemented
            return lib.Tensor.__torch_function__.__func__(cls, func, (), args, kwargs)
    return A, B, C


@pytest.mark.parametrize("decline", ["", "B", "BA", "BAC", "C"])
def test_override_order_and_not_implemented(decline):
    def run(lib):
        calls = []
        A, B, C = make_pair(lib, calls, decline)
        a = lib.ones(2).as_subclass(A)
        b = lib.ones(2).as_subclass(B)
        c = lib.ones(2).as_subclass(C)
        try:
            out = type(lib.add(lib.add(c, a), b)).__name__
        except TypeError as e:
            out = str(e).split(";")[1].split("\n\nFor more")[0]
        return calls, out
    assert run(ember) == run(torch)


# ---- modes ----
def test_torch_function_mode_counts_calls():
    def run(lib):
        Count = make_counting_mode(lib)
        x = lib.arange(4.)
        with Count() as c:
            y = lib.sin(x)
            z = y + 1
            w = z.sum()
            r = lib.nn.functional.relu(z)
            t = lib.tensor([1.0])
        after = lib.cos(x)
        return c.names, [_kind(v) for v in (y, z, w, r, t, after)], _np(w).tolist()
    assert run(ember) == run(torch)


def test_modes_nest_innermost_first():
    def run(lib):
        Count = make_counting_mode(lib)
        with Count() as outer:
            with Count() as inner:
                lib.sin(lib.ones(1))
            lib.cos(lib.ones(1))
        return outer.names, inner.names
    assert run(ember) == run(torch)


def test_disable_switches():
    def run(lib):
        M = make_plain(lib)
        Count = make_counting_mode(lib)
        x = lib.ones(2).as_subclass(M)
        with lib._C.DisableTorchFunctionSubclass():
            a = type(x + 1).__name__
        with Count() as c:
            with lib._C.DisableTorchFunctionSubclass():
                lib.sin(x)
            with lib._C.DisableTorchFunction():
                lib.cos(x)
        return a, c.names
    assert run(ember) == run(torch)


# ---- nn.Parameter opts out ----
def test_parameter_ops_return_plain_tensors():
    def run(lib):
        make_plain(lib)
        p = lib.nn.Parameter(lib.ones(2, 2))
        out = [p + 1, p[0], p.detach(), p.data, lib.sin(p), p.sum(),
               lib.nn.functional.linear(lib.ones(1, 2), p)]
        return ([_kind(o) for o in out], _kind(p),
                lib.overrides.has_torch_function((p,)),
                lib.overrides.has_torch_function_unary(p))
    assert run(ember) == run(torch)


# ---- autograd ----
def test_subclass_through_autograd():
    def run(lib):
        M = make_plain(lib)
        m = lib.arange(3.).as_subclass(M).requires_grad_()
        y = (m * m).sum()
        y.backward()
        x = lib.arange(3., requires_grad=True)
        v = x.as_subclass(M)
        z = (v.exp() * 2).sum()
        z.backward()
        return (_kind(y), _kind(m.grad), _np(m.grad).tolist(), m.is_leaf, _kind(z),
                _kind(x.grad), np.round(_np(x.grad), 5).tolist(), v.is_leaf)
    assert run(ember) == run(torch)


def test_logging_subclass_through_backward():
    def run(lib):
        Logged = make_logging(lib)
        w = lib.ones(2).as_subclass(Logged).requires_grad_()
        loss = (w * 3).sum()
        Logged.log.clear()
        loss.backward()
        return Logged.log, _kind(w.grad), _np(w.grad).tolist()
    assert run(ember) == run(torch)


# ---- pickling and copying keep the subclass ----
def make_keep(lib):
    class Keep(lib.Tensor):
        # (PyTorch's deepcopy of a subclass asks new_empty for an instance of it)
        def new_empty(self, *args, **kwargs):
            return super().new_empty(*args, **kwargs).as_subclass(type(self))
    Keep.__module__ = __name__
    return Keep


EmberKeep = make_keep(ember)
EmberKeep.__qualname__ = EmberKeep.__name__ = "EmberKeep"
TorchKeep = make_keep(torch)
TorchKeep.__qualname__ = TorchKeep.__name__ = "TorchKeep"


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("grad", [False, True])
def test_pickle_and_deepcopy_keep_type_and_attributes(how, grad):
    def run(cls, lib):
        t = lib.arange(3.).as_subclass(cls)
        t.note = "kept"
        t.requires_grad_(grad)
        u = pickle.loads(pickle.dumps(t)) if how == "pickle" else copy.deepcopy(t)
        return (type(u) is cls, u.note, u.requires_grad, u.is_leaf, _np(u).tolist())
    assert run(EmberKeep, ember) == run(TorchKeep, torch)


# ---- the helpers of ember.overrides and nn.functional ----
def test_functional_helpers_dispatch_user_functions():
    def run(lib):
        F = lib.nn.functional
        M = make_logging(lib)

        def scaled(x, k=2.0):
            if F.has_torch_function_unary(x):
                return F.handle_torch_function(scaled, (x,), x, k=k)
            return x * k
        m = lib.ones(2).as_subclass(M)
        M.log.clear()
        out = scaled(m, k=3.0)
        return (M.log, _kind(out), _np(out).tolist(), F.has_torch_function((lib.ones(1),)),
                F.has_torch_function_variadic(lib.ones(1), m))
    assert run(ember) == run(torch)


def test_overrides_queries():
    def run(lib):
        o = lib.overrides
        M = make_plain(lib)
        overridable = o.get_overridable_functions()
        return (o.is_tensor_like(lib.ones(1)), o.is_tensor_like(lib.ones(1).as_subclass(M)),
                o.is_tensor_like(1.0), o.is_tensor_method_or_property(lib.Tensor.add),
                o.is_tensor_method_or_property(lib.Tensor.T.__get__),
                o.is_tensor_method_or_property(lib.add),
                lib.add in overridable[lib], lib.Tensor.add in overridable[lib.Tensor],
                lib.ones in o.get_ignored_functions(), lib.add in o.get_ignored_functions())
    assert run(ember) == run(torch)


def test_torch_dispatch_is_refused_with_a_sentence():
    with pytest.raises(NotImplementedError, match="__torch_dispatch__"):
        class Dispatching(ember.Tensor):
            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))


# ---- plain programs pay nothing; references taken early dispatch once armed -------------------
_EARLY = """
import sys
lib = __import__(sys.argv[1])
armed = getattr(getattr(lib, "overrides", None), "_ARMED", [None])
before = armed[0]
from_import_cat = lib.cat
from_import_relu = lib.nn.functional.relu
handled = {lib.mean: lambda d: 42.0}


class Duck:
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return handled[func](*args) if func in handled else NotImplemented


class M(lib.Tensor):
    pass


x = lib.ones(2).as_subclass(M)
print(before, armed[0], type(from_import_cat([x, x])).__name__,
      type(from_import_relu(x)).__name__, lib.mean(Duck()))
"""


def test_references_taken_before_a_subclass_dispatch_and_nothing_is_armed_before():
    def run(name):
        out = subprocess.run([sys.executable, "-c", _EARLY, name], capture_output=True,
                             text=True, check=True)
        return out.stdout.split()
    got, want = run("ember"), run("torch")
    # ember: not armed by `import ember` (plain programs run ember's functions unwrapped),
    # armed by the subclass; torch has no such state
    assert got[:2] == ["False", "True"]
    assert got[2:] == want[2:] == ["M", "M", "42.0"]


def test_autograd_functions_and_modules_hand_over_subclasses():
    def run(lib):
        M = make_plain(lib)
        m = lib.arange(3.).as_subclass(M).requires_grad_()
        g, = lib.autograd.grad((m * m).sum(), m, create_graph=True)
        g.sum().backward()
        Logged = make_logging(lib)
        w = lib.ones(2).as_subclass(Logged).requires_grad_()
        loss = (w * 3).sum()
        Logged.log.clear()
        lib.autograd.backward(loss)
        logs = [list(Logged.log)]
        Logged.log.clear()
        lib.autograd.grad((w * 2).sum(), [w])
        logs.append(list(Logged.log))
        lib.manual_seed(0)
        lin = lib.nn.Linear(2, 2)
        Logged.log.clear()
        out = lin(w)
        logs.append(list(Logged.log))
        return (_kind(g), g.requires_grad, _kind(m.grad), _np(m.grad).tolist(), logs,
                _kind(w.grad), _kind(out))
    assert run(ember) == run(torch)


def test_resolve_name_and_base_mode():
    def run(lib):
        o = lib.overrides
        names = [o.resolve_name(f) for f in (lib.add, lib.Tensor.add, lib.nn.functional.relu,
                                             lib.Tensor.T.__get__, lib.linalg.norm)]
        with o.BaseTorchFunctionMode():
            total = lib.ones(2).sum()
        return [n.replace(lib.__name__, "LIB", 1) for n in names], _kind(total), total.item()
    assert run(ember) == run(torch)
