"""``ember.Tensor``: storage + shape + strides + offset + dtype + device + version counter.

Methods mirror PyTorch's. Every op goes through the dispatcher; views share storage and
the version counter, and every in-place op bumps it.
"""
from __future__ import annotations

import copy
import weakref

import numpy as np

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import _SIZES, Size, TensorBase
from ember.dispatcher.defs import index as IX
from ember.dispatcher.defs.elementwise import POW_SPECIAL
from ember.dispatcher.defs.linalg import mm as _mm
from ember.dispatcher.device import device as Device, to_device
from ember.dispatcher.grad_mode import MODE
from ember.dispatcher.lazy import reading as _reading
from ember.dispatcher.plugins import backend_for

from . import _creation as K
from . import _storage as ST
from . import _dlpack
from . import _device_ns
from . import _functions as F
from . import (_ops_compat, _ops_linalg, _ops_misc, _ops_nn, _ops_reduce, _ops_shape,
               _ops_sparse)
from . import autograd
from . import overrides as _overrides
from . import _views as VW
from ._repr import tensor_repr
from ember.dispatcher.warn import warn as _warn

E = O.elementwise
_s = F._s
_PLAIN = frozenset((int, float, bool))
# what the arithmetic operators take as the other operand; for anything else they return
# NotImplemented, as PyTorch's do, so Python tries that object's reflected method (zuko's
# NestedTensor, a tuple of tensors, defines ``__rmul__`` for ``dt * f(t, x)``)
_OPERANDS = (TensorBase, bool, int, float, complex, np.generic, np.ndarray)


#: storages made by ``Tensor.pin_memory`` (page-locked host memory)
_PINNED = weakref.WeakSet()


#: PyTorch's warning for reading ``.grad`` of a non-leaf tensor that does not retain it
_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


