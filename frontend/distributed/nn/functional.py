"""Collectives that autograd differentiates (PyTorch's ``torch.distributed.nn.functional``).

Each function returns its result instead of writing into its argument (``all_reduce``
reduces a copy), and records a node whose backward is the collective that carries the
gradients back, run by every rank in its own backward pass:

=====================  ==============================================================
forward                backward (of the gradient of the result)
=====================  ==============================================================
``broadcast``          ``reduce`` (sum) to ``src``; zero on the other ranks
``reduce``             ``broadcast`` from ``dst``
``gather``             ``scatter`` from ``dst``
``scatter``            ``gather`` to ``src``; zero on the other ranks
``all_gather``         ``reduce_scatter`` (sum)
``reduce_scatter``     ``all_gather``
``all_to_all``         ``all_to_all`` back
``all_to_all_single``  ``all_to_all_single`` back, the split sizes swapped
``all_reduce``         ``all_reduce`` with the same ``op``
=====================  ==============================================================

These are PyTorch's rules, including their limits: ``all_reduce``'s backward applies the
forward's ``op`` to the gradients, which is the derivative for ``SUM`` and ``AVG`` only,
and ``reduce``'s backward gives every rank ``dst``'s gradient, without the gradient of the
other ranks' results (their contents are unspecified). The backward passes are themselves
made of these functions, so ``create_graph=True`` differentiates them again.

Every rank of ``group`` must call the same functions in the same order, forward and
backward: a rank that skips a ``backward()`` leaves the others waiting until the group's
timeout. They run on ``ember.distributed``'s MPI collectives.
"""
from __future__ import annotations

import ember
from ember import compiler
from ember.autograd import Function
from ember.dispatcher import dtypes
from ember.dispatcher.warn import warn as _warn

from .. import _core as core
from .. import _exchange as exchange
from .._core import ReduceOp

__all__ = ["broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather",
           "all_to_all", "all_to_all_single", "all_reduce"]

#: PyTorch's replacement for each deprecated function (its FutureWarning names it)
_SUCCESSORS = {"broadcast": "broadcast", "reduce_scatter": "reduce_scatter_single",
               "all_gather": "all_gather_single", "all_to_all_single": "all_to_all_single",
               "all_reduce": "all_reduce"}


def _enter(name: str) -> None:
    """What every function checks first: not under ``compile`` (a collective cannot be
    captured into a graph), and PyTorch's deprecation warning where PyTorch gives one."""
    namespace = dtypes.module_name
    if compiler.is_compiling():
        raise RuntimeError(f"{namespace}.distributed.nn.functional.{name} is not supported "
                           f"under {namespace}.compile. Call it outside the compiled "
                           "function.")
    if name in _SUCCESSORS:
        _warn(f"{namespace}.distributed.nn.functional.{name} is deprecated, use "
              f"torch.distributed._functional_collectives.{_SUCCESSORS[name]} instead "
              "(PyTorch's advice; ember does not provide that module).", FutureWarning)


def _alias(t):
    """A new tensor object on ``t``'s memory: a function that fills one of its arguments
    returns this, so that autograd history goes on the result, not on the argument (as
    PyTorch returns a view of an input that a ``Function`` returns unchanged)."""
    return t.view(t.shape)


def _zeros_with_history(t):
    """Zeros shaped like ``t`` that stay attached to ``t``'s autograd history (PyTorch's
    ``zero_()`` on it): in a graph built with ``create_graph=True`` the collective that made
    ``t`` must still run its backward on every rank, or the ranks that kept their gradient
    would wait for this one. (``where``, not ``t * 0``: zeros even where ``t`` is inf.)"""
    return ember.where(ember.zeros((), dtype=ember.bool, device=t.device), t, 0.0)


