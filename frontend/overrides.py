"""``ember.overrides``: PyTorch's ``__torch_function__`` protocol (``torch.overrides``).

A Tensor subclass, or any object whose type defines ``__torch_function__``, takes over the
calls of ember's public functions (``ember``, ``ember.nn.functional``, ``ember.linalg``,
``ember.fft``, ``ember.special``) and of ``Tensor``'s methods, operators and property
getters that it is passed to, as in PyTorch: the overriding types are tried subclasses
first, then left to right; ``NotImplemented`` passes to the next; when all decline, a
``TypeError``. ``Tensor.__torch_function__`` (the default) runs the function with subclass
handling off and gives the Tensor results the subclass's type, so a plain subclass keeps
its type through every op. ``nn.Parameter`` opts out (``_disabled_torch_function_impl``):
ops on it return plain tensors. A :class:`TorchFunctionMode` entered with ``with`` sees
every call.

Cost. Plain programs pay nothing: the hooks are put in place ("armed") the first time a
Tensor subclass that does not opt out is defined, a :class:`TorchFunctionMode` is entered,
or :func:`get_overridable_functions` / :func:`handle_torch_function` is called (or at
import with ``EMBER_TORCH_FUNCTION=1``). Until then the public functions run ember's own
code. Arming swaps each public function's code for a trampoline that looks at the
arguments' types and calls the original code when none overrides (a few hundred
nanoseconds); the function objects stay the same, so ``from ember import cat`` taken
earlier, or a table keyed by ``ember.mean``, dispatches too. A duck type (no Tensor
subclass) is dispatched once the hooks are armed: a program whose only overriding type
is one calls :func:`get_overridable_functions` first.

>>> import ember
>>> class Logged(ember.Tensor):
...     calls = []
...     @classmethod
...     def __torch_function__(cls, func, types, args=(), kwargs=None):
...         cls.calls.append(func.__name__)
...         return super().__torch_function__(func, types, args, kwargs)
>>> x = ember.ones(2).as_subclass(Logged)
>>> type(ember.sin(x) + 1).__name__, Logged.calls
('Logged', ['sin', 'add'])
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import types
import warnings

from ember.dispatcher.core import TensorBase

__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "handle_torch_function", "is_tensor_like", "is_tensor_method_or_property",
           "get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
           "get_default_nowrap_functions", "TorchFunctionMode", "DisableTorchFunction",
           "DisableTorchFunctionSubclass", "wrap_torch_function", "resolve_name",
           "BaseTorchFunctionMode"]


class _State(threading.local):
    """Per thread, as PyTorch's: the mode stack and the two disabling switches."""

    def __init__(self):
        self.modes = []             # entered TorchFunctionModes, innermost last
        self.subclass_off = False   # DisableTorchFunctionSubclass (or DisableTorchFunction)
        self.all_off = False        # DisableTorchFunction: modes are skipped too
        self.mode_on = False        # modes and not all_off: every call goes to the mode
        self.check = 1              # what a call does: 0 run, 1 look at the args, 2 dispatch


_STATE = _State()


class _DisabledTorchFunctionImpl:
    """The ``__torch_function__`` of types that opt out of the protocol (``nn.Parameter``):
    a type whose ``__torch_function__`` is this object is never dispatched to, so ops on
    it return what they return for a plain tensor. (An object, not a function, so that it
    does not bind to an instance: ``p.__torch_function__(func, types, args)`` runs
    ``func``, as PyTorch's.)

    >>> p = ember.nn.Parameter(ember.ones(2))
    >>> p.__torch_function__ is ember.overrides._disabled_torch_function_impl
    True
    """

    def __call__(self, func, types, args=(), kwargs=None):
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    def __repr__(self):
        return "<ember.overrides._disabled_torch_function_impl>"


_disabled_torch_function_impl = _DisabledTorchFunctionImpl()


#: type -> whether its instances take part in dispatch (filled as types are met)
_OVERRIDES: dict = {int: False, float: False, bool: False, complex: False, str: False,
                    type(None): False, slice: False, type(Ellipsis): False}


def _overrides(t) -> bool:
    """Whether instances of type ``t`` dispatch: it defines ``__torch_function__`` and that
    is not the opt-out. (``ember.Tensor`` itself is entered as False when it is made.)"""
    hit = _OVERRIDES.get(t)
    if hit is None:
        if t is list or t is tuple:     # (containers are looked into, never entered here)
            return False
        tf = getattr(t, "__torch_function__", None)
        hit = tf is not None and getattr(tf, "__func__", tf) is not \
            _disabled_torch_function_impl
        _OVERRIDES[t] = hit
    return hit


