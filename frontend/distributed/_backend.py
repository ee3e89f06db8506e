"""Backend names, availability, launch environment, debug level and error classes.

ember has one transport, MPI. PyTorch's other backend names (``"gloo"``, ``"nccl"``,
``"ucc"``) are accepted by ``init_process_group`` and run over MPI (see
:func:`transport_for`), but the ``is_<name>_available()`` functions answer for the
backends themselves: only MPI is there.
"""
from __future__ import annotations

import enum
import importlib.util
import os

from . import _lifecycle as lifecycle

__all__ = ["Backend", "DebugLevel", "DistError", "DistBackendError", "DistNetworkError",
           "DistStoreError", "QueueEmptyError", "get_debug_level", "set_debug_level",
           "set_debug_level_from_env", "is_mpi_available", "is_gloo_available",
           "is_nccl_available", "is_ucc_available", "is_xccl_available",
           "is_backend_available", "get_default_backend_for_device",
           "is_torchelastic_launched", "get_node_local_rank", "supports_complex"]

#: how to start an ember.distributed job, for error messages
LAUNCH_HINT = "python -m ember.distributed.run -n N script.py"


# ---- errors ----------------------------------------------------------------------------
class DistError(RuntimeError):
    """The base of the errors ``ember.distributed`` raises for a failed communication (a
    ``RuntimeError``, as PyTorch's)."""


class DistBackendError(DistError):
    """A collective failed in the transport (ember: a timeout waiting for other ranks)."""


class DistNetworkError(DistError):
    """A network error (PyTorch's; ember's MPI transport reports through MPI itself)."""


class DistStoreError(DistError):
    """A key-value store operation failed, e.g. ``get``/``wait`` timed out waiting for a
    key."""


class QueueEmptyError(DistStoreError):
    """``Store.queue_pop(key, block=False)`` found the queue empty."""


