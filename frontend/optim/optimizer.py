"""``Optimizer``: the base class of every optimizer, as ``torch.optim.Optimizer``.

An optimizer holds ``param_groups`` (a list of dicts: ``"params"`` plus every
hyper-parameter, defaults filled in) and ``state`` (a dict per parameter, keyed by the
parameter tensor). Subclasses implement ``step``; everything else lives here:
validation of the parameters, ``zero_grad``, and ``state_dict`` / ``load_state_dict`` in
PyTorch's layout, where parameters are referred to by their index across all groups::

    {"state": {0: {"momentum_buffer": tensor(...)}, ...},
     "param_groups": [{"lr": 0.1, ..., "params": [0, 1]}, ...]}
"""
from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from ember.dispatcher import dtypes as D
from ember.dispatcher import views as _VW

from .._creation import tensor, zeros_like
from .._tensor import Tensor
from ..autograd import enable_grad, set_grad_enabled
from ..nn.modules.module import RemovableHandle
from ember.dispatcher.warn import warn as _warn

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]

StateDict = dict[str, Any]


class _RequiredParameter:
    """The default of a hyper-parameter that every param group must specify."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj) -> str:
    """``torch.typename`` for the objects an optimizer rejects: ``int``, ``numpy.ndarray``."""
    cls = type(obj)
    module = cls.__module__ or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _get_value(x):
    """A hyper-parameter or a ``step`` counter as a Python number (tensors hold one value)."""
    return x.item() if isinstance(x, Tensor) else x


def _get_scalar_dtype():
    """The dtype of ``step`` counters: float64 when that is the default dtype, else float32."""
    return D.float64 if D.get_default_dtype() is D.float64 else D.float32


def _check_lr(lr) -> None:
    """A learning rate may be a one-element tensor (schedulers then update it in place)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


# device types as PyTorch names them in its checks of ``capturable`` and ``fused``
_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone"]
_FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def _check_capturable(params, *, what: str = "params and state_steps",
                      supports_xla: bool = True) -> None:
    """``capturable=True`` keeps step counters on the parameter's device for graph capture;
    as in PyTorch, it is refused at ``step()`` time for parameters on other devices (the
    CPU among them). On a supported device ember runs the ordinary update."""
    devices = _CAPTURABLE_DEVICES + (["xla"] if supports_xla else [])
    if not all(p.device.type in devices for p in params):
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: "
                             f"{devices}.")


def _check_fused_flags(fused, differentiable, foreach) -> None:
    """The constructor-time checks PyTorch makes for ``fused=True``."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _check_fused_param(p: Tensor) -> None:
    """``fused=True`` needs floating-point parameters; ember computes the same update as the
    per-tensor loop (PyTorch's fused kernels differ from it only in rounding)."""
    if not p.is_floating_point():
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors "
                           f"of supported devices: {_FUSED_DEVICES} but {p.dtype} and "
                           f"{p.device.type}")


def _view_as_real(*tensors) -> list:
    """PyTorch's treatment of a complex parameter: it and its gradient and state are updated
    as the pairs of reals ``view_as_real`` shows (per part, e.g. Adam's second moment);
    real tensors and None pass through."""
    return [_VW.view_as_real(t) if t is not None and t.dtype._kind == 3 else t
            for t in tensors]


def _check_not_sparse(name: str, grad: Tensor) -> None:
    if getattr(grad, "is_sparse", False):
        raise RuntimeError(f"{name} does not support sparse gradients")


def _params_with_state(optimizer, group, name: str, buffers) -> list:
    """The group's parameters that have a gradient (a sparse one is refused, naming
    ``name``), each with its state started on first use as PyTorch's Adam family does: a
    float ``step`` counter, then a zero tensor per name in ``buffers``."""
    params = [p for p in group["params"] if p.grad is not None]
    for p in params:
        _check_not_sparse(name, p.grad)
        state = optimizer.state[p]
        if len(state) == 0:
            state["step"] = tensor(0.0, dtype=_get_scalar_dtype())
            for b in buffers:
                state[b] = zeros_like(p)
    return params