def _any_overrides(args, kwargs) -> bool:
    """Whether any argument (or an item of a list/tuple argument) dispatches."""
    table = _OVERRIDES
    for a in args:
        t = type(a)
        if t is list or t is tuple:
            for b in a:
                if table.get(type(b)) is not False and _overrides(type(b)):
                    return True
        elif table.get(t) is not False and _overrides(t):
            return True
    if kwargs:
        return _any_overrides(tuple(kwargs.values()), None)
    return False


def _overloaded_args(relevant) -> list:
    """The arguments whose types dispatch, one per type, in PyTorch's order: a subclass
    goes before the first of its superclasses already collected, others left to right."""
    found: list = []
    seen = set()
    for arg in relevant:
        t = type(arg)
        if t in seen or not _overrides(t):
            continue
        seen.add(t)
        at = len(found)
        for i, old in enumerate(found):
            if issubclass(t, type(old)):
                at = i
                break
        found.insert(at, arg)
    return found


def _flatten(args, kwargs) -> list:
    """The arguments dispatch looks at: each positional and keyword argument, and the items
    of those that are lists or tuples (``ember.cat([a, b])``)."""
    out = []
    for a in (*args, *(kwargs.values() if kwargs else ())):
        if type(a) is list or type(a) is tuple:
            out.extend(a)
        else:
            out.append(a)
    return out


def _recompute():
    st = _STATE
    st.mode_on = bool(st.modes) and not st.all_off
    st.check = 2 if st.mode_on else 0 if st.subclass_off else 1


class _PoppedMode:
    """The innermost mode, taken off the stack while its ``__torch_function__`` runs (so
    that the function it calls goes to the next mode, or runs)."""

    def __enter__(self):
        st = _STATE
        self.mode = st.modes.pop()
        _recompute()
        return self.mode

    def __exit__(self, *exc):
        _STATE.modes.append(self.mode)
        _recompute()
        return False


def _func_name(func) -> str:
    where = getattr(func, "__torch_function_name__", None)
    if where is not None:
        return where
    owner = getattr(func, "__self__", None)             # a property's __get__ / __set__
    if isinstance(owner, property) and owner.fget is not None:
        return getattr(owner.fget, "__torch_function_name__", owner.fget.__name__)
    module = getattr(func, "__module__", None)
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    return f"{module}.{name}" if module else name


_PLAIN_CHECKED: set = set()     # types whose __torch_function__ kind was looked at


def _warn_plain_method(t) -> None:
    """Warn (once per type) when ``t.__torch_function__`` is a plain method, deprecated in
    PyTorch in favour of a classmethod."""
    _PLAIN_CHECKED.add(t)
    if isinstance(inspect.getattr_static(t, "__torch_function__", None), types.FunctionType):
        warnings.warn(f"{t.__name__} defines __torch_function__ as a plain method; that is "
                      "deprecated (and will become an error): make it a classmethod",
                      UserWarning, stacklevel=4)


