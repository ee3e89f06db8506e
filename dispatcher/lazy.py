"""Lazy capture: the recording half of ``ember.compile`` (design: docs/compile.md).

While a *capture region* is open on a thread, ops on that thread do not run. Everything
above the kernels runs as in eager mode (argument checks, promotion, broadcasting, views,
autograd's recording, the random generators' counters), so errors are raised where eager
mode raises them; then, instead of a kernel running, its call is recorded into the
pending :class:`Trace`:

- ``core.empty`` gives tensors a :class:`~ember.dispatcher.core.LazyStorage`: bytes that
  do not exist yet.
- Every kernel of the kernel table is replaced by a recorder (the way the profiler wraps
  them), so a call becomes a node: the op, its device, and its arguments *encoded*. A
  tensor is its storage's slot in the trace plus its view (shape, strides, offset, dtype,
  device); a Python float and a random op's counters are runtime values, kept apart from
  the structure; anything else is a constant.
- Host reads and writes of memory the trace touches (``item()``, ``numpy()``, a copy to
  another device, saving, a backend's ``copy_to_host``) *flush*: the trace runs, the lazy
  storages still referenced get real memory, every tensor viewing them is pointed at it,
  and recording goes on into a new trace. A flush before the end of the region is a
  graph break.

The structure of a trace (its nodes' encodings, which slots are inputs and which are
buffers of what size, which buffers outlive it) is its cache key: two traces with equal
keys compute the same function of their inputs and runtime values, so the compiled form
of the first runs the second. Nothing about Python state needs guarding, because the
user's Python runs in full on every call; only the kernels are deferred.

A compiler is ``fn(trace_info, storages, values) -> runner`` (the storages and values
of the trace being compiled, for compilers that want example inputs);
``runner(storages, values)`` returns the real storages of the trace's outputs (the live
buffers, in slot order). :func:`replay` is the plain one: the recorded kernel calls, one
after another, on freshly allocated buffers.
"""
from __future__ import annotations

import sys
import threading
import traceback
import weakref

from . import core as C
from .core import LazyStorage, TensorBase
from .ops import launch_failed
from .plugins import BACKENDS, backend_for, ensure_loaded
from .random import Generator
from .schema import KERNELS_GENERATION, OPS

__all__ = ["Trace", "TraceInfo", "Region", "capture", "flush", "capturing", "replay",
           "TorchDynamoException", "Unsupported", "InvalidBackend", "suspended", "graph_break",
           "clear_cache", "forget", "cache_size", "STATS", "user_line", "Kept", "reading",
           "runner", "fixed_runner", "leaves", "node_slots", "allocate", "Recipe", "saving",
           "resolve", "exporting"]

_ident = threading.get_ident
_getrefcount = sys.getrefcount
_ref = weakref.ref


class TorchDynamoException(RuntimeError):
    """The base of ``ember.compile``'s errors (PyTorch's name, ``torch._dynamo.exc``)."""


class Unsupported(TorchDynamoException):
    """A graph break inside a ``fullgraph=True`` region."""


class InvalidBackend(TorchDynamoException):
    """``ember.compile(backend=...)`` names no registered compiler."""


class _State:
    thread = None       # the ident of the thread capturing now; None when none is
    trace = None
    region = None
    created: list = []  # weak references to the region's lazy storages


_S = _State()

#: counters tests and the logs read: traces run, compiled, and cache hits; "replays": graphs
#: of straight-line functions run again without capture (ember.compile's fast path)
STATS = {"flushes": 0, "compiles": 0, "hits": 0, "breaks": 0, "recomputable": 0,
         "recomputed": 0, "replays": 0}


class Trace:
    """The pending graph of a region: recorded kernel calls on numbered storages."""
    __slots__ = ("sig", "slots", "storages", "values", "stacks", "takes", "rand", "written",
                 "saved", "vcs")

    def __init__(self):
        self.saved = []      # the autograd SavedTensors made while recording (recompute)
        self.vcs = {}        # slot -> the version counter of the first tensor seen on it
        self.written = set()  # the slots recorded calls may write
        self.takes = []      # (generator, n) of random counters taken, not yet used
        self.rand = []       # (generator, n, seed value index, offset value index)
        self.sig = []        # per node: (op name, device type, args, attrs), encoded
        self.slots = {}      # id(storage) -> slot
        self.storages = []   # slot -> a real storage (an input) or a LazyStorage (a buffer)
        self.values = []     # runtime values: floats and random counters, in call order
        self.stacks = []     # per node: the user's source line that made it (for logs)


class Kept:
    """A trace a ``keep=True`` region ran, with what replaying it needs (``mode=
    "reduce-overhead"``): its storages (inputs real, outputs the memory they got), runtime
    values, runner, the random counters it took (generator, count, value indices) and how
    many counters were taken that no kernel used."""
    __slots__ = ("key", "storages", "values", "runner", "outputs", "results", "rand",
                 "stray_takes")

    def __init__(self, key, storages, values, runner, outputs, results, rand, stray_takes):
        self.key = key
        self.storages = storages
        self.values = values
        self.runner = runner
        self.outputs = outputs
        self.results = results
        self.rand = rand
        self.stray_takes = stray_takes


