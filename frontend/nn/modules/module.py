"""``nn.Module``: the base class of every layer, with PyTorch's registration, state_dict,
hooks, mode switching, device/dtype conversion and repr.

>>> import ember.nn as nn
>>> class Net(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = nn.Linear(4, 2)
...     def forward(self, x):
...         return self.fc(x)
>>> list(Net().state_dict())
['fc.weight', 'fc.bias']
"""
from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Any, Callable, Iterator

import ember
from ember import Tensor
from ember._hooks import RemovableHandle
from ember._tensor import parse_to_args
from ember import __future__ as _future
from ember._swap import swap_tensors

from ..parameter import Buffer, Parameter, _buffer_persistent, _set_data
from ._backward_hook import BackwardHook
from .utils import _no_grad
from ember.dispatcher.lazy import capturing as _capturing
from ember.dispatcher.device import to_device
from ember.dispatcher.meta import COPY_OUT_MESSAGE as META_COPY_OUT
from ember.dispatcher.warn import warn as _warn

__all__ = ["Module", "RemovableHandle"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line if line.strip() else "" for line in s]
    return first + "\n" + "\n".join(s)


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return "ember.Tensor" if type(obj) is Tensor else type(obj).__name__
    module = getattr(type(obj), "__module__", "")
    name = type(obj).__qualname__
    return name if module in ("builtins", "") else f"{module}.{name}"


def _forward_unimplemented(self, *input: Any) -> None:
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                              '"forward" function')


def _state_tensor(value):
    """A state-dict value as an ember tensor: ember tensors as they are, anything speaking
    DLPack (torch tensors, NumPy arrays) through DLPack, sharing memory where it can; other
    values are returned unchanged (the caller reports them)."""
    if isinstance(value, Tensor) or not hasattr(value, "__dlpack__"):
        return value
    detach = getattr(value, "detach", None)
    if callable(detach):
        value = detach()     # torch exports no tensor that requires grad
    try:
        return ember.from_dlpack(value)
    except (BufferError, TypeError, RuntimeError, ValueError) as err:
        if str(getattr(value, "dtype", "")).endswith("bfloat16") and hasattr(value, "float"):
            # NumPy (ember's DLPack bridge) has no bfloat16; its float32 widening is exact
            return ember.from_dlpack(value.float()).to(ember.bfloat16)
        raise TypeError(f"load_state_dict: can't convert a {type(value).__module__}."
                        f"{type(value).__qualname__} to an ember tensor through DLPack: "
                        f"{err}") from err


class _WithModule:
    """A load-state-dict pre-hook called with the module as its first argument."""
    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return self.fn(*args)


