"""``ember.fx.symbolic_trace`` and ``ember.fx.Tracer``: PyTorch's symbolic tracing.

The traced function runs once on :class:`~ember.fx.Proxy` values. What it does with them
becomes the graph: operators and methods through the Proxy itself, submodule calls through
:meth:`Tracer.call_module` (a ``call_module`` node for the leaf modules of ``ember.nn``,
tracing through the others), parameters as ``get_attr`` nodes. PyTorch sees ``torch.*`` and
``F.*`` calls on proxies through ``__torch_function__``; ember's functions have no such
hook, so while a trace runs the public functions of ``ember``, ``ember.nn.functional``,
``ember.special``, ``ember.linalg`` and ``ember.fft`` (and ``ember.Tensor``'s methods, for
``tensor + proxy``) are replaced by wrappers that record a call when an argument is a
Proxy and otherwise call through. Everything is put back when the trace ends.
"""
from __future__ import annotations

import builtins
import collections
import functools
import inspect
import math
import types
import warnings

import ember

from ..nn.modules.container import Sequential
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from . import _call_forms
from .graph import Graph, map_aggregate
from .graph_module import GraphModule
from . import proxy as _proxy_module
from .proxy import ParameterProxy, Proxy, Scope, TracerBase

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "is_fx_tracing"]

_orig_module_call = Module.__call__
_orig_module_getattr = Module.__getattr__

_HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS

# the namespaces whose functions record calls on proxies during a trace
_NAMESPACES = ("ember", "ember.nn.functional", "ember.special", "ember.linalg", "ember.fft")

# Tensor operators with a Proxy on the right: the method PyTorch records (``t + p`` is
# ``t.add(p)``)
_TENSOR_DUNDERS = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
                   "__floordiv__": "__floordiv__", "__mod__": "remainder", "__pow__": "pow",
                   "__matmul__": "matmul", "__and__": "__and__", "__or__": "__or__",
                   "__xor__": "__xor__", "__lshift__": "__lshift__",
                   "__rshift__": "__rshift__", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
                   "__ge__": "ge", "__eq__": "eq", "__ne__": "ne", "__getitem__": "__getitem__"}

# F functions PyTorch writes as a method call on their input
_F_METHODS = {"sigmoid": "sigmoid", "tanh": "tanh"}