class TraceInfo:
    """What a compiler gets: the trace's structure (shared by every trace of its key)."""
    __slots__ = ("nodes", "slot_kinds", "outputs", "kernels", "stacks", "reason")

    def __init__(self, nodes, slot_kinds, outputs, kernels, stacks, reason=None):
        #: per node ``(op name, device type, args, attrs)``; a tensor argument is
        #: ``("t", slot, shape, stride, offset, dtype, device)``, a runtime value
        #: ``("v", index)``, a constant ``("c", value)``, a list or tuple ``("l"|"T", items)``
        self.nodes = nodes
        #: per slot ``("i",)`` (an input: real memory given at run time) or
        #: ``("b", nbytes, device)`` (a buffer the trace writes)
        self.slot_kinds = slot_kinds
        #: the buffer slots that outlive the trace, in order
        self.outputs = outputs
        #: per node its kernel
        self.kernels = kernels
        self.stacks = stacks
        #: the graph break that ended the trace compiled first with this structure (None:
        #: the region's end)
        self.reason = reason


# ---- recording -------------------------------------------------------------------------

def _enc(tr, a):
    """``a`` encoded for the trace ``tr`` (see ``TraceInfo.nodes``)."""
    if isinstance(a, TensorBase):
        s = a._storage
        if s.__class__ is LazyStorage and s.real is not None:
            s = s.real
        slot = tr.slots.get(id(s))
        if slot is None:
            if s.__class__ is LazyStorage:
                if s.error is not None:
                    _failed(s)
                if s.recipe is not None:
                    slot = _inline(tr, s)
            if slot is None:
                slot = tr.slots[id(s)] = len(tr.storages)
                tr.storages.append(s)
                tr.vcs[slot] = a._vc
        return ("t", slot, a.shape, a._stride, a._offset, a.dtype, a.device)
    t = a.__class__
    if t is float:
        tr.values.append(a)
        return ("v", len(tr.values) - 1)
    if t is list or t is tuple:
        return ("l" if t is list else "T", tuple([_enc(tr, x) for x in a]))
    return ("c", a)


def _value(tr, a):
    tr.values.append(a)
    return ("v", len(tr.values) - 1)


_USER_STACKS = [False]


def _is_ember(f) -> bool:
    name = f.f_globals.get("__name__") or ""
    return name == "ember" or name.startswith(("ember.", "ember_"))


def user_line() -> str:
    """The innermost frame outside ember: ``file:line in function``, and the line."""
    f = sys._getframe(1)
    while f is not None and _is_ember(f):
        f = f.f_back
    if f is None:
        return "<unknown>"
    fs = traceback.extract_stack(f, limit=1)[-1]
    return f'File "{fs.filename}", line {fs.lineno}, in {fs.name}\n    {fs.line or ""}'


#: (op name, device type) -> the kernel a recorder stands in for
_ORIGINAL: dict = {}


def _dynamic_positions(o) -> tuple:
    """Positions of a kernel's random counters (``seed``, ``offset``): runtime values."""
    sig = o.kernel.split("#")[0].strip().strip("()")
    names = [p.strip().split("=")[0] for p in sig.split(",")]
    return tuple(i for i, n in enumerate(names) if n in ("seed", "offset"))


def _writes_out_only(o) -> bool:
    """Elementwise ops and reductions write their first argument and nothing else."""
    return o.kind in ("elementwise", "reduction") and o.kernel.startswith("(out,")


def _recorder(o, dev, kernel):
    name = o.name
    dyn = _dynamic_positions(o)
    out_only = _writes_out_only(o)

    def record(*args, **attrs):
        if _S.thread != _ident():
            return kernel(*args, **attrs)
        tr = _S.trace
        if dyn:
            enc = tuple([_value(tr, a) if i in dyn else _enc(tr, a)
                         for i, a in enumerate(args)])
            if tr.takes and len(dyn) == 2:
                gen, n = tr.takes.pop(0)
                tr.rand.append((gen, n, enc[dyn[0]][1], enc[dyn[1]][1]))
        else:
            enc = tuple([_enc(tr, a) for a in args])
        kw = tuple([(k, _enc(tr, v)) for k, v in attrs.items()]) if attrs else ()
        tr.sig.append((name, dev, enc, kw))
        if out_only and enc and enc[0][0] == "t":
            tr.written.add(enc[0][1])
        else:                   # a kernel that may write any tensor it gets
            tr.written.update(node_slots((name, dev, enc, kw)))
        if _USER_STACKS[0]:
            tr.stacks.append(user_line())

    record.__wrapped__ = kernel
    return record


def _lazy_empty(shape, dtype, device):
    if _S.thread != _ident():
        return _REAL_EMPTY(shape, dtype, device)
    n, strides = C._GEOMETRY.get(shape) or C._geometry(shape)
    s = LazyStorage(n * dtype.itemsize, device)
    _S.created.append(_ref(s))
    return C.new_tensor(s, shape, strides, 0, dtype, device, [0])


_ORIGINAL_TAKE = Generator._take


def _take(self, n):
    res = _ORIGINAL_TAKE(self, n)
    if _S.thread == _ident():
        _S.trace.takes.append((self, n))
    return res


_REAL_EMPTY = C.real_empty
_FACTORY = [C.new_tensor]


def _tracking_factory(storage, shape, stride, offset, dtype, device, vc):
    t = _FACTORY[0](storage, shape, stride, offset, dtype, device, vc)
    if storage.__class__ is LazyStorage:
        storage.users.append(_ref(t))
    return t


