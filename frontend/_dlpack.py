"""DLPack capsules of CPU memory, read and written here: every import (``from_dlpack``),
and the export of bfloat16, which NumPy's DLPack cannot carry (NumPy has no bfloat16;
ml_dtypes' is refused by NumPy's DLPack). Other dtypes export through NumPy
(``ndarray.__dlpack__``).

The structures are DLPack's (``dlpack.h``, the unversioned ``DLManagedTensor`` of the
``"dltensor"`` capsule): an exported capsule keeps the tensor alive until the consumer
calls its deleter (or, never consumed, until the capsule is freed); an imported one is
renamed ``"used_dltensor"`` and its deleter runs when the last tensor viewing the memory
goes.
"""
from __future__ import annotations

import ctypes
import enum

import numpy as np

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D

__all__ = ["export_capsule", "import_capsule", "DL_CODES", "DLDeviceType", "device_code"]


class DLDeviceType(enum.IntEnum):
    """The device codes of the DLPack standard."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


_DEVICE_CODES = {"cpu": DLDeviceType.kDLCPU, "cuda": DLDeviceType.kDLCUDA,
                 "opencl": DLDeviceType.kDLOpenCL}


def device_code(device_type: str) -> int:
    """DLPack's code of an ember device type (a third party's device: kDLExtDev)."""
    return int(_DEVICE_CODES.get(device_type, DLDeviceType.kDLExtDev))


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DELETER)]

#: (type code, bits) of DLPack's DLDataTypeCode -> ember dtype
DL_CODES = {(0, 8): D.int8, (0, 16): D.int16, (0, 32): D.int32, (0, 64): D.int64,
            (1, 8): D.uint8, (1, 16): D.uint16, (1, 32): D.uint32, (1, 64): D.uint64,
            (2, 16): D.float16, (2, 32): D.float32, (2, 64): D.float64,
            (4, 16): D.bfloat16, (6, 8): D.bool_, (5, 64): D.complex64,
            (5, 128): D.complex128}
_TO_CODE = {v: k for k, v in DL_CODES.items()}

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
# the same C function typed for a borrowed PyObject* (inside the capsule's destructor)
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

_NAME = b"dltensor"
_USED = b"used_dltensor"
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

#: address of an exported DLManagedTensor -> what it keeps alive
_LIVE: dict = {}


def _release(address: int) -> None:
    _LIVE.pop(address, None)


@_DELETER
def _deleter(managed):
    _release(ctypes.addressof(managed.contents))


def _capsule_gone(capsule_ptr):
    # a capsule never consumed still owns its tensor: free it (a consumed one was renamed)
    if _api.PyCapsule_IsValid(capsule_ptr, _NAME):
        _release(_get_pointer_raw(capsule_ptr, _NAME))


_capsule_destructor = _CAPSULE_DESTRUCTOR(_capsule_gone)


def export_capsule(t, storage_bytes, device=None):
    """A ``"dltensor"`` capsule for the tensor ``t``. On the CPU ``storage_bytes`` is the
    NumPy uint8 array of its storage's bytes; on a device whose memory the consumer can
    address (cuda) it is None and ``device`` is ``(DLPack device type, index)``: the
    storage's device address is shared. What the capsule points to stays alive until the
    consumer is done."""
    if storage_bytes is not None:
        data_address = storage_bytes.ctypes.data
    else:
        data_address = t._storage.data_ptr
    code, bits = _TO_CODE[t.dtype]
    n = len(t.shape)
    shape = (ctypes.c_int64 * max(n, 1))(*t.shape)
    strides = (ctypes.c_int64 * max(n, 1))(*t._stride)
    m = _DLManagedTensor()
    m.dl_tensor.data = data_address
    m.dl_tensor.device = _DLDevice(*(device or (DLDeviceType.kDLCPU, 0)))
    m.dl_tensor.ndim = n
    m.dl_tensor.dtype = _DLDataType(code, bits, 1)
    m.dl_tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.byte_offset = t._offset * t.dtype.itemsize
    m.manager_ctx = None
    m.deleter = _deleter
    address = ctypes.addressof(m)
    _LIVE[address] = (m, shape, strides, t, storage_bytes)
    return _api.PyCapsule_New(address, _NAME, ctypes.cast(_capsule_destructor,
                                                          ctypes.c_void_p))


class _Owner:
    """Holds an imported DLManagedTensor; its deleter runs when this goes."""
    __slots__ = ("address", "deleter")

    def __init__(self, address, deleter):
        self.address = address
        self.deleter = deleter

    def __del__(self):
        if self.deleter:
            self.deleter(ctypes.cast(self.address, ctypes.POINTER(_DLManagedTensor)))


def import_capsule(capsule):
    """``(numpy array over the memory (bfloat16 as uint16), ember dtype)`` for a
    ``"dltensor"`` capsule of CPU memory; the capsule is consumed (its deleter runs when
    the array and every view of it are gone)."""
    address = _api.PyCapsule_GetPointer(capsule, _NAME)
    m = _DLManagedTensor.from_address(address)
    dl = m.dl_tensor
    if dl.device.device_type not in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
        raise BufferError(f"from_dlpack: only CPU memory can be imported (the capsule's "
                          f"device type is {dl.device.device_type})")
    key = (dl.dtype.code, dl.dtype.bits)
    if dl.dtype.lanes != 1 or key not in DL_CODES:
        raise BufferError(f"from_dlpack: unsupported DLPack dtype (code {key[0]}, "
                          f"{key[1]} bits, {dl.dtype.lanes} lanes)")
    dt = DL_CODES[key]
    n = dl.ndim
    shape = tuple(dl.shape[i] for i in range(n))
    strides = tuple(dl.strides[i] for i in range(n)) if dl.strides else \
        C.contiguous_strides(shape)
    item = dt.itemsize
    count = 0 if 0 in shape else 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    _api.PyCapsule_SetName(capsule, _USED)
    owner = _Owner(address, m.deleter)
    np_dt = np.uint16 if dt is D.bfloat16 else dt.to_numpy()
    if count == 0:
        return np.empty(shape, np_dt), dt
    buf = (ctypes.c_uint8 * (count * item)).from_address(dl.data + dl.byte_offset)
    buf._owner = owner          # the memory stays while any view of it does
    flat = np.frombuffer(buf, dtype=np_dt)
    arr = np.lib.stride_tricks.as_strided(flat, shape=shape,
                                          strides=tuple(s * item for s in strides))
    return arr, dt
