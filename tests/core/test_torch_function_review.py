"""``__torch_function__`` corner cases found by a review against PyTorch: each program
runs under ember and under PyTorch (the oracle) and the outcomes must agree."""
import warnings

import numpy as np
import pytest
import torch

import ember

LIBS = (ember, torch)


def _both(case):
    """``case(lib)`` under both libraries; its results (plain data) must be equal."""
    got, want = case(ember), case(torch)
    assert got == want
    return got


def _values(t):
    lib = ember if isinstance(t, ember.Tensor) else torch
    with lib._C.DisableTorchFunction():
        return np.asarray(t.detach().tolist())


def _logging(lib, log):
    class Logged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(lib.overrides.resolve_name(func).split(".", 1)[1])
            return super().__torch_function__(func, types, args, kwargs)
    return Logged


@pytest.mark.parametrize("method", ["new_zeros", "new_ones", "new_empty", "new_full",
                                    "new_tensor", "stride", "unflatten"])
def test_listed_ignored_methods_still_dispatch(method):
    # PyTorch lists these as ignored, but a subclass's __torch_function__ still sees them
    # and the new tensors keep its type
    args = {"new_zeros": (2,), "new_ones": (2,), "new_empty": (2,), "new_full": ((2,), 3.0),
            "new_tensor": ([1.0],), "stride": (), "unflatten": (0, (1, 2))}[method]

    def case(lib):
        log = []
        a = lib.ones(2).as_subclass(_logging(lib, log))
        out = getattr(a, method)(*args)
        return type(out).__name__, log, getattr(lib.Tensor, method) in \
            lib.overrides.get_ignored_functions()
    _both(case)


def test_property_of_a_namespace_function_is_named_as_a_property():
    def case(lib):
        log = []
        a = lib.ones(2, 3).as_subclass(_logging(lib, log))
        return type(a.real).__name__, type(a.T).__name__, log
    assert _both(case)[2] == ["Tensor.real.__get__", "Tensor.T.__get__"]


def test_plain_method_torch_function_warns():
    class A(ember.Tensor):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return "plain"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ember.add(ember.ones(1).as_subclass(A), 1) == "plain"
    assert [w.category for w in caught] == [UserWarning]
    assert "classmethod" in str(caught[0].message)

    # (PyTorch warns too, once per process)
    class B(torch.Tensor):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return "plain"
    assert torch.add(torch.ones(1).as_subclass(B), 1) == "plain"


def test_operators_fall_back_to_the_reflected_method_when_all_decline():
    def case(lib):
        lib.overrides.get_overridable_functions()

        class Declines:
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented

            def __radd__(self, other):
                return "radd"

            def __rmul__(self, other):
                return "rmul"

        class A(lib.Tensor):
            pass

        class B(lib.Tensor):
            pass
        out = [lib.ones(2) + Declines(), lib.ones(2) * Declines()]
        for f in (lambda: lib.ones(2).as_subclass(A) + lib.ones(2).as_subclass(B),
                  lambda: lib.add(lib.ones(2).as_subclass(A), lib.ones(2).as_subclass(B)),
                  lambda: lib.ones(2) - Declines()):
            with pytest.raises(TypeError):
                f()
        return out
    assert _both(case) == ["radd", "rmul"]


def test_parameter_of_a_subclass_keeps_the_subclass():
    def case(lib):
        class A(lib.Tensor):
            pass
        p = lib.nn.Parameter(lib.ones(2, 2).as_subclass(A))
        m = lib.nn.Linear(2, 2)
        m.weight = p
        out = m(lib.ones(1, 2))
        sd = m.state_dict()
        m2 = lib.nn.Linear(2, 2)
        m2.load_state_dict(sd)
        return (type(p).__name__, isinstance(p, lib.nn.Parameter), p.requires_grad, p.is_leaf,
                repr(p).split("(")[0], type(p + 1).__name__, type(out).__name__,
                [n for n, _ in m.named_parameters()], type(sd["weight"]).__name__,
                type(m2.weight).__name__, isinstance(lib.ones(1).as_subclass(A),
                                                     lib.nn.Parameter),
                _values(m2.weight).tolist())
    _both(case)