# ---- host access: flush or give memory ----------------------------------------------------

def _failed(s):
    e = s.error
    raise RuntimeError(f"the value of this tensor could not be computed: the compiled graph "
                       f"that makes it failed with {type(e).__name__}: {e}") from e


def _realise(s):
    """Give the lazy storage ``s``, which no recorded call touches, real memory now (its
    bytes recomputed, when it has a recipe)."""
    if s.recipe is not None:
        _recompute_now(s)
        return
    alloc = C._ALLOCATORS.get(s.device._str) or C._allocator(s.device)
    _settle(s, alloc(s.nbytes))


def _settle(s, real):
    s.real = real
    for r in s.users:
        t = r()
        if t is not None and t._storage is s:
            t._storage = real
    s.users = []


def _for_host(storage, what, write=True):
    """The real storage behind ``storage``, after running the pending graph when it
    touches that memory (a graph break: ``what`` names the read, unless the frontend
    named it more precisely with ``reading``)."""
    if _READING[0] is not None:
        what, _READING[0] = _READING[0], None
    _S.region.host_reads += 1
    tr = _S.trace
    if storage.__class__ is LazyStorage:
        if storage.real is None:
            if storage.error is not None:
                _failed(storage)
            if id(storage) in tr.slots:
                flush(what)
            else:       # nothing recorded touches it: its memory can exist now
                _realise(storage)
        return storage.real
    slot = tr.slots.get(id(storage))
    if slot is not None and (write or slot in tr.written):
        flush(what)
    return storage


def _materialize(s):
    if s.real is not None:
        return s.real
    if s.error is not None:
        _failed(s)
    if _S.thread == _ident():
        return _for_host(s, "a read of a tensor's memory")
    if s.recipe is not None:
        _recompute_now(s)
        return s.real
    raise RuntimeError("a tensor made inside an ember.compile region was used on another "
                       "thread before the region computed it")


def _host_read(t, write=True):
    if _S.thread == _ident():
        _for_host(t._storage, "a read of a tensor's memory on the host (numpy(), "
                              "data_ptr(), saving or sharing)", write)


def _host_method(meth, label, write):
    def wrapped(storage, *args, **kwargs):
        if _S.thread == _ident():
            storage = _for_host(storage, label, write)
        elif storage.__class__ is LazyStorage:
            storage = _materialize(storage)
        return meth(storage, *args, **kwargs)
    wrapped.__wrapped__ = meth
    return wrapped


#: method -> (what a graph break it causes is called, whether it writes the memory)
_HOST_METHODS = {
    "copy_to_host": ("a copy of a tensor to the host (item(), tolist(), bool(), printing, "
                     "a move to another device)", False),
    "copy_from_host": ("a write of host data into a tensor", True),
    "share_storage": ("moving a tensor into shared memory", True),
    "is_shared": ("asking whether a tensor is in shared memory", False),
}


# ---- running a trace ------------------------------------------------------------------

#: (compiler key, trace key) -> runner
_CACHE: dict = {}


def clear_cache() -> None:
    _CACHE.clear()


def forget(compiler_key) -> None:
    """Drop the cached graphs of one compiler."""
    for k in [k for k in _CACHE if k[0] == compiler_key]:
        del _CACHE[k]


def cache_size() -> int:
    return len(_CACHE)


_READING = [None]


def reading(what: str) -> None:
    """Name the host read about to happen on this thread (``Tensor.item()``, a branch on a
    tensor): a graph break it causes is reported under that name."""
    if _S.thread is not None and _S.thread == _ident() and _READING[0] is None:
        _READING[0] = what


def flush(reason: str | None = None) -> None:
    """Run the pending trace of this thread's region: live buffers get real memory.
    ``reason`` (a graph break, not the region's end) is refused under ``fullgraph``."""
    tr = _S.trace
    if tr is None or not tr.sig:
        return
    region = _S.region
    if reason is not None:
        STATS["breaks"] += 1
        where = user_line()
        region.breaks.append((reason, where))
        if region.fullgraph:
            raise Unsupported(f"ember.compile(fullgraph=True): the graph breaks at {reason}, "
                             f"which needs the values of tensors computed inside the region. "
                             f"From user code:\n  {where}")
        if region.on_break is not None:
            region.on_break(reason, where)
    _S.trace = Trace()
    storages = tr.storages
    kinds = []
    outputs = []
    slot = 0
    s = None
    for s in storages:
        if s.__class__ is LazyStorage:
            kinds.append(("b", s.nbytes, s.device))
            # held by the list, the loop and this call: anything more is a live holder
            if _getrefcount(s) > 3:
                outputs.append(slot)
        else:
            kinds.append(("i",))
        slot += 1
    del s
    recipes = None
    if region.backward is not None and not region.keep and tr.saved and outputs:
        recipes = _plan_recompute(tr, kinds, outputs)
        if recipes:
            outputs = [o for o in outputs if o not in recipes]
    tr.saved = []
    key = (tuple(tr.sig), tuple(kinds), tuple(outputs))
    STATS["flushes"] += 1
    ckey = (region.compiler_key, key)
    try:
        runner = _CACHE.get(ckey)
    except TypeError:   # a kernel argument that cannot be hashed: compiled, not cached
        ckey = None
        runner = None
    if runner is None:
        info = TraceInfo(key[0], key[1], key[2],
                         [_ORIGINAL.get((n[0], n[1])) or OPS[n[0]].kernels[n[1]]
                          for n in key[0]], tr.stacks, reason)
        thread, _S.thread = _S.thread, None
        try:
            runner = region.compiler(info, storages, tr.values)
        finally:
            _S.thread = thread
        STATS["compiles"] += 1
        if len(_CACHE) > 4096:
            _CACHE.clear()
        if ckey is not None:
            _CACHE[ckey] = runner
        if region.on_compile is not None:
            region.on_compile(info)
    else:
        STATS["hits"] += 1
    region.runners.append(runner)
    thread, _S.thread = _S.thread, None
    try:
        results = runner(storages, tr.values)
    except BaseException as e:
        for s in storages:
            if s.__class__ is LazyStorage and s.real is None:
                s.error = e
                s.users = []
        raise
    finally:
        _S.thread = thread
    for slot, real in zip(outputs, results):
        _settle(storages[slot], real)
    if recipes:
        for slot, recipe in recipes.items():
            storages[slot].recipe = recipe
            STATS["recomputable"] += 1
    if region.keep:
        region.kept.append(Kept(key, storages, tr.values, runner, outputs, results, tr.rand,
                                len(tr.takes)))


