"""The few private PyTorch internals that registry packages touch, for ``ember.as_torch``.

Under ``python -m ember.as_torch`` the alias maps ``torch._C`` to :data:`C` and
``torch.utils._pytree`` to :data:`pytree`, two module objects built here. Nothing here is
part of ember's own API; it exists so that packages written for PyTorch, which call a
handful of ``torch._C`` names at import or call time, run unedited. Each name, and what it
does on ember:

``_log_api_usage_once(event)``
    PyTorch's usage telemetry hook (torchmetrics calls it in ``Metric.__init__``). ember
    records no telemetry: a no-op.
``_get_tracing_state()``
    The TorchScript tracer's state, ``None`` outside ``torch.jit.trace``. ember never builds
    a TorchScript graph (``ember.jit.trace`` only runs the function), so it is always
    ``None``.
``DisableTorchFunctionSubclass``, ``DisableTorchFunction``, ``_disabled_torch_function_impl``
    The ``__torch_function__`` switches and opt-out of :mod:`ember.overrides`.
``_are_functorch_transforms_active()``
    Whether a functorch transform (``vmap``/``grad``) is wrapping the tensors. ember's
    transforms call the function on ordinary tensors (``vmap`` loops over the batch), so
    code never sees a wrapped tensor: always ``False`` (kornia picks its fast in-place paths
    on this).

Any other ``torch._C`` name raises ``AttributeError`` naming it.

:data:`fake_tensor` is ``torch._subclasses.fake_tensor`` (in the package
:data:`subclasses`, ``torch._subclasses``) with its one name packages import:
``is_fake(t)``, whether ``t`` is a FakeTensor (kornia asks before data-dependent loops).
ember traces with meta tensors and real ones, never FakeTensors: always ``False``.
:data:`proxy_tensor` is ``torch.fx.experimental.proxy_tensor`` (in :data:`fx_experimental`)
with ``get_proxy_mode()``, the ``make_fx`` tracing mode in effect: ember has no
``make_fx``, so there is none, ``None``.

:data:`prims_common` is ``torch._prims_common`` with its type alias ``DeviceLikeType``
(``str | torch.device | int``), which torch-pca imports for annotations.
:data:`data_utils_collate` is ``torch.utils.data._utils.collate`` (in :data:`data_utils`):
ember's collate functions under PyTorch's names (``default_collate``,
``default_collate_fn_map``, ``collate_tensor_fn``, ``np_str_obj_array_pattern``, ...), which
monai imports.
:data:`dtensor_experimental` is ``torch.distributed._tensor.experimental`` (in
:data:`dtensor_private`) with ``implicit_replication()``, a context manager that lets DTensor
ops take plain tensors: ember has no DTensors, so it does nothing (opacus imports it).
:data:`composable_fsdp` is ``torch.distributed._composable.fsdp`` (in :data:`composable`):
the names of :mod:`ember.distributed.fsdp` (``FSDPModule``, ``fully_shard``,
``MixedPrecisionPolicy``).

:data:`pytree` is ``torch.utils._pytree``'s public-in-practice part (x-transformers,
ema-pytorch and torch-einops-utils import it): ``tree_flatten``, ``tree_unflatten``,
``tree_map``, ``tree_map_only``, ``tree_leaves``, ``tree_structure``, ``tree_all``,
``tree_any``, ``TreeSpec``, ``LeafSpec``. Containers are PyTorch's: tuple, list, dict
(insertion order), ``OrderedDict``, ``defaultdict``, namedtuple, ``deque``; everything else
(``None`` included, as in PyTorch 2.13) is a leaf.
"""
from __future__ import annotations

import collections
import contextlib
import types
from typing import Union

from ember.dispatcher.device import device as _device

from . import overrides as _overrides
from .distributed import fsdp as _fsdp
from .utils.data import _collate

__all__ = ["C", "pytree", "subclasses", "fake_tensor", "fx_experimental", "proxy_tensor",
           "prims_common", "data_utils", "data_utils_collate", "dtensor_private",
           "dtensor_experimental", "composable", "composable_fsdp"]


def _log_api_usage_once(event: str) -> None:
    """PyTorch's telemetry hook; ember records no usage events."""
    return None


def _get_tracing_state():
    """``None``: ember never holds a TorchScript tracing state."""
    return None


def _are_functorch_transforms_active() -> bool:
    """``False``: ember's ``vmap``/``grad`` hand functions ordinary tensors."""
    return False


