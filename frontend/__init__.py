"""ember: an eager, define-by-run deep learning library with a plugin-based dispatcher.

>>> import ember
>>> x = ember.tensor([[1., 2.], [3., 4.]])
>>> (x @ x.t()).sum().item()
52.0
"""
# ruff: noqa: F401  (this module re-exports the public API)
from ember.dispatcher.dtypes import (DType as dtype, bfloat16, bool_ as bool, float16, float32,
                                     float64, int8, int16, int32, int64, uint8, complex64,
                                     complex128, complex32, uint16, uint32, uint64,
                                     get_default_dtype, set_default_dtype, promote_types,
                                     result_type as _result_type)
from ember.dispatcher.device import device
from ember.dispatcher.random import Generator, manual_seed, seed, initial_seed
from ember.dispatcher.allocator import OutOfMemoryError

from ._tensor import Tensor, Size
from ._functions import *  # noqa: F401,F403
from ._creation import (tensor, as_tensor, from_numpy, from_dlpack, zeros, ones, full, empty,
                        arange, linspace, eye, rand, randn, randint, randperm, zeros_like,
                        ones_like, full_like, empty_like, rand_like, randn_like, randint_like,
                        scalar_tensor)
from ._threads import set_num_threads, get_num_threads
from ._ops_reduce import *  # noqa: F401,F403
from ._ops_shape import *  # noqa: F401,F403
from ._ops_linalg import *  # noqa: F401,F403
from ._ops_misc import *  # noqa: F401,F403
from ._ops_nn import *  # noqa: F401,F403
from ._ops_sparse import *  # noqa: F401,F403
from ._ops_compat import *  # noqa: F401,F403
from ._foreach import *  # noqa: F401,F403
from ._storage import UntypedStorage, TypedStorage, is_storage
from ._storage import LEGACY as _LEGACY_STORAGES
__version__ = "0.1.0"     # (before the submodules, which read it)

from . import autograd, backends, nn, optim, utils
from . import distributions, fft, linalg, return_types, sparse, special
from ._device_ns import cpu, cuda, opencl, xpu, mps, DeviceNamespace as _DeviceNamespace
from ember.dispatcher.plugins import BACKENDS as _BACKENDS, ensure_loaded as _ensure_loaded
from . import accelerator, amp, compiler, func, futures, fx, hub, jit, profiler
from .amp import GradScaler
from .futures import Future
from . import _dynamo, _inductor, _logging
from . import overrides
from ._torch_c import C as _C   # (torch._C's switches: _C.DisableTorchFunctionSubclass)
from . import onnx
from . import library
from ._ops_namespace import ops
from . import export
from . import _autocast_entries, _docstrings, _numpy_aliases
import importlib as _importlib
import sys as _sys
from ._compile import compile  # noqa: A001  (torch.compile's name)
from ._spectral import stft, istft
from .serialization import save, load
from .autograd import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                       is_grad_enabled, is_inference_mode_enabled)

Tensor.stft, Tensor.istft = stft, istft


float = float32
double = float64
half = float16
long = int64
int = int32
short = int16
cfloat = complex64
cdouble = complex128
chalf = complex32


def result_type(tensor1, tensor2):
    """PyTorch's ``torch.result_type`` over tensors and Python numbers."""
    return _result_type(tensor1, tensor2)




# the legacy typed tensor classes (made from a table in _ops_shape): their docstrings
for _name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
              "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"):
    globals()[_name].__doc__ = (
        f"PyTorch's legacy CPU tensor type of dtype ``ember.{globals()[_name].dtype.name}``."
        f"\n\n``ember.{_name}(*sizes)`` makes an uninitialised tensor, ``ember.{_name}(data)``"
        f" a tensor of ``data``, ``ember.{_name}()`` an empty one; ``isinstance(t, "
        f"ember.{_name})`` tests for a CPU tensor of that dtype.")
del _name

# the public functions on PyTorch's autocast lists cast their inputs at entry
globals().update(_LEGACY_STORAGES)   # FloatStorage, LongStorage, ...: legacy TypedStorages
_autocast_entries.install(_sys.modules[__name__], nn.functional, linalg, Tensor)
# the method and in-place forms' docstrings, from their functions' ("See ember.abs")
_docstrings.fill(_sys.modules[__name__], Tensor)
# NumPy's ``axis=``/``keepdims=`` wherever PyTorch's argument parser accepts them
_numpy_aliases.install((_sys.modules[__name__], linalg, special, fft), Tensor)


#: submodules imported on first use of ``ember.<name>``
_ON_DEMAND = ("testing", "__future__", "__config__")


def __getattr__(name):
    """``ember.<device type>`` for any installed backend plugin (``ember.myaccel.
    memory_stats()``), made on first use, as ``ember.opencl`` and ``ember.cuda`` are."""
    if name in _ON_DEMAND:  # (torch.testing needs no import of its own either)
        return _importlib.import_module(f"{__name__}.{name}")
    if not name.startswith("_"):
        _ensure_loaded()
        if name in _BACKENDS:
            ns = globals()[name] = _DeviceNamespace(name)
            return ns
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


# the __torch_function__ hooks go in place now if a Tensor subclass asked while importing
_IMPORTED = True
overrides._ember_imported()