# ---- recomputing instead of saving -------------------------------------------------------
#
# A buffer of a training graph that only autograd's saved tensors hold, made by elementwise
# calls from the graph's inputs and the buffers it keeps anyway, is left out of the graph
# (not written to memory): its storage keeps a Recipe, and the backward pass recomputes it
# where it reads it: inside a captured backward the recipe's calls are recorded into that
# graph (fused with the gradient computation that reads them), elsewhere they run then.

_MAX_RECIPE = 64        # calls a recipe may take


class Recipe:
    """How to recompute a buffer a graph left out: ``nodes`` (its recorded calls, in
    order; the last one writes the buffer, slot ``slot``), ``leaves`` (slot -> the storage
    read: an input of that graph or a buffer it kept), ``temps`` (slot -> (nbytes, device)
    of buffers made on the way), ``values`` (the graph's runtime values) and ``versions``
    (slot -> (version counter, version) of the leaves' tensors when recorded: an in-place
    change since then is an error, as for a saved tensor)."""
    __slots__ = ("nodes", "slot", "leaves", "temps", "values", "versions")

    def __init__(self, nodes, slot, leaves, temps, values, versions):
        self.nodes, self.slot, self.leaves, self.temps = nodes, slot, leaves, temps
        self.values, self.versions = values, versions


def saving(st) -> None:
    """Note an autograd saved tensor made on this thread now (the engine calls it)."""
    if _S.thread == _ident():
        _S.trace.saved.append(st)


def resolve(t) -> None:
    """Before a saved tensor is used outside a region: recompute its bytes if its graph
    left them out."""
    s = t._storage
    if s.__class__ is LazyStorage and s.real is None and s.recipe is not None and \
            _S.thread != _ident():
        _recompute_now(s)


def _writes(node) -> tuple:
    name, _, enc, _ = node
    if _writes_out_only(OPS[name]) and enc and enc[0][0] == "t":
        return (enc[0][1],)
    return tuple(node_slots(node))


def _whole(e, nbytes) -> bool:
    """Whether the encoded tensor ``e`` is its storage, every byte, in order."""
    _, _, shape, stride, offset, dtype, _ = e
    n = C.numel(shape)
    return offset == 0 and n * dtype.itemsize == nbytes and \
        (n <= 1 or tuple(stride) == C.contiguous_strides(shape))


def _saved_only(s, counts) -> bool:
    """Whether the tensors autograd saved are all that hold the storage ``s``."""
    holders = [t for t in [r() for r in s.users] if t is not None and t._storage is s]
    # s: the trace's list, this frame and the call; each holder's _storage. A holder: the
    # list, the loop below and the call; each saved tensor
    if not holders or _getrefcount(s) != 3 + len(holders):
        return False
    for h in holders:
        if _getrefcount(h) != 3 + counts.get(id(h), 0):
            return False
    return True


def _recipe_for(c, tr, kinds, kept, writers):
    storages = tr.storages
    nodes, temps, leaves = set(), {}, {}
    todo, seen = [c], set()
    while todo:
        slot = todo.pop()
        if slot in seen:
            continue
        seen.add(slot)
        ws = writers.get(slot)
        if ws is None or len(ws) != 1:
            return None
        i = ws[0]
        node = tr.sig[i]
        o = OPS[node[0]]
        if o.kind != "elementwise" or not o.kernel.startswith("(out,") or \
                _dynamic_positions(o):
            return None
        out = node[2][0] if node[2] else None
        if out is None or out[0] != "t" or out[1] != slot or \
                not _whole(out, storages[slot].nbytes):
            return None
        nodes.add(i)
        if len(nodes) > _MAX_RECIPE:
            return None
        if slot != c:
            temps[slot] = (storages[slot].nbytes, storages[slot].device)
        for u in node_slots(node)[1:]:
            if u == slot:
                return None
            if u in leaves or u in seen:
                continue
            if kinds[u][0] == "i" or u in kept:
                # read as they are when the graph ends: nothing may write them after this
                if any(w > i for w in writers.get(u, ())):
                    return None
                leaves[u] = storages[u]
            else:
                todo.append(u)
    versions = {u: (tr.vcs[u], tr.vcs[u][0]) for u in leaves if u in tr.vcs}
    return Recipe([tr.sig[i] for i in sorted(nodes)], c, leaves, temps, tr.values, versions)


