"""``ZeroRedundancyOptimizer``: an optimizer whose state is sharded across the ranks (ZeRO
stage 1), as ``torch.distributed.optim.ZeroRedundancyOptimizer``.

Every rank holds all the parameters but runs a local optimizer on its own shard of them
only, so each rank keeps about ``1 / world_size`` of the optimizer state (Adam's two moment
buffers are the memory this saves). After the local step, every rank broadcasts the
parameters it owns, so all replicas leave ``step()`` equal.

The partition is PyTorch's, so a checkpoint's layout and each rank's share match it: for
every parameter group in turn, its parameters sorted by size (largest first, ties in their
order) each go to the rank with the fewest elements so far (the lowest such rank on a tie).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from itertools import chain
from typing import Any

import ember
from ember.optim import Optimizer

from .. import _core as core
from .._groups import get_global_rank
from .._objects import broadcast_object_list
from ._functional import functional_optim_map

__all__ = ["ZeroRedundancyOptimizer"]

logger = logging.getLogger(__name__)


def _copy_to_device(value: Any, device) -> Any:
    """``value`` with every tensor in its lists, tuples and dicts copied to ``device``."""
    if isinstance(value, ember.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        copied = [_copy_to_device(v, device) for v in value]
        return copied if isinstance(value, list) else tuple(copied)
    if isinstance(value, Mapping):
        return {k: _copy_to_device(v, device) for k, v in value.items()}
    return value


def _sync_param_groups(src: list[dict], dst: list[dict]) -> None:
    """Copy every hyper-parameter (all but ``"params"``) of the groups ``src`` to ``dst``:
    how a learning-rate scheduler's change to the exposed groups reaches the local optimizer,
    and back."""
    if len(src) != len(dst):
        raise AssertionError("Mismatch between number of source and destination parameter "
                             "groups")
    for src_group, dst_group in zip(src, dst):
        for key, value in src_group.items():
            if key != "params":
                dst_group[key] = value


class _ZeROJoinHook:
    """The join hook of a :class:`ZeroRedundancyOptimizer`: a rank that has run out of
    inputs keeps taking optimizer steps (``main_hook``), so that the broadcasts of the ranks
    still training find a partner."""

    def __init__(self, zero: ZeroRedundancyOptimizer):
        if not isinstance(zero, ZeroRedundancyOptimizer):
            raise AssertionError("ZeRO join hook requires passing in a "
                                 "ZeroRedundancyOptimizer instance as the state")
        self.zero = zero

    def main_hook(self) -> None:
        """Update this rank's shard (its gradients must be set) and broadcast it."""
        self.zero.step()

    def post_hook(self, is_last_joiner: bool) -> None:
        """Nothing to do once every rank has joined."""


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap an optimizer class and shard its state across the ranks of ``process_group``,
    as PyTorch's ``torch.distributed.optim.ZeroRedundancyOptimizer``
    (`ZeRO <https://arxiv.org/abs/1910.02054>`_).

    Each rank's local optimizer (``self.optim``, an ``optimizer_class``) updates only the
    parameters assigned to that rank; ``step()`` then broadcasts each rank's parameters
    to all others, so every rank's model is the same again. Gradients must already agree
    across ranks (``DistributedDataParallel`` or an ``all_reduce`` of them does that).
    Every parameter belongs to one rank whole (a sorted-greedy partition by size), and all
    must be dense tensors of one type.

    Args:
        params (Iterable): tensors, or dicts defining parameter groups, to optimize.
        optimizer_class (type): the local optimizer's class (``ember.optim.AdamW``, ...).
        process_group (ProcessGroup, optional): the ranks sharing the state (default:
            the default group).
        parameters_as_bucket_view (bool): pack each rank's parameters into one flat
            tensor, so that one broadcast per rank syncs them; ``param.data`` then views
            that tensor (default ``False``: one broadcast per parameter).
        overlap_with_ddp (bool): overlap the step with ``DistributedDataParallel``'s
            gradient communication; ember does not support it (``NotImplementedError``).
        **defaults: the local optimizer's hyper-parameters (``lr=``, ``betas=``, ...).

    Example (run with ``python -m ember.distributed.run -n 2 script.py``)::

        import ember, ember.distributed as dist
        from ember.distributed.optim import ZeroRedundancyOptimizer
        from ember.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("mpi")
        model = DDP(ember.nn.Linear(8, 8))
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=ember.optim.AdamW,
                                      lr=1e-3, weight_decay=0.1)
        model(ember.randn(4, 8)).sum().backward()
        opt.step()                 # every rank's model updated, each Adam state on one rank
        opt.consolidate_state_dict(to=0)
        if dist.get_rank() == 0:
            ember.save(opt.state_dict(), "optimizer.pt")
    """

    def __init__(self, params: Iterable, optimizer_class: type[Optimizer],
                 process_group: Any | None = None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults: Any):
        params = self._verify_and_init_params(params)
        self._verify_same_dense_param_type()
        if overlap_with_ddp:
            raise NotImplementedError(
                "ZeroRedundancyOptimizer(overlap_with_ddp=True) runs the step inside "
                "DistributedDataParallel's communication hooks (ddp_zero_hook), which "
                "ember's DistributedDataParallel does not have; pass overlap_with_ddp=False "
                "and call step() after backward()")
        # Optimizer.__init__ calls add_param_group, which repartitions only once this is set
        self.initialized = False
        super().__init__(params, defaults)

        self._param_to_rank_cache: dict[ember.Tensor, int] = {}
        self._param_to_index_cache: dict[ember.Tensor, int] = {}
        self._partition_parameters_cache: list[list[dict]] = []
        self._index_to_param_cache: list[ember.Tensor] = []
        self._is_trainable_mask = self._get_is_trainable_mask()
        self._default_device = self._all_params[0].device

        self.process_group = process_group if process_group is not None else core.group.WORLD
        self.world_size: int = core.get_world_size(self.process_group)
        self.rank: int = core.get_rank(self.process_group)
        self.global_rank: int = get_global_rank(self.process_group, self.rank)

        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = self._get_optimizer_constructor(optimizer_class)
        self._init_local_optimizer()

        # _buckets[r] is rank r's parameters as one flat tensor (parameters_as_bucket_view)
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._buckets: list[ember.Tensor] = []
        self._build_param_buckets()

        # every rank's local state_dict, on the rank `consolidate_state_dict` sent them to
        self._all_state_dicts: list[dict[str, Any]] = []
        self.initialized = True

    # ---- checks of the arguments ----------------------------------------------------------
    def _verify_and_init_params(self, params: Any) -> list:
        """``params`` as a list (it may be a generator), with every parameter in
        ``self._all_params``; PyTorch's errors for a tensor, an empty list or a mixture."""
        if isinstance(params, ember.Tensor):
            raise TypeError("`params` argument should be an iterable of Tensors, but got "
                            f"{ember.typename(params)}")
        try:
            all_params = list(params)
        except TypeError as e:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts, "
                            f"but got {ember.typename(params)}") from e
        if len(all_params) == 0:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        if all(isinstance(p, ember.Tensor) for p in all_params):
            self._all_params = all_params
        elif all(isinstance(p, dict) for p in all_params):
            self._all_params = []
            for param_group in all_params:
                if "params" not in param_group:
                    raise ValueError("Each parameter group passed-in via `params` must have "
                                     "a 'params' key mapping to the parameters in the group")
                self._all_params.extend(param_group["params"])
        else:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        return all_params

    def _verify_same_dense_param_type(self) -> None:
        """One dense tensor type for all parameters (a bucket has one dtype)."""
        typename = ember.typename(self._all_params[0])
        if self._all_params[0].is_sparse:
            raise ValueError("ZeroRedundancyOptimizer only supports using the same dense "
                             f"type for all parameters but got {typename}")
        for param in self._all_params[1:]:
            other = ember.typename(param)
            if other != typename:
                raise ValueError("ZeroRedundancyOptimizer only supports using the same dense "
                                 f"type for all parameters but got both {typename} and "
                                 f"{other}")

    def _get_optimizer_constructor(self, optimizer_class: Any) -> Any:
        if optimizer_class in functional_optim_map.values():
            raise ValueError(f"Passing in a functional optimizer {optimizer_class} when "
                             "`overlap_with_ddp=False`")
        return optimizer_class

    def _get_is_trainable_mask(self) -> list[bool]:
        return [p.requires_grad for p in self._all_params]

    # ---- the partition --------------------------------------------------------------------
    def _clear_cache(self) -> None:
        self._partition_parameters_cache.clear()
        self._param_to_rank_cache.clear()
        self._index_to_param_cache.clear()
        self._param_to_index_cache.clear()

    def _partition_parameters(self) -> list[list[dict]]:
        """Each rank's parameter groups: copies of ``self.param_groups`` holding the
        parameters that rank updates (element r is rank r's; every rank knows them all, to
        receive their broadcasts)."""
        if not self._partition_parameters_cache:
            self._partition_parameters_cache = [[] for _ in range(self.world_size)]
            sizes = [0] * self.world_size
            for group in self.param_groups:
                params_per_rank: list[list] = [[] for _ in range(self.world_size)]
                for param in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    rank = sizes.index(min(sizes))
                    params_per_rank[rank].append(param)
                    sizes[rank] += param.numel()
                for rank, params in enumerate(params_per_rank):
                    self._partition_parameters_cache[rank].append({**group, "params": params})
        return self._partition_parameters_cache

    @property
    def _param_to_rank(self) -> dict[ember.Tensor, int]:
        """The rank that updates each parameter."""
        if not self._param_to_rank_cache:
            for rank, groups in enumerate(self._partition_parameters()):
                for group in groups:
                    for param in group["params"]:
                        self._param_to_rank_cache[param] = rank
        return self._param_to_rank_cache

    @property
    def _param_to_index(self) -> dict[ember.Tensor, int]:
        """Each parameter's index in the global ``state_dict`` (numbered across groups)."""
        if not self._param_to_index_cache:
            self._param_to_index_cache = {p: i for i, p in enumerate(self._index_to_param)}
        return self._param_to_index_cache

    @property
    def _index_to_param(self) -> list[ember.Tensor]:
        if not self._index_to_param_cache:
            self._index_to_param_cache = list(
                chain.from_iterable(g["params"] for g in self.param_groups))
        return self._index_to_param_cache

    def _init_local_optimizer(self) -> None:
        # (groups rather than a flat list: a rank that owns no parameter gets an optimizer
        # of empty groups instead of "optimizer got an empty parameter list")
        self.optim: Optimizer = self._optim_constructor(
            self._partition_parameters()[self.rank], **self._optim_defaults)
        _sync_param_groups(self.optim.param_groups, self.param_groups)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group (``Optimizer.add_param_group``) and give its parameters to
        ranks; the parameters of the earlier groups keep their ranks.

        .. warning:: Call it on every rank, with the same group: ``step()`` broadcasts each
            parameter from its rank, and ranks that disagree on the partition hang.
        """
        super().add_param_group(param_group)
        if self.initialized:
            self._clear_cache()
            groups = self._partition_parameters()[self.rank]
            if len(groups) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(groups[-1])
            if self.parameters_as_bucket_view:
                self._build_param_buckets()

    # ---- the step -------------------------------------------------------------------------
    def _build_param_buckets(self) -> None:
        """With ``parameters_as_bucket_view``, one flat tensor per rank holding that rank's
        trainable parameters, each ``param.data`` becoming a view of it."""
        if not self.parameters_as_bucket_view:
            return
        self._buckets = []
        for groups in self._partition_parameters():
            params = [p for g in groups for p in g["params"]]
            trainable = [p for p in params if p.requires_grad]
            for p in params:
                if not p.requires_grad:     # (it may still view an older bucket)
                    p.data = p.data.detach().clone()
            size = sum(p.numel() for p in trainable)
            if size == 0:
                bucket = ember.zeros(1, device=self._default_device)
            else:
                bucket = ember.empty(size, dtype=trainable[0].dtype,
                                     device=self._default_device)
                offset = 0
                for p in trainable:
                    piece = bucket[offset:offset + p.numel()]
                    piece.copy_(p.data.flatten())
                    p.data = piece.view_as(p.data)
                    offset += p.numel()
            self._buckets.append(bucket)

    def _sync_params(self) -> None:
        """Broadcast each rank's parameters from it to every other rank."""
        handles = []
        for rank in range(self.world_size):
            src = get_global_rank(self.process_group, rank)
            if self.parameters_as_bucket_view:
                tensors = [self._buckets[rank]]
            else:
                tensors = [p.data for g in self._partition_parameters()[rank]
                           for p in g["params"]]
            handles.extend(core.broadcast(t, src=src, group=self.process_group,
                                          async_op=True) for t in tensors)
        for handle in handles:
            if handle is not None:
                handle.wait()

    def _local_step(self, closure: Callable[[], float] | None = None,
                    **kwargs: Any) -> float | None:
        """Step the local optimizer on this rank's shard, without syncing the parameters."""
        is_trainable_mask = self._get_is_trainable_mask()
        if is_trainable_mask != self._is_trainable_mask:
            logger.warning("ZeroRedundancyOptimizer detected that the trainable parameters "
                           "changed; rebuilding the parameter buckets if enabled")
            self._build_param_buckets()
            self._is_trainable_mask = is_trainable_mask
        _sync_param_groups(self.param_groups, self.optim.param_groups)
        if closure is None:
            loss = self.optim.step(**kwargs)
        else:
            loss = self.optim.step(closure=closure, **kwargs)
        _sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def step(self, closure: Callable[[], float] | None = None,
             **kwargs: Any) -> float | None:
        """Update this rank's shard of the parameters with the local optimizer, then
        broadcast every rank's shard so that all ranks hold the same parameters. Returns the
        local optimizer's result (the closure's loss, if given); ``kwargs`` are passed to
        its ``step``. Call it on every rank."""
        loss = self._local_step(closure=closure, **kwargs)
        self._sync_params()
        return loss

    # ---- saving and loading ---------------------------------------------------------------
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Collect every rank's local optimizer state on rank ``to`` (a rank of the
        process group), where :meth:`state_dict` then assembles the global one. Call it
        on every rank; the state is kept on the CPU."""
        _sync_param_groups(self.param_groups, self.optim.param_groups)
        self._all_state_dicts = []
        # one broadcast per rank, as PyTorch (NCCL has no gather of objects)
        for rank in range(self.world_size):
            message = [self.optim.state_dict() if rank == self.rank else None]
            broadcast_object_list(message, src=get_global_rank(self.process_group, rank),
                                  group=self.process_group)
            if self.rank == to:
                self._all_state_dicts.append(_copy_to_device(message[0], "cpu"))

    def state_dict(self) -> dict[str, Any]:
        """The global optimizer state, as a plain optimizer over all the parameters would
        save it, assembled from the last :meth:`consolidate_state_dict` to this rank
        (``RuntimeError`` if there was none)."""
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. "
                               f"Please call `consolidate_state_dict(to={self.rank})` on all "
                               "ranks beforehand if you meant to save the global state.")
        state_dict = super().state_dict()
        for rank, local in enumerate(self._all_state_dicts):
            global_groups = self._partition_parameters()[rank]
            if len(local["param_groups"]) != len(global_groups):
                raise AssertionError("Mismatch between number of local and global parameter "
                                     "groups")
            for local_group, global_group in zip(local["param_groups"], global_groups):
                if len(local_group["params"]) != len(global_group["params"]):
                    raise AssertionError("Mismatch between number of local and global "
                                         "parameters in parameter group")
                for local_index, param in zip(local_group["params"], global_group["params"]):
                    if local_index in local["state"]:
                        state_dict["state"][self._param_to_index[param]] = \
                            local["state"][local_index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a global state (from :meth:`state_dict`): each rank keeps the state of the
        parameters it updates (the others' entries of ``state_dict["state"]`` are set to
        ``None``, as PyTorch does), and the hyper-parameters go to every rank."""
        for index, value in state_dict["state"].items():
            param = self._index_to_param[index]
            if self._param_to_rank[param] != self.rank:
                state_dict["state"][index] = None
            else:
                self.optim.state[param] = _copy_to_device(value, param.device)
                # zero-dimensional state (Adam's "step") stays on the CPU
                for name, v in self.optim.state[param].items():
                    if isinstance(v, ember.Tensor) and v.dim() == 0:
                        self.optim.state[param][name] = v.cpu()
        super().load_state_dict(state_dict)
        _sync_param_groups(state_dict["param_groups"], self.param_groups)
        _sync_param_groups(self.param_groups, self.optim.param_groups)

    # ---- uneven inputs (Join) ---------------------------------------------------------------
    def join_hook(self, **_kwargs: Any) -> _ZeROJoinHook:
        """The hook that lets a rank out of inputs keep stepping (and broadcasting) while
        others train: its ``main_hook()`` calls :meth:`step`; no keyword arguments are
        used."""
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        """The device of the first parameter."""
        return self._default_device

    @property
    def join_process_group(self) -> Any:
        """The process group the state is sharded across."""
        return self.process_group