# ---- the functions ---------------------------------------------------------------------
def broadcast(tensor, src, group=None):
    """Rank ``src``'s ``tensor``, returned on every rank of ``group``.

    ``tensor`` must have the same shape and dtype on every rank (only ``src``'s values are
    used). The gradient of the result is summed over the ranks into ``src``'s ``tensor``;
    the other ranks' ``tensor`` gets a zero gradient.

    Args:
        tensor (Tensor): the data to send, on ``src``.
        src (int): the rank whose ``tensor`` is broadcast.
        group (ProcessGroup, optional): the group; the default group if None.

    Returns:
        Tensor: a new tensor holding ``src``'s data.

    Example (on 2 ranks)::

        x = ember.full((2,), float(dist.get_rank()), requires_grad=True)
        y = ember.distributed.nn.functional.broadcast(x, src=1)   # [1., 1.] on both
        y.sum().backward()                  # x.grad: [0., 0.] on rank 0, [2., 2.] on 1
    """
    _enter("broadcast")
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=None):
    """Every rank's ``tensor``, gathered on rank ``dst``.

    Returns one tensor per rank of ``group`` on every rank: on ``dst``, element ``r``
    holds rank ``r``'s ``tensor``; elsewhere they are zeros. In the backward pass, rank
    ``r``'s ``tensor`` gets the gradient of ``dst``'s element ``r``.

    Args:
        tensor (Tensor): this rank's contribution (the same shape and dtype on every rank).
        dst (int): the rank that receives the tensors. Default: 0.
        group (ProcessGroup, optional): the group; the default group if None.

    Returns:
        tuple[Tensor, ...]: ``world_size`` tensors shaped like ``tensor``.
    """
    _enter("gather")
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=None):
    """Rank ``src``'s ``tensors[r]``, returned on each rank ``r``.

    Every rank passes a sequence of ``world_size`` tensors of one shape (PyTorch's
    implementation reads the shape of the result from ``tensors[0]`` on every rank; only
    ``src``'s values are sent). In the backward pass, ``src``'s ``tensors[r]`` gets the
    gradient of rank ``r``'s result; the other ranks' ``tensors`` get zero gradients.

    Args:
        tensors (sequence of Tensor): one tensor per rank, all of one shape.
        src (int): the rank whose ``tensors`` are sent. Default: 0.
        group (ProcessGroup, optional): the group; the default group if None.

    Returns:
        Tensor: the piece of ``src``'s ``tensors`` for this rank.
    """
    _enter("scatter")
    if tensors is None:
        raise TypeError("scatter(): every rank must pass a list of tensors shaped like the "
                        "result (only the source rank's values are sent), got None")
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None):
    """``tensor`` reduced over the ranks of ``group``, the result on rank ``dst``.

    On ``dst`` the result holds the reduction; on the other ranks its contents are
    unspecified (ember returns a copy of ``tensor``; PyTorch's backends may use it as
    scratch space). In the backward pass every rank's ``tensor`` gets ``dst``'s gradient.

    Args:
        tensor (Tensor): this rank's contribution.
        dst (int): the rank that receives the result.
        op (ReduceOp): the reduction. Default: ``ReduceOp.SUM``.
        group (ProcessGroup, optional): the group; the default group if None.

    Returns:
        Tensor: a new tensor, the reduction on ``dst``.
    """
    _enter("reduce")
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None):
    """Element ``r`` of ``input_list``, reduced over the ranks, returned on rank ``r``.

    The reduction is written into ``output`` too (the result shares its memory). In the
    backward pass rank ``s``'s ``input_list[r]`` gets the gradient of rank ``r``'s result.

    Args:
        output (Tensor): where the result is written (shaped like each input).
        input_list (list of Tensor): one tensor per rank of ``group``.
        op (ReduceOp): the reduction. Default: ``ReduceOp.SUM``.
        group (ProcessGroup, optional): the group; the default group if None.

    Returns:
        Tensor: the reduction of this rank's piece.
    """
    _enter("reduce_scatter")
    return _Reduce_Scatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=None):
    """Every rank's ``tensor``, returned on every rank.

    In the backward pass each rank's ``tensor`` gets the sum over ranks of the gradients
    of that rank's element (a reduce-scatter).

    Args:
        tensor (Tensor): this rank's contribution (the same shape and dtype on every rank).
        group (ProcessGroup, optional): the group; the default group if None.

    Returns:
        tuple[Tensor, ...]: ``world_size`` tensors; element ``r`` is rank ``r``'s
        ``tensor``.

    Example (on 2 ranks)::

        x = ember.full((2,), float(dist.get_rank()), requires_grad=True)
        a, b = ember.distributed.nn.functional.all_gather(x)   # [0., 0.], [1., 1.]
        (a + 2 * b).sum().backward()        # x.grad: [2., 2.] on rank 0, [4., 4.] on 1
    """
    _enter("all_gather")
    return _AllGather.apply(group, tensor)


def all_to_all(output_tensor_list, input_tensor_list, group=None):
    """Every rank sends ``input_tensor_list[j]`` to rank ``j`` and receives rank ``i``'s
    into ``output_tensor_list[i]``.

    Returns the tensors of ``output_tensor_list`` (filled, with autograd history); in the
    backward pass their gradients go back the way the data came.

    Args:
        output_tensor_list (list of Tensor): one tensor per rank, filled with what each
            rank sends here.
        input_tensor_list (list of Tensor): one tensor per rank, sent to that rank.
        group (ProcessGroup, optional): the group; the default group if None.

    Returns:
        tuple[Tensor, ...]: the tensors of ``output_tensor_list``.
    """
    _enter("all_to_all")
    return _AlltoAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None):
    """``input`` split along dim 0 and the j-th piece sent to rank ``j``; rank ``i``'s
    piece is the i-th piece of the result (see
    :func:`ember.distributed.all_to_all_single`).

    The result is written into ``output`` too (it shares its memory); in the backward pass
    the gradient goes back with the split sizes swapped.

    Args:
        output (Tensor): where the gathered pieces are written.
        input (Tensor): the tensor to split and send.
        output_split_sizes (list of int, optional): the rows of ``output`` received from
            each rank; ``output.size(0) / world_size`` each if None or empty.
        input_split_sizes (list of int, optional): the rows of ``input`` sent to each
            rank; ``input.size(0) / world_size`` each if None or empty.
        group (ProcessGroup, optional): the group; the default group if None.

    Returns:
        Tensor: the pieces received, concatenated along dim 0.
    """
    _enter("all_to_all_single")
    return _AlltoAllSingle.apply(group, output, output_split_sizes, input_split_sizes,
                                 input)


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """``tensor`` reduced over the ranks of ``group``, returned on every rank.

    ``tensor`` itself is left unchanged (unlike :func:`ember.distributed.all_reduce`). The
    backward pass all-reduces the gradients with the same ``op`` (PyTorch's rule: the
    derivative for ``SUM`` and ``AVG``).

    Args:
        tensor (Tensor): this rank's contribution.
        op (ReduceOp): the reduction. Default: ``ReduceOp.SUM``.
        group (ProcessGroup, optional): the group; the default group if None.

    Returns:
        Tensor: a new tensor, the same on every rank.

    Example (on 2 ranks)::

        x = ember.full((2,), dist.get_rank() + 1.0, requires_grad=True)
        y = ember.distributed.nn.functional.all_reduce(x)    # [3., 3.] on both ranks
        (y * (dist.get_rank() + 1)).sum().backward()          # x.grad: [3., 3.] on both
    """
    _enter("all_reduce")
    return _AllReduce.apply(op, group, tensor)