class Tensor(TensorBase):
    """A multi-dimensional array on a device, as ``torch.Tensor``.

    >>> import ember
    >>> x = ember.arange(6.).view(2, 3)
    >>> x.t().is_contiguous()
    False
    """
    # (a dict: the values are the docstrings of the public fields' descriptors; "__dict__":
    # a tensor takes attributes of the user's, as PyTorch's does: pyro marks a constrained
    # parameter with ``value.unconstrained = weakref.ref(...)``. It is made on first use.)
    __slots__ = {"_grad": None,
                 "grad_fn": "The autograd node that made this tensor (its backward "
                            "function), or None for a leaf.",
                 "_acc_ref": None, "_hooks": None, "_retains": None, "__dict__": None}
    __array_priority__ = 1000

    def __new__(cls, *args, device=None):
        """PyTorch's legacy constructor: ``ember.Tensor(2, 3)`` (uninitialised, the default
        dtype), ``ember.Tensor([1, 2])`` (data), ``ember.Tensor()`` (empty)."""
        t = _ops_shape.legacy_new(D.get_default_dtype(), args, device)
        if cls is Tensor:
            return t
        sub = _new(cls)  # a subclass (with its own __dict__): the same tensor state
        for klass in type(t).__mro__:
            for name in getattr(klass, "__slots__", ()):
                if hasattr(t, name) and name not in ("__weakref__", "__dict__"):
                    setattr(sub, name, getattr(t, name))
        return sub

    def __init__(self, *args, **kwargs):
        pass  # everything happens in __new__

    # ---- subclasses: the __torch_function__ protocol (ember.overrides) ----------------------
    __torch_function__ = classmethod(_overrides.tensor_torch_function)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__torch_dispatch__" in cls.__dict__:
            raise NotImplementedError(
                f"{cls.__name__} defines __torch_dispatch__: ember has no dispatch level "
                "below autograd to hand ops to, so __torch_dispatch__ subclasses are not "
                "supported; override __torch_function__ instead")
        _overrides._on_subclass(cls)  # (the first subclass that does not opt out arms it)

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, **kwargs):
        """A ``cls`` instance sharing ``data``'s storage, without its autograd history,
        requiring grad if ``require_grad`` (PyTorch's way of making a subclass instance).

        Example:
            >>> class M(ember.Tensor): pass
            >>> type(ember.Tensor._make_subclass(M, ember.ones(2))).__name__
            'M'
        """
        with _overrides.DisableTorchFunctionSubclass():
            out = _ops_compat._as_subclass(data.detach(), cls)
            if require_grad:
                out.requires_grad_(True)
        return out

    # ---- metadata ----------------------------------------------------------------
    @property
    def ndim(self) -> int:
        """The number of dimensions (``len(self.shape)``)."""
        return len(self.shape)

    def dim(self) -> int:
        """The number of dimensions of the tensor.

        Example:
            >>> ember.zeros(2, 3).dim()
            2
        """
        return len(self.shape)

    ndimension = dim

    def size(self, dim=None):
        """The shape as an :class:`ember.Size`, or the size of dimension ``dim`` (an int).

        Args:
            dim (int, optional): the dimension (negative counts from the end); all if None.

        Example:
            >>> x = ember.zeros(2, 3)
            >>> x.size()
            ember.Size([2, 3])
            >>> x.size(-1)
            3
        """
        if dim is None:
            return self.shape
        return self.shape[C.normalize_dim(dim, len(self.shape))]

    def stride(self, dim=None):
        """The strides in elements (a tuple), or the stride of dimension ``dim``.

        The stride of a dimension is how many elements of storage lie between two neighbours
        along it.

        Example:
            >>> x = ember.zeros(2, 3)
            >>> x.stride(), x.t().stride()
            ((3, 1), (1, 3))
        """
        if dim is None:
            return tuple(self._stride)
        return self._stride[C.normalize_dim(dim, len(self.shape))]

    def storage_offset(self) -> int:
        """The index in the storage (in elements) of the tensor's first element.

        Example:
            >>> ember.arange(6.).view(2, 3)[1].storage_offset()
            3
        """
        return self._offset

    def numel(self) -> int:
        """The number of elements.

        Example:
            >>> ember.zeros(2, 3).numel()
            6
        """
        return C.numel(self.shape)

    nelement = numel

    def element_size(self) -> int:
        """The size of one element in bytes.

        Example:
            >>> ember.zeros(2, dtype=ember.float64).element_size()
            8
        """
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes (same as :meth:`element_size`)."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """The number of bytes the elements take (``numel() * itemsize``), not counting storage
        outside the tensor's view.
        """
        return self.numel() * self.dtype.itemsize

    def data_ptr(self) -> int:
        """The address of the tensor's first element (the storage's address plus the offset)."""
        base = getattr(C.host_storage(self), "data_ptr", 0)
        return int(base) + self._offset * self.dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements lie in storage in row-major order with no gaps.

        Args:
            memory_format (ember.memory_format, optional): check contiguity in that format
                instead (e.g. ``ember.channels_last``).

        Example:
            >>> x = ember.zeros(2, 3)
            >>> x.is_contiguous(), x.t().is_contiguous()
            (True, False)
        """
        if memory_format is None:
            return C.is_contiguous(self)
        return _ops_shape.is_in_format(self, memory_format)

    @property
    def grad(self):
        """The gradient ``backward()`` accumulated (None until then). Assigning checks what
        PyTorch checks: a tensor or None, not the tensor itself, and the same dtype, device
        and size."""
        g = self._grad
        if g is None and self.grad_fn is not None and not self._retains:
            _warn(_NON_LEAF_GRAD)
        return g

    @grad.setter
    def grad(self, value):
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        """Whether the tensor is a leaf of the autograd graph: True for tensors not made by a
        recorded op (``grad_fn`` is None), including every tensor that does not require grad.
        Only leaves get ``.grad`` filled by ``backward()``.

        Example:
            >>> a = ember.ones(2, requires_grad=True)
            >>> a.is_leaf, (a * 2).is_leaf
            (True, False)
        """
        return self.grad_fn is None

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor is on the CPU."""
        return self.device.type == "cpu"

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor is on a CUDA device."""
        return self.device.type == "cuda"

    def get_device(self) -> int:
        """The device index of the tensor: -1 on the CPU, the device's ordinal otherwise."""
        return -1 if self.device.type == "cpu" else self.device.index

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point type (float16, bfloat16, float32, float64).

        Example:
            >>> ember.tensor([1.]).is_floating_point(), ember.tensor([1]).is_floating_point()
            (True, False)
        """
        return self.dtype.is_floating_point

    @property
    def _version(self) -> int:
        return self._vc[0]

    def untyped_storage(self):
        """The storage the tensor views, as an ``ember.UntypedStorage`` (bytes): one
        object for every view of the same memory while it is alive, as in PyTorch.

        Example:
            >>> x = ember.zeros(4)
            >>> x.untyped_storage().nbytes(), x[2:].untyped_storage() is x.untyped_storage()
            (16, True)
        """
        return ST.untyped_of(self._storage, self.device)

    def storage(self):
        """The storage as an ``ember.TypedStorage`` of this tensor's dtype (deprecated in
        PyTorch, which warns once; ``untyped_storage()`` is the current form)."""
        return ST.typed_of(self)

    def is_set_to(self, tensor) -> bool:
        """Whether this tensor and ``tensor`` view the same memory with the same size,
        strides and offset."""
        return (self._storage is tensor._storage and self._offset == tensor._offset
                and tuple(self.shape) == tuple(tensor.shape)
                and tuple(self._stride) == tuple(tensor._stride))

    def set_(self, source=None, storage_offset=None, size=None, stride=None):
        """Make this tensor view ``source``'s memory, in place: a tensor (its storage, size,
        strides and offset), a storage (from ``storage_offset``, ``size`` and ``stride``;
        by default all of it, contiguous), or nothing (an empty storage).

        ember's storages keep their size: a geometry reaching past the storage's end raises
        (PyTorch grows a resizable storage instead).
        """
        if self.requires_grad and MODE.grad and self.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if source is None:
            if storage_offset is not None or size is not None:
                raise TypeError("set_() received an invalid combination of arguments")
            store, offset, shape, strides = C.empty((0,), self.dtype, self.device)._storage, \
                0, (0,), (1,)
        elif isinstance(source, TensorBase):
            if source.dtype is not self.dtype:
                names = [_CPP_TYPE_NAMES.get(t.dtype.name, t.dtype.name) for t in (source, self)]
                raise RuntimeError(f"Could not set tensor of type {names[0]} to a tensor of "
                                   f"type {names[1]}")
            store, offset, shape, strides = (source._storage, source._offset,
                                             tuple(source.shape), tuple(source._stride))
        elif ST.is_storage(source):
            if isinstance(source, ST.TypedStorage) and source.dtype is not self.dtype:
                raise RuntimeError(f"Expected a Storage of type {_storage_type(self.dtype)} or "
                                   f"an UntypedStorage, but got type "
                                   f"{_storage_type(source.dtype)} for "
                                   "argument 1 'storage'")
            if storage_offset is not None and size is None:
                raise TypeError("set_() received an invalid combination of arguments: "
                                "a storage offset needs a size")
            untyped = source.untyped()
            offset = int(storage_offset or 0)
            shape = (tuple(int(n) for n in size) if size is not None
                     else (untyped.nbytes() // self.dtype.itemsize,))
            strides = (tuple(int(n) for n in stride) if stride
                       else C.contiguous_strides(shape))
            store = untyped._s
            if self.device != untyped.device:
                raise RuntimeError(f"Attempted to set the storage of a tensor on device "
                                   f"\"{self.device}\" to a storage on different device "
                                   f"\"{untyped.device}\"")
            need = (offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides))
                    if all(shape) else offset) * self.dtype.itemsize
            if need > untyped.nbytes():
                raise RuntimeError(f"setStorage: sizes {list(shape)}, strides {list(strides)},"
                                   f" storage offset {offset}, and itemsize "
                                   f"{self.dtype.itemsize} requiring a storage size of {need} "
                                   f"are out of bounds for storage of size {untyped.nbytes()}"
                                   " (ember cannot grow a storage)")
        else:
            raise TypeError(f"set_(): expected a Tensor or a storage, got "
                            f"{type(source).__name__}")
        self._storage, self._offset = store, offset
        self.shape, self._stride = Size(shape), tuple(strides)
        C.bump(self)
        return self

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` in place and return the tensor.

        Only floating-point tensors can require gradients, and only a leaf can be set back
        to ``requires_grad=False``.

        Args:
            requires_grad (bool): whether autograd should record ops on this tensor.
                Default: True.

        Example:
            >>> ember.tensor([1., 2.]).requires_grad_().requires_grad
            True
        """
        if requires_grad and self.dtype._kind < 2:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self):
        """A tensor sharing storage (and version counter) with no graph history."""
        return C.view_of(self, self.shape, self._stride, self._offset)

    def detach_(self):
        """Detach the tensor from the graph in place: clear its ``grad_fn`` and
        ``requires_grad``, making it a leaf. Returns the tensor.
        """
        self.grad_fn = None
        self.requires_grad = False
        return self

    @property
    def data(self):
        """The tensor's data without autograd history: a tensor sharing storage with this one
        that does not require grad. Unlike :meth:`detach`, it has its own version counter
        (starting at 0), so writing through it hides the change from autograd's check that
        saved tensors are unmodified, as in PyTorch.

        Assigning ``t.data = other`` makes ``t`` use ``other``'s storage, shape, dtype and
        device, without autograd recording anything.

        Example:
            >>> w = ember.ones(2, requires_grad=True)
            >>> w.data
            tensor([1., 1.])
            >>> w.data.requires_grad
            False
        """
        d = self.detach()
        d._vc = [0]
        return d

    @data.setter
    def data(self, other):
        self._storage, self.shape, self._stride, self._offset = (
            other._storage, other.shape, other._stride, other._offset)
        self.dtype, self.device, self._vc = other.dtype, other.device, other._vc
        C.adopt(self)

    def module_load(self, other, assign=False):
        """What ``nn.Module.load_state_dict`` puts in this parameter's place from the state
        dict's ``other`` when ``ember.__future__.set_swap_module_params_on_conversion(True)``
        is set (then swapped in with ``ember.utils.swap_tensors``): ``other`` detached
        with ``assign``, else this tensor with ``other`` copied in, detached.

        Example:
            >>> w = ember.zeros(2)
            >>> w.module_load(ember.ones(2))
            tensor([1., 1.])
        """
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (see ``autograd.backward``)."""
        autograd.backward(self, gradient, retain_graph, create_graph, inputs)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a
        replacement. Returns a handle with ``remove()``."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if self.grad_fn is not None:   # (on the edge into this output of its node)
            return autograd._engine._edge(self).register_prehook(hook)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return autograd._engine._Handle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` on a leaf after its ``.grad`` has been accumulated in a
        backward pass (how DistributedDataParallel learns a gradient is ready)."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if self._hooks is None:
            self._hooks = []
        wrapped = autograd._engine.PostAccumulateHook(hook)
        self._hooks.append(wrapped)
        return autograd._engine._Handle(self._hooks, wrapped)

    def _hooks_list(self):
        return self._hooks or ()

    @property
    def retains_grad(self) -> bool:
        """Whether :meth:`retain_grad` was called on this non-leaf tensor (False for leaves)."""
        return bool(self._retains) and self.grad_fn is not None

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if self.grad_fn is None or self._retains:
            return
        self._retains = True
        ref = weakref.ref(self)

        def keep(grad):
            t = ref()
            if t is not None:
                t.grad = grad.detach() if t.grad is None else t.grad + grad.detach()
        autograd._engine._edge(self).register_prehook(keep)

    def share_memory_(self):
        """Move the storage into shared memory, in place and once (every view of it moves
        too), so that ``ember.multiprocessing`` sends this tensor to other processes as a
        handle they map instead of a copy. CPU only for now; other devices raise.

        >>> import ember
        >>> ember.zeros(3).share_memory_().is_shared()
        True
        """
        backend_for(self.device.type).share_storage(C.host_storage(self))
        return self

    def is_shared(self) -> bool:
        """Whether the storage lives in shared memory (see ``share_memory_``)."""
        return bool(backend_for(self.device.type).is_shared(C.host_storage(self)))

    def pin_memory(self, device=None):
        """A copy of this CPU tensor in page-locked host memory, from which host-to-device
        copies (``.to(dev, non_blocking=True)``) are queued without staging. Needs an
        accelerator plugin offering pinned memory (``device_api.pinned_buffer``)."""
        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.device}' memory: only dense CPU tensors "
                               f"can be pinned")
        api = _device_ns.pinning_api()
        if api is None:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        nbytes = self.numel() * self.dtype.itemsize
        try:
            storage = backend_for("cpu").wrap_host_buffer(api.pinned_buffer(max(nbytes, 1)))
        except C.OutOfMemoryError:
            raise
        except MemoryError as e:    # a plugin's page-locked memory ran out
            raise C.host_out_of_memory(f"the page-locked (pinned) copy of a {self.dtype.name} "
                                       f"tensor of shape {C.shape_str(self.shape)}", nbytes,
                                       e) from None
        out = C.new_tensor(storage, self.shape, C.contiguous_strides(self.shape), 0,
                           self.dtype, self.device, [0])
        out.copy_(self)
        _PINNED.add(storage)
        return out

    def is_pinned(self, device=None) -> bool:
        """Whether this tensor lives in page-locked memory made by ``pin_memory``."""
        return self._storage in _PINNED

    def record_stream(self, stream):
        """Mark this tensor's memory as used by ``stream`` too: when the tensor is freed, the
        caching allocator reuses the memory only after the work queued on ``stream``."""
        api = getattr(backend_for(self.device.type), "device_api", None)
        if api is None or not hasattr(api, "record_stream"):
            raise RuntimeError(f"record_stream(): the {self.device.type!r} backend has no "
                               f"streams")
        api.record_stream(self, stream)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))  # (the method: a subclass dispatches it)

    __hash__ = object.__hash__

    # ---- conversions -----------------------------------------------------------------
    def item(self):
        """The value of a one-element tensor as a Python number.

        Example:
            >>> ember.tensor([1.5]).item()
            1.5
        """
        _reading("Tensor.item()")
        return O.item(self)

    def tolist(self):
        """The tensor's values as a (nested) Python list; a 0-d tensor gives a number.

        Example:
            >>> ember.tensor([[1, 2], [3, 4]]).tolist()
            [[1, 2], [3, 4]]
        """
        _reading("Tensor.tolist()")
        if self.dtype is D.bfloat16 or self.dtype is D.complex32:   # (not NumPy dtypes)
            wide = D.float32 if self.dtype is D.bfloat16 else D.complex64
            return K.numpy_of(O.to(self, "cpu", wide), readonly=True).tolist()
        return K.numpy_of(self, force=True, readonly=True).tolist()

    def numpy(self, *, force=False):
        """A NumPy array sharing memory with this CPU tensor.

        Raises if the tensor requires grad while grad mode is on (use ``detach().numpy()``;
        under ``no_grad`` it is allowed, as in PyTorch) or is not on the CPU, unless
        ``force=True``, which detaches and copies to the CPU as needed. A bfloat16 tensor
        gives an ``ml_dtypes.bfloat16`` array.

        Args:
            force (bool): allow tensors that require grad or live on another device (then the
                result may be a copy). Default: False.

        Example:
            >>> ember.tensor([1., 2.]).numpy()
            array([1., 2.], dtype=float32)
        """
        if self.requires_grad and not force and MODE.grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        _reading("Tensor.numpy()")
        return K.numpy_of(self, force=force)

    def __array__(self, dtype=None, copy=None):
        _reading("a conversion to a NumPy array (__array__)")
        a = K.numpy_of(self, force=True)
        return a.astype(dtype) if dtype is not None else a

    def __dlpack__(self, stream=None, **kwargs):
        if self.device.type == "cuda":
            # the device address is shared; the consumer reads it once the work queued on
            # the tensor's device is done (stream -1: the consumer asks for no sync)
            if stream != -1:
                backend_for("cuda").synchronize()
            return _dlpack.export_capsule(self, None, (_dlpack.DLDeviceType.kDLCUDA,
                                                       self.device.index or 0))
        if self.device.type != "cpu":
            raise BufferError(f"__dlpack__: a tensor on {self.device} cannot be shared through "
                              f"DLPack (its memory is not addressable by other libraries: "
                              f"cpu and cuda tensors export it); copy it with .cpu() first")
        if self.dtype is D.bfloat16:    # (NumPy's DLPack has no bfloat16: ember's capsule)
            return _dlpack.export_capsule(self, np.frombuffer(C.host_storage(self, True),
                                                              dtype=np.uint8))
        return K.numpy_of(self).__dlpack__(**kwargs)

    @property
    def __cuda_array_interface__(self):
        """Numba's / CuPy's CUDA Array Interface (version 2, as PyTorch's) for a cuda
        tensor: its device address, shape, byte strides and NumPy type string."""
        if self.device.type != "cuda":
            raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor "
                                 f"type: {self.type()} If CUDA data is required use "
                                 f"tensor.cuda() to copy tensor to device memory.")
        if self.requires_grad:
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires "
                               "grad. If gradients aren't required, use var.detach() to get "
                               "Variable that doesn't require grad.")
        if self.dtype is D.bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16: the CUDA Array Interface "
                            "has no bfloat16 type string")
        item = self.dtype.itemsize
        contiguous = self._stride == C.contiguous_strides(self.shape)
        ptr = self._storage.data_ptr + self._offset * item if self.numel() else 0
        return {"typestr": self.dtype.to_numpy().str, "shape": tuple(self.shape),
                "strides": None if contiguous else tuple(s * item for s in self._stride),
                "data": (ptr, False), "version": 2}

    def __dlpack_device__(self):
        """``(device type, index)`` in DLPack's codes: cpu 1, cuda 2, opencl 4, any
        other device 12 (kDLExtDev)."""
        return (_dlpack.device_code(self.device.type), self.device.index or 0)

    def __bool__(self):
        n = self.numel()
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with "
                               f"{'more than one value' if n else 'no values'} is ambiguous")
        _reading("a data-dependent branch: bool() of a tensor (if t:, while t:, assert t, "
                 "and/or)")
        return bool(self.item())

    def __float__(self):
        _reading("float() of a tensor")
        if self.requires_grad and MODE.grad and not _FLOAT_WARNED[0]:
            _FLOAT_WARNED[0] = True     # once a process, as PyTorch's TORCH_WARN_ONCE
            _warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                  "unexpected behavior.\nConsider using tensor.detach() first.")
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __repr__(self):
        _reading("printing a tensor (repr/str)")
        text = tensor_repr(self, _read_only_numpy)
        if type(self) is not Tensor and _overrides._overrides(type(self)):
            text = _subclass_repr(text, type(self).__name__)
            if getattr(self, "_is_param", False):   # nn.Parameter of a subclass instance
                text = f"Parameter({text})"
        return text

    __str__ = __repr__

    def __format__(self, spec):
        if not self.shape:
            return self.item().__format__(spec)
        return repr(self).__format__(spec)

    def to(self, *args, **kwargs):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; a
        ``memory_format`` lays the result out in it."""
        device, dtype, copy = parse_to_args(args, kwargs)
        out = O.to(self, to_device(device) if device is not None else None, dtype, copy)
        fmt = kwargs.get("memory_format")
        return out if fmt is None else _ops_shape.to_memory_format(out, fmt)

    def cpu(self):
        """The tensor on the CPU: itself if already there, otherwise a copy."""
        return O.to(self, "cpu")

    def cuda(self, device=None):
        """The tensor on a CUDA device (``device``, or the current one): itself if already
        there, otherwise a copy.
        """
        return O.to(self, to_device(device if device is not None else "cuda"))

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """The type name (``'ember.FloatTensor'``), or a cast to ``dtype``: a dtype, a
        legacy class (``ember.DoubleTensor``) or its name (``'torch.DoubleTensor'``)."""
        if dtype is None:
            dtype = kwargs.pop("dtype", None)
        if dtype is None:
            prefix = "" if self.device.type == "cpu" else f"{self.device.type}."
            return f"{D.module_name}.{prefix}{D.torch_name(self.dtype)}Tensor"
        dt, dev = _ops_shape.parse_type(dtype)
        return O.to(self, dev if dev is not None and dev != self.device.type else None, dt)

    def float(self):
        """``self.to(ember.float32)``."""
        return O.to(self, None, D.float32)

    def double(self):
        """``self.to(ember.float64)``."""
        return O.to(self, None, D.float64)

    def cfloat(self):
        """``self.to(ember.complex64)``."""
        return O.to(self, None, D.complex64)

    def cdouble(self):
        """``self.to(ember.complex128)``."""
        return O.to(self, None, D.complex128)

    def chalf(self):
        """``self.to(ember.complex32)``."""
        return O.to(self, None, D.complex32)

    def half(self):
        """``self.to(ember.float16)``."""
        return O.to(self, None, D.float16)

    def bfloat16(self):
        """``self.to(ember.bfloat16)``."""
        return O.to(self, None, D.bfloat16)

    def int(self):
        """``self.to(ember.int32)``."""
        return O.to(self, None, D.int32)

    def long(self):
        """``self.to(ember.int64)``."""
        return O.to(self, None, D.int64)

    def short(self):
        """``self.to(ember.int16)``."""
        return O.to(self, None, D.int16)

    def char(self):
        """``self.to(ember.int8)``."""
        return O.to(self, None, D.int8)

    def byte(self):
        """``self.to(ember.uint8)``."""
        return O.to(self, None, D.uint8)

    def bool(self):
        """``self.to(ember.bool)``."""
        return O.to(self, None, D.bool_)

    def contiguous(self, memory_format=None):
        """A contiguous tensor with the same values: ``self`` if already contiguous, otherwise
        a copy.

        Args:
            memory_format (ember.memory_format, optional): the layout wanted, e.g.
                ``ember.channels_last``; row-major if None.

        Example:
            >>> x = ember.zeros(2, 3).t()
            >>> x.is_contiguous(), x.contiguous().is_contiguous()
            (False, True)
        """
        if memory_format is None:
            return O.contiguous(self)
        return _ops_shape.in_memory_format(self, memory_format)

    def clone(self, *, memory_format=None):
        """A copy of the tensor with its own storage; autograd records it (gradients flow back
        to ``self``).

        Args:
            memory_format (ember.memory_format, optional): the layout of the copy; by default
                (``preserve_format`` or None) the strides' order of a dense input (a transposed
                matrix stays transposed), contiguous otherwise.

        Example:
            >>> x = ember.tensor([1., 2.])
            >>> y = x.clone()
            >>> y[0] = 9.
            >>> x
            tensor([1., 2.])
        """
        return _ops_shape.clone(self, memory_format)

    def copy_(self, src, non_blocking=False):
        """Copy the values of ``src`` into this tensor in place and return it.

        ``src`` is broadcast to this tensor's shape and converted to its dtype and device.

        Args:
            src (Tensor): the values to copy.
            non_blocking (bool): accepted for compatibility; ignored.

        Example:
            >>> x = ember.zeros(3)
            >>> x.copy_(ember.tensor([1, 2, 3]))
            tensor([1., 2., 3.])
        """
        return O.copy_(self, src)

    def _overwrite(self, name, write):
        """An in-place write of constant values (fill_, zero_, random): in a graph (this
        tensor, or the base it views, requires grad) the overwritten values get a gradient
        of zeros, as PyTorch's ``ZeroBackward0`` / ``FillBackward`` give (not none: a
        ``.grad`` of zeros, and the graph stays connected)."""
        base = self._base
        if MODE.grad and (self.requires_grad or (base is not None and base.requires_grad)):
            tmp = C.empty(self.shape, self.dtype, self.device)
            write(tmp)
            keep = O.zeros((), D.bool_, self.device)   # where(False, self, tmp) is tmp
            return O.copy_(self, F.where(keep, self, tmp))
        return write(self)

    def fill_(self, value):
        """Fill the tensor with ``value`` in place and return it.

        Example:
            >>> ember.zeros(2).fill_(4)
            tensor([4., 4.])
        """
        if not isinstance(value, TensorBase):  # PyTorch checks a number (a tensor is cast)
            value = K.fill_scalar(value, self.dtype, "fill_", C.numel(self.shape), self.device)
        elif value.requires_grad and MODE.grad and len(value.shape) == 0:
            # (the value gets the sum of the gradient, as PyTorch's FillBackward1)
            keep = O.zeros((), D.bool_, self.device)
            return O.copy_(self, F.where(keep, self, value))
        return self._overwrite("fill", lambda t: O.fill_(t, value))

    def zero_(self):
        """Fill the tensor with zeros in place and return it.

        Example:
            >>> ember.ones(2).zero_()
            tensor([0., 0.])
        """
        return self._overwrite("zero", lambda t: O.fill_(t, 0))

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        """Fill the tensor in place with numbers drawn uniformly from ``[a, b)`` and return it.

        Args:
            a (float): the lower bound. Default: 0.0.
            b (float): the upper bound. Default: 1.0.
            generator (ember.Generator, optional): the random number generator.
        """
        return self._overwrite("uniform", lambda t: O.random_(t, "uniform", a, b, generator))

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Fill the tensor in place with numbers drawn from a normal distribution and return it.

        Args:
            mean (float): the mean. Default: 0.0.
            std (float): the standard deviation. Default: 1.0.
            generator (ember.Generator, optional): the random number generator.
        """
        return self._overwrite("normal", lambda t: O.random_(t, "normal", mean, std, generator))

    def new_empty(self, *size, dtype=None, device=None, **kw):
        """An uninitialised tensor of the given size with this tensor's dtype and device (unless
        ``dtype``/``device`` are given).
        """
        return K.empty(*size, dtype=dtype or self.dtype, device=device or self.device, **kw)

    def new_zeros(self, *size, dtype=None, device=None, **kw):
        """A tensor of zeros of the given size with this tensor's dtype and device (unless
        ``dtype``/``device`` are given).

        Example:
            >>> ember.tensor([1, 2]).new_zeros(3)
            tensor([0, 0, 0])
        """
        return K.zeros(*size, dtype=dtype or self.dtype, device=device or self.device, **kw)

    def new_ones(self, *size, dtype=None, device=None, **kw):
        """A tensor of ones of the given size with this tensor's dtype and device (unless
        ``dtype``/``device`` are given).

        Example:
            >>> ember.tensor([1., 2.]).new_ones((1, 2))
            tensor([[1., 1.]])
        """
        return K.ones(*size, dtype=dtype or self.dtype, device=device or self.device, **kw)

    def new_full(self, size, fill_value, *, dtype=None, device=None, **kw):
        """A tensor of shape ``size`` filled with ``fill_value``, with this tensor's dtype and
        device (unless ``dtype``/``device`` are given).

        Example:
            >>> ember.tensor([1., 2.]).new_full((2,), 3)
            tensor([3., 3.])
        """
        return K.full(size, fill_value, dtype=dtype or self.dtype,
                      device=device or self.device, **kw)

    def new_tensor(self, data, *, dtype=None, device=None, **kw):
        """A new tensor holding (a copy of) ``data``, with this tensor's dtype and device
        (unless ``dtype``/``device`` are given).

        Example:
            >>> ember.tensor([1., 2.]).new_tensor([3, 4])
            tensor([3., 4.])
        """
        return K.tensor(data, dtype=dtype or self.dtype, device=device or self.device, **kw)

    # ---- views ------------------------------------------------------------------------
    def view(self, *shape, dtype=None, size=None):
        """A tensor sharing this tensor's storage with a new shape, or its bytes reinterpreted as
        another dtype.

        ``view(*shape)``: the number of elements must match (one size may be -1, inferred)
        and the new shape must be compatible with the strides (no copy is made; use
        ``reshape`` when it may not be). ``view(dtype)``: the same memory read as ``dtype``.

        Example:
            >>> ember.arange(6.).view(2, 3)
            tensor([[0., 1., 2.],
                    [3., 4., 5.]])
            >>> ember.arange(6.).view(-1, 2).shape
            ember.Size([3, 2])
        """
        if dtype is not None or size is not None:   # (the keyword forms of both overloads)
            if shape or (dtype is not None and size is not None):
                raise TypeError("view() received an invalid combination of arguments")
            shape = (dtype,) if dtype is not None else (size,)
        if len(shape) == 1 and isinstance(shape[0], D.DType):
            if shape[0] is self.dtype:  # (a plain view, recorded for autograd)
                return VW.view(self, self.shape)
            return _ops_shape.view_dtype(self, shape[0])
        return VW.view(self, *shape)

    view_as = VW.view_as
    reshape = VW.reshape
    reshape_as = VW.reshape_as
    expand = VW.expand
    expand_as = VW.expand_as
    permute = VW.permute

    def repeat(self, *sizes):
        """The tensor tiled ``sizes`` times along each dimension (a copy).

        ``sizes`` may have more entries than the tensor has dimensions: leading size-1
        dimensions are added first.

        Example:
            >>> ember.tensor([1, 2]).repeat(2, 2)
            tensor([[1, 2, 1, 2],
                    [1, 2, 1, 2]])
        """
        if not sizes:
            raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
        if len(sizes) == 1 and not isinstance(sizes[0], int):
            sizes = tuple(sizes[0])
        return F.repeat(self, sizes)

    @property
    def T(self):
        """The tensor with its dimensions reversed (the transpose of a matrix).

        On a tensor of other than 2 dimensions ``.T`` is deprecated (a warning, once per
        process, as PyTorch): use ``.mT`` or ``permute``.

        Example:
            >>> ember.tensor([[1, 2, 3], [4, 5, 6]]).T
            tensor([[1, 4],
                    [2, 5],
                    [3, 6]])
        """
        if self.ndim != 2 and not _T_WARNED:
            _warn_T()
        return V.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        """The tensor with its last two dimensions swapped (a batch of transposed matrices)."""
        return V.transpose(self, -2, -1)

    # (the methods' other parameters have PyTorch's names in the dispatcher's views already;
    # only the functions need ``_views``' wrappers, for ``input=``)
    transpose = V.transpose
    t = VW.t
    squeeze = V.squeeze
    unsqueeze = V.unsqueeze
    flatten = V.flatten
    unflatten = V.unflatten
    narrow = V.narrow
    select = V.select
    unfold = VW.unfold
    as_strided = VW.as_strided
    movedim = moveaxis = V.movedim
    diagonal = VW.diagonal
    split = VW.split_method
    chunk = VW.chunk
    unbind = VW.unbind
    swapaxes = swapdims = V.transpose

    def t_(self):
        """In-place :meth:`t`: transpose a matrix (of at most 2 dimensions) by changing its
        shape and strides.
        """
        return self._set_view(V.t(self))

    def transpose_(self, d0, d1):
        """In-place :meth:`transpose`: swap dimensions ``d0`` and ``d1`` of this tensor."""
        return self._set_view(V.transpose(self, d0, d1))

    def squeeze_(self, dim=None):
        """In-place :meth:`squeeze`: drop size-1 dimensions (only ``dim`` if given)."""
        return self._set_view(V.squeeze(self, dim))

    def unsqueeze_(self, dim):
        """In-place :meth:`unsqueeze`: insert a size-1 dimension at ``dim``."""
        return self._set_view(V.unsqueeze(self, dim))

    def _set_view(self, v):
        if self.requires_grad and MODE.grad:
            raise NotImplementedError("in-place view ops (t_, transpose_, squeeze_, unsqueeze_)"
                                      " on a tensor that requires grad are not supported yet")
        self.shape, self._stride, self._offset = v.shape, v._stride, v._offset
        return self

    # ---- indexing ----------------------------------------------------------------------
    def __getitem__(self, key):
        v = V.basic_index(self, key)
        return v if v is not None else IX.index(self, key)

    def __setitem__(self, key, value):
        value = _s(value)
        if isinstance(value, TensorBase) and value.shape[:1] == (1,):
            # PyTorch drops the value's leading size-1 dimensions before broadcasting it to
            # the indexed part (t[i] = row of shape (1, n))
            lead = 1
            while lead < len(value.shape) and value.shape[lead] == 1:
                lead += 1
            value = V.reshape(value, value.shape[lead:])
        v = V.basic_index(self, key)
        if v is not None or key is True:
            # PyTorch copies into a basic-index view (into self[None] for a bare True): a
            # value that does not broadcast to it fails first, then a view with internal
            # overlap is refused, even for a scalar (fill_ itself allows it)
            target = V.basic_index(self, None) if v is None else v
            if isinstance(value, TensorBase) and value.shape != target.shape:
                C.expand_to(value, target.shape)
            C.check_writable(target, "__setitem__")
        if MODE.grad and (self.requires_grad or (isinstance(value, TensorBase)
                                                 and value.requires_grad)):
            IX.index_put_(self, key if isinstance(key, tuple) else (key,), value)
            return
        if v is None:
            IX.index_put_(self, key, value)
            return
        if isinstance(value, TensorBase):
            O.copy_(v, value)
        else:
            O.fill_(v, value)

    def where(self, condition, other):
        """``ember.where(condition, self, other)``: this tensor's values where ``condition``
        holds, ``other``'s elsewhere.

        Example:
            >>> x = ember.tensor([1., 2., 3.])
            >>> x.where(x > 1, ember.tensor(0.))
            tensor([0., 2., 3.])
        """
        return O.where(condition, self, _s(other))

    def index_put_(self, indices, values, accumulate=False):
        """Write ``values`` into this tensor at the positions ``indices`` select, in place
        (``self[indices] = values``).

        Args:
            indices (tuple of Tensor): one index tensor per indexed dimension.
            values (Tensor): the values, broadcast to the indexed shape.
            accumulate (bool): add the values to what is there (repeated indices sum)
                instead of overwriting. Default: False.

        Example:
            >>> x = ember.zeros(3)
            >>> x.index_put_((ember.tensor([0, 2]),), ember.tensor([1., 5.]))
            tensor([1., 0., 5.])
        """
        return IX.index_put_(self, _key(indices), _s(values), accumulate)

    def index_put(self, indices, values, accumulate=False):
        """Out-of-place :meth:`index_put_`: a copy of the tensor with ``values`` written at
        ``indices``.

        Example:
            >>> ember.zeros(3).index_put((ember.tensor([1, 1]),), ember.tensor([1., 2.]),
            ...                          accumulate=True)
            tensor([0., 3., 0.])
        """
        return IX.index_put(self, _key(indices), _s(values), accumulate)

    # ---- operators -------------------------------------------------------------------------
    def __add__(self, other):
        if type(other) is not Tensor and type(other) not in _PLAIN:
            if not isinstance(other, _OPERANDS):
                return NotImplemented
            other = _s(other)
        return E("add", self, other)

    def __radd__(self, other):
        # (self first, as PyTorch: the same value, and the tensor's edge first in
        # grad_fn.next_functions)
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return E("add", self, _s(other))

    def __iadd__(self, other):
        return E("add", self, _s(other), inplace=True)

    def __sub__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return F.sub(self, other)

    def __rsub__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return F.sub(_s(other), self)

    def __isub__(self, other):
        return F.sub_(self, other)

    def __mul__(self, other):
        if type(other) is not Tensor and type(other) not in _PLAIN:
            if not isinstance(other, _OPERANDS):
                return NotImplemented
            other = _s(other)
        return E("mul", self, other)

    def __rmul__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return E("mul", self, _s(other))

    def __imul__(self, other):
        return E("mul", self, _s(other), inplace=True)

    def __truediv__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return F.div(self, other)

    def __rtruediv__(self, other):
        # PyTorch's number / tensor: the reciprocal times the number (its bits, which
        # differ from a division by an ulp in about a third of float32 cases; and its
        # gradient saves the reciprocal, not the tensor)
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        if not isinstance(other, TensorBase):
            return F.reciprocal(self) * other
        return F.div(other, self)

    def __itruediv__(self, other):
        return F.div_(self, other)

    def __floordiv__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return F.floor_divide(self, other)

    def __rfloordiv__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return F.floor_divide(_s(other), self)

    def __ifloordiv__(self, other):
        return F.floor_divide_(self, other)

    def __mod__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return E("remainder", self, _s(other))

    def __rmod__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return E("remainder", _s(other), self)

    def __imod__(self, other):
        return E("remainder", self, _s(other), inplace=True)

    def __pow__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        to = type(other)
        if self.dtype.is_floating_point and not (
                (to is int or to is float) and other in POW_SPECIAL):
            return E("pow", self, _s(other))
        return F._pow(self, _s(other))  # (integer tensors: PyTorch's checks of the exponent)

    def __rpow__(self, other):
        if type(other) is not Tensor and not isinstance(other, _OPERANDS):
            return NotImplemented
        return E("pow", _s(other), self)

    def __ipow__(self, other):
        return F._pow(self, _s(other), inplace=True)

    def __matmul__(self, other):
        if (type(other) is Tensor and len(self.shape) == 2 and len(other.shape) == 2
                and self.dtype is other.dtype and tuple.__getitem__(self.shape, 1) ==
                tuple.__getitem__(other.shape, 0)):
            return _mm(self, other)  # (matmul of two matrices is mm; checks passed)
        if not isinstance(other, TensorBase):
            return NotImplemented
        # Tensor.matmul, not F.matmul: under autocast its entry casts mixed operands
        return Tensor.matmul(self, other)

    def __rmatmul__(self, other):
        if not isinstance(other, TensorBase):
            return NotImplemented
        return Tensor.matmul(other, self)

    def __neg__(self):
        return F.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return E("abs", self)

    def __invert__(self):
        if self.dtype.is_floating_point:
            raise TypeError("~ (bitwise_not) is only supported for integer and bool tensors, "
                            f"got {self.dtype.name}")
        return E("bitwise_not", self)

    def __and__(self, other):
        return E("bitwise_and", self, _s(other))

    __rand__ = __and__

    def __iand__(self, other):
        return E("bitwise_and", self, _s(other), inplace=True)

    def __or__(self, other):
        return E("bitwise_or", self, _s(other))

    __ror__ = __or__

    def __ior__(self, other):
        return E("bitwise_or", self, _s(other), inplace=True)

    def __xor__(self, other):
        return E("bitwise_xor", self, _s(other))

    __rxor__ = __xor__

    def __ixor__(self, other):
        return E("bitwise_xor", self, _s(other), inplace=True)

    def __eq__(self, other):
        try:
            other = _s(other)
        except TypeError:
            return NotImplemented
        return E("eq", self, other)

    def __ne__(self, other):
        try:
            other = _s(other)
        except TypeError:
            return NotImplemented
        return E("ne", self, other)

    def __lt__(self, other):
        return E("lt", self, _s(other))

    def __le__(self, other):
        return E("le", self, _s(other))

    def __gt__(self, other):
        return E("gt", self, _s(other))

    def __ge__(self, other):
        return E("ge", self, _s(other))

    # ---- pickling (plain data, no code) -------------------------------------------------
    def __deepcopy__(self, memo):
        if self.grad_fn is not None:  # (PyTorch's rule: graph leaves only)
            raise RuntimeError("deepcopy() of a tensor that is not a graph leaf (it was "
                               f"computed by {type(self.grad_fn).__name__}) is not supported, "
                               "as in PyTorch: detach() it first, or copy the leaves it "
                               "was computed from")
        fn, args = self.__reduce_ex__(4)
        if type(self) is Tensor:
            # its gradient and its attributes come along, as PyTorch's
            out = memo[id(self)] = _rebuild(*copy.deepcopy(args[0] if fn is _rebuild_state
                                                          else args, memo))
            if self._grad is not None:
                out.grad = copy.deepcopy(self._grad, memo)
            if fn is _rebuild_state:
                out.__dict__.update(copy.deepcopy(args[1], memo))
            return out
        cls, data, state = args
        # a subclass: a leaf stays a leaf (pickling, as PyTorch's, gives a view)
        with _overrides.DisableTorchFunctionSubclass():
            out = _ops_compat._as_subclass(_rebuild(*copy.deepcopy(data[:3], memo), False),
                                           cls)
            if data[3]:
                out.requires_grad_(True)
        memo[id(self)] = out
        if state:
            out.__dict__.update(copy.deepcopy(state, memo))
        return out

    def __reduce_ex__(self, proto):
        arr = K.numpy_of(O.to(self, "cpu", D.float32 if self.dtype is D.bfloat16 else None))
        args = (np.require(arr, requirements="C"), self.dtype.name, str(self.device),
                self.requires_grad)
        if type(self) is not Tensor:  # a subclass: its type and attributes come back too
            return (_rebuild_subclass, (type(self), args, getattr(self, "__dict__", None)))
        if self.__dict__:  # attributes set on it come back too, as PyTorch's
            return (_rebuild_state, (args, self.__dict__))
        return (_rebuild, args)


def parse_to_args(args, kwargs):
    """``(device, dtype, copy)`` from the arguments of ``Tensor.to`` / ``Module.to``."""
    kwargs = dict(kwargs)
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, TensorBase):
            device, dtype = a.device, a.dtype
        elif isinstance(a, D.DType):
            dtype = a
        elif isinstance(a, bool) or a is None:  # (None: no device, as PyTorch's to(None))
            continue
        elif isinstance(a, (str, Device)):
            if isinstance(a, str) and a.replace("ember.", "") in D._BY_NAME:
                dtype = D.to_dtype(a)
            else:
                device = a
        elif isinstance(a, int):
            device = Device("cuda", a)  # a bare int is a CUDA ordinal, as in PyTorch
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got "
                            f"({type(a).__name__})")
    return device, dtype, copy


def _storage_type(dtype) -> str:
    """PyTorch's name of a storage's element type in its errors (``float``, ``Long``)."""
    name = ST.LEGACY_BY_DTYPE[dtype].__name__[:-len("Storage")] if (
        dtype in ST.LEGACY_BY_DTYPE) else dtype.name
    return "float" if name == "Float" else name


#: the C++ type names PyTorch's ``.grad`` errors print for a gradient's dtype
_CPP_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                   "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
                   "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                   "bool": "bool"}


def _check_grad(t, g):
    """PyTorch's checks on ``t.grad = g`` (THPVariable_set_grad), in its order."""
    if not isinstance(g, TensorBase):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(g).__name__}")
    if g is t:
        raise RuntimeError("can't assign Variable as its own grad")
    if g.dtype is not t.dtype:
        raise RuntimeError(f"attempting to assign a gradient with dtype "
                           f"'{_CPP_TYPE_NAMES.get(g.dtype.name, g.dtype.name)}' to a tensor "
                           f"with grad_dtype '{D.torch_name(t.dtype)}'. The gradient must "
                           "match the tensor's dtype.")
    if g.device.type != t.device.type:
        raise RuntimeError(f"attempting to assign a gradient with device type "
                           f"'{g.device.type}' to a tensor with device type '{t.device.type}'. "
                           "Please ensure that the gradient and the tensor are on the same "
                           "device")
    if g.device != t.device:
        raise RuntimeError(f"attempting to assign a gradient located on device with index "
                           f"'{_index(g.device)}' to a tensor located on device with index "
                           f"'{_index(t.device)}'. Please ensure that the gradient and the "
                           "tensor are on the same device")
    if tuple(g.shape) != tuple(t.shape):
        raise RuntimeError(f"attempting to assign a gradient of size '{list(g.shape)}' to a "
                           f"tensor of size '{list(t.shape)}'. Please ensure that the gradient "
                           "and the tensor are the same size")


