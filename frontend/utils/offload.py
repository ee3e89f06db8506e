"""``ember.utils.offload``: train models whose activations exceed device memory (vDNN).

Around the forward pass::

    with ember.utils.offload.offload(model, policy="conv"):
        loss = loss_fn(model(x), y)
    loss.backward()

the activations the chosen layers save for backward are copied to host memory as they
are made, on the device's transfer queue, while the compute queue runs the next layers,
and their device memory is reused once the copy has completed (the caching allocator's
``record_stream`` rule). In backward, a saved activation is copied back when its layer
needs it, and the one before it (in forward order) is *prefetched* at the same time, so
that its copy overlaps the current layer's backward, as vDNN does.

Policies (``policy=``):

- ``"conv"`` (vDNN's): what convolution layers save (their inputs, the largest
  activations of a CNN);
- ``"all"``: what any layer of the model saves;
- ``"auto"`` (vDNN's dynamic policy): the first step it sees for a model is a *profiling*
  step that offloads what every layer of the kinds below saves, timing each layer (with
  device synchronisations) and counting the bytes it saved. From those it projects the
  step's peak without offloading (what is allocated after the forward pass, plus what was
  moved, plus three times the largest layer's share for the backward pass's working set)
  and compares it with ``auto_fraction`` of what the process may use (``mem_get_info``'s
  total, which ``set_per_process_memory_fraction`` limits). If it fits, later steps move
  nothing; otherwise they offload the layers whose copies hide best first (most compute
  time per byte moved), until the projection fits. The plan is kept per model
  (:func:`plan`); :func:`forget` makes the next step profile again (after a change of
  batch size, say);
- a tuple of kinds (``"conv"``, ``"linear"``, ``"attention"``, ``"norm"``) or module
  classes.

What is moved is a storage: every saved view of it (a ReLU's output that is the next
convolution's input) is released on the device together, and the whole storage comes
back when the first of them is needed; the device copy is dropped after the last.
Parameters are never offloaded, nor storages below ``min_bytes``. The device's plugin
must offer asynchronous host copies on a second queue (``offload_copy_out``,
``offload_copy_in``, ``offload_ready`` in its device API:
the opencl and cuda backends have them); on other devices ``offload`` raises a RuntimeError
that says so. In-place changes of an
offloaded tensor after the forward pass are still reported (the saved version is kept).
"""
from __future__ import annotations

import time
import weakref

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher.plugins import BACKENDS

from ..autograd.graph import saved_tensors_hooks
from ..nn.modules.activation import MultiheadAttention
from ..nn.modules.conv import _ConvNd
from ..nn.modules.linear import Linear
from ..nn.modules.module import Module
from ..nn.modules.normalization import GroupNorm, LayerNorm
from ..nn.modules.batchnorm import _BatchNorm

__all__ = ["offload", "POLICIES", "STATS", "plan", "forget"]

POLICIES = ("conv", "all", "auto")
#: layer kinds a policy may name
KINDS = {"conv": (_ConvNd,), "linear": (Linear,), "attention": (MultiheadAttention,),
         "norm": (_BatchNorm, LayerNorm, GroupNorm)}
#: bytes copied each way, and tensors offloaded (tests and the benchmark read them)
STATS = {"offloaded": 0, "bytes_out": 0, "bytes_in": 0, "prefetched": 0}
#: model -> the auto policy's plan for it (made by its profiling step)
_PLANS = weakref.WeakKeyDictionary()


class Plan:
    """What the ``auto`` policy decided for a model: ``layers`` (module, bytes its saved
    activations take, seconds its forward pass took), in the order they ran;
    ``projected`` (the step's projected peak without offloading, bytes), ``limit``
    (``auto_fraction`` of what the process may use) and ``chosen`` (the modules whose
    activations later steps offload; empty when the projection fits)."""
    __slots__ = ("layers", "projected", "limit", "chosen")

    def __init__(self, layers, projected, limit, chosen):
        self.layers, self.projected, self.limit, self.chosen = layers, projected, limit, chosen

    def __repr__(self):
        return (f"Plan(projected={self.projected}, limit={self.limit}, "
                f"chosen={len(self.chosen)} of {len(self.layers)} layers)")


def plan(model) -> "Plan | None":
    """The ``auto`` policy's plan for ``model`` (None before its profiling step)."""
    return _PLANS.get(model)


def forget(model) -> None:
    """Drop ``model``'s ``auto`` plan: the next offloaded step profiles again."""
    _PLANS.pop(model, None)