def test_unrelated_subclasses_order_and_types():
    def case(lib):
        log = []

        class A(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(("A", [t.__name__ for t in types]))
                return NotImplemented

        class B(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(("B", [t.__name__ for t in types]))
                return super().__torch_function__(func, types, args, kwargs)

        class C(B):
            pass
        a, b, c = (lib.ones(2).as_subclass(k) for k in (A, B, C))
        with pytest.raises(TypeError):      # (B's default declines A: all decline)
            lib.add(a, b)
        out = [type(lib.cat([b, c])).__name__, type(lib.mul(c, b)).__name__]
        with pytest.raises(TypeError):
            lib.cat([b, c, a])
        return out, log
    _both(case)


def test_logging_pattern_and_user_functions():
    def case(lib):
        log = []

        class L(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(func.__name__)
                with lib._C.DisableTorchFunctionSubclass():
                    return func(*args, **(kwargs or {}))

        def twice(x, y=None):
            if lib.overrides.has_torch_function((x, y)):
                return lib.overrides.handle_torch_function(twice, (x, y), x, y=y)
            return x * 2
        a = lib.ones(2).as_subclass(L)
        r = (a * 2).sum()
        s = twice(lib.ones(1), y=a)
        o = lib.empty(2).as_subclass(L)
        t = lib.add(lib.ones(2), 1, out=o)
        return type(r).__name__, type(s).__name__, t is o, type(t).__name__, log
    _both(case)


def test_modes_nested_and_declining():
    def case(lib):
        log = []

        class M(lib.overrides.TorchFunctionMode):
            def __init__(self, n):
                super().__init__()
                self.n = n

            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append((self.n, func.__name__))
                if self.n == 0:
                    return NotImplemented
                return func(*args, **(kwargs or {}))
        with M(1), M(2):
            lib.ones(2).sin()
        with pytest.raises(TypeError), M(0):
            lib.sin(lib.ones(2))
        return log
    _both(case)


def test_subclass_training_step():
    def case(lib):
        class A(lib.Tensor):
            pass
        t = lib.Tensor._make_subclass(A, lib.ones(2), True)
        (t * 3).sum().backward()
        p = lib.ones(2).as_subclass(A).requires_grad_()
        opt = lib.optim.Adam([p], lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        q = lib.ones(2).as_subclass(A).requires_grad_()
        sgd = lib.optim.SGD([q], lr=0.1, momentum=0.9)
        for _ in range(2):
            (q * q).sum().backward()
            sgd.step()
        return (type(t.grad).__name__, t.is_leaf, type(p).__name__, type(p.grad).__name__,
                np.round(_values(p), 5).tolist(), type(q).__name__,
                type(sgd.state[q]["momentum_buffer"]).__name__, np.round(_values(q), 5).tolist())
    _both(case)


def test_torch_c_switch_queries():
    def case(lib):
        c = lib._C

        class M(lib.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))
        out = [c._is_torch_function_enabled(), c._is_torch_function_mode_enabled(),
               c._is_torch_function_all_disabled()]
        for switch in (c.DisableTorchFunction, c.DisableTorchFunctionSubclass):
            with switch():
                out += [c._is_torch_function_enabled(), c._is_torch_function_all_disabled()]
        with M():
            out.append(c._is_torch_function_mode_enabled())
            with c.DisableTorchFunction():
                out.append(c._is_torch_function_mode_enabled())
        return out
    _both(case)


def test_functional_python_level_arguments_are_normalized():
    # PyTorch's Python-level nn.functional functions hand __torch_function__ the
    # parameters without a default positionally and the rest (defaults filled) by keyword
    def case(lib):
        log = []

        class A(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append((func.__name__, len(args), sorted(kwargs or {})))
                return super().__torch_function__(func, types, args, kwargs)
        a = lib.ones(1, 2, 4, 4).as_subclass(A)
        F = lib.nn.functional
        F.relu(input=a)
        F.softmax(a, dim=1)
        F.dropout(a, 0.0)
        F.layer_norm(a, (4,))
        F.mse_loss(a, target=a)
        F.max_pool2d(a, 2)
        F.adaptive_max_pool2d(a, 2)
        F.interpolate(a, scale_factor=2)
        F.hardsigmoid(a)
        F.hardswish(a)
        return log, F.hardsigmoid in lib.overrides.get_ignored_functions()
    _both(case)


def test_property_setters_dispatch():
    def case(lib):
        log = []
        a = lib.ones(2).as_subclass(_logging(lib, log))
        a.grad = lib.zeros(2)
        a.data = lib.full((2,), 3.0)
        g = a.grad
        return (log, type(g).__name__, _values(a).tolist(),
                lib.overrides.is_tensor_method_or_property(lib.Tensor.grad.__set__))
    assert _both(case)[0][:2] == ["Tensor.grad.__set__", "Tensor.data.__set__"]