def _index(device) -> int:
    return -1 if device.index is None else device.index


def _key(indices):
    return (indices,) if isinstance(indices, TensorBase) else tuple(indices)


def _rebuild(arr, dtype, device, requires_grad):
    t = K.tensor(arr, dtype=D.to_dtype(dtype), device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_state(args, state):
    t = _rebuild(*args)
    t.__dict__.update(state)
    return t


def _subclass_repr(text, name):
    """PyTorch's repr of a subclass instance: its class name for ``tensor``, continuation
    lines moved to line up under the new opening parenthesis."""
    if not text.startswith("tensor("):
        return text
    shift = len(name) - len("tensor")
    lines = text.split("\n")
    lines[0] = name + lines[0][len("tensor"):]
    for i in range(1, len(lines)):
        line = lines[i]
        lines[i] = " " * shift + line if shift >= 0 else line[min(-shift, len(line) -
                                                                  len(line.lstrip(" "))):]
    return "\n".join(lines)


def _rebuild_subclass(cls, args, state):
    with _overrides.DisableTorchFunctionSubclass():
        # (as PyTorch's: a view of the rebuilt tensor, so one that requires grad is no leaf)
        t = _ops_compat._as_subclass(_rebuild(*args), cls)
    if state:
        t.__dict__.update(state)
    return t


_T_WARNED = False
_FLOAT_WARNED = [False]


def _warn_T():
    global _T_WARNED
    _T_WARNED = True
    _warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape "
          "is deprecated and it will throw an error in a future release. Consider "
          "`x.mT` to transpose batches of matrices or `x.permute(*torch.arange(x.ndim - "
          "1, -1, -1))` to reverse the dimensions of a tensor.", UserWarning)