def _plan_recompute(tr, kinds, outputs) -> dict:
    """``{output slot: Recipe}`` for the outputs the graph may leave out."""
    counts: dict = {}
    for st in tr.saved:
        d = st.data
        if d is not None:
            counts[id(d)] = counts.get(id(d), 0) + 1
    d = st = None       # (a loop variable left holding a tensor would count as a holder)
    if not counts:
        return {}
    storages = tr.storages
    cands = [slot for slot in outputs if _saved_only(storages[slot], counts)]
    if not cands:
        return {}
    writers: dict = {}
    for i, node in enumerate(tr.sig):
        for w in _writes(node):
            writers.setdefault(w, []).append(i)
    kept = set(outputs) - set(cands)
    while True:
        recipes, failed = {}, []
        for c in cands:
            if c not in kept:
                r = _recipe_for(c, tr, kinds, kept, writers)
                if r is None:
                    failed.append(c)
                else:
                    recipes[c] = r
        if not failed:
            return recipes
        kept.update(failed)     # kept after all: the others may read it instead


def _remap(e, local, rec_values, tr, vmap):
    tag = e[0]
    if tag == "t":
        return ("t", local[e[1]]) + tuple(e[2:])
    if tag == "v":
        i = vmap.get(e[1])
        if i is None:
            tr.values.append(rec_values[e[1]])
            i = vmap[e[1]] = len(tr.values) - 1
        return ("v", i)
    if tag == "c":
        return e
    return (tag, tuple([_remap(x, local, rec_values, tr, vmap) for x in e[1]]))


def _inline(tr, s) -> int:
    """Record ``s``'s recipe into the trace ``tr``; returns ``s``'s slot there."""
    rec = s.recipe
    for vc, version in rec.versions.values():
        if vc[0] != version:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by "
                f"an inplace operation: a tensor an ember.compile graph reads to recompute a "
                f"value for the backward pass is at version {vc[0]}; expected version "
                f"{version} instead.")
    local = {}
    for u, st in rec.leaves.items():
        if st.__class__ is LazyStorage:
            if st.real is not None:
                st = st.real
            elif st.error is not None:
                _failed(st)
            elif st.recipe is not None and id(st) not in tr.slots:
                local[u] = _inline(tr, st)
                continue
        slot = tr.slots.get(id(st))
        if slot is None:
            slot = tr.slots[id(st)] = len(tr.storages)
            tr.storages.append(st)
            if u in rec.versions:
                tr.vcs[slot] = rec.versions[u][0]
        local[u] = slot
    for u, (nbytes, device) in rec.temps.items():
        local[u] = len(tr.storages)
        tr.storages.append(LazyStorage(nbytes, device))
    slot = local[rec.slot] = tr.slots[id(s)] = len(tr.storages)
    tr.storages.append(s)
    vmap: dict = {}
    for name, dev, enc, kw in rec.nodes:
        enc = tuple([_remap(a, local, rec.values, tr, vmap) for a in enc])
        kw = tuple([(k, _remap(v, local, rec.values, tr, vmap)) for k, v in kw])
        tr.sig.append((name, dev, enc, kw))
        tr.written.add(enc[0][1])
        if _USER_STACKS[0]:
            tr.stacks.append("(recomputed for the backward pass)")
    STATS["recomputed"] += 1
    return slot


def _recompute_now(s) -> None:
    """Run ``s``'s recipe now (outside a region) and give ``s`` the bytes."""
    tr = Trace()
    thread, _S.thread = _S.thread, None
    try:
        slot = _inline(tr, s)
        kinds = tuple([("b", x.nbytes, x.device) if x.__class__ is LazyStorage else ("i",)
                       for x in tr.storages])
        info = TraceInfo(tuple(tr.sig), kinds, (slot,),
                         [_ORIGINAL.get((n[0], n[1])) or OPS[n[0]].kernels[n[1]]
                          for n in tr.sig], tr.stacks)
        real = replay(info)(tr.storages, tr.values)[0]
    finally:
        _S.thread = thread
    _settle(s, real)


# ---- running a trace: the runner every compiler shares --------------------------------

def leaves(e):
    """The leaf encodings of an encoded argument (lists and tuples walked), in order."""
    if e[0] in ("l", "T"):
        for x in e[1]:
            yield from leaves(x)
    else:
        yield e


def node_slots(node) -> list:
    """The storage slots a recorded call's tensor arguments view."""
    _, _, args, attrs = node
    out = []
    for a in args:
        out += [x[1] for x in leaves(a) if x[0] == "t"]
    for _, v in attrs:
        out += [x[1] for x in leaves(v) if x[0] == "t"]
    return out


def allocate(nbytes: int, device):
    """Real memory for a buffer of a compiled graph (its device's allocator)."""
    alloc = C._ALLOCATORS.get(device._str) or C._allocator(device)
    try:
        return alloc(nbytes)
    except MemoryError as e:
        if isinstance(e, C.OutOfMemoryError):
            raise
        raise C.host_out_of_memory(f"a buffer of a compiled graph on {device}", nbytes,
                                   e) from None


