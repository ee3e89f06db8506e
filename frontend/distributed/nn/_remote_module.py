"""``RemoteModule``: PyTorch's module that runs on another worker over RPC, which ember
does not have."""
from __future__ import annotations

from ember import nn


class RemoteModule(nn.Module):
    """PyTorch's ``RemoteModule``: a module created on a remote worker whose ``forward``
    runs there through ``torch.distributed.rpc``.

    ember has no RPC framework (``ember.distributed`` runs collectives and point-to-point
    messages over MPI), so constructing one raises ``NotImplementedError``. Run the module
    on every rank and exchange tensors with the collectives of
    ``ember.distributed.nn.functional``, or with ``send``/``recv``, instead.

    Args:
        remote_device (str): ``"<workername>/<device>"`` in PyTorch.
        module_cls (type): the ``nn.Module`` subclass to build on the remote worker.
        args (tuple, optional): its positional arguments.
        kwargs (dict, optional): its keyword arguments.
    """

    def __init__(self, remote_device: str, module_cls: type, args: tuple | None = None,
                 kwargs: dict | None = None):
        raise NotImplementedError(
            "RemoteModule needs torch.distributed.rpc, and ember has no RPC framework; run "
            "the module on every rank and exchange tensors with the collectives of "
            "ember.distributed.nn.functional (or send/recv) instead")