def _run(public_api, overloaded, args, kwargs):
    """Hand ``public_api(*args, **kwargs)`` to the current mode, then to each of the
    ``overloaded`` arguments' ``__torch_function__``, until one does not decline."""
    kwargs = kwargs if kwargs is not None else {}
    types_ = tuple(type(a) for a in overloaded)
    if _STATE.mode_on:
        with _PoppedMode() as mode:
            result = mode.__torch_function__(public_api, types_, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        if type(arg) not in _PLAIN_CHECKED:
            _warn_plain_method(type(arg))
        result = arg.__torch_function__(public_api, types_, args, kwargs)
        if result is not NotImplemented:
            return result
    if getattr(public_api, "__module__", None) == "ember.nn.functional" or \
            not hasattr(public_api, "__torch_function_name__"):
        # (PyTorch's Python-level functions word it so: nn.functional, user functions)
        raise TypeError(f"no implementation found for '{_func_name(public_api)}' on types "
                        f"that implement __torch_function__: {list(types_)}")
    lines = [f"  - tensor subclass {t}" for t in types_]
    if _STATE.mode_on:
        lines.insert(0, f"  - mode object {_STATE.modes[-1]!r}")
    raise TypeError(f"Multiple dispatch failed for '{_func_name(public_api)}'; all "
                    "__torch_function__ handlers returned NotImplemented:\n\n" +
                    "\n".join(lines))


def _dispatch(public_api, fn, args, kwargs):
    """The slow path of a wrapped function ``fn``: some argument overrides, or a mode is
    on."""
    overloaded = [] if _STATE.subclass_off else _overloaded_args(_flatten(args, kwargs))
    if not overloaded and not _STATE.mode_on:
        return fn(*args, **kwargs)
    sig = getattr(public_api, "__torch_function_bind__", None)
    if sig is not None:
        args, kwargs = _normalized(sig, args, kwargs)
    return _run(public_api, overloaded, args, kwargs)


def _normalized(sig, args, kwargs):
    """``(args, kwargs)`` as PyTorch's Python-level ``nn.functional`` functions hand them to
    ``__torch_function__``: the parameters without a default positionally, every other one
    by keyword, defaults filled in. (As given when they do not bind: the call raises.)"""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return args, kwargs
    bound.apply_defaults()
    positional, keywords = [], {}
    for name, value in bound.arguments.items():
        param = sig.parameters[name]
        if param.kind is param.VAR_POSITIONAL or param.kind is param.VAR_KEYWORD:
            return args, kwargs
        if param.default is param.empty and param.kind is not param.KEYWORD_ONLY:
            positional.append(value)
        else:
            keywords[name] = value
    return tuple(positional), keywords


# ---- the public helpers ----------------------------------------------------------------
def has_torch_function(relevant_args) -> bool:
    """Whether a call with ``relevant_args`` (an iterable) must go through
    :func:`handle_torch_function`: a mode is on, or one of them overrides
    ``__torch_function__`` (a plain ``ember.Tensor`` or a ``Parameter`` does not).

    >>> class M(ember.Tensor): pass
    >>> has = ember.overrides.has_torch_function
    >>> has((ember.ones(1),)), has((ember.ones(1).as_subclass(M),))
    (False, True)
    """
    st = _STATE
    if st.mode_on:
        return True
    if st.subclass_off:
        return False
    return any(_overrides(type(a)) for a in relevant_args)


def has_torch_function_unary(obj) -> bool:
    """:func:`has_torch_function` of the one argument ``obj``.

    >>> ember.overrides.has_torch_function_unary(ember.ones(1))
    False
    """
    return has_torch_function((obj,))


def has_torch_function_variadic(*args) -> bool:
    """:func:`has_torch_function` of the arguments themselves.

    >>> ember.overrides.has_torch_function_variadic(ember.ones(1), 2.0)
    False
    """
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Run ``public_api(*args, **kwargs)`` through the ``__torch_function__`` of the
    overriding arguments among ``relevant_args`` (and the current mode), as PyTorch's
    functions do after :func:`has_torch_function` said so.

    Raises:
        TypeError: every override returned ``NotImplemented``.

    >>> def double(x):
    ...     if ember.overrides.has_torch_function_unary(x):
    ...         return ember.overrides.handle_torch_function(double, (x,), x)
    ...     return x * 2
    >>> double(ember.ones(1))
    tensor([2.])
    """
    _arm()
    overloaded = [] if _STATE.subclass_off else _overloaded_args(relevant_args)
    return _run(public_api, overloaded, args, kwargs)


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a tensor or acts as one: an ``ember.Tensor`` or anything whose
    type defines ``__torch_function__``.

    >>> ember.overrides.is_tensor_like(ember.ones(1)), ember.overrides.is_tensor_like(1.0)
    (True, False)
    """
    return type(inp) is _TENSOR[0] or hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func) -> bool:
    """Whether ``func`` is a method of ``ember.Tensor`` or the getter of one of its
    properties (the ``func`` handed to ``__torch_function__`` for ``x.T``).

    >>> is_method = ember.overrides.is_tensor_method_or_property
    >>> is_method(ember.Tensor.add), is_method(ember.add)
    (True, False)
    """
    if getattr(func, "__name__", None) == "__get__":
        return True
    tensor = _TENSOR[0]
    return any(value is func for value in vars(tensor).values())


def resolve_name(f):
    """The dotted name of a function that dispatches (``"ember.add"``,
    ``"ember.Tensor.add"``, ``"ember.Tensor.T.__get__"``), or None for anything else. It
    arms the hooks (the names are given as they are put in place).

    >>> ember.overrides.resolve_name(ember.Tensor.add)
    'ember.Tensor.add'
    """
    _arm()
    owner = getattr(f, "__self__", None)
    if isinstance(owner, property) and owner.fget is not None:
        name = getattr(owner.fget, "__torch_function_name__", None)
        return f"{name}.{f.__name__}" if name else None
    return getattr(f, "__torch_function_name__", None)


def get_default_nowrap_functions() -> set:
    """The functions whose results ``Tensor.__torch_function__`` leaves as they are (the
    ``.grad`` getter: a subclass's gradient is not converted).

    >>> ember.overrides.get_default_nowrap_functions() == {ember.Tensor.grad.__get__}
    True
    """
    return {_TENSOR[0].grad.__get__}


# ---- which functions dispatch ------------------------------------------------------------
#: the namespaces whose public functions dispatch, by module name
NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.fft", "ember.special")

