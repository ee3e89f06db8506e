"""Every rank to every rank: ``all_to_all``/``all_to_all_single`` (``MPI_Ialltoallv``) and
batched point-to-point operations (``P2POp``, ``batch_isend_irecv``)."""
from __future__ import annotations

import math

import numpy as np

import ember
from ember.dispatcher.core import TensorBase

from . import _core as core
from ._groups import canonical_rank

__all__ = ["all_to_all", "all_to_all_single", "P2POp", "batch_isend_irecv"]


def _check_counts(g, what: str, send_counts, recv_counts) -> None:
    """What rank i sends to rank j must be what rank j expects from rank i: exchange every
    rank's counts and raise the same error on every rank otherwise (a size mismatch inside
    MPI would abort the job or corrupt memory)."""
    if not core._checks():
        return
    n = g.size()
    mine = np.array(list(send_counts) + list(recv_counts), np.int64)
    table = np.empty((n, 2 * n), np.int64)
    core._wait(g.comm.Iallgather(mine, table), what, g)
    for i in range(n):
        for j in range(n):
            sent, expected = int(table[i, j]), int(table[j, n + i])
            if sent != expected:
                raise RuntimeError(f"{what}: rank {i} sends {sent} elements to rank {j}, but "
                                   f"rank {j} expects {expected} elements from rank {i} "
                                   "(the sizes of the inputs and outputs must pair up)")