# ---- backends ---------------------------------------------------------------------------
class Backend(str):
    """PyTorch's backend names as string constants, and their normalisation.

    ``Backend(name)`` returns the lower-case name (``Backend("GLOO") == "gloo"``); like
    PyTorch's, it accepts any string (``init_process_group`` is where an unknown backend is
    refused) and raises ``ValueError`` for a non-string.

    >>> import ember.distributed as dist
    >>> dist.Backend("GLOO"), dist.Backend.MPI
    ('gloo', 'mpi')
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"

    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI, FAKE]
    #: PyTorch's default backend per device type (ember runs all of them over MPI)
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL, "xpu": XCCL, "mps": GLOO}
    backend_capability = {GLOO: ["cpu", "cuda"], NCCL: ["cuda"], XCCL: ["xpu"],
                          UCC: ["cpu", "cuda"], MPI: ["cpu", "cuda"],
                          FAKE: ["cpu", "cuda", "hpu", "xpu"]}

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        value = getattr(Backend, name.upper(), None)
        if not isinstance(value, str):
            value = name.lower()
        return super().__new__(cls, value)

    @classmethod
    def register_backend(cls, name, func, extended_api=False, devices=None) -> None:
        """Not supported: ember's only transport is MPI, and third-party process-group
        backends (C++ ``ProcessGroup`` classes) cannot plug into it."""
        raise NotImplementedError(
            f"Backend.register_backend({name!r}): ember.distributed runs every process "
            "group over MPI and has no way to plug in another process-group backend")


#: backend names init_process_group runs over MPI: same collectives, same results
MPI_COMPATIBLE = ("mpi", "gloo", "nccl", "ucc")


def transport_for(backend) -> str:
    """The transport ``init_process_group(backend=...)`` uses: ``"mpi"`` for ``None``,
    ``"mpi"``, PyTorch's ``"gloo"``, ``"nccl"``, ``"ucc"`` and device lists of them
    (``"cpu:gloo,cuda:nccl"``); anything else is a ``ValueError`` that says what to do."""
    if backend is None:
        return "mpi"
    if not isinstance(backend, str):
        raise ValueError(f"init_process_group(): backend must be a string, got "
                         f"{type(backend).__name__}")
    names = []
    for part in backend.split(","):
        device, _, name = part.strip().rpartition(":")
        names.append((device, Backend(name.strip())))
    bad = [name for _, name in names if name not in MPI_COMPATIBLE]
    if bad or not names:
        raise ValueError(
            f"init_process_group(): backend {backend!r} is not available in ember. "
            f"ember.distributed runs over MPI: pass backend='mpi' (PyTorch's 'gloo', 'nccl' "
            f"and 'ucc' are accepted too and run over MPI) and launch the script with "
            f"`{LAUNCH_HINT}`")
    return "mpi"


def check_launch_environment(world_size) -> None:
    """Refuse to start a one-process MPI job where the user expects several processes: a
    script started by ``torchrun`` (``WORLD_SIZE`` > 1 in the environment, no MPI launcher)
    or given ``world_size`` > 1 without ``mpiexec`` would otherwise train alone, silently."""
    if lifecycle.launched_by_mpi():
        return
    env_size = os.environ.get("WORLD_SIZE")
    try:
        env_size = int(env_size) if env_size is not None else None
    except ValueError:
        env_size = None
    wanted = world_size if world_size not in (None, -1) and world_size > 1 else env_size
    if wanted is not None and wanted > 1:
        source = ("world_size argument" if wanted == world_size else
                  "WORLD_SIZE environment variable (set by torchrun or torch.distributed."
                  "launch)")
        raise RuntimeError(
            f"init_process_group(): the {source} asks for {wanted} processes, but this "
            f"process was not started by an MPI launcher, so ember.distributed would run it "
            f"alone as a world of size 1. ember's processes find each other through MPI, "
            f"not torchrun's MASTER_ADDR/MASTER_PORT rendezvous: launch with "
            f"`python -m ember.distributed.run -n {wanted} script.py` (or mpiexec) instead")


def is_mpi_available() -> bool:
    """Whether the MPI backend is available: True when mpi4py is installed (checked without
    importing it, which would start MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_gloo_available() -> bool:
    """False: ember has no Gloo backend (``init_process_group("gloo")`` runs over MPI)."""
    return False


def is_nccl_available() -> bool:
    """False: ember has no NCCL backend (``init_process_group("nccl")`` runs over MPI,
    staging device tensors through the host)."""
    return False


def is_ucc_available() -> bool:
    """False: ember has no UCC backend (``init_process_group("ucc")`` runs over MPI)."""
    return False


def is_xccl_available() -> bool:
    """False: ember has no XCCL (Intel GPU) backend."""
    return False


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` (any case) is available: only ``"mpi"``, when mpi4py is
    installed.

    >>> import ember.distributed as dist
    >>> dist.is_backend_available("nccl")
    False
    """
    return Backend(backend) == Backend.MPI and is_mpi_available()


def get_default_backend_for_device(device) -> str:
    """The backend ember uses for tensors of ``device`` (a string or ``ember.device``):
    ``"mpi"`` for every device with data (tensors of other devices than the CPU are staged
    through the host); ``ValueError`` for ``"meta"``, as PyTorch's.

    >>> import ember.distributed as dist
    >>> dist.get_default_backend_for_device("cpu")
    'mpi'
    """
    kind = device if isinstance(device, str) else getattr(device, "type", None)
    if not isinstance(kind, str):
        raise TypeError(f"get_default_backend_for_device(): expected a device or a string, "
                        f"got {type(device).__name__}")
    kind = kind.split(":")[0]
    if kind == "meta":
        raise ValueError(f"Default backend not registered for device : {kind}")
    return Backend.MPI


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchelastic (``torchrun``): PyTorch's rule, the
    ``TORCHELASTIC_RUN_ID`` environment variable is set."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


#: environment variables that give a process's rank on its node: PyTorch's launchers'
#: first, then Open MPI's and MPICH's (ember's launcher starts ranks through them)
_LOCAL_RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank among the processes on its node: ``LOCAL_RANK`` (PyTorch's
    launchers), else what the MPI launcher says (``OMPI_COMM_WORLD_LOCAL_RANK`` of Open
    MPI, ``MPI_LOCALRANKID`` of MPICH), else ``fallback_rank``; ``RuntimeError`` if none.

    >>> import ember.distributed as dist
    >>> dist.get_node_local_rank(fallback_rank=0)  # doctest: +SKIP
    0
    """
    for name in _LOCAL_RANK_VARS:
        if name in os.environ:
            return int(os.environ[name])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment (nor an MPI launcher's local rank). Consider "
        "passing fallback_rank to allow `get_node_local_rank` to work, assuming you are not "
        "running in a multi-device context and want the code to run locally instead; "
        f"launch with `{LAUNCH_HINT}` to run several processes.")


def supports_complex(reduceOp) -> bool:
    """Whether the reduction ``reduceOp`` is defined for complex numbers: ``False`` for
    ``MAX``, ``MIN`` and ``PRODUCT`` (PyTorch's answer), ``True`` for ``SUM`` and ``AVG``.
    (ember's MPI transport carries no complex dtype yet: such tensors are refused by every
    collective.)

    >>> import ember.distributed as dist
    >>> dist.supports_complex(dist.ReduceOp.SUM), dist.supports_complex(dist.ReduceOp.MAX)
    (True, False)
    """
    return str(reduceOp).lower() not in ("max", "min", "product", "band", "bor", "bxor")


# ---- debug level ------------------------------------------------------------------------
class DebugLevel(enum.IntEnum):
    """``TORCH_DISTRIBUTED_DEBUG``'s levels: ``OFF``, ``INFO``, ``DETAIL``. ember records the
    level; its collectives check their arguments across ranks at every level (turn that off
    with ``EMBER_DIST_CHECKS=0``)."""

    OFF = 0
    INFO = 1
    DETAIL = 2


_DEBUG_LEVEL: DebugLevel | None = None      # None: read the environment on first use


def set_debug_level(level: DebugLevel) -> None:
    """Set the debug level (a :class:`DebugLevel`)."""
    global _DEBUG_LEVEL
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level(): expected an ember.distributed.DebugLevel, got "
                        f"{type(level).__name__}")
    _DEBUG_LEVEL = level


def set_debug_level_from_env() -> None:
    """Set the debug level from ``TORCH_DISTRIBUTED_DEBUG`` (``OFF``, ``INFO`` or
    ``DETAIL``, any case; ``OFF`` when unset); ``ValueError`` for another value."""
    global _DEBUG_LEVEL
    value = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper()
    if value not in DebugLevel.__members__:
        raise ValueError("The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.")
    _DEBUG_LEVEL = DebugLevel[value]


def get_debug_level() -> DebugLevel:
    """The debug level: the last :func:`set_debug_level`, else ``TORCH_DISTRIBUTED_DEBUG``.

    >>> import ember.distributed as dist
    >>> dist.get_debug_level() in tuple(dist.DebugLevel)
    True
    """
    if _DEBUG_LEVEL is None:
        set_debug_level_from_env()
    return _DEBUG_LEVEL