def _builder(e):
    """A function ``(table, values) -> argument`` for the encoded argument ``e``."""
    tag = e[0]
    if tag == "t":
        _, slot, shape, stride, offset, dtype, device = e
        make = _FACTORY[0]
        return lambda table, values: make(table[slot], shape, stride, offset, dtype, device,
                                          [0])
    if tag == "v":
        i = e[1]
        return lambda table, values: values[i]
    if tag == "c":
        v = e[1]
        return lambda table, values: v
    parts = [_builder(x) for x in e[1]]
    if tag == "l":
        return lambda table, values: [p(table, values) for p in parts]
    return lambda table, values: tuple([p(table, values) for p in parts])


def _built_call(kernel, o, dev, args, attrs):
    """A recorded call whose tensors are made afresh on each run (devices whose kernels
    may keep their arguments past the call: asynchronous queues)."""
    builders = [_builder(a) for a in args]
    kw = [(k, _builder(v)) for k, v in attrs]

    def call(table, values):
        try:
            kernel(*[b(table, values) for b in builders],
                   **{k: b(table, values) for k, b in kw})
        except Exception as e:
            launch_failed(o, dev, e)
    return call


def _bound_call(kernel, o, dev, args, attrs):
    """A recorded call of a host backend (its kernels are done with their arguments when
    they return): the tensor objects are made once, and each run points them at the
    run's storages."""
    binds = []          # (tensor object, slot)
    values_at = []      # (container, index, value index)

    def make(e, parent, index):
        tag = e[0]
        if tag == "t":
            _, slot, shape, stride, offset, dtype, device = e
            t = TensorBase.__new__(TensorBase)
            t._storage, t.shape, t._stride, t._offset = None, C.as_size(shape), stride, offset
            t.dtype, t.device, t._vc, t.requires_grad = dtype, device, [0], False
            t._base, t._view_gen = None, 0
            binds.append((t, slot))
            return t
        if tag == "v":
            values_at.append((parent, index, e[1]))
            return None
        if tag == "c":
            return e[1]
        items = []
        for j, x in enumerate(e[1]):
            items.append(None)
            items[j] = make(x, items, j)
        if tag == "T" and not any(p is items for p, _, _ in values_at):
            return tuple(items)     # (a tuple with runtime values inside stays a list)
        return items

    arg_list = []
    for j, a in enumerate(args):
        arg_list.append(None)
        arg_list[j] = make(a, arg_list, j)
    kw = {}
    for k, v in attrs:
        kw[k] = make(v, kw, k)
    if any(p is not arg_list and p is not kw for p, _, _ in values_at):
        return _built_call(kernel, o, dev, args, attrs)     # values nested in lists: rare

    def call(table, values):
        for t, slot in binds:
            t._storage = table[slot]
        for parent, index, i in values_at:
            parent[index] = values[i]
        try:
            kernel(*arg_list, **kw)
        except Exception as e:
            launch_failed(o, dev, e)
        finally:
            for t, _ in binds:
                t._storage = None   # (no run's memory outlives it here)
    return call


def _fused_call(fn, live, rt, n):
    """A plugin's fused kernel as a recorded call ``(table, values)``: ``fn(storages, byte
    offsets, values, n)`` over the operands ``live`` (``[(slot, byte offset)]``, slot None
    for one it does not touch) and the runtime values at ``rt``."""
    offsets = [off for _, off in live]

    def call(table, values):
        fn([None if slot is None else table[slot] for slot, _ in live], offsets,
           [values[i] for i in rt], n)
    return call


def runner(info: TraceInfo, steps: list):
    """``run(storages, values, static=None) -> output storages`` for ``steps``, each
    ``("call", node index)`` (the recorded kernel call) or ``("fused", (fn, operands,
    value indices, n, device type))`` (a plugin's fused kernel: ``fn(storages, byte
    offsets, values, n)`` over ``operands``, ``[(slot, byte offset)]``, slot None for one
    it does not touch). Each buffer gets memory just
    before the step that first touches it (``static``'s storage for its slot, if given)
    and gives it back after the last one, outputs excepted: the allocator hands the same
    warm blocks to later steps, as in eager mode. ``run.groups`` counts fused steps;
    ``run.plan`` is what ``fixed_runner`` builds on."""
    keep = set(info.outputs)
    first: dict = {}
    last: dict = {}
    for i, (kind, s) in enumerate(steps):
        touched = (node_slots(info.nodes[s]) if kind == "call"
                   else [x for x, _ in s[1] if x is not None])
        for slot in touched:
            if info.slot_kinds[slot][0] == "b":
                first.setdefault(slot, i)
                last[slot] = i
    allocs = [[] for _ in steps]
    frees = [[] for _ in steps]
    early = []          # outputs no step touches (ember.empty inside the region)
    for slot in sorted(set(first) | keep):
        nbytes, device = info.slot_kinds[slot][1:]
        if slot in first:
            allocs[first[slot]].append((slot, nbytes, device))
            if slot not in keep:
                frees[last[slot]].append(slot)
        else:
            early.append((slot, nbytes, device))
    work = []
    meta = []           # per step: (slots it touches, value indices it reads, its backend)
    for (kind, s), todo, done in zip(steps, allocs, frees):
        if kind == "call":
            node = info.nodes[s]
            name, dev, args, attrs = node
            backend = BACKENDS.get(dev)
            make = _bound_call if backend is not None and backend.host_accessible else \
                _built_call
            work.append((make(info.kernels[s], OPS[name], dev, args, attrs), todo, done))
            vals = [x[1] for a in list(args) + [v for _, v in attrs] for x in leaves(a)
                    if x[0] == "v"]
            meta.append((node_slots(node), vals, backend))
        else:
            work.append((_fused_call(*s[:4]), todo, done))
            meta.append(([x for x, _ in s[1] if x is not None], list(s[2]),
                         BACKENDS.get(s[4]) if len(s) > 4 else None))
    outputs = list(info.outputs)

    def give(table, todo, static):
        for slot, nbytes, device in todo:
            if static is not None and slot in static:
                table[slot] = static[slot]
            else:
                table[slot] = allocate(nbytes, device)

    def run(storages, values, static=None):
        table = list(storages)
        if early:
            give(table, early, static)
        for call, todo, done in work:
            if todo:
                give(table, todo, static)
            call(table, values)
            for slot in done:
                table[slot] = None
        return [table[s] for s in outputs]

    run.groups = sum(1 for kind, _ in steps if kind == "fused")
    run.plan = (info, work, meta, early, outputs)
    return run