def _words(sig):
    dtype = {v: k for k, v in core._CODES.items()}.get(int(sig[0]), "?")
    return f"dtype {dtype}" + (" and invalid arguments" if int(sig[1]) else "")


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Every rank sends ``input_tensor_list[j]`` to rank j, and receives rank i's into
    ``output_tensor_list[i]`` (``MPI_Ialltoallv``: the tensors may differ in size, but what
    rank i sends to rank j must have as many elements as rank j's ``output_tensor_list[i]``;
    all of one dtype).

    Example (on 2 ranks)::

        inputs = [ember.full((2,), 10.0 * dist.get_rank() + j) for j in range(2)]
        outputs = [ember.empty(2) for _ in range(2)]
        dist.all_to_all(outputs, inputs)    # rank r: outputs[i] == 10 * i + r
    """
    if core._outside(group, "all_to_all"):
        return None
    g = core._group(group)
    n = g.size()
    problem = None
    tensors = list(output_tensor_list) + list(input_tensor_list)
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        problem = (f"all_to_all(): output_tensor_list and input_tensor_list need one tensor "
                   f"for each of the {n} ranks, got {len(output_tensor_list)} and "
                   f"{len(input_tensor_list)}")
    elif not all(isinstance(t, TensorBase) for t in tensors):
        problem = "all_to_all(): every entry of the tensor lists must be an ember Tensor"
    elif len({t.dtype for t in tensors}) > 1:
        problem = (f"all_to_all(): all tensors must have one dtype, got "
                   f"{sorted({t.dtype.name for t in tensors})}")
    code = core._CODES.get(tensors[0].dtype.name, -1) if tensors and not problem else -1
    core._agree_or_raise(g, "all_to_all", [code], problem, _words)
    send_counts = [t.numel() for t in input_tensor_list]
    recv_counts = [t.numel() for t in output_tensor_list]
    _check_counts(g, "all_to_all", send_counts, recv_counts)
    ins = [core._Buf(t, "all_to_all", False).array for t in input_tensor_list]
    send = np.concatenate(ins)
    recv = np.empty(sum(recv_counts), send.dtype)
    rdispls = _offsets(recv_counts)
    req = g.comm.Ialltoallv([send, (send_counts, _offsets(send_counts))],
                            [recv, (recv_counts, rdispls)])

    def finish():
        with ember.no_grad():
            for t, start, count in zip(output_tensor_list, rdispls, recv_counts):
                t.copy_(ember.from_numpy(recv[start:start + count]).view(t.shape))
    return core._run(req, "all_to_all", g, async_op, finish)


def _offsets(counts):
    return [0] + np.cumsum(counts)[:-1].tolist() if len(counts) else []


def _splits(t, sizes, n, name):
    """The rows of ``t`` (dim 0) going to / coming from each rank, or a problem."""
    if t.dim() == 0:
        return None, f"all_to_all_single(): {name} must have at least one dimension"
    rows = t.shape[0]
    if sizes is None or len(sizes) == 0:
        if rows % n:
            return None, (f"all_to_all_single(): {name}.size(0)={rows} is not divisible by "
                          f"the group size {n}; pass {name}_split_sizes")
        return [rows // n] * n, None
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows or min(sizes) < 0:
        return None, (f"all_to_all_single(): {name}_split_sizes={sizes} must have {n} "
                      f"non-negative entries summing to {name}.size(0)={rows}")
    return sizes, None


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split ``input`` along dim 0 and send the j-th piece to rank j; rank i's piece lands
    in the i-th piece of ``output`` (``MPI_Ialltoallv``). Pieces are equal
    (``size(0) / world_size`` rows) unless ``input_split_sizes``/``output_split_sizes``
    give the rows for each rank.

    Example (on 2 ranks)::

        x = ember.arange(4.0) + 4 * dist.get_rank()   # rank 0: [0,1,2,3]; rank 1: [4,5,6,7]
        y = ember.empty(4)
        dist.all_to_all_single(y, x)                  # rank 0: [0,1,4,5]; rank 1: [2,3,6,7]
    """
    if core._outside(group, "all_to_all_single"):
        return None
    g = core._group(group)
    n = g.size()
    problem = None
    if not isinstance(output, TensorBase) or not isinstance(input, TensorBase):
        problem = "all_to_all_single(): output and input must be ember Tensors"
    elif output.dtype is not input.dtype:
        problem = (f"all_to_all_single(): output is {output.dtype.name} but input is "
                   f"{input.dtype.name}; they must have one dtype")
    else:
        out_rows, problem = _splits(output, output_split_sizes, n, "output")
        if problem is None:
            in_rows, problem = _splits(input, input_split_sizes, n, "input")
    code = core._CODES.get(input.dtype.name, -1) if problem is None else -1
    core._agree_or_raise(g, "all_to_all_single", [code], problem, _words)
    in_row = math.prod(input.shape[1:])
    out_row = math.prod(output.shape[1:])
    send_counts = [r * in_row for r in in_rows]
    recv_counts = [r * out_row for r in out_rows]
    _check_counts(g, "all_to_all_single", send_counts, recv_counts)
    src = core._Buf(input, "all_to_all_single", False)
    dst = core._Buf(output, "all_to_all_single", True)
    req = g.comm.Ialltoallv([src.array, (send_counts, _offsets(send_counts))],
                            [dst.array, (recv_counts, _offsets(recv_counts))])
    return core._run(req, "all_to_all_single", g, async_op, dst.finish)


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`: ``op`` is
    ``ember.distributed.isend`` or ``irecv``, ``peer`` the other rank (global; or
    ``group_peer``, its rank in ``group``), ``tag`` matches a send with a receive.

    Example (on 2 ranks, each sending to the other)::

        peer = 1 - dist.get_rank()
        ops = [dist.P2POp(dist.isend, send_buf, peer), dist.P2POp(dist.irecv, recv_buf, peer)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    """

    def __init__(self, op, tensor, peer: int | None = None, group=None, tag: int = 0,
                 group_peer: int | None = None):
        if op not in (core.isend, core.irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``ember.distributed.isend`` or ``ember.distributed.irecv``.")
        if not isinstance(tensor, TensorBase):
            raise TypeError(f"P2POp(): tensor must be an ember Tensor, got "
                            f"{type(tensor).__name__}")
        self.op = op
        self.tensor = tensor
        self.group = group
        self.tag = tag
        g = core._group(group)
        self.group_peer = canonical_rank(g, peer, group_peer, "P2POp", "peer")
        self.peer = g.world_ranks[self.group_peer]

    def __repr__(self):
        return (f"P2POp({self.op.__name__}, peer={self.peer}, tag={self.tag}, "
                f"{tuple(self.tensor.shape)}, {self.tensor.dtype})")


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every operation of ``p2p_op_list`` (:class:`P2POp`, one group) and return their
    :class:`Work` handles in the same order. The sends are started before the receives, so
    ranks that exchange tensors with one batch each cannot wait for one another.
    """
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp)
                                                    for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``ember.distributed.P2POp``.")
    if not p2p_op_list:
        return []
    if any(p.group is not p2p_op_list[0].group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    works = [None] * len(p2p_op_list)
    # ember's irecv waits for its sender's header: post every send first
    order = sorted(range(len(p2p_op_list)), key=lambda i: p2p_op_list[i].op is core.irecv)
    for i in order:
        p = p2p_op_list[i]
        works[i] = p.op(p.tensor, p.group_peer, p.group, p.tag)
    return works