def _use_grad_for_differentiable(step: Callable) -> Callable:
    """Run an optimizer's ``step`` with autograd recording only when the optimizer was built
    with ``differentiable=True`` (so the update itself can be differentiated), as PyTorch."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            return step(self, *args, **kwargs)
    return wrapper


_use_no_grad = _use_grad_for_differentiable

_global_optimizer_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, Callable] = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None or (args, kwargs)`` to run before
    every optimizer's ``step``; returns a handle whose ``remove()`` unregisters it."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None`` to run after every optimizer's
    ``step``; returns a handle whose ``remove()`` unregisters it."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _hook_step(func: Callable) -> Callable:
    """Wrap a class's ``step`` so the global and per-optimizer step hooks run around it."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        self = args[0]
        for pre_hook in chain(_global_optimizer_pre_hooks.values(),
                              self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
        out = func(*args, **kwargs)
        for post_hook in chain(self._optimizer_step_post_hooks.values(),
                               _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out
    wrapper.hooked = True
    return wrapper


class Optimizer:
    """Base class for all optimizers, as ``torch.optim.Optimizer``.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts that
    define parameter groups (``{"params": [...], "lr": 0.01}``); ``defaults`` holds the
    hyper-parameters a group does not set. Keep the order of the parameters the same
    from run to run: ``state_dict`` refers to them by position.

    >>> import ember
    >>> w = ember.zeros(3, requires_grad=True)
    >>> opt = ember.optim.SGD([w], lr=0.1)
    >>> w.grad = ember.ones(3)
    >>> opt.step(); w
    tensor([-0.1000, -0.1000, -0.1000], requires_grad=True)
    """

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    OptimizerPreHook = Callable  # hook(optimizer, args, kwargs) -> None | (args, kwargs)
    OptimizerPostHook = Callable  # hook(optimizer, args, kwargs) -> None
    profile_hook_step = staticmethod(_hook_step)

    def _optimizer_step_code(self) -> None:
        """An empty hook PyTorch's profiler traces after each step; kept for subclasses."""

    def _cuda_graph_capture_health_check(self) -> None:
        """PyTorch checks ``capturable`` during CUDA graph capture here; ember has no graph
        capture, so there is nothing to check (subclasses may still call it)."""

    _accelerator_graph_capture_health_check = _cuda_graph_capture_health_check

    @staticmethod
    def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices: bool = False):
        """Split parallel lists of tensors by the (device, dtype) of the first list's
        tensors: ``{(device, dtype): ([sub-list per input list], indices)}``."""
        grouped: dict[Any, tuple[list, list]] = {}
        for i, t in enumerate(tensorlistlist[0]):
            key = (t.device, t.dtype)
            if key not in grouped:
                grouped[key] = ([[] for _ in tensorlistlist], [])
            lists, indices = grouped[key]
            for sub, source in zip(lists, tensorlistlist):
                sub.append(source[i] if source else None)
            indices.append(i)
        return grouped

    def _init_hooks(self) -> None:
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._patch_step_function()

    def _patch_step_function(self) -> None:
        """Wrap the class's ``step`` once so that step hooks run around every call."""
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = _hook_step(cls.step)

    # ---- hooks ------------------------------------------------------------------------
    @staticmethod
    def _register(hooks: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs) -> None or (args, kwargs)`` before each
        ``step`` of this optimizer (a returned pair replaces ``step``'s arguments)."""
        return self._register(self._optimizer_step_pre_hooks, hook, False)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs) -> None`` after each ``step``."""
        return self._register(self._optimizer_step_post_hooks, hook, False)

    def register_state_dict_pre_hook(self, hook: Callable,
                                     prepend: bool = False) -> RemovableHandle:
        """Run ``hook(optimizer) -> None`` at the start of ``state_dict()``."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable,
                                      prepend: bool = False) -> RemovableHandle:
        """Run ``hook(optimizer, state_dict) -> state_dict or None`` at the end of
        ``state_dict()``; a returned dict replaces the result."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable,
                                          prepend: bool = False) -> RemovableHandle:
        """Run ``hook(optimizer, state_dict) -> state_dict or None`` before
        ``load_state_dict`` loads; a returned dict is loaded instead."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable,
                                           prepend: bool = False) -> RemovableHandle:
        """Run ``hook(optimizer) -> None`` after ``load_state_dict`` has loaded."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- pickling and printing --------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Install ``state``; groups saved without a newer hyper-parameter get its default,
        and ``step`` counters saved as numbers become tensors."""
        self.__dict__.update(state)
        if "_optimizer_step_pre_hooks" not in self.__dict__:
            self._init_hooks()
        for group in self.param_groups:
            for name, default in self.defaults.items():
                if default is not required:
                    group.setdefault(name, default)
            for p in group["params"]:
                p_state = self.state.get(p)
                if p_state and "step" in p_state and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = tensor(float(p_state["step"]), dtype=_get_scalar_dtype())

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
        return "\n".join(lines) + "\n)"

    # ---- parameter groups -------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters (e.g. to start training
        layers that were frozen); hyper-parameters it does not set take ``defaults``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)

        tensors, names = [], []
        for param in params:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names

        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not (param.is_leaf or getattr(param, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        ids = [id(p) for p in tensors]
        if len(ids) != len(set(ids)):
            _warn("optimizer contains a parameter group with duplicate parameters; in "
                  "future, this will cause an error; see "
                  "github.com/pytorch/pytorch/issues/40967 for more information")

        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- gradients and steps ----------------------------------------------------------
    @staticmethod
    def _closure_loss(closure):
        """Re-evaluate the model through ``closure`` (grad enabled), for ``step(closure)``."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: to ``None`` (the default), or to zeros in
        place with ``set_to_none=False``.

        The two differ for the next step: a parameter whose ``grad`` is ``None`` is skipped,
        while a zero gradient still moves it through momentum and weight decay.
        """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None):
        """Update the parameters once. ``closure`` re-evaluates the model and returns the
        loss; it runs with gradients enabled and its result is returned."""
        raise NotImplementedError

    # ---- saving and loading -----------------------------------------------------------
    def state_dict(self) -> StateDict:
        """The optimizer's state as ``{"state": {index: {...}}, "param_groups": [...]}``.

        Parameters are numbered in order across all groups; each group is a copy of the
        optimizer's group with ``"params"`` replaced by those numbers. The state tensors
        are the optimizer's own (not copies): ``copy.deepcopy`` the result to snapshot it.

        >>> import ember
        >>> w = ember.zeros(2, requires_grad=True)
        >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = ember.ones(2); opt.step()
        >>> sd = opt.state_dict()
        >>> list(sd["state"]), sd["param_groups"][0]["params"]
        ([0], [0])
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        index: dict[int, int] = {}
        start = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(index[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param: Tensor, value: Tensor, param_id,
                                                 param_groups, key=None):
        # ``step`` counters stay as saved (a CPU scalar) unless the group is fused or
        # capturable (then float32 on the parameter's device, as PyTorch); other state
        # follows its parameter's device and, for floating parameters, its dtype.
        fused = capturable = False
        for group in param_groups:
            if param_id in group["params"]:
                fused = group.get("fused", False)
                capturable = group.get("capturable", False)
                break
        if key == "step":
            if capturable or fused:
                return value.to(dtype=D.float32, device=param.device)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load a ``state_dict()``: groups and parameters are matched by position, state
        tensors are moved to their parameter's device (and floating dtype), and the saved
        hyper-parameters replace the current ones.

        Create an ``LRScheduler`` before loading: its construction would overwrite the loaded
        learning rates.
        """
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, param_id, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, saved_groups, key)
            if isinstance(value, dict):
                return {k: cast(param, v, param_id, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, param_id) for v in value)
            return value

        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v, k)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)