def _choose(layers, projected, limit):
    """The modules to offload, best hidden copies first, until the projection fits."""
    chosen, excess = [], projected - limit
    order = sorted((m for m in layers if m[1] > 0), key=lambda m: -m[2] / m[1])
    for module, nbytes, _ in order:
        if excess <= 0:
            break
        chosen.append(module)
        excess -= nbytes
    return chosen


class _Shared:
    """One storage's bytes, offloaded: the host copy, and the device copy while it is
    back (``ready``) for the nodes that still need it (``left`` of ``users``)."""
    __slots__ = ("copy", "nbytes", "device", "index", "ready", "event", "users", "left")

    def __init__(self, copy, nbytes, device, index):
        self.copy = copy
        self.nbytes = nbytes
        self.device = device
        self.index = index
        self.ready = None
        self.event = None       # the copy back's event, until the compute queue waits for it
        self.users = 0
        self.left = None


class _Saved:
    """What one node saved: the tensor itself (kept on the device), or its view of an
    offloaded storage (``shared``)."""
    __slots__ = ("tensor", "shared", "shape", "stride", "offset", "dtype")

    def __init__(self, t):
        self.tensor = t
        self.shared = None
        self.shape, self.stride, self.offset, self.dtype = \
            tuple(t.shape), t._stride, t._offset, t.dtype

    def attach(self, shared: _Shared) -> None:
        self.shared = shared
        self.tensor = None      # the device memory is no longer held by this node
        shared.users += 1