def fixed_runner(run, static: dict, fixed: set, varying: set):
    """A replay plan's runner (``mode="reduce-overhead"``): ``run`` (a ``runner``) with
    memory of its own for every buffer, held for the plan's life (``static``'s storage for
    the slots it has; the others from a private pool where buffers whose lives do not
    overlap share memory, as the allocator would hand it out), so that no step allocates.
    A step whose memory is all fixed (buffers, and the input slots in ``fixed``) and which
    reads no runtime value in ``varying`` (the random counters) is recorded by its backend
    on the first run (``Backend.record_launches``) and repeated without its Python code
    from then on. Returns ``run(storages, values) -> output storages``; None when ``run``
    is not a ``runner``."""
    plan = getattr(run, "plan", None)
    if plan is None:
        return None
    info, work, meta, early, outputs = plan
    pool: dict = {}
    free: dict = {}

    def take(todo):
        for slot, nbytes, device in todo:
            if slot in static:
                pool[slot] = static[slot]
                continue
            spare = free.get((nbytes, device._str))
            pool[slot] = spare.pop() if spare else allocate(nbytes, device)
    take(early)
    for _, todo, done in work:
        take(todo)
        for slot in done:
            nbytes, device = info.slot_kinds[slot][1:]
            free.setdefault((nbytes, device._str), []).append(pool[slot])
    known = set(pool) | set(fixed)
    steps = []      # [call, its backend if it may be recorded, its recording]
    for (call, _, _), (slots, vals, backend) in zip(work, meta):
        repeatable = backend is not None and all(x in known for x in slots) and \
            not any(v in varying for v in vals)
        steps.append([call, backend if repeatable else None, None])
    base = list(pool.items())

    def run_fixed(storages, values):
        table = list(storages)
        for slot, st in base:
            table[slot] = st
        for step in steps:
            call, backend, recorded = step
            if recorded is not None:
                recorded()
            elif backend is not None:
                step[1] = None      # (recorded once: a step that cannot be is run from now)
                step[2] = backend.record_launches(lambda: call(table, values))
            else:
                call(table, values)
        return [table[s] for s in outputs]

    run_fixed.steps = steps
    return run_fixed


def replay(info: TraceInfo, storages=None, values=None):
    """The plain compiler: the recorded kernel calls, one after another."""
    return runner(info, [("call", i) for i in range(len(info.nodes))])


# ---- regions --------------------------------------------------------------------------

class Region:
    """The options of one capture: the compiler, its cache key, ``fullgraph``, and the
    callbacks the frontend's logging uses."""

    def __init__(self, compiler=replay, compiler_key="eager", fullgraph=False,
                 on_break=None, on_compile=None, stacks=False, keep=False, backward=None,
                 export=False):
        #: makes the region the backward pass of autograd nodes recorded here is captured
        #: in (the engine enters a fresh one per pass), or None: their backward runs eagerly
        self.backward = backward
        self.keep = keep            # keep each trace run (``Kept``) in ``kept``
        self.kept: list = []
        self.runners: list = []     # the runner of each trace run
        self.compiler = compiler
        self.stacks = stacks        # record each node's user line (for the logs)
        self.compiler_key = compiler_key
        self.fullgraph = fullgraph
        self.on_break = on_break
        self.on_compile = on_compile
        self.breaks: list = []
        #: host accesses of tensor memory the capture saw (reads of an argument's values
        #: into Python do not break the graph, but a replay would not repeat them)
        self.host_reads = 0
        #: an export (``ember.export``, ``ember.onnx.export``): the graph is kept, not run
        #: for its values; ops whose eager checks read values skip them (as PyTorch's
        #: traced forms do)
        self.export = export


def exporting() -> bool:
    """Whether this thread is capturing a graph for an export."""
    return _S.thread == _ident() and _S.region is not None and _S.region.export


def capturing() -> bool:
    """Whether ops on this thread are being recorded now."""
    return _S.thread is not None and _S.thread == _ident()