def is_fake(x) -> bool:
    """``False``: ember has no FakeTensor (``torch._subclasses.fake_tensor.is_fake``)."""
    return False


def get_proxy_mode():
    """``None``: no ``make_fx`` tracing mode is ever in effect on ember."""
    return None


def _c_getattr(name):
    raise AttributeError(f"module 'torch._C' (ember.as_torch) has no attribute {name!r}: "
                         f"torch._C.{name} is a PyTorch C++ internal ember does not provide")


# ---- torch.utils._pytree ----------------------------------------------------------------
def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(node):
    """``(kind, context, children)`` for a container, ``None`` for a leaf."""
    if _is_namedtuple(node):
        return "namedtuple", type(node), list(node)
    t = type(node)
    if t is tuple or t is list:
        return t, None, list(node)
    if t is collections.OrderedDict:
        return t, list(node), list(node.values())
    if t is collections.defaultdict:
        return t, (node.default_factory, list(node)), list(node.values())
    if t is dict:
        return t, list(node), list(node.values())
    if t is collections.deque:
        return t, node.maxlen, list(node)
    return None


def _rebuild(kind, context, values):
    if kind == "namedtuple":
        return context(*values)
    if kind is tuple or kind is list:
        return kind(values)
    if kind is collections.defaultdict:
        factory, keys = context
        return collections.defaultdict(factory, zip(keys, values))
    if kind is dict or kind is collections.OrderedDict:
        return kind(zip(context, values))
    if kind is collections.deque:
        return collections.deque(values, maxlen=context)
    raise TypeError(f"tree_unflatten: unknown container kind {kind!r}")


class TreeSpec:
    """The structure of a pytree: container kind, its context (keys, type) and children."""

    def __init__(self, type, context, children_specs):
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self) -> bool:
        return False

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and not isinstance(other, LeafSpec)
                and self.type == other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    def __hash__(self):
        return hash((str(self.type), self.num_leaves))

    def __repr__(self):
        kind = self.type if isinstance(self.type, str) else self.type.__name__
        return f"TreeSpec({kind}, {self.context!r}, {self.children_specs!r})"

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def flatten_up_to(self, tree):
        """The subtrees of ``tree`` at this spec's leaf positions."""
        out = []
        self._flatten_up_to(tree, out)
        return out

    def _flatten_up_to(self, tree, out):
        got = _children(tree)
        kind = got[0] if got is not None else type(tree)
        if kind != self.type:
            name = self.type if isinstance(self.type, str) else self.type.__name__
            raise ValueError(f"Node type mismatch; expected {name}, but got {type(tree)}.")
        _, context, children = got
        if len(children) != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got "
                             f"{len(children)}.")
        if isinstance(self.context, list) or (kind is collections.defaultdict):
            keys = context[1] if kind is collections.defaultdict else context
            want = self.context[1] if kind is collections.defaultdict else self.context
            if set(keys) != set(want):
                raise ValueError(f"Node keys mismatch; expected {want}, but got {keys}.")
            children = [tree[k] for k in want]
        for spec, child in zip(self.children_specs, children):
            spec._flatten_up_to(child, out)


class LeafSpec(TreeSpec):
    """The spec of a single leaf."""

    def __init__(self):
        super().__init__(None, None, [])
        self.num_leaves = 1

    def is_leaf(self) -> bool:
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __hash__(self):
        return 1

    def __repr__(self):
        return "*"

    def _flatten_up_to(self, tree, out):
        out.append(tree)


def tree_flatten(tree, is_leaf=None):
    """``(leaves, spec)`` of ``tree``; ``tree_unflatten(leaves, spec)`` rebuilds it."""
    leaves = []
    return leaves, _flatten(tree, leaves, is_leaf)


def _flatten(tree, leaves, is_leaf):
    got = None if (is_leaf is not None and is_leaf(tree)) else _children(tree)
    if got is None:
        leaves.append(tree)
        return LeafSpec()
    kind, context, children = got
    return TreeSpec(kind, context, [_flatten(c, leaves, is_leaf) for c in children])