#: public functions PyTorch never dispatches (no tensor to look at, or queries/setters of
#: global state); the same names here
_IGNORED = {
    "ember": frozenset((
        "arange", "are_deterministic_algorithms_enabled", "as_strided", "as_tensor",
        "asarray", "bartlett_window", "blackman_window", "broadcast_shapes", "can_cast",
        "clear_autocast_cache", "compile", "cond", "empty", "empty_permuted",
        "empty_strided", "eye", "fill", "from_file", "from_numpy", "frombuffer", "full",
        "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype",
        "get_default_device", "get_default_dtype", "get_deterministic_debug_mode",
        "get_device_module", "get_float32_matmul_precision", "get_num_interop_threads",
        "get_num_threads", "get_rng_state", "hamming_window", "hann_window",
        "init_num_threads", "initial_seed", "is_anomaly_check_nan_enabled",
        "is_anomaly_enabled", "is_autocast_cache_enabled", "is_autocast_cpu_enabled",
        "is_autocast_enabled", "is_deterministic_algorithms_warn_only_enabled",
        "is_grad_enabled", "is_inference_mode_enabled", "is_storage", "is_tensor",
        "is_warn_always_enabled", "kaiser_window", "linspace", "load", "logspace",
        "manual_seed", "normal", "ones", "promote_types", "rand", "rand_like", "randint",
        "randint_like", "randn", "randn_like", "randperm", "range", "result_type", "save",
        "scalar_tensor", "seed", "set_anomaly_enabled", "set_autocast_cache_enabled",
        "set_autocast_cpu_dtype", "set_autocast_cpu_enabled", "set_autocast_dtype",
        "set_autocast_enabled", "set_autocast_gpu_dtype", "set_default_device",
        "set_default_dtype", "set_default_tensor_type", "set_deterministic_debug_mode",
        "set_float32_matmul_precision", "set_flush_denormal", "set_num_interop_threads",
        "set_num_threads", "set_printoptions", "set_rng_state", "set_warn_always",
        "sparse_coo_tensor", "tensor", "tril_indices", "triu_indices", "typename",
        "use_deterministic_algorithms", "vander", "vmap", "zeros", "from_dlpack")),
    "ember.nn.functional": frozenset((
        "assert_int_or_pair", "boolean_dispatch", "grouped_mm", "handle_torch_function",
        "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
        "scaled_grouped_mm", "scaled_mm", "sigmoid", "tanh", "upsample",
        "upsample_bilinear", "upsample_nearest")),
}

#: functions PyTorch lists among its ignored ones although they dispatch (its
#: ``F.hardsigmoid`` calls ``handle_torch_function``): they dispatch here too
_LISTED_IGNORED = {"ember.nn.functional": frozenset(("hardsigmoid", "hardswish"))}

#: ``nn.functional`` functions written in Python in PyTorch: they hand ``__torch_function__``
#: the parameters without a default positionally and the others by keyword, whatever the
#: call (``F.relu(input=x)`` arrives as ``args=(x,), kwargs={"inplace": False}``)
_NORMALIZED = frozenset((
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices", "affine_grid", "alpha_dropout", "batch_norm",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "celu",
    "cosine_embedding_loss", "cross_entropy", "ctc_loss", "dropout", "dropout1d",
    "dropout2d", "dropout3d", "elu", "embedding", "embedding_bag",
    "feature_alpha_dropout", "fold", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "gaussian_nll_loss", "glu", "grid_sample",
    "group_norm", "gumbel_softmax", "hardsigmoid", "hardswish", "hardtanh",
    "hinge_embedding_loss", "huber_loss", "instance_norm", "interpolate", "kl_div",
    "l1_loss", "layer_norm", "leaky_relu", "linear_cross_entropy",
    "local_response_norm", "log_softmax", "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "margin_ranking_loss", "max_pool1d", "max_pool1d_with_indices", "max_pool2d",
    "max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices", "max_unpool1d",
    "max_unpool2d", "max_unpool3d", "mish", "mse_loss", "multi_head_attention_forward",
    "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "nll_loss", "normalize", "pad", "poisson_nll_loss", "relu", "relu6", "rms_norm",
    "rrelu", "selu", "silu", "smooth_l1_loss", "soft_margin_loss", "softmax", "softmin",
    "softsign", "tanhshrink", "threshold", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "unfold"))

#: ignored functions that a mode still sees (PyTorch's factories and dtype queries go
#: through its argument parser, which asks the mode even when no tensor is passed)
_MODE_ONLY = frozenset((
    "ones", "zeros", "empty", "full", "tensor", "as_tensor", "asarray", "arange", "range",
    "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm", "normal",
    "rand_like", "randn_like", "randint_like", "scalar_tensor", "hann_window",
    "hamming_window", "bartlett_window", "blackman_window", "kaiser_window", "tril_indices",
    "triu_indices", "vander", "as_strided", "empty_strided", "empty_permuted", "fill",
    "sparse_coo_tensor", "promote_types", "result_type", "can_cast"))