# ---- their autograd Functions (each backward is made of the others); named as PyTorch's,
# so that grad_fn reads the same (``<_AllReduceBackward>``) -----------------------------
class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group = src, group
        ctx.rank = core.get_rank(group)
        out = tensor.clone()
        core.broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        gx = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad_output)
        if ctx.rank != ctx.src:
            gx = _zeros_with_history(gx)
        return None, None, gx


class _Reduce(Function):
    @staticmethod
    def forward(ctx, dst, op, group, tensor):
        ctx.dst, ctx.group = dst, group
        out = tensor.clone()
        core.reduce(out, dst, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad_output)


class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst, ctx.group = dst, group
        outs = [ember.zeros_like(tensor) for _ in range(core.get_world_size(group))]
        mine = outs if core.get_rank(group) == dst else None
        core.gather(tensor.contiguous(), mine, dst, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return None, None, _Scatter.apply(ctx.dst, ctx.group, *grad_outputs)


class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src, ctx.group = src, group
        if any(t.shape != tensors[0].shape for t in tensors):
            raise AssertionError(f"scatter(): every tensor must have one shape, got "
                                 f"{[tuple(t.shape) for t in tensors]}")
        out = ember.zeros_like(tensors[0])
        pieces = list(tensors) if core.get_rank(group) == src else None
        core.scatter(out, pieces, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad_output)


class _Reduce_Scatter(Function):
    @staticmethod
    def forward(ctx, op, group, output, *input_list):
        ctx.group = group
        output = output.contiguous()
        core.reduce_scatter(output, [t.contiguous() for t in input_list], op=op, group=group)
        return _alias(output)

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None) + _AllGather.apply(ctx.group, grad_output)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        tensor = tensor.contiguous()
        outs = [ember.empty_like(tensor) for _ in range(core.get_world_size(group))]
        core.all_gather(outs, tensor, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        # (PyTorch's gloo path adds up an all_to_all's pieces instead: the same sums)
        mine = ember.empty_like(grad_outputs[core.get_rank(ctx.group)])
        return None, _Reduce_Scatter.apply(ReduceOp.SUM, ctx.group, mine, *grad_outputs)


class _AlltoAll(Function):
    @staticmethod
    def forward(ctx, group, output_tensor_list, *tensors):
        ctx.group = group
        ctx.input_shapes = [t.shape for t in tensors]
        exchange.all_to_all(output_tensor_list, [t.contiguous() for t in tensors],
                            group=group)
        return tuple(output_tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        like = grad_outputs[0]
        back = [ember.empty(shape, dtype=like.dtype, device=like.device)
                for shape in ctx.input_shapes]
        return (None, None) + _AlltoAll.apply(ctx.group, back, *grad_outputs)


class _AlltoAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group = group
        ctx.input_shape = input.shape
        # the gradient travels back: what was received is sent, and the reverse
        ctx.back_output_split_sizes = input_split_sizes
        ctx.back_input_split_sizes = output_split_sizes
        exchange.all_to_all_single(output, input, output_split_sizes=output_split_sizes,
                                   input_split_sizes=input_split_sizes, group=group)
        return _alias(output)

    @staticmethod
    def backward(ctx, grad_output):
        back = ember.empty(ctx.input_shape, dtype=grad_output.dtype,
                           device=grad_output.device)
        return (None, None, None, None,
                _AlltoAllSingle.apply(ctx.group, back, ctx.back_output_split_sizes,
                                      ctx.back_input_split_sizes, grad_output.contiguous()))


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = tensor.clone(memory_format=ember.contiguous_format)
        core.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad_output)


#: ``group.WORLD``, importable from here as from PyTorch's module (defined last: the
#: functions' ``group`` parameters would shadow it)
group = core.group