def tree_unflatten(leaves, treespec):
    """The tree of structure ``treespec`` holding ``leaves`` in order."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance "
                        f"of TreeSpec but got item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but "
                         f"the spec refers to a pytree that holds {treespec.num_leaves} items "
                         f"({treespec}).")
    it = iter(leaves)
    return _unflatten(it, treespec)


def _unflatten(it, spec):
    if spec.is_leaf():
        return next(it)
    return _rebuild(spec.type, spec.context, [_unflatten(it, c) for c in spec.children_specs])


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """``func`` applied leafwise; ``rests`` hold the extra arguments at the same positions."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """``func`` applied to the leaves that are instances of ``type_or_types``."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree,
                    is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None) -> bool:
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None) -> bool:
    return any(map(pred, tree_leaves(tree, is_leaf)))


pytree = types.ModuleType("torch.utils._pytree", "torch.utils._pytree on ember (see "
                          "ember._torch_c).")
for _name in ("TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves",
              "tree_structure", "tree_map", "tree_map_only", "tree_all", "tree_any"):
    setattr(pytree, _name, globals()[_name])
del _name


C = types.ModuleType("torch._C", "torch._C on ember: the few names listed in ember._torch_c.")
for _f in (_log_api_usage_once, _get_tracing_state, _are_functorch_transforms_active):
    setattr(C, _f.__name__, _f)
# the __torch_function__ switches, which subclasses written for PyTorch use (ember.overrides)
C.DisableTorchFunctionSubclass = _overrides.DisableTorchFunctionSubclass
C.DisableTorchFunction = _overrides.DisableTorchFunction
C._disabled_torch_function_impl = _overrides._disabled_torch_function_impl
for _f in (_overrides._is_torch_function_enabled, _overrides._is_torch_function_mode_enabled,
           _overrides._is_torch_function_all_disabled):
    setattr(C, _f.__name__, _f)
C.__getattr__ = _c_getattr
del _f


def _shim(name: str, package: bool = False, **attrs) -> types.ModuleType:
    """A module ``name`` holding ``attrs`` (a package if ``package``), documented as one of
    this module's shims."""
    m = types.ModuleType(name, f"{name} on ember (see ember._torch_c).")
    if package:
        m.__path__ = []
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


fake_tensor = _shim("torch._subclasses.fake_tensor", is_fake=is_fake)
subclasses = _shim("torch._subclasses", package=True, fake_tensor=fake_tensor)
proxy_tensor = _shim("torch.fx.experimental.proxy_tensor", get_proxy_mode=get_proxy_mode)
fx_experimental = _shim("torch.fx.experimental", package=True, proxy_tensor=proxy_tensor)
# torch._prims_common's type alias of what names a device (torch-pca annotates with it)
prims_common = _shim("torch._prims_common", DeviceLikeType=Union[str, _device, int])
# torch.utils.data._utils.collate: the collate functions under PyTorch's names (monai)
data_utils_collate = _shim(
    "torch.utils.data._utils.collate", collate=_collate.collate,
    default_collate=_collate.default_collate, default_convert=_collate.default_convert,
    default_collate_fn_map=_collate.default_collate_fn_map,
    collate_tensor_fn=_collate._collate_tensor, collate_numpy_array_fn=_collate._collate_ndarray,
    collate_numpy_scalar_fn=_collate._collate_np_scalar,
    collate_float_fn=_collate._collate_float, collate_int_fn=_collate._collate_int,
    collate_str_fn=_collate._collate_str, np_str_obj_array_pattern=_collate._NP_STR_OBJ,
    default_collate_err_msg_format=_collate._ERR)
data_utils = _shim("torch.utils.data._utils", package=True, collate=data_utils_collate)


@contextlib.contextmanager
def implicit_replication():
    """``torch.distributed._tensor.experimental.implicit_replication``: lets DTensor ops take
    plain tensors as replicated. ember has no DTensors, so there is nothing to replicate."""
    yield


dtensor_experimental = _shim("torch.distributed._tensor.experimental",
                             implicit_replication=implicit_replication)
dtensor_private = _shim("torch.distributed._tensor", package=True,
                        experimental=dtensor_experimental)
# torch.distributed._composable.fsdp: FSDP2's old home, the names of ember.distributed.fsdp
composable_fsdp = _shim("torch.distributed._composable.fsdp", FSDPModule=_fsdp.FSDPModule,
                        fully_shard=_fsdp.fully_shard,
                        MixedPrecisionPolicy=_fsdp.MixedPrecisionPolicy)
composable = _shim("torch.distributed._composable", package=True, fsdp=composable_fsdp)