#: Tensor operators PyTorch hands over as the method they compute (``x + y`` reaches
#: ``__torch_function__`` as ``Tensor.add``)
_OPERATOR_METHODS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_",
    "__truediv__": "div", "__div__": "div", "__itruediv__": "div_", "__idiv__": "div_",
    "__ifloordiv__": "floor_divide_", "__mod__": "remainder", "__imod__": "remainder_",
    "__pow__": "pow", "__ipow__": "pow_", "__matmul__": "matmul", "__neg__": "neg",
    "__pos__": "positive", "__abs__": "abs", "__ge__": "ge", "__gt__": "gt", "__le__": "le",
    "__lt__": "lt", "__ne__": "ne", "__rand__": "bitwise_and", "__ror__": "bitwise_or",
    "__rxor__": "bitwise_xor"}

_UNARY_OPERATORS = frozenset(("__neg__", "__pos__", "__abs__"))

#: Tensor members PyTorch never dispatches, and those ember keeps out of dispatch because
#: they build the tensor object itself or are the protocol (pickling and copying keep the
#: subclass type by themselves, see ``Tensor.__reduce_ex__``)
_TENSOR_IGNORED = frozenset((
    "__delattr__", "__delitem__", "__dir__", "__getattribute__", "__hash__", "__init__",
    "__iter__", "__new__", "__setattr__", "__init_subclass__", "__torch_function__",
    "__torch_dispatch__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
    "__deepcopy__", "__copy__", "__class_getitem__", "__subclasshook__", "__sizeof__",
    "__getattr__", "__array_priority__", "__weakref__", "__dict__", "__slots__",
    "__module__", "__doc__", "__qualname__",
    "_make_subclass", "as_subclass"))

#: Tensor methods PyTorch lists among its ignored functions (no testing override) although
#: a call on a subclass still reaches its ``__torch_function__`` (``x.new_zeros(2)`` keeps
#: the subclass type)
_TENSOR_LISTED_IGNORED = frozenset((
    "new", "new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor",
    "new_zeros", "stride", "unflatten", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc",
    "to_sparse_bsr", "to_sparse_bsc", "to_padded_tensor"))

_TENSOR: list = [None]      # ember.Tensor, set by _tensor.py when the class is made
_ARMED = [False]            # the hooks are in place
_PENDING = [False]          # asked for while ember was still importing
#: (owner, name, public): the functions and Tensor members that dispatch once armed
_ARMED_FUNCTIONS: list = []
#: extra namespaces with only some functions taking part (PyTorch's Python-level checks)
_PARTIAL = {"ember.autograd": frozenset(("backward", "grad"))}


def _namespaces() -> list:
    return [(name, sys.modules[name]) for name in (*NAMESPACES, *_PARTIAL)
            if name in sys.modules]


# ---- arming: the public functions' code is swapped for a dispatching trampoline -------------
# The function objects stay the same (``from ember import cat`` taken before a subclass
# existed dispatches too, and a ``{ember.mean: ...}`` table keeps working); their code
# becomes a trampoline that hands ``(public, inner, args, kwargs)`` to ``_call``, ``inner``
# being a twin of the function with the original code. Until armed, nothing changes.
_TEMPLATES: dict = {}       # number of free variables -> trampoline code


def _template(nfree: int):
    """A trampoline with ``nfree`` free variables (a function's code may only be replaced by
    code with as many as its closure has); its constants are filled per function."""
    code = _TEMPLATES.get(nfree)
    if code is None:
        names = [f"_v{i}" for i in range(nfree)]
        src = ["def _factory():"]
        if names:
            src.append(f"    {' = '.join(names)} = None")
        src.append("    def trampoline(*args, **kwargs):")
        if names:   # (referenced in dead code: free variables, never read)
            src += ["        if 0:", f"            ({', '.join(names)},)"]
        src += ["        return '__call__'('__public__', '__inner__', args, kwargs)",
                "    return trampoline"]
        env: dict = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)   # (a constant called: filled)
            exec(compile("\n".join(src), "<ember.overrides>", "exec"), env)  # noqa: S102
        code = _TEMPLATES[nfree] = env["_factory"]().__code__
    return code