class offload:
    """Context manager offloading the activations ``model``'s layers save in its forward
    pass to host memory (see the module docstring)."""

    def __init__(self, model: Module, policy="conv", *, prefetch: bool = True,
                 min_bytes: int = 1 << 16, auto_fraction: float = 0.9):
        if not isinstance(model, Module):
            raise TypeError(f"offload(): model must be an ember.nn.Module, got "
                            f"{type(model).__name__}")
        if isinstance(policy, str):
            if policy not in POLICIES:
                raise ValueError(f"offload(): policy must be one of {POLICIES} or a tuple of "
                                 f"layer kinds {tuple(KINDS)} or classes, got {policy!r}")
            layers = {"conv": KINDS["conv"], "all": None,
                      "auto": tuple(c for k in KINDS.values() for c in k)}[policy]
        else:
            layers = []
            for p in policy:
                if isinstance(p, str):
                    if p not in KINDS:
                        raise ValueError(f"offload(): unknown layer kind {p!r} (kinds: "
                                         f"{', '.join(KINDS)})")
                    layers += KINDS[p]
                elif isinstance(p, type) and issubclass(p, Module):
                    layers.append(p)
                else:
                    raise TypeError(f"offload(): a policy entry must be a kind or a Module "
                                    f"class, got {p!r}")
            layers = tuple(layers)
        self.model = model
        self.policy = policy
        self.layers = layers
        self.prefetch = prefetch
        self.min_bytes = int(min_bytes)
        self.auto_fraction = float(auto_fraction)
        self._depth = 0
        self._handles: list = []
        self._order: list = []
        #: storage -> the _Saved kept on the device that view it, or its _Shared once
        #: offloaded (during one forward pass)
        self._by_storage = weakref.WeakKeyDictionary()
        self._hooks = None      # (held only inside the context: it refers back to self)
        self._api = None
        self._device = None

    # ---- the context --------------------------------------------------------------------
    def __enter__(self):
        dev = next((p.device for p in self.model.parameters()), None)
        if dev is None:
            raise RuntimeError("offload(): the model has no parameters, so no device to "
                               "offload from")
        backend = BACKENDS.get(dev.type)
        api = getattr(backend, "device_api", None)
        if dev.type == "cpu" or backend is None or getattr(backend, "host_accessible", False):
            raise RuntimeError(f"offload(): the model is on {dev}, whose memory is host "
                               f"memory already; offloading moves activations from a "
                               f"device's memory to the host's")
        if not all(hasattr(api, f) for f in ("offload_copy_out", "offload_copy_in",
                                             "offload_ready")):
            raise RuntimeError(f"offload(): the {dev.type!r} plugin offers no asynchronous "
                               f"host copies on a second queue (offload_copy_out, "
                               f"offload_copy_in, offload_ready in its device API), which "
                               f"offloading needs")
        self._api, self._device = api, dev
        self._order = []
        chosen = [self.model] if self.layers is None else \
            [m for m in self.model.modules() if isinstance(m, self.layers)]
        self._profile = None
        if self.policy == "auto":
            made = _PLANS.get(self.model)
            if made is None:    # the profiling step: every layer, timed
                self._profile = {"stack": [], "layers": {}, "start":
                                 self._api.memory_allocated(dev.index or 0)}
            else:
                chosen = made.chosen
        for m in chosen:
            self._handles.append(m.register_forward_pre_hook(self._enter_layer))
            self._handles.append(m.register_forward_hook(self._leave_layer))
        self._hooks = saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)
        if self._profile is not None and exc[0] is None:
            self._make_plan()
        # the graph keeps the unpack hook (and so this object) while it needs it; a
        # reference from here back to the hooks would be a cycle, keeping the host and
        # device copies alive until the garbage collector runs
        self._hooks = None
        for h in self._handles:
            h.remove()
        self._handles = []
        self._depth = 0
        self._by_storage = weakref.WeakKeyDictionary()
        return False

    def _enter_layer(self, module, args):
        self._depth += 1
        prof = self._profile
        if prof is not None:
            self._api.synchronize(self._device.index or 0)
            prof["stack"].append((module, time.perf_counter()))
            prof["layers"].setdefault(module, [0, 0.0])

    def _leave_layer(self, module, args, output):
        self._depth -= 1
        prof = self._profile
        if prof is not None:
            self._api.synchronize(self._device.index or 0)
            m, t0 = prof["stack"].pop()
            prof["layers"][m][1] += time.perf_counter() - t0
            if prof["stack"]:   # (an outer layer's time is its own, not its children's)
                outer = prof["layers"][prof["stack"][-1][0]]
                outer[1] -= time.perf_counter() - t0

    def _make_plan(self) -> None:
        prof, i = self._profile, self._device.index or 0
        layers = [(m, nbytes, t) for m, (nbytes, t) in prof["layers"].items()]
        moved = sum(n for _, n, _ in layers)
        largest = max((n for _, n, _ in layers), default=0)
        projected = self._api.memory_allocated(i) + moved + 3 * largest
        limit = int(self.auto_fraction * self._api.mem_get_info(i)[1])
        chosen = _choose(layers, projected, limit) if projected > limit else []
        _PLANS[self.model] = Plan(layers, projected, limit, chosen)

    # ---- pack / unpack ----------------------------------------------------------------
    def _wanted(self, nbytes) -> bool:
        return self._depth > 0 and nbytes >= self.min_bytes

    def _pack(self, t):
        if t.device != self._device or (t.grad_fn is None and t.requires_grad):
            return t            # another device's tensor, or a parameter: kept as it is
        st = t._storage
        if not hasattr(st, "record_stream"):    # (not memory of a stream-ordered device)
            return t
        saved = _Saved(t)
        entry = self._by_storage.get(st)
        if isinstance(entry, _Shared):     # its storage went to the host already
            saved.attach(entry)
            return saved
        if not self._wanted(st.nbytes):
            # kept on the device for now; moved with the storage if a chosen layer saves it
            self._by_storage.setdefault(st, []).append(saved)
            return saved
        copy = self._api.offload_copy_out(st, 0, st.nbytes)
        shared = _Shared(copy, st.nbytes, t.device, len(self._order))
        self._order.append(shared)
        if self._profile is not None and self._profile["stack"]:
            self._profile["layers"][self._profile["stack"][-1][0]][0] += st.nbytes
        STATS["offloaded"] += 1
        STATS["bytes_out"] += st.nbytes
        for other in entry or ():
            other.attach(shared)
        saved.attach(shared)
        self._by_storage[st] = shared
        return saved

    def _upload(self, shared: _Shared):
        t = C.empty((shared.nbytes,), D.uint8, shared.device)
        shared.event = self._api.offload_copy_in(shared.copy, t._storage, 0)
        STATS["bytes_in"] += shared.nbytes
        return t

    def _unpack(self, saved):
        if not isinstance(saved, _Saved):
            return saved
        if saved.tensor is not None:
            return saved.tensor
        sh = saved.shared
        if sh.ready is None:
            sh.ready = self._upload(sh)
        raw = sh.ready
        if sh.event is not None:    # the kernels enqueued from now on read it
            self._api.offload_ready(sh.event, raw._storage)
            sh.event = None
        if sh.left is None:
            sh.left = sh.users
        sh.left -= 1
        if sh.left <= 0:        # its last user: the device copy goes with this tensor
            sh.ready, sh.left = None, sh.users
        t = C.new_tensor(raw._storage, saved.shape, saved.stride, saved.offset, saved.dtype,
                         sh.device, [0])
        if self.prefetch and sh.index > 0:
            prev = self._order[sh.index - 1]
            if prev.ready is None:
                # the storage saved before this one is needed next in backward: its copy
                # overlaps this layer's backward
                prev.ready = self._upload(prev)
                STATS["prefetched"] += 1
        return t