_is_fx_tracing_flag = [False]


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running."""
    return _is_fx_tracing_flag[0]


class PHBase:
    """The placeholder marker of ``concrete_args``: a value given as ``PH`` stays an input
    of the graph."""

    def __repr__(self):
        return "PH"


PH = PHBase()


def _find_proxy(*objects):
    found = []

    def look(x):
        if isinstance(x, Proxy):
            found.append(x)
        return x
    map_aggregate(objects, look)
    return found[0] if found else None


def _has_proxy(args, kwargs) -> bool:
    for a in args:
        if isinstance(a, Proxy) or isinstance(a, (tuple, list, dict, slice)) and \
                _find_proxy(a) is not None:
            return True
    for a in kwargs.values():
        if isinstance(a, Proxy) or isinstance(a, (tuple, list, dict, slice)) and \
                _find_proxy(a) is not None:
            return True
    return False


@functools.lru_cache(maxsize=None)
def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _normalize_f(fn, form: str, args, kwargs):
    """``args, kwargs`` of an F call as PyTorch records them (``form`` from
    ``_call_forms.F_FORMS``), or as given when they do not bind."""
    sig = _signature(fn)
    if sig is None:
        return args, kwargs
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return args, kwargs
    bound.apply_defaults()
    values = bound.arguments
    pos, kws = (part.split() for part in form.split("|"))
    if any(n not in values for n in pos + kws):
        return args, kwargs
    return tuple(values[n] for n in pos), {n: values[n] for n in kws}


def _function_wrapper(orig, qualname: str, namespace: str):
    """``orig`` recording a ``call_function`` node when an argument is a Proxy."""
    short = qualname.rsplit(".", 1)[-1]
    form = _call_forms.F_FORMS.get(short) if namespace == "ember.nn.functional" else None
    method = _F_METHODS.get(short) if namespace == "ember.nn.functional" else None

    @functools.wraps(orig)
    def wrapped(*args, **kwargs):
        if not _has_proxy(args, kwargs):
            return orig(*args, **kwargs)
        tracer = _find_proxy(args, kwargs).tracer
        if method is not None and args and isinstance(args[0], Proxy):
            return tracer.create_proxy("call_method", method, args, kwargs)
        if form is not None:
            args, kwargs = _normalize_f(orig, form, args, kwargs)
        return tracer.create_proxy("call_function", orig, args, kwargs)
    wrapped.__fx_original__ = orig
    return wrapped


def _method_wrapper(orig, method: str):
    """``Tensor.<name>`` recording a ``call_method`` node when an argument is a Proxy."""
    @functools.wraps(orig)
    def wrapped(self, *args, **kwargs):
        if not _has_proxy(args, kwargs):
            return orig(self, *args, **kwargs)
        tracer = _find_proxy(args, kwargs).tracer
        return tracer.create_proxy("call_method", method, (self,) + args, kwargs)
    wrapped.__fx_original__ = orig
    return wrapped


def _create_wrapped_func(orig):
    """A function of ``fx.wrap``: one ``call_function`` node, its body not traced."""
    @functools.wraps(orig)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is None:
            return orig(*args, **kwargs)
        out = proxy.tracer.create_proxy("call_function", orig, args, kwargs)
        out.node.meta["is_wrapped"] = True
        return out
    wrapped.__fx_original__ = orig
    return wrapped


_WRAPPERS: dict = {}          # (namespace, name, id(original)) -> wrapper


def _record_call(func, args, kwargs):
    """A call of one of ember's public functions (or a Tensor method) on proxies, recorded
    as a trace records it: what ``Proxy.__torch_function__`` does outside a trace."""
    name = getattr(func, "__name__", "")
    if ember.overrides.is_tensor_method_or_property(func):
        tracer = _find_proxy(args, kwargs).tracer
        return tracer.create_proxy("call_method", _TENSOR_DUNDERS.get(name, name), args, kwargs)
    namespace = next((ns for ns in _NAMESPACES
                      if getattr(_module(ns) if ns != "ember" else ember, name, None) is func),
                     "ember")
    key = (namespace, name, id(func))
    wrapper = _WRAPPERS.get(key)
    if wrapper is None:
        wrapper = _WRAPPERS[key] = _function_wrapper(func, f"{namespace}.{name}", namespace)
    return wrapper(*args, **kwargs)


_proxy_module._HOOKS.update(record=_record_call, tracing=lambda: _is_fx_tracing_flag[0])


def _namespace_patches() -> list:
    """``(owner, name, wrapper)`` for every function the trace intercepts."""
    out = []
    for ns_name in _NAMESPACES:
        ns = ember if ns_name == "ember" else _module(ns_name)
        if ns is None:
            continue
        for name, value in list(vars(ns).items()):
            if name.startswith("_") or not isinstance(value, (types.FunctionType,
                                                              types.BuiltinFunctionType)):
                continue
            if hasattr(value, "__fx_original__"):
                continue
            if ns_name == "ember" and name in _call_forms.NOT_TRACED:
                continue
            if ns_name == "ember.nn.functional" and name in ("has_torch_function",
                                                             "has_torch_function_unary",
                                                             "has_torch_function_variadic",
                                                             "handle_torch_function",
                                                             "boolean_dispatch",
                                                             "assert_int_or_pair"):
                continue
            key = (ns_name, name, id(value))
            wrapper = _WRAPPERS.get(key)
            if wrapper is None:
                wrapper = _WRAPPERS[key] = _function_wrapper(value, f"{ns_name}.{name}",
                                                             ns_name)
            out.append((ns, name, wrapper))
    tensor = ember.Tensor
    for name, value in list(vars(tensor).items()):
        if not isinstance(value, types.FunctionType) or hasattr(value, "__fx_original__"):
            continue
        if name in _TENSOR_DUNDERS:
            method = _TENSOR_DUNDERS[name]
        elif name.startswith("_"):
            continue
        else:
            method = name
        key = ("Tensor", name, id(value))
        wrapper = _WRAPPERS.get(key)
        if wrapper is None:
            wrapper = _WRAPPERS[key] = _method_wrapper(value, method)
        out.append((tensor, name, wrapper))
    return out


def patch_namespaces(patcher) -> dict:
    """Put the recording wrappers in place (undone when ``patcher`` exits); returns
    ``{id(original): wrapper}`` for the functions of the namespaces."""
    originals = {}
    for owner, name, wrapper in _namespace_patches():
        if owner is not ember.Tensor:
            originals[id(wrapper.__fx_original__)] = wrapper
        patcher.patch_attr(owner, name, wrapper)
    return originals


def _module(dotted: str):
    obj = ember
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class _Patcher:
    """Sets attributes and dict entries for the length of a trace, then puts them back."""

    def __init__(self):
        self._undo: list = []
        self._seen: set = set()

    def patch_attr(self, owner, name, new):
        missing = object()
        old = owner.__dict__.get(name, missing) if isinstance(owner, type) else \
            getattr(owner, name, missing)
        self._undo.append((owner, name, old, missing, False))
        setattr(owner, name, new)

    def patch_dict(self, d: dict, name, new):
        missing = object()
        self._undo.append((d, name, d.get(name, missing), missing, True))
        d[name] = new

    def visit_once(self, thing) -> bool:
        key = id(thing)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self._undo:
            owner, name, old, missing, is_dict = self._undo.pop()
            if is_dict:
                if old is missing:
                    owner.pop(name, None)
                else:
                    owner[name] = old
            elif old is missing:
                delattr(owner, name)
            else:
                setattr(owner, name, old)


# fx.wrap registrations: (id of the globals dict, name) -> the globals dict
_wrapped_fns_to_patch: dict = {}


def _patch_wrapped_functions(patcher: _Patcher):
    for (_, name), frame_dict in _wrapped_fns_to_patch.items():
        if name not in frame_dict and hasattr(builtins, name):
            orig = getattr(builtins, name)
        else:
            orig = frame_dict.get(name)
        if orig is None or hasattr(orig, "__fx_original__"):
            continue
        patcher.patch_dict(frame_dict, name, _create_wrapped_func(orig))


def _autowrap_check(patcher: _Patcher, frame_dict: dict, function_ids: set, originals):
    """In a traced function's globals: wrap the functions of the autowrap modules (math),
    and point names bound to ember functions (``from ember import relu``) at their
    recording wrappers."""
    if not patcher.visit_once(frame_dict):
        return
    for name, value in list(frame_dict.items()):
        if name.startswith("_") or not callable(value):
            continue
        if id(value) in function_ids:
            patcher.patch_dict(frame_dict, name, _create_wrapped_func(value))
        elif id(value) in originals:
            patcher.patch_dict(frame_dict, name, originals[id(value)])


def _patch_function(fn, nargs: int):
    """``fn`` with ``*args`` / ``**kwargs`` turned into plain parameters (each gets one
    Proxy)."""
    co = fn.__code__
    code = co.replace(co_flags=co.co_flags & ~_HAS_VARSTUFF, co_argcount=nargs,
                      co_posonlyargcount=0, co_kwonlyargcount=0)
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def _assert(condition, message):
    """``assert condition, message`` (what a concretized argument's check records)."""
    assert condition, message


def _assert_is_none(value, message):
    """``assert value is None, message``."""
    assert value is None, message


class Tracer(TracerBase):
    """Symbolic tracing: ``Tracer().trace(root)`` is the Graph of ``root``'s forward (or of
    a function). Subclass it to change what is a leaf module (:meth:`is_leaf_module`), what
    a submodule call records (:meth:`call_module`), or how values become node arguments
    (:meth:`create_arg`).

    Example::

        class NoLeaves(ember.fx.Tracer):
            def is_leaf_module(self, m, qualified_name):
                return False           # trace into every module

        graph = NoLeaves().trace(model)
    """

    _qualname_counter: dict = collections.defaultdict(int)

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant: bool = False):
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for m in autowrap_modules for name, value in m.__dict__.items()
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root_module_name = ""
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.num_calls: dict = {}
        self.node_name_to_scope: dict = {}

    def get_fresh_qualname(self, prefix: str) -> str:
        """``prefix`` + the first number not yet an attribute of the root."""
        qualname = f"{prefix}0"
        if not hasattr(self.root, qualname):
            self._qualname_counter[prefix] = 0
            return qualname
        i = self._qualname_counter[prefix]
        while True:
            qualname = f"{prefix}{i}"
            i += 1
            if not hasattr(self.root, qualname):
                break
        self._qualname_counter[prefix] = i
        return qualname

    def create_arg(self, a):
        """As ``TracerBase.create_arg`` (arguments as graph arguments), plus: parameters,
        buffers and submodules of the root become ``get_attr`` nodes, other tensors
        become constants of the root (``_tensor_constant0``, ...), named tuples
        ``call_function`` nodes of their type."""
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, ember.Tensor):
            for n, p in self.root.named_buffers():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
        elif isinstance(a, Module):
            for n, p in self.root.named_modules():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            args = tuple(self.create_arg(x) for x in a)
            return self.create_node("call_function", type(a), args, {})
        if isinstance(a, ember.Tensor):
            qualname = self.tensor_attrs.get(a)
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[a] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Whether ``m`` is recorded as one ``call_module`` node (the modules of
        ``ember.nn``, but ``Sequential``) rather than traced through."""
        mod = type(m).__module__
        return (mod.startswith(("ember.nn", "torch.nn", "ember.ao.nn", "torch.ao.nn"))
                and not isinstance(m, Sequential))

    def path_of_module(self, mod: Module) -> str:
        """The qualified name of ``mod`` in the root (``layer1.0.conv1``)."""
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m: Module, forward, args, kwargs):
        """A submodule call: a ``call_module`` node for a leaf module, else its forward
        traced in place."""
        module_qualified_name = self.path_of_module(m)
        prev_scope = self.scope
        self.scope = Scope(module_qualified_name, type(m))
        try:
            num_calls = self.num_calls.get(module_qualified_name, 0)
            module_key = f"{module_qualified_name}@{num_calls}" if num_calls > 0 else \
                module_qualified_name
            self.module_stack[module_key] = (module_qualified_name, type(m))
            self.num_calls[module_qualified_name] = num_calls + 1
            if not self.is_leaf_module(m, module_qualified_name):
                ret_val = forward(*args, **kwargs)
            else:
                ret_val = self.create_proxy("call_module", module_qualified_name, args, kwargs)
            self.module_stack.popitem(last=True)
        finally:
            self.scope = prev_scope
        return ret_val

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        """A module attribute read during the trace: parameters (and, with
        ``proxy_buffer_attributes``, buffers) of the root become ``get_attr`` proxies."""
        def proxy_for(collection):
            for n, p in collection:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        kwargs = {}
                        if "proxy_factory_fn" in inspect.signature(
                                self.create_proxy).parameters:
                            kwargs["proxy_factory_fn"] = (
                                None if not self.param_shapes_constant else
                                lambda node: ParameterProxy(self, node, n, attr_val))
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {},
                                                                     **kwargs)
                    return parameter_proxy_cache[n]
            return None

        if isinstance(attr_val, Parameter):
            proxy = proxy_for(self.root.named_parameters())
            if proxy is not None:
                return proxy
        if self.proxy_buffer_attributes and isinstance(attr_val, ember.Tensor):
            proxy = proxy_for(self.root.named_buffers())
            if proxy is not None:
                return proxy
        return attr_val

    def create_args_for_root(self, root_fn, is_module: bool, concrete_args=None):
        """The placeholder proxies for ``root_fn``'s parameters (``self`` excluded); returns
        ``(fn, args)`` (``fn`` rewritten when it takes ``*args`` / ``**kwargs``)."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args = []
        skip = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        if isinstance(concrete_args, tuple) and concrete_args and \
                co.co_flags & _HAS_VARSTUFF and total_args == 1:
            for i, _ in enumerate(concrete_args):
                args.append(self.create_proxy("placeholder", f"input_{i}", (), {}))
            return root_fn, args
        arg_names = [next(names_iter) for _ in range(skip, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got "
                                   f"{len(concrete_args)} concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))
        args.extend(self._proxy_placeholder(n, concrete_args, sig, fn_for_analysis)
                    for n in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & _HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(self._proxy_placeholder("*" + next(names_iter), concrete_args,
                                                    sig, fn_for_analysis))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(self._proxy_placeholder("**" + next(names_iter), concrete_args,
                                                    sig, fn_for_analysis))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(self, name, concrete_args, sig, fn_for_analysis):
        if concrete_args is not None and name in concrete_args:
            cnt = [0]

            def replace_ph(x):
                cnt[0] += 1
                param = sig.parameters[name]
                default = () if param.default is inspect.Parameter.empty else \
                    (param.default,)
                out = self.create_proxy("placeholder", f"{name}_{cnt[0]}", default, {})
                if isinstance(x, PHBase):
                    return out
                if type(x) in (bool, int, float, str, complex):
                    self.create_proxy("call_function", _assert,
                                      (out == x, f"{name} has been specialized to have value "
                                                 f"{x} but got another value"), {})
                elif x is None:
                    self.create_proxy("call_function", _assert_is_none,
                                      (out, f"{name} has been specialized to have value "
                                            "None but got another value"), {})
                else:
                    warnings.warn(f"Was not able to add assertion to guarantee correct input "
                                  f"{name} to specialized function. It is up to the user to "
                                  "make sure that your inputs match the inputs you "
                                  "specialized the function with.", stacklevel=2)
                return x
            return map_aggregate(concrete_args[name], replace_ph)
        if name[0] == "*":
            default = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=fn_for_analysis.__annotations__.get(name))

    def trace(self, root, concrete_args=None) -> Graph:
        """The Graph of ``root`` (a Module's ``forward``, or a function). For a function,
        ``self.root`` becomes a fresh Module that holds its constants. ``concrete_args``
        fixes some arguments to values (``PH`` keeps one an input)."""
        old_flag = _is_fx_tracing_flag[0]
        _is_fx_tracing_flag[0] = True
        try:
            if isinstance(root, Module):
                self.root = root
                fn = getattr(type(root), self.traced_func_name, None)
                if fn is None:
                    raise AssertionError(f"traced_func_name={self.traced_func_name} doesn't "
                                         f"exist in {type(root).__name__}")
                self.root_module_name = root._get_name()
                self.submodule_paths = {mod: name for name, mod in root.named_modules()}
            else:
                self.root = Module()
                fn = root
            self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
            self.tensor_attrs: dict = {}

            def collect_tensor_attrs(m, prefix):
                for k, v in m.__dict__.items():
                    if isinstance(v, ember.Tensor):
                        self.tensor_attrs[v] = ".".join(prefix + [k])
                for k, v in m.named_children():
                    collect_tensor_attrs(v, prefix + [k])
            collect_tensor_attrs(self.root, [])

            if not isinstance(fn, types.FunctionType):
                raise AssertionError(f"symbolic_trace: expected a Python function to trace, "
                                     f"got {type(fn).__name__}")
            fn_globals = fn.__globals__
            fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
            parameter_proxy_cache: dict = {}

            @functools.wraps(_orig_module_getattr)
            def module_getattr_wrapper(mod, attr):
                attr_val = _orig_module_getattr(mod, attr)
                return self.getattr(attr, attr_val, parameter_proxy_cache)

            with _Patcher() as patcher:
                originals = patch_namespaces(patcher)

                @functools.wraps(_orig_module_call)
                def module_call_wrapper(mod, *args, **kwargs):
                    def forward(*args, **kwargs):
                        return _orig_module_call(mod, *args, **kwargs)
                    _autowrap_check(patcher, getattr(getattr(mod, "forward", mod),
                                                     "__globals__", {}),
                                    self._autowrap_function_ids, originals)
                    return self.call_module(mod, forward, args, kwargs)

                patcher.patch_attr(Module, "__getattr__", module_getattr_wrapper)
                patcher.patch_attr(Module, "__call__", module_call_wrapper)
                _patch_wrapped_functions(patcher)
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids, originals)
                if isinstance(root, Module):
                    # functions kept as module attributes (self.act = F.gelu) record too
                    for m in root.modules():
                        for k, v in list(vars(m).items()):
                            if callable(v) and id(v) in originals:
                                patcher.patch_dict(vars(m), k, originals[id(v)])
                for module in self._autowrap_search:
                    _autowrap_check(patcher, module.__dict__, self._autowrap_function_ids, {})
                self.create_node("output", "output", (self.create_arg(fn(*args)),), {},
                                 type_expr=getattr(inspect.unwrap(fn), "__annotations__",
                                                   {}).get("return"))
            self.submodule_paths = None
        finally:
            _is_fx_tracing_flag[0] = old_flag
        return self.graph


def wrap(fn_or_name):
    """Record calls of a module-level function as one ``call_function`` node instead of
    tracing into it (for functions with control flow on their inputs). Call it at module
    scope, with the function or its name.

    Example::

        @ember.fx.wrap
        def clamp_len(x, n):
            return x[:n] if len(x) > n else x
    """
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable "
                           "or string name")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def symbolic_trace(root, concrete_args=None) -> GraphModule:
    """Trace ``root`` (a Module or a function) with :class:`Tracer` and return the result
    as a :class:`~ember.fx.GraphModule` (PyTorch's ``torch.fx.symbolic_trace``).

    Example::

        gm = ember.fx.symbolic_trace(model)
        print(gm.graph)     # placeholder, call_module / call_function ..., output
        print(gm.code)      # the generated forward
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