def _read_only_numpy(t, force=False):
    return K.numpy_of(t, force=force, readonly=True)


def _make(storage, shape, stride, offset, dtype, device, vc):
    t = _new(Tensor)
    t._storage = storage
    t.shape = shape if type(shape) is Size else (_SIZES.get(shape) or C.as_size(shape))
    t._stride = stride
    t._offset = offset
    t.dtype = dtype
    t.device = device
    t._vc = vc
    t.requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._base = None
    t._acc_ref = None
    t._hooks = None
    t._retains = False
    t._view_gen = 0
    return t


_new = object.__new__
C.set_tensor_factory(_make, Tensor)
_overrides._TENSOR[0] = Tensor
_overrides._OVERRIDES[Tensor] = False   # (plain tensors never dispatch)
_overrides._AS_SUBCLASS[0] = _ops_compat._as_subclass

# ---- methods that forward to the functional API -------------------------------------------
_METHODS = (F.ELEMENTWISE + [
    "add", "sub", "div", "floor_divide", "neg", "where", "clamp", "clip", "clamp_min",
    "clamp_max", "lerp", "addcmul", "addcdiv", "sum", "mean", "prod", "amax", "amin",
    "argmax", "argmin", "max", "min", "var", "std", "logsumexp", "cumsum", "cumprod", "all",
    "any", "norm", "softmax", "log_softmax", "sort", "argsort", "topk", "gather", "scatter",
    "scatter_add", "index_select", "index_add", "masked_fill", "masked_select", "nonzero",
    "flip", "fliplr", "flipud", "roll", "tril", "triu", "matmul", "mm", "bmm", "mv", "dot",
    "outer", "addmm", "square", "count_nonzero", "isclose", "allclose", "equal", "take",
    "float_power", "multiply", "subtract", "divide", "true_divide", "negative", "absolute",
    "greater", "greater_equal", "less", "less_equal", "not_equal", "argwhere", "nansum",
    "nanmean",
    "remainder", "fmod", "broadcast_to", "relu", "round", "pow"])
_INPLACE = list(F.INPLACE) + ["add_", "sub_", "div_", "neg_", "floor_divide_", "clamp_",
                              "clip_", "scatter_", "scatter_add_", "index_add_",
                              "masked_fill_", "relu_", "round_", "pow_"]


def _install():
    for name, fn in F.METHODS.items():  # the elementwise ops' method forms, generated
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)
    for name in _METHODS:
        if name not in Tensor.__dict__:
            setattr(Tensor, name, getattr(F, name))
    for name in _INPLACE:
        fn = F.INPLACE.get(name) or getattr(F, name)
        setattr(Tensor, name, fn)
    for mod in (_ops_reduce, _ops_shape, _ops_linalg, _ops_misc, _ops_nn, _ops_sparse,
                _ops_compat):
        for name, fn in mod.TENSOR_METHODS.items():
            if name not in Tensor.__dict__:
                setattr(Tensor, name, fn)
    # (a sparse COO argument: dense.mm(sparse) is dense @ sparse, as torch.mm's)
    Tensor.mm, Tensor.matmul = _ops_sparse.mm, _ops_sparse.matmul


_install()