def backward_region():
    """What makes the region the backward of an autograd node recorded now is captured in
    (``Region.backward`` of the capturing region), or None."""
    if _S.thread is not None and _S.thread == _ident():
        return _S.region.backward
    return None


def graph_break(reason: str) -> None:
    """A graph break the program asks for (``ember._dynamo.graph_break()``): what this
    thread's region captured so far runs now, and capture resumes. Under ``fullgraph``
    it raises ``Unsupported`` naming the line, even with nothing captured yet."""
    if not capturing():
        return
    region = _S.region
    if _S.trace.sig:
        flush(reason)
        return
    where = user_line()
    if region.fullgraph:
        raise Unsupported(f"ember.compile(fullgraph=True): the graph breaks at {reason}. "
                          f"From user code:\n  {where}")
    STATS["breaks"] += 1
    region.breaks.append((reason, where))
    if region.on_break is not None:
        region.on_break(reason, where)


class suspended:
    """``with suspended(reason):`` runs its body eagerly inside a region (after running
    what is pending: a graph break); recording resumes after it."""

    def __init__(self, reason: str):
        self.reason = reason
        self.thread = None

    def __enter__(self):
        if _S.thread is not None and _S.thread == _ident():
            flush(self.reason)
            self.thread, _S.thread = _S.thread, None
        return self

    def __exit__(self, *exc):
        if self.thread is not None:
            _S.thread = self.thread
        return False


_SAVED: dict = {}


#: (id(backend), method name) -> (the method, its wrapper)
_HOST_WRAPPERS: dict = {}
#: (the kernel-table generation they were built for, [(op, its table, its recorders)])
_TABLES = [-1, []]
_LOADED = [False]


def _install():
    if not _LOADED[0]:
        ensure_loaded()
        for t in list(BACKENDS):
            try:
                backend_for(t)
            except Exception:  # a broken plugin is reported where it is used
                continue
        _LOADED[0] = True
    if _TABLES[0] != KERNELS_GENERATION[0]:
        swaps = []
        for o in OPS.values():
            if o.kernels:
                swaps.append((o, o.kernels, {dev: _recorder(o, dev, k)
                                             for dev, k in o.kernels.items()}))
                for dev, k in o.kernels.items():
                    _ORIGINAL[(o.name, dev)] = k
        _TABLES[:] = [KERNELS_GENERATION[0], swaps]
    for o, _, rec in _TABLES[1]:
        o.kernels = rec
    _SAVED["backends"] = []
    for b in BACKENDS.values():
        saved = {}
        for meth, (label, write) in _HOST_METHODS.items():
            m = getattr(b, meth, None)
            if m is not None:
                saved[meth] = b.__dict__.get(meth)
                key = (id(b), meth)
                hit = _HOST_WRAPPERS.get(key)
                if hit is None or hit[0] != m:
                    hit = _HOST_WRAPPERS[key] = (m, _host_method(m, label, write))
                setattr(b, meth, hit[1])
        _SAVED["backends"].append((b, saved))
    Generator._take = _take
    _FACTORY[0] = C.new_tensor
    C.new_tensor = _tracking_factory
    C.empty = _lazy_empty
    C.MATERIALIZE[0] = _materialize
    C.HOST_READ[0] = _host_read


def _uninstall():
    Generator._take = _ORIGINAL_TAKE
    C.empty = _REAL_EMPTY
    C.new_tensor = _FACTORY[0]
    C.HOST_READ[0] = None
    generation = KERNELS_GENERATION[0]
    for o, table, rec in _TABLES[1]:
        o.kernels = table
    if generation != _TABLES[0]:    # a plugin installed kernels inside the region
        for o, table, rec in _TABLES[1]:
            for dev, k in rec.items():
                if getattr(k, "__wrapped__", None) is None:
                    table[dev] = k
    for b, saved in _SAVED.pop("backends", ()):
        for meth, previous in saved.items():
            if previous is None:
                b.__dict__.pop(meth, None)
            else:
                setattr(b, meth, previous)


_LOCK = threading.Lock()


class capture:
    """``with capture(region):`` records this thread's ops; leaving runs what is pending.

    Regions do not nest: an inner one joins the outer (a compiled function called by a
    compiled function runs inside the caller's graph). One thread captures at a time: a
    region entered on another thread meanwhile runs eagerly."""

    def __init__(self, region: Region):
        self.region = region
        self.outer = False

    def __enter__(self):
        if _S.thread is not None or not _LOCK.acquire(blocking=False):
            return self     # inside a region already, or another thread captures: eager
        self.outer = True
        try:
            _install()
        except BaseException:
            _LOCK.release()
            raise
        _S.region = self.region
        _S.trace = Trace()
        _S.created = []
        _USER_STACKS[0] = self.region.stacks
        _S.thread = _ident()
        return self

    def __exit__(self, typ, exc, tb):
        if not self.outer:
            return False
        try:
            flush()
            # storages no kernel wrote (an empty result, ember.empty) get memory too
            for r in _S.created:
                st = r()
                if st is not None and st.real is None and st.error is None and \
                        st.recipe is None:
                    _realise(st)
        finally:
            _S.created = []
            _READING[0] = None
            _S.thread = None
            _S.trace = None
            _S.region = None
            try:
                _uninstall()
            finally:
                _LOCK.release()
        return False