def _swap(fn, call, public) -> None:
    """Make ``fn`` call ``call(public, twin, args, kwargs)``, ``twin`` being ``fn`` as it
    was; its signature, name and source location stay what they were."""
    old = fn.__code__
    twin = types.FunctionType(old, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    twin.__kwdefaults__ = fn.__kwdefaults__
    twin.__qualname__ = fn.__qualname__
    try:
        fn.__signature__ = inspect.signature(fn)
    except (TypeError, ValueError):
        pass
    template = _template(len(old.co_freevars))
    fill = {"__call__": call, "__public__": public, "__inner__": twin}
    consts = tuple(fill.get(c, c) if type(c) is str else c for c in template.co_consts)
    fn.__code__ = template.replace(co_consts=consts, co_name=old.co_name,
                                   co_qualname=old.co_qualname, co_filename=old.co_filename,
                                   co_firstlineno=old.co_firstlineno)
    fn.__torch_function_twin__ = twin


def _clone(fn, qualname, module):
    """A new function object running ``fn``'s original code (named ``module.qualname``)."""
    src = getattr(fn, "__torch_function_twin__", fn)
    out = types.FunctionType(src.__code__, src.__globals__, src.__name__, src.__defaults__,
                             src.__closure__)
    out.__kwdefaults__ = src.__kwdefaults__
    out.__dict__.update({k: v for k, v in vars(fn).items()
                         if not k.startswith("__torch_function")})
    out.__doc__, out.__qualname__, out.__module__ = fn.__doc__, qualname, module
    return out


def _call(public, inner, args, kwargs):
    """What an armed function runs: plain arguments call straight through."""
    check = _STATE.check
    if check == 1:
        table = _OVERRIDES
        for a in args:
            if table.get(type(a)) is not False:     # (a new type, a list, an override)
                if _any_overrides(args, kwargs):
                    return _dispatch(public, inner, args, kwargs)
                break
        else:
            if kwargs and _any_overrides((), kwargs):
                return _dispatch(public, inner, args, kwargs)
        return inner(*args, **kwargs)
    if check:
        return _dispatch(public, inner, args, kwargs)
    return inner(*args, **kwargs)


def _call_operator(public, inner, args, kwargs):
    """What an armed binary operator (``Tensor.__add__``) runs: as :func:`_call`, but a
    ``TypeError`` raised while dispatching becomes ``NotImplemented``, so Python tries the
    other operand's reflected method (``__radd__``), as PyTorch's operators do."""
    check = _STATE.check
    if check == 1:
        table = _OVERRIDES
        for a in args:
            if table.get(type(a)) is not False:
                break
        else:
            if not kwargs:
                return inner(*args)
        if not _any_overrides(args, kwargs):
            return inner(*args, **kwargs)
    elif not check:
        return inner(*args, **kwargs)
    try:
        return _dispatch(public, inner, args, kwargs)
    except TypeError:
        return NotImplemented


def _call_mode_only(public, inner, args, kwargs):
    """What an armed ignored function a mode still sees runs (no argument is looked at)."""
    if _STATE.mode_on:
        return _run(public, [], args, kwargs)
    return inner(*args, **kwargs)


def _arm() -> None:
    """Make the public functions and Tensor members dispatch (once); before ember finished
    importing, when it finishes."""
    if _ARMED[0]:
        return
    ember = sys.modules.get("ember")
    if ember is None or not getattr(ember, "_IMPORTED", False):
        _PENDING[0] = True
        return
    _ARMED[0] = True
    done = set()    # ids of the functions swapped (aliases, and a function in two places)

    def arm(owner, name, fn, call=_call, public=None):
        if id(fn) in done or not isinstance(fn, types.FunctionType) or \
                hasattr(fn, "__torch_function_twin__"):
            return
        done.add(id(fn))
        fn.__torch_function_name__ = f"{getattr(owner, '__name__', owner)}.{name}" \
            if owner is not _TENSOR[0] else f"ember.Tensor.{name}"
        _swap(fn, call, fn if public is None else public)
        if call is not _call_mode_only:
            _ARMED_FUNCTIONS.append((owner, name, fn if public is None else public))

    for ns_name, ns in _namespaces():
        ignored = _IGNORED.get(ns_name, frozenset())
        only = _PARTIAL.get(ns_name)
        for name, value in list(vars(ns).items()):
            if name.startswith("_") or (only is not None and name not in only) or \
                    not isinstance(value, types.FunctionType):
                continue
            if (value.__module__ or "").startswith("ember.dispatcher"):
                # the dispatcher's own functions (ember.t is its view function): the
                # namespace gets a twin, so the dispatcher's calls of them stay direct
                # (and helpers a module imported, linalg's E, take no part)
                if ns_name != "ember":
                    continue
                value = _clone(value, value.__name__, ns.__name__)
                setattr(ns, name, value)
            if name in ignored:
                if ns_name == "ember" and name in _MODE_ONLY:
                    arm(ns, name, value, _call_mode_only)
                continue
            arm(ns, name, value)
            if ns_name == "ember.nn.functional" and name in _NORMALIZED:
                try:
                    value.__torch_function_bind__ = inspect.signature(value)
                except (TypeError, ValueError):
                    pass
    tensor = _TENSOR[0]
    # a function that is both ember.<name> and a Tensor method gets a twin of its own as
    # the method (PyTorch's Tensor.add is not torch.add)
    namespace_ids = set(done)
    for name, value in list(vars(tensor).items()):
        if id(value) in namespace_ids and name not in _TENSOR_IGNORED:
            # (named where it lives now, where pickle finds it)
            setattr(tensor, name, _clone(value, f"Tensor.{name}", tensor.__module__))
    operators = []
    for klass in tensor.__mro__[:-1]:          # Tensor, then TensorBase (not object)
        for name, value in list(vars(klass).items()):
            if name in _TENSOR_IGNORED or (name.startswith("_") and not
                                           (name.startswith("__") and name.endswith("__"))):
                continue
            if klass is not tensor and name in vars(tensor):
                continue                        # (overridden in Tensor)
            if name in _OPERATOR_METHODS:
                operators.append((name, value))
            elif isinstance(value, property) and value.fget is not None:
                if id(value.fget) in namespace_ids:     # (Tensor.real is ember.real)
                    value = property(_clone(value.fget, f"Tensor.{name}", tensor.__module__),
                                     value.fset, value.fdel, value.__doc__)
                    setattr(tensor, name, value)
                arm(tensor, name, value.fget, public=value.__get__)
                if value.fset is not None:              # (x.grad = g: Tensor.grad.__set__)
                    arm(tensor, name, value.fset, public=value.__set__)
            else:
                arm(tensor, name, value)
    for name, value in operators:               # (x + y is handed over as Tensor.add)
        method = getattr(tensor, _OPERATOR_METHODS[name], None)
        arm(tensor, name, value, _call if name in _UNARY_OPERATORS else _call_operator,
            public=method if isinstance(method, types.FunctionType) else None)


def _ember_imported() -> None:
    """Called once ``import ember`` completes: arm the hooks if something asked already."""
    if _PENDING[0] or os.environ.get("EMBER_TORCH_FUNCTION") == "1":
        _arm()


def _on_subclass(cls) -> None:
    """``Tensor.__init_subclass__``: a subclass that does not opt out arms the hooks."""
    _OVERRIDES.pop(cls, None)
    if _overrides(cls):
        _arm()


def get_ignored_functions() -> set:
    """The public functions and Tensor members that never dispatch (factories, global state
    queries, the object's own construction).

    >>> ember.ones in ember.overrides.get_ignored_functions()
    True
    """
    out = set()
    for ns_name, ns in _namespaces():
        for name in (*_IGNORED.get(ns_name, ()), *_LISTED_IGNORED.get(ns_name, ())):
            value = getattr(ns, name, None)
            if callable(value):
                out.add(value)
    tensor = _TENSOR[0]
    for name in (*_TENSOR_IGNORED, *_TENSOR_LISTED_IGNORED):
        value = vars(tensor).get(name)
        if isinstance(value, types.FunctionType):
            out.add(value)
    return out


def get_overridable_functions() -> dict:
    """``{namespace: [functions]}`` for every function and Tensor method that dispatches
    (arming the hooks).

    >>> ember.add in ember.overrides.get_overridable_functions()[ember]
    True
    """
    _arm()
    out: dict = {}
    for owner, name, public in _ARMED_FUNCTIONS:
        if name in (_TENSOR_LISTED_IGNORED if owner is _TENSOR[0] else
                    _LISTED_IGNORED.get(getattr(owner, "__name__", None), ())):
            continue
        funcs = out.setdefault(owner, [])
        if not any(f is public for f in funcs):
            funcs.append(public)
    return out


def get_testing_overrides() -> dict:
    """``{function: dummy}`` for every overridable function: a dummy with the function's
    signature that returns -1, for testing a ``__torch_function__``.

    >>> ember.overrides.get_testing_overrides()[ember.add](ember.ones(1), 1)
    -1
    """
    out = {}
    for functions in get_overridable_functions().values():
        for func in functions:
            def dummy(*args, **kwargs):
                return -1
            try:
                dummy.__signature__ = inspect.signature(func)
            except (TypeError, ValueError):
                pass
            dummy.__name__ = dummy.__qualname__ = getattr(func, "__name__", "dummy")
            out[func] = dummy
    return out


def wrap_torch_function(dispatcher):
    """Decorator: the function dispatches on the arguments ``dispatcher(*args, **kwargs)``
    returns (a tuple), as ember's own functions do.

    >>> @ember.overrides.wrap_torch_function(lambda x: (x,))
    ... def twice(x):
    ...     return x * 2
    >>> twice(ember.ones(1))
    tensor([2.])
    """
    def decorate(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return decorate


# ---- modes and switches --------------------------------------------------------------------
class TorchFunctionMode:
    """A context manager that sees every call of a public function or Tensor method made
    while it is entered: its ``__torch_function__(func, types, args, kwargs)`` runs instead
    (with the mode taken off, so calling ``func`` inside runs it). Modes nest; the innermost
    goes first.

    >>> class Count(ember.overrides.TorchFunctionMode):
    ...     def __init__(self):
    ...         self.n = 0
    ...     def __torch_function__(self, func, types, args=(), kwargs=None):
    ...         self.n += 1
    ...         return func(*args, **(kwargs or {}))
    >>> with Count() as c:
    ...     _ = ember.ones(2).sin()
    >>> c.n    # (ember.ones and Tensor.sin)
    2
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{type(self).__name__} is a TorchFunctionMode without a "
                                  "__torch_function__ method; define one")

    def __enter__(self):
        _arm()
        _STATE.modes.append(self)
        _recompute()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        modes = _STATE.modes
        if modes and modes[-1] is self:
            modes.pop()
        elif self in modes:
            modes.remove(self)
        _recompute()
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        """Make the mode and enter it (PyTorch's deprecated form of ``with cls(...)``)."""
        return cls(*args, **kwargs).__enter__()


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs every function as called: a base for modes that override only
    some of its steps.

    >>> with ember.overrides.BaseTorchFunctionMode():
    ...     ember.ones(2).sum()
    tensor(2.)
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _get_current_function_mode():
    """The innermost entered mode, or None."""
    modes = _STATE.modes
    return modes[-1] if modes else None


def _get_current_function_mode_stack() -> list:
    """The entered modes, innermost last."""
    return list(_STATE.modes)


def _is_torch_function_enabled() -> bool:
    """Whether arguments' ``__torch_function__`` are called (``torch._C``'s query: False
    within :class:`DisableTorchFunctionSubclass` or :class:`DisableTorchFunction`)."""
    return not _STATE.subclass_off


def _is_torch_function_all_disabled() -> bool:
    """Whether :class:`DisableTorchFunction` is on (modes skipped too)."""
    return _STATE.all_off


def _is_torch_function_mode_enabled() -> bool:
    """Whether a mode will see the next call."""
    return _STATE.mode_on


class DisableTorchFunctionSubclass:
    """Within it, arguments' ``__torch_function__`` are not called (modes still are): the
    context ``Tensor.__torch_function__`` runs the function in.

    >>> class M(ember.Tensor): pass
    >>> with ember.overrides.DisableTorchFunctionSubclass():
    ...     type(ember.ones(1).as_subclass(M) + 1) is ember.Tensor
    True
    """

    def __enter__(self):
        self._saved = _STATE.subclass_off
        _STATE.subclass_off = True
        _recompute()
        return self

    def __exit__(self, *exc):
        _STATE.subclass_off = self._saved
        _recompute()
        return False


class DisableTorchFunction:
    """Within it, no ``__torch_function__`` runs, neither the arguments' nor the modes'.

    >>> with ember.overrides.DisableTorchFunction():
    ...     ember.overrides.has_torch_function(())
    False
    """

    def __enter__(self):
        st = _STATE
        self._saved = (st.subclass_off, st.all_off)
        st.subclass_off = st.all_off = True
        _recompute()
        return self

    def __exit__(self, *exc):
        _STATE.subclass_off, _STATE.all_off = self._saved
        _recompute()
        return False


# ---- the default Tensor.__torch_function__ ----------------------------------------------------
def _convert(ret, cls):
    """``ret`` with its tensors (also inside tuples and lists) made ``cls`` instances."""
    if isinstance(ret, TensorBase):
        if not isinstance(ret, cls):
            ret = _AS_SUBCLASS[0](ret, cls)
        return ret
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        if hasattr(type(ret), "_fields"):                   # named tuples (return_types)
            return type(ret)(*items)
        return type(ret)(items)
    return ret


_AS_SUBCLASS: list = [None]     # Tensor.as_subclass's function, set by _tensor.py


def tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """``Tensor.__torch_function__``: run ``func`` with subclass handling off and give its
    Tensor results (also inside tuples and lists) the type ``cls``, unless ``func`` is one
    whose result PyTorch leaves alone (:func:`get_default_nowrap_functions`). Declines
    (``NotImplemented``) when one of ``types`` is not a superclass of ``cls``."""
    if kwargs is None:
        kwargs = {}
    for t in types:
        if not issubclass(cls, t):
            return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if cls is _TENSOR[0] or func in get_default_nowrap_functions():
            return ret
        return _convert(ret, cls)