class Module:
    """Base class for all neural network modules (``torch.nn.Module``).

    Assigning a ``Parameter``, a ``Module`` or (through ``register_buffer``) a tensor as
    an attribute registers it, so ``parameters()``, ``state_dict()``, ``to()`` and the
    repr see it.
    """
    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False
    #: set by ``compile()``: calls run this compiled form of ``_call_impl``
    _compiled_call_impl = None

    def __init__(self, *args, **kwargs) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument "
                            f"but {len(args) + 1} were given")
        sa = super().__setattr__
        sa("training", True)
        sa("_parameters", {})
        sa("_buffers", {})
        sa("_non_persistent_buffers_set", set())
        sa("_forward_hooks", OrderedDict())
        sa("_forward_hooks_with_kwargs", OrderedDict())
        sa("_forward_hooks_always_called", OrderedDict())
        sa("_forward_pre_hooks", OrderedDict())
        sa("_forward_pre_hooks_with_kwargs", OrderedDict())
        sa("_backward_hooks", OrderedDict())
        sa("_backward_pre_hooks", OrderedDict())
        sa("_state_dict_hooks", OrderedDict())
        sa("_state_dict_pre_hooks", OrderedDict())
        sa("_load_state_dict_pre_hooks", OrderedDict())
        sa("_load_state_dict_post_hooks", OrderedDict())
        sa("_modules", {})

    forward: Callable[..., Any] = _forward_unimplemented

    # ---- registration ----------------------------------------------------------------
    def _check_new_name(self, kind: str, store: str, name) -> None:
        """PyTorch's checks on a new buffer/parameter name (``store``: its dict)."""
        if store not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[store]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. BatchNorm's running_mean)."""
        self._check_new_name("buffer", "_buffers", name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(ember Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (accessible as an attribute of that name)."""
        self._check_new_name("parameter", "_parameters", name)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(ember.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' "
                             "as a function of another Tensor, compute the value in "
                             "the forward() method.")
        else:
            self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module (accessible as an attribute of that name)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def _get_by_path(self, target: str):
        """(the module holding the last component of ``target``, that component)."""
        *path, last = target.split(".")
        mod = self
        for item in path:
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod, last

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``"" `` is self)."""
        if target == "":
            return self
        mod, last = self._get_by_path(target)
        if last not in mod._modules:
            raise AttributeError(mod._get_name() + " has no attribute `" + last + "`")
        return mod._modules[last]

    def get_parameter(self, target: str) -> Parameter:
        mod, name = self._get_by_path(target)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        mod, name = self._get_by_path(target)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    def get_extra_state(self) -> Any:
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called.")

    def set_extra_state(self, state: Any) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called.")

    # ---- attribute protocol -------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module "
                                    f"'{name}' (ember.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                is_buffer = isinstance(value, Buffer)
                if is_buffer or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer "
                                        f"'{name}' (ember.nn.Buffer, ember.Tensor or None "
                                        "expected)")
                    if buffers is None:
                        raise AttributeError("cannot assign buffer before Module.__init__() "
                                             "call")
                    if is_buffer:
                        persistent = _buffer_persistent(value)
                        remove_from(self.__dict__, self._parameters, self._modules)
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    self.register_buffer(name, value, persistent)
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        module_attrs = dir(self.__class__)
        attrs = list(self.__dict__.keys())
        keys = (module_attrs + attrs + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        keys = [key for key in keys if not key[0].isdigit()]
        return sorted(keys)

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_backward_hooks", "_backward_pre_hooks"):   # pickled before they existed
            self.__dict__.setdefault(name, OrderedDict())

    # ---- traversal ------------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Iterator over the parameters (each once, even if shared)."""
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """Iterator over ``(name, parameter)``, names as in ``state_dict``."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self) -> Iterator[Module]:
        for _name, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True):
        """Iterator over ``(name, module)`` for self (name ``prefix``) and all descendants."""
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ---- modes, grads -------------------------------------------------------------------
    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place with ``ember.compile(self._call_impl,
        *args, **kwargs)``: the module stays the same object (its state_dict keys too)."""
        self.__dict__["_compiled_call_impl"] = ember.compile(self._call_impl, *args, **kwargs)

    def train(self, mode: bool = True) -> Module:
        """Set training mode (affects Dropout, BatchNorm, ...) recursively; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    # ---- conversion -----------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        if recurse:
            for module in self.children():
                module._apply(fn)
        swap = _future.get_swap_module_params_on_conversion()
        overwrite = _future.get_overwrite_module_params_on_conversion()
        for key, param in self._parameters.items():
            if param is None:
                continue
            with _no_grad():
                param_applied = fn(param)
            param_grad = param.grad
            if swap:
                # the Parameter object stays the same and takes the converted contents
                if param_grad is not None:
                    param.grad = None
                try:
                    swap_tensors(param, Parameter(param_applied,
                                                  requires_grad=param.requires_grad))
                except Exception as e:
                    if param_grad is not None:
                        param.grad = param_grad
                    raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}.{key}") \
                        from e
                out_param = param
            elif overwrite:
                out_param = self._parameters[key] = Parameter(param_applied,
                                                              param.requires_grad)
            else:
                # PyTorch's default: the Parameter object stays the same, its data is replaced
                if param_applied is not param:
                    _set_data(param, param_applied)
                out_param = param
            if param_grad is not None:
                with _no_grad():
                    grad_applied = fn(param_grad)
                if swap:
                    grad_applied.requires_grad_(param_grad.requires_grad)
                    swap_tensors(param_grad, grad_applied)
                    out_param.grad = param_grad
                elif overwrite:
                    out_param.grad = grad_applied.requires_grad_(param_grad.requires_grad)
                elif grad_applied is not param_grad:
                    _set_data(param_grad, grad_applied)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to_empty(self, *, device, recurse=True) -> Module:
        """Move parameters and buffers to ``device`` without copying their values (they
        are uninitialised there, as PyTorch's)."""
        return self._apply(lambda t: ember.empty_like(t, device=device), recurse=recurse)

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: converts
        parameters and buffers in place; only floating ones change dtype."""
        device, dtype, _ = parse_to_args(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        off_meta = device is not None and to_device(device).type != "meta"
        fmt = kwargs.get("memory_format")

        def convert(t):
            if off_meta and t.device.type == "meta":
                raise NotImplementedError(
                    f"{META_COPY_OUT} Please use ember.nn.Module.to_empty() instead of "
                    "ember.nn.Module.to() when moving module from meta to a different "
                    "device.")
            kw = {}
            if device is not None:
                kw["device"] = device
            if dtype is not None and t.is_floating_point():
                kw["dtype"] = dtype
            # (as PyTorch: a memory format reaches the 4-d and 5-d tensors only)
            if fmt is not None and t.dim() in (4, 5):
                kw["memory_format"] = fmt
            return t.to(**kw) if kw else t

        return self._apply(convert)

    def cpu(self) -> Module:
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> Module:
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type) -> Module:
        return self._apply(lambda t: t.to(dtype=dst_type))

    def float(self) -> Module:
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Module:
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def share_memory(self) -> Module:
        """Move every parameter, gradient and buffer to shared memory in place
        (``Tensor.share_memory_``), so processes given this module by
        ``ember.multiprocessing`` update the same tensors (Hogwild! training)."""
        return self._apply(lambda t: t.share_memory_())

    # ---- state dict -------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ``OrderedDict`` of parameters and persistent buffers, keyed by dotted name.

        The values share memory with the module's tensors (detached unless
        ``keep_vars``).
        """
        if args:
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def register_state_dict_pre_hook(self, hook):
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WithModule(hook)
        return handle

    def _register_state_dict_hook(self, hook):
        """PyTorch's private name for a state-dict post hook, which libraries still call."""
        return self.register_state_dict_post_hook(hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """A load pre-hook called as ``hook(state_dict, prefix, ...)`` or, with
        ``with_module=True``, ``hook(module, state_dict, prefix, ...)`` (PyTorch's)."""
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        for hook in self._load_state_dict_pre_hooks.values():
            # a hook registered with the module gets the module it runs on (a deep copy's
            # hooks see the copy)
            args = (self,) if type(hook) is _WithModule else ()
            hook(*args, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent_buffers.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = _state_tensor(state_dict[key])
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "ember.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(input_param)}")
                continue
            if (len(param.shape) == 0 and len(input_param.shape) == 1
                    and input_param.shape[0] == 1):
                input_param = input_param[0]
            if input_param.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{input_param.size()} from checkpoint, the shape in current "
                                  f"model is {param.size()}.")
                continue
            try:
                with _no_grad():
                    if _future.get_swap_module_params_on_conversion():
                        new = param.module_load(input_param, assign=assign)
                        if new is input_param or new is param:
                            raise RuntimeError("module_load returned one of self or other, "
                                               "please .detach() the result if returning one "
                                               "of the inputs in module_load")
                        if isinstance(param, Parameter):
                            if not isinstance(new, Parameter):
                                new = Parameter(new, requires_grad=param.requires_grad)
                            else:
                                new.requires_grad_(param.requires_grad)
                        swap_tensors(param, new)
                        del new
                    elif assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param,
                                                        requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose '
                                  f"dimensions in the model are {param.size()} and whose "
                                  f"dimensions in the checkpoint are {input_param.size()}, an "
                                  f"exception occurred : {ex.args}.")
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into this module and its
        descendants. With ``strict`` the keys must match ``state_dict()``'s exactly; with
        ``assign`` the state dict's tensors replace the module's (keeping each parameter's
        ``requires_grad``) instead of being copied into them.

        Values may be ember tensors or anything that speaks DLPack (torch tensors, NumPy
        arrays), so a state dict from ``torch.load`` or ``model.state_dict()`` of a torch
        model loads directly.

        Returns ``_IncompatibleKeys(missing_keys, unexpected_keys)``.

        >>> import ember, numpy as np
        >>> lin = ember.nn.Linear(2, 1)
        >>> state = {"weight": np.ones((1, 2), np.float32), "bias": np.zeros(1, np.float32)}
        >>> lin.load_state_dict(state)
        <All keys matched successfully>
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items()
                                        if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible_keys) is not None:
                    raise AssertionError("Hooks registered with "
                                         "``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if "
                                         "incompatible_keys need to be modified, it should be "
                                         "done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ---- hooks and calling ------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args) -> None or modified args`` runs before ``forward``
        (``hook(module, args, kwargs) -> None or (args, kwargs)`` with ``with_kwargs``)."""
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output) -> None or modified output`` runs after ``forward``
        (``hook(module, args, kwargs, output)`` with ``with_kwargs``)."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs,
                                             self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output) -> None or new grad_output`` runs when the gradients
        with respect to the module's outputs have been computed, before those with respect
        to its inputs; a returned tuple replaces ``grad_output``.

        >>> import ember
        >>> lin = ember.nn.Linear(2, 1)
        >>> h = lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 0,))
        >>> lin(ember.ones(1, 2, requires_grad=True)).sum().backward()
        >>> lin.weight.grad
        tensor([[0., 0.]])
        """
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output) -> None or new grad_input`` runs when the
        gradients with respect to the module's positional inputs have been computed
        (``grad_input`` has one entry per positional argument, ``None`` for non-tensors;
        ``grad_output`` one per output); a returned tuple replaces ``grad_input``.

        >>> import ember
        >>> lin = ember.nn.Linear(2, 1)
        >>> seen = []
        >>> h = lin.register_full_backward_hook(lambda m, gi, go: seen.append(go[0]))
        >>> lin(ember.ones(1, 2, requires_grad=True)).sum().backward()
        >>> seen
        [tensor([[1.]])]
        """
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """PyTorch's deprecated non-full backward hook, which sees the gradients of the last
        autograd node inside ``forward``; ember's nodes differ from PyTorch's, so it is not
        provided: use ``register_full_backward_hook``."""
        raise NotImplementedError(
            "Module.register_backward_hook (PyTorch's deprecated form, whose gradients are "
            "those of the last autograd node inside forward) is not supported by ember; use "
            "register_full_backward_hook, which gives the gradients with respect to the "
            "module's inputs and outputs.")

    def _call_impl(self, *args, **kwargs):
        c = self._compiled_call_impl
        if c is not None and not _capturing():   # Module.compile(); inside a region: inline
            return c(*args, **kwargs)
        if not (self._forward_hooks or self._forward_pre_hooks or _global_forward_hooks
                or _global_forward_pre_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        result = None
        called_always = set()
        bw_hook = None
        try:
            for hook_id, hook in (*_global_forward_pre_hooks.items(),
                                  *self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    out = hook(self, args, kwargs)
                    if out is not None:
                        if isinstance(out, tuple) and len(out) == 2:
                            args, kwargs = out
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got {out}.")
                else:
                    out = hook(self, args)
                    if out is not None:
                        args = out if isinstance(out, tuple) else (out,)
            full_hooks = [*_global_backward_hooks.values(), *self._backward_hooks.values()]
            pre_hooks = [*_global_backward_pre_hooks.values(),
                         *self._backward_pre_hooks.values()]
            if full_hooks or pre_hooks:
                bw_hook = BackwardHook(self, full_hooks, pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in (*_global_forward_hooks.items(),
                                  *self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    out = hook(self, args, kwargs, result)
                else:
                    out = hook(self, args, result)
                if out is not None:
                    result = out
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    _warn("For backward hooks to be called, module output should be a "
                          "Tensor or a tuple of Tensors but received "
                          f"{type(result)}")
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            for hook_id, hook in self._forward_hooks.items():
                if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            out = hook(self, args, kwargs, result)
                        else:
                            out = hook(self, args, result)
                        if out is not None:
                            result = out
                    except Exception:
                        continue
            raise

    __call__ = _call_impl

    # ---- repr ---------------------------------------------------------------------------
    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """Extra information shown in the module's repr; override in layers."""
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"


_global_forward_hooks: dict = OrderedDict()
_global_forward_pre_hooks: dict = OrderedDict()
_global_backward_hooks: dict = OrderedDict()
_global_backward_pre_hooks: dict = OrderedDict()


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """A forward pre-hook run for every module (``torch.nn.modules.module``'s global hook)."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook) -> RemovableHandle:
    handle = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[handle.id] = hook
    return handle



def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """A backward pre-hook run for every module (see ``Module.register_full_backward_pre_hook``)."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """A backward hook run for every module (see ``Module.register_full_backward_hook``)."""
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle
