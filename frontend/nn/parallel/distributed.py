"""``DistributedDataParallel``: one model replica per rank, gradients averaged over ranks
while backward runs.

At construction the replica's parameters and buffers are broadcast from rank 0. Gradients
are packed into buckets of about ``bucket_cap_mb`` MiB, in reverse registration order
(roughly the order backward produces them); a post-accumulate hook on every parameter
counts down its bucket, and a full bucket is all-reduced with a non-blocking MPI
collective at once, so communication overlaps the rest of backward. When the last bucket
has been launched, every reduction is waited for, averaged and written back to ``.grad``.

``no_sync()`` skips the reduction (gradient accumulation: the next synchronised backward
reduces the accumulated gradients). ``find_unused_parameters=True`` walks the autograd
graph from the forward's outputs and counts parameters the graph does not reach as ready,
so their buckets still complete (their gradient contribution is zero on this rank).

An ember extension: ``ddp.overlap = False`` launches every bucket after backward instead
(to measure how much communication the overlap hides).
"""
from __future__ import annotations

import contextlib
import threading
import time

import ember
import ember.distributed as dist

from ..modules.module import Module


class _Bucket:
    __slots__ = ("params", "numel", "dtype", "device", "ready", "work", "flat", "launched")

    def __init__(self, params):
        self.params = params
        self.numel = sum(p.numel() for p in params)
        self.dtype = params[0].dtype
        self.device = params[0].device
        self.ready = 0
        self.work = None
        self.flat = None
        self.launched = False


class DistributedDataParallel(Module):
    """Data-parallel training over processes: one replica of ``module`` per rank, its
    gradients averaged over the ranks while backward runs (MPI; see :mod:`ember.distributed`).

    Construction broadcasts rank 0's parameters and buffers. Gradients are all-reduced in
    buckets of about ``bucket_cap_mb`` MiB as soon as a bucket is complete, overlapping the
    rest of backward; ``no_sync()`` skips the reduction for gradient accumulation. The
    other arguments of PyTorch's (``device_ids``, ``output_device``, ``dim``,
    ``process_group``, ``check_reduction``, ``gradient_as_bucket_view``, ``static_graph``)
    are accepted.

    Args:
        module (Module): the model to replicate.
        broadcast_buffers (bool): broadcast rank 0's buffers before each forward.
            Default: True.
        bucket_cap_mb (float): the gradient bucket size in MiB. Default: 25.
        find_unused_parameters (bool): count the parameters that the forward's graph does
            not reach as ready, so that their buckets complete. Default: False.

    Example:
        >>> ddp = ember.nn.parallel.DistributedDataParallel(model)  # doctest: +SKIP
        >>> ddp(x).sum().backward()   # gradients averaged over the ranks  # doctest: +SKIP
    """
    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=25,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False):
        super().__init__()
        if not dist.is_initialized():
            raise ValueError("Default process group has not been initialized, please make "
                               "sure to call init_process_group.")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_cap_mb = bucket_cap_mb
        self.overlap = True
        self._progress_thread = None
        self._progress_event = None
        self._sync = True
        self._expect = False            # a backward is expected to reduce
        self._unused = set()
        seen = set()
        params = []
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        self._params = params
        with ember.no_grad():
            for t in params + [b for b in module.buffers()]:
                dist.broadcast(t, 0, group=process_group)
        self._buckets = self._make_buckets(params, bucket_cap_mb)
        self._bucket_of = {}
        for b in self._buckets:
            for p in b.params:
                self._bucket_of[id(p)] = b
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready)
                         for p in params]

    # ---- buckets --------------------------------------------------------------------
    @staticmethod
    def _make_buckets(params, cap_mb):
        """Reverse registration order; as PyTorch, the first bucket (the gradients backward
        produces first) is capped at 1 MiB so its reduction starts early."""
        cap = int(cap_mb * 2 ** 20)
        first_cap = min(cap, 2 ** 20)
        buckets, cur, size = [], [], 0
        for p in reversed(params):
            nbytes = p.numel() * p.dtype.itemsize
            limit = first_cap if not buckets else cap
            if cur and (size + nbytes > limit or p.dtype is not cur[0].dtype
                        or p.device != cur[0].device):
                buckets.append(_Bucket(cur))
                cur, size = [], 0
            cur.append(p)
            size += nbytes
        if cur:
            buckets.append(_Bucket(cur))
        return buckets

    def _reset(self):
        for b in self._buckets:
            b.ready = 0
            b.work = None
            b.launched = False

    # ---- forward ----------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._expect and self._sync and ember.is_grad_enabled():
            raise RuntimeError("Expected to have finished reduction in the prior iteration "
                               "before starting a new one. This error indicates that your "
                               "module has parameters that were not used in producing loss. "
                               "You can enable unused parameter detection by passing the "
                               "keyword argument `find_unused_parameters=True` to "
                               "`ember.nn.parallel.DistributedDataParallel`.")
        if self.broadcast_buffers:
            with ember.no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, 0, group=self.process_group)
        out = self.module(*inputs, **kwargs)
        if ember.is_grad_enabled() and self._sync:
            self._reset()
            self._expect = True
            if self.find_unused_parameters:
                self._mark_unused(out)
        return out

    def _mark_unused(self, out):
        """Parameters the graph from ``out`` does not reach count as ready now."""
        reached = set()
        stack = [t.grad_fn for t in _tensors(out) if t.grad_fn is not None]
        stack += [t for t in _tensors(out) if t.grad_fn is None and t.requires_grad]
        seen = set()
        while stack:
            n = stack.pop()
            if id(n) in seen or n is None:
                continue
            seen.add(id(n))
            var = getattr(n, "variable", None)
            if var is not None:
                reached.add(id(var))
                continue
            if isinstance(n, ember.Tensor):
                reached.add(id(n))
                continue
            for nxt, _ in n.next_functions:
                if nxt is not None:
                    stack.append(nxt)
        self._unused = {id(p) for p in self._params if id(p) not in reached}
        for p in self._params:
            if id(p) in self._unused:
                self._count(p)

    # ---- backward: hooks ----------------------------------------------------------------
    def _grad_ready(self, p):
        if not self._sync or not self._expect:
            return
        self._count(p)

    def _count(self, p):
        b = self._bucket_of[id(p)]
        b.ready += 1
        if b.ready == len(b.params):
            if self.overlap:
                self._launch(b)
            if all(x.ready == len(x.params) for x in self._buckets):
                self._finish()

    def _start_progress(self):
        """A daemon thread that keeps calling MPI_Test on the pending reductions while
        backward runs: Open MPI moves a transfer only inside MPI calls, and backward's
        kernels release the GIL, so this is what makes the overlap real."""
        if self._progress_thread is not None and self._progress_thread.is_alive():
            self._progress_event.set()
            return
        self._progress_event = threading.Event()
        self._progress_event.set()

        def loop():
            while True:
                self._progress_event.wait()
                pending = [b.work for b in self._buckets if b.work is not None]
                active = False
                for w in pending:
                    try:
                        if not w.is_completed():
                            active = True
                    except Exception:      # the main thread reports errors on wait()
                        pass
                if not active:
                    self._progress_event.clear()
                time.sleep(0.0002)

        self._progress_thread = threading.Thread(target=loop, name="ember-ddp-progress",
                                                 daemon=True)
        self._progress_thread.start()

    def _launch(self, b):
        grads = []
        for p in b.params:
            g = p.grad
            if g is None:
                g = ember.zeros(p.shape, dtype=p.dtype, device=p.device)
            grads.append(g.detach().reshape(-1))
        b.flat = ember.cat(grads) if len(grads) > 1 else grads[0].clone()
        b.work = dist.all_reduce(b.flat, group=self.process_group, async_op=True)
        b.launched = True
        if self.overlap:
            self._start_progress()

    def _finish(self):
        world = dist.get_world_size(self.process_group)
        with ember.no_grad():
            for b in self._buckets:
                if not b.launched:
                    self._launch(b)
            for b in self._buckets:
                b.work.wait()
                b.flat.div_(world)
                offset = 0
                for p in b.params:
                    n = p.numel()
                    avg = b.flat[offset:offset + n].view(p.shape)
                    if p.grad is None:
                        p.grad = avg.clone()
                    else:
                        p.grad.copy_(avg)
                    offset += n
                b.flat = None
                b.work = None
        self._expect = False

    @contextlib.contextmanager
    def no_sync(self):
        """Accumulate gradients locally; the first backward after the block reduces them."""
        old = self._sync
        self._sync = False
        try:
            yield
        finally:
            self._sync = old


def _tensors(obj):
    if isinstance(obj, ember.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)
