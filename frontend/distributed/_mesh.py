"""``DeviceMesh`` and ``init_device_mesh`` (PyTorch's n-dimensional layouts of ranks, for
tensor and pipeline parallelism): not implemented; both raise ``NotImplementedError``."""
from __future__ import annotations

__all__ = ["DeviceMesh", "init_device_mesh"]

_WHY = ("ember.distributed has no DeviceMesh: it implements data parallelism (process "
        "groups, collectives, DistributedDataParallel) but not DTensor, FSDP2 or tensor "
        "parallelism, which build on meshes; make the groups of a mesh's dimensions with "
        "new_group / new_subgroups_by_enumeration instead")


class DeviceMesh:
    """PyTorch's n-dimensional array of ranks: not implemented (constructing one raises
    ``NotImplementedError``)."""

    def __init__(self, device_type: str, mesh, *, mesh_dim_names=None,
                 backend_override=None, _init_backend: bool = True):
        raise NotImplementedError(_WHY)


def init_device_mesh(device_type: str, mesh_shape: tuple, *, mesh_dim_names=None,
                     backend_override=None) -> DeviceMesh:
    """PyTorch's constructor of a :class:`DeviceMesh`: not implemented (raises
    ``NotImplementedError``)."""
    raise NotImplementedError(_WHY)
