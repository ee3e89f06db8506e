"""``ember.compile``: PyTorch's ``torch.compile`` on ember's lazy capture (docs/compile.md).

A compiled function runs its Python in full on every call, inside a capture region
(``ember.dispatcher.lazy``): the ops record a trace instead of running, and the trace runs
compiled when a value is needed (a graph break) and when the function returns. Compiled
traces are cached by their structure, so a second call with the same structure reuses the
first one's compiled form. (A straight-line function, whose bytecode a scan shows has
nothing but ember ops, replays its graph under guards without running its Python:
``_straight_line.py``.)

Compilers ("backends") are PyTorch's: a callable ``(gm, example_inputs) -> callable`` that
gets the trace as an :class:`ember.fx.GraphModule`, or a name (``"eager"``: the recorded
kernels one by one; ``"ember"``, also called ``"inductor"``: the default).
"""
from __future__ import annotations

import collections
import functools
import logging
import weakref
import os
import time
import types
import sys
import threading

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import fusion
from ember.dispatcher import lazy as L
from ember.dispatcher.device import to_device
from ember.dispatcher.grad_mode import MODE
from ember.dispatcher.schema import OPS

from . import fx
from ._straight_line import Plans, forget_all, guard_of as _guard_of
from .nn.modules.module import Module

__all__ = ["compile", "OptimizedModule", "register_backend", "list_backends",
           "lookup_backend", "explain", "ExplainOutput", "set_logs", "reset",
           "to_graph_module"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
#: the options ``options=`` accepts (PyTorch's Inductor takes hundreds; these are the ones
#: with a meaning for ember's compiler; unknown ones raise as in PyTorch)
_OPTIONS = ("trace.enabled", "trace.graph_diagram", "epilogue_fusion", "max_autotune",
            "max_autotune_pointwise", "max_autotune_gemm", "fallback_random",
            "triton.cudagraphs", "shape_padding", "freezing", "cpp.threads",
            "cpp.simdlen", "size_asserts")

log = logging.getLogger("ember.compile")


# ---- logging (EMBER_LOGS=graph_breaks,recompiles,output_code) -----------------------------

_LOGS: set = set()


def set_logs(*, graph_breaks: bool = False, recompiles: bool = False,
             output_code: bool = False, graph_code: bool = False) -> None:
    """Turn the compile logs on or off, as ``torch._logging.set_logs``: why a graph broke,
    why a function compiled again, and the code each compiled graph runs."""
    _LOGS.clear()
    for name, on in (("graph_breaks", graph_breaks), ("recompiles", recompiles),
                     ("output_code", output_code), ("graph_code", graph_code)):
        if on:
            _LOGS.add(name)
    if _LOGS and not any(getattr(h, "_ember", False) for h in log.handlers):
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("[ember.compile] %(message)s"))
        h._ember = True
        log.addHandler(h)
        log.propagate = False
    log.setLevel(logging.INFO if _LOGS else logging.WARNING)
    # device plugins log the source of the kernels they generate here (a child logger:
    # silent unless output_code is on)
    logging.getLogger("ember.compile.output_code").setLevel(
        logging.INFO if output_code else logging.WARNING)


def _logs_from_env() -> None:
    names = {n.strip().lstrip("+") for n in os.environ.get("EMBER_LOGS", "").split(",")
             if n.strip()}
    if names:
        known = {"graph_breaks", "recompiles", "output_code", "graph_code"}
        set_logs(**{n: True for n in names & known})


_logs_from_env()


# ---- backends -------------------------------------------------------------------------

_BACKENDS: dict = {}        # name -> (compiler_fn or None for the built-in replay, tags)


def register_backend(compiler_fn=None, name: str | None = None, tags=()):
    """Register a compiler ``(gm, example_inputs) -> callable`` under ``name`` (default: the
    function's name); usable as a decorator, as ``torch._dynamo.register_backend``."""
    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    if not callable(compiler_fn):
        raise AssertionError(f"A callable function is expected, but {type(compiler_fn)} is "
                             f"provided.")
    name = name or compiler_fn.__name__
    if name in _BACKENDS and _BACKENDS[name][0] is not compiler_fn:
        raise AssertionError(f"duplicate name: {name}")
    _BACKENDS[name] = (compiler_fn, tuple(tags))
    return compiler_fn


_BACKENDS["eager"] = (None, ("debug",))
_BACKENDS["ember"] = (None, ())
_BACKENDS["inductor"] = (None, ())
# PyTorch's AOTAutograd debug backends trace forward and backward and run the graphs op by
# op: ember's capture records the backward as well, so they are the "eager" replay
_EAGER_ALIASES = ("aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner")
for _name in _EAGER_ALIASES:
    _BACKENDS[_name] = (None, ("debug",))


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The names ``backend=`` takes, sorted; ``exclude_tags=()`` lists the debug ones too."""
    exclude = set(exclude_tags or ())
    return sorted(n for n, (_, tags) in _BACKENDS.items() if not exclude & set(tags))


def lookup_backend(backend):
    """``(compiler for the dispatcher's capture, its cache key)`` for a name or callable."""
    if backend is None:
        backend = "ember"
    if isinstance(backend, str):
        entry = _BACKENDS.get(backend)
        if entry is None:
            raise L.InvalidBackend(f"Invalid backend: {backend!r}, see "
                                   f"`ember._dynamo.list_backends()` for available backends.")
        fn = entry[0]
        if fn is None:
            if backend == "eager" or backend in _EAGER_ALIASES:
                return L.replay, "eager"
            return fusion.compile_trace, backend
        return _fx_compiler(fn), ("fx", id(fn))
    if not callable(backend):
        raise L.InvalidBackend(f"Invalid backend: {backend!r}, see "
                               f"`ember._dynamo.list_backends()` for available backends.")
    return _fx_compiler(backend), ("fx", id(backend))


# ---- the trace as an ember.fx graph ---------------------------------------------------

class _CompilerOps:
    """``ember.compiler.ops``: the functions a captured graph's nodes call: one per op of
    the schema (its kernel, writing its first argument; returns it), ``buffer`` (memory a
    graph allocates) and ``view`` (a typed, strided view of a buffer or an input)."""

    def __init__(self):
        self._ops: dict = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        op = self._ops.get(name)
        if op is None:
            if name not in OPS:
                raise AttributeError(f"ember.compiler.ops has no op {name!r}")
            op = self._ops[name] = _KernelOp(name)
        return op

    def __dir__(self):
        return sorted(OPS) + ["buffer", "view"]


class _KernelOp:
    """One op's kernel as a graph node's target: ``op(out, *inputs, **attrs)`` runs the
    kernel of ``out``'s device and returns ``out``."""

    def __init__(self, name):
        self.__name__ = self.__qualname__ = name
        self.__module__ = "ember.compiler.ops"
        self._op = OPS[name]

    def __call__(self, *args, **attrs):
        dev = _first_tensor(args).device
        k = self._op.kernels.get(dev.type)
        if k is None:
            raise NotImplementedError(f"{self.__name__}(): no kernel on {dev}")
        k(*args, **attrs)
        return args[0]

    def __repr__(self):
        return f"ember.compiler.ops.{self.__name__}"


def _first_tensor(args):
    for a in args:
        if isinstance(a, C.TensorBase):
            return a
        if isinstance(a, (list, tuple)):
            t = _first_tensor(a)
            if t is not None:
                return t
    return None


def _buffer(nbytes: int, device: str):
    """``nbytes`` of uninitialised memory on ``device``, as a 1-d uint8 tensor."""
    return C.empty((nbytes,), D.uint8, to_device(device))


def _view(base, dtype: str, shape: tuple, stride: tuple, offset: int):
    """A view of ``base``'s memory with ``dtype``, ``shape``, ``stride`` and ``offset``
    (counted in ``dtype``'s elements)."""
    return C.new_tensor(base._storage, tuple(shape), tuple(stride), offset,
                        D.to_dtype(dtype), base.device, base._vc)


_buffer.__module__ = _view.__module__ = "ember.compiler.ops"
_buffer.__qualname__, _view.__qualname__ = "buffer", "view"
OPS_NAMESPACE = _CompilerOps()
OPS_NAMESPACE.__dict__["buffer"] = _buffer
OPS_NAMESPACE.__dict__["view"] = _view


def _input_order(info) -> list:
    """The encodings of a trace's input views and runtime values, in placeholder order."""
    order = {}
    for _, _, args, attrs in info.nodes:
        for e in (x for a in (*args, *(v for _, v in attrs)) for x in L.leaves(a)):
            if (e[0] == "t" and info.slot_kinds[e[1]][0] == "i") or e[0] == "v":
                order.setdefault(e)
    return list(order)


def _inputs_of(order, storages, values) -> list:
    out = []
    for e in order:
        if e[0] == "t":
            _, slot, shape, stride, offset, dtype, device = e
            out.append(C.new_tensor(storages[slot], shape, stride, offset, dtype, device, [0]))
        else:
            out.append(values[e[1]])
    return out


def to_graph_module(info, storages=None, values=None):
    """The trace ``info`` as ``(GraphModule, example_inputs)``: a placeholder per input view
    and runtime value, a node per kernel call, the live buffers as outputs. Without
    ``storages`` and ``values`` (the trace's own), the examples are ``None``."""
    g = fx.Graph()
    order = _input_order(info)
    places = {}
    n_args = 0
    for e in order:
        if e[0] == "t":
            places[e] = g.placeholder(f"arg{n_args}_1")
            n_args += 1
        else:
            places[e] = g.placeholder(f"val{e[1]}")
    bufs = {}
    views = {}

    def arg(e):
        tag = e[0]
        if tag == "t":
            _, slot, shape, stride, offset, dtype, device = e
            if info.slot_kinds[slot][0] == "i":
                return places[e]
            v = views.get(e)
            if v is None:
                b = bufs.get(slot)
                if b is None:
                    nbytes, dev = info.slot_kinds[slot][1:]
                    b = bufs[slot] = g.call_function(_buffer, (nbytes, str(dev)))
                v = views[e] = g.call_function(_view, (b, dtype.name, shape, stride, offset))
            return v
        if tag == "v":
            return places[e]
        if tag == "c":
            return e[1]
        items = [arg(x) for x in e[1]]
        return items if tag == "l" else tuple(items)

    for name, _, args, attrs in info.nodes:
        g.call_function(getattr(OPS_NAMESPACE, name), tuple(arg(a) for a in args),
                        {k: arg(v) for k, v in attrs})
    outs = []
    for slot in info.outputs:
        b = bufs.get(slot)
        if b is None:       # a live buffer no call wrote (ember.empty): memory all the same
            nbytes, dev = info.slot_kinds[slot][1:]
            b = bufs[slot] = g.call_function(_buffer, (nbytes, str(dev)))
        outs.append(b)
    g.output(tuple(outs))
    examples = None if storages is None else _inputs_of(order, storages, values)
    return fx.GraphModule(Module(), g), examples


def _fx_compiler(backend_fn):
    """A dispatcher compiler that hands the trace to ``backend_fn`` as a GraphModule."""
    def compile_trace(info, storages, values):
        gm, examples = to_graph_module(info, storages, values)
        compiled = backend_fn(gm, examples)
        if not callable(compiled):
            raise RuntimeError(f"ember.compile: the backend {backend_fn!r} returned "
                               f"{type(compiled).__name__}, not a callable")
        order = _input_order(info)

        def run(storages, values):
            outs = compiled(*_inputs_of(order, storages, values))
            if not isinstance(outs, (list, tuple)):
                outs = (outs,)
            return [o._storage for o in outs]
        return run
    return compile_trace


# ---- logging the regions --------------------------------------------------------------

#: ``ember._dynamo.utils.counters`` (PyTorch's ``torch._dynamo.utils.counters``): per
#: category a Counter. ember fills ``"stats"`` (``unique_graphs``: graphs compiled,
#: ``calls_captured``: the ops in them) and ``"graph_break"`` (reason -> breaks met while
#: compiling: a cached graph's break is not counted again); clear it
#: with ``counters.clear()``
COUNTERS: collections.defaultdict = collections.defaultdict(collections.Counter)


def _on_break(reason, where):
    if "graph_breaks" in _LOGS:
        log.info("Graph break: %s\n  %s", reason, where)


#: calls after which a compiled function whose graphs fused nothing runs eagerly
EAGER_AFTER = 3
#: calls of each kind (eager, compiled) the timed trial of a fusing function makes (0: none)
TRIAL_CALLS = 3


def _size_class(args, kwargs) -> int:
    """The bit length of the element count of a call's tensor arguments (top level, and
    in lists and tuples): the timed trial's key."""
    n = 0
    for a in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(a, C.TensorBase):
            n += a.numel()
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, C.TensorBase):
                    n += b.numel()
    return n.bit_length()

_FIELDS = ("storage", "shape", "stride", "offset", "dtype", "device")


def _describe(e) -> str:
    if e[0] == "t":
        return (f"a {e[5].name} tensor of shape {list(e[2])}, stride {list(e[3])}, offset "
                f"{e[4]} on {e[6]}")
    if e[0] == "v":
        return "a runtime value"
    if e[0] == "c":
        return repr(e[1])
    return f"a {'list' if e[0] == 'l' else 'tuple'} of {len(e[1])}"


def _plain(v):
    """A shape as the tuple it is (the log says ``shape (4,) -> (5,)``)."""
    return tuple(v) if isinstance(v, tuple) else v


def _arg_change(old, new):
    """How one encoded argument changed, in words (None: it did not)."""
    if old == new:
        return None
    if old[0] == new[0] == "t":
        what = [f"{f} {_plain(old[i + 1])!r} -> {_plain(new[i + 1])!r}"
                for i, f in enumerate(_FIELDS) if old[i + 1] != new[i + 1] and f != "storage"]
        if not what:
            return "it is another tensor's memory than before (aliasing changed)"
        return ", ".join(what)
    if old[0] == new[0] and old[0] in ("l", "T") and len(old[1]) == len(new[1]):
        for j, (a, b) in enumerate(zip(old[1], new[1])):
            c = _arg_change(a, b)
            if c:
                return f"item {j}: {c}"
    return f"{_describe(old)} -> {_describe(new)}"


def why_recompiled(old, new) -> str:
    """The first difference between two traces' structures, in words."""
    for k, (a, b) in enumerate(zip(old.nodes, new.nodes)):
        if a == b:
            continue
        if a[0] != b[0] or a[1] != b[1]:
            return f"call {k} is {b[0]} on {b[1]} where it was {a[0]} on {a[1]}"
        for j, (x, y) in enumerate(zip(a[2], b[2])):
            c = _arg_change(x, y)
            if c:
                return f"call {k} ({b[0]}), argument {j}: {c}"
        for (ka, x), (kb, y) in zip(a[3], b[3]):
            c = _arg_change(x, y) if ka == kb else f"{ka} -> {kb}"
            if c:
                return f"call {k} ({b[0]}), {kb}=: {c}"
        return f"call {k} ({b[0]}) takes other arguments"
    if len(old.nodes) != len(new.nodes):
        return f"{len(new.nodes)} calls where there were {len(old.nodes)}"
    if old.slot_kinds != new.slot_kinds:
        return "the buffers it allocates differ in size"
    return "other buffers outlive the graph"


_WATCHES = weakref.WeakSet()


class _Watch:
    """Per compiled function: how many graphs it compiled, and the last one's structure
    (for "why it recompiled")."""

    def __init__(self, name):
        _WATCHES.add(self)
        self.name = name
        self.compiles = 0
        self.reset()

    @property
    def tried(self) -> bool:
        """Whether a timed trial has decided for some size class."""
        return bool(self.decided)

    def eager_for(self, size) -> bool:
        """Whether calls of this size class run eagerly (capture costs more than fusion
        saves at that size)."""
        return self.decided.get(size, False)

    def observe(self, region, seconds, size=0) -> None:
        """After a compiled call (``seconds`` long, its tensor arguments in size class
        ``size``): whether its graphs fused anything. A function none of whose first
        ``EAGER_AFTER`` calls ran a fused kernel runs eagerly from then on (the same
        results: capture only ever runs eager mode's kernels, and here no faster). One
        whose graphs fuse, on host devices only, is then timed, per size class: after
        ``EAGER_AFTER`` calls of a class, ``TRIAL_CALLS`` calls run eagerly and as many
        compiled, in turn; if the fastest eager call beat the fastest compiled one,
        capture costs more Python time than its fused kernels save at that size, and calls
        of that class run eagerly from then on (a larger class is tried anew). (Fused
        kernels on host devices compute eager mode's bits, so the switch changes no
        result; on asynchronous devices a call's time is not its work, and they keep
        compiling.)"""
        self.observe_run(any(getattr(r, "groups", 0) for r in region.runners), seconds,
                         size)

    def observe_run(self, fused, seconds, size=0) -> None:
        """``observe`` for a call that ran graphs: ``fused``, whether one fused kernels
        (a straight-line function's replay: no capture, see _straight_line.py)."""
        self.calls += 1
        if fused:
            self.fused = True
        if not self.fused and self.calls >= EAGER_AFTER:
            self.eager = True
            if "recompiles" in _LOGS or "graph_breaks" in _LOGS:
                log.info("%s runs eagerly from now on: its graphs fuse no kernels, so "
                         "capturing them only costs time", self.name)
            return
        if (trial := self.trials.get(size)) is not None:
            trial.append((False, seconds))
            self._decide(size, trial)
            return
        n = self.class_calls[size] = self.class_calls.get(size, 0) + 1
        if (n >= EAGER_AFTER and self.fused and self.host and size not in self.decided
                and TRIAL_CALLS > 0):
            self.trials[size] = []

    def trial_call(self, size) -> bool:
        """Whether the next call of this size class is one of the trial's eager ones."""
        trial = self.trials.get(size)
        return trial is not None and len(trial) % 2 == 0

    def timed_eager(self, size, seconds) -> None:
        trial = self.trials.get(size)
        if trial is not None:
            trial.append((True, seconds))

    def _decide(self, size, trial) -> None:
        if len(trial) < 2 * TRIAL_CALLS:
            return
        eager = [t for e, t in trial if e]
        compiled = [t for e, t in trial if not e]
        self.trials.pop(size, None)
        # (a graph on an asynchronous device compiled meanwhile: its time is not its work)
        slower = self.host and eager and compiled and min(eager) < min(compiled)
        self.decided[size] = bool(slower)
        if slower and ("recompiles" in _LOGS or "graph_breaks" in _LOGS):
            log.info("%s runs eagerly from now on for tensor arguments of about 2^%d "
                     "elements: a call took %.1f us eagerly and %.1f us compiled (capture "
                     "costs more than fusion saves)", self.name, max(size - 1, 0),
                     min(eager) * 1e6, min(compiled) * 1e6)

    def reset(self) -> None:
        """Forget what the calls taught (``ember.compiler.reset``)."""
        self.last = None
        self.calls = 0
        self.fused = False
        self.eager = False      # (see observe)
        self.host = True        # every graph so far ran on host devices (cpu)
        # the timed trial, per size class of the call's tensor arguments (what capture
        # saves grows with the data, what it costs does not): calls made, the running
        # trial's [(eager?, seconds)], and the classes decided (True: eager is faster)
        self.class_calls = {}
        self.trials = {}
        self.decided = {}

    def on_compile(self, info):
        self.compiles += 1
        stats = COUNTERS["stats"]
        stats["unique_graphs"] += 1
        stats["calls_captured"] += len(info.nodes)
        if info.reason is not None:     # (a break is counted where its graph is compiled)
            COUNTERS["graph_break"][info.reason] += 1
        for node in info.nodes:
            b = L.BACKENDS.get(node[1])
            if b is None or not b.host_accessible:
                self.host = False
        if "recompiles" in _LOGS and self.last is not None:
            log.info("Recompiling %s: %s (first call made at\n  %s)", self.name,
                     why_recompiled(self.last, info),
                     info.stacks[0] if info.stacks else "<unknown>")
        self.last = info
        if "output_code" in _LOGS or "graph_code" in _LOGS:
            gm, _ = to_graph_module(info)
            log.info("Output code of a graph of %s:\n%s", self.name, gm.code)


# ---- ember.compile -----------------------------------------------------------------------

#: ``ember._dynamo.config`` (it imports this module and sets itself here): its ``disable``
_DYNAMO_CONFIG = [types.SimpleNamespace(disable=False)]


def _region_fn(fn, compiled_by, fullgraph, name, replay=False):
    compiler, key = compiled_by
    watch = _Watch(name)

    def compile_graph(info, storages, values):
        if watch.compiles:
            stance = _STANCE[0]
            if stance == "fail_on_recompile":
                raise RuntimeError(f"Detected recompile when torch.compile stance is "
                                   f"'fail_on_recompile'. function name: {name}")
            if stance == "eager_on_recompile":
                return L.replay(info)
        return compiler(info, storages, values)

    replayer = _Replayer(fn, compile_graph, key, fullgraph, watch) if replay else None
    # a straight-line function replays its graph without its Python (_straight_line.py)
    plans = None if replay else Plans(fn)
    backward_key = (key, "backward")

    def backward_region():
        # the backward pass of what a call recorded: captured and compiled by the same
        # compiler (a graph per structure, as forward graphs), never under fullgraph
        return L.Region(compiler, backward_key, False, _on_break, None, "recompiles" in _LOGS)
    # the default compiler: a function whose graphs fuse nothing gains nothing from
    # capture, which costs Python time; after its first calls it runs eagerly
    adaptive = key in ("ember", "inductor") and not fullgraph

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        if _STANCE[0] == "force_eager" or L.capturing() or _DYNAMO_CONFIG[0].disable:
            return fn(*args, **kwargs)
        if replayer is not None:
            return replayer(*args, **kwargs)
        if watch.eager:
            return fn(*args, **kwargs)
        size = 0
        if adaptive:
            size = _size_class(args, kwargs)
            if watch.eager_for(size):
                return fn(*args, **kwargs)
            if watch.trial_call(size):
                t = time.perf_counter()
                result = fn(*args, **kwargs)
                watch.timed_eager(size, time.perf_counter() - t)
                return result
        if plans is not None and plans.plans:
            t = time.perf_counter()
            result = plans.call(args, kwargs)
            if result is not Plans.MISS:
                if adaptive:
                    watch.observe_run(plans.fused, time.perf_counter() - t, size)
                return result
        keep = plans is not None and plans.active and not (
            MODE.grad and any(isinstance(a, C.TensorBase) and a.requires_grad
                              for a in args))
        versions = plans.versions(args, kwargs) if keep else None
        region = L.Region(compile_graph, key, fullgraph, _on_break, watch.on_compile,
                          "recompiles" in _LOGS, keep=keep, backward=backward_region)
        t = time.perf_counter()
        with L.capture(region):
            result = fn(*args, **kwargs)
        if adaptive:
            watch.observe(region, time.perf_counter() - t, size)
        if keep:
            plans.learn(region, args, kwargs, result, versions)
        return result
    compiled._ember_compiled = True
    compiled._ember_replayer = replayer     # (its plans: tests and debugging)
    compiled._ember_watch = watch           # (what it learnt about itself: the same)
    compiled._ember_plans = plans           # (its straight-line replay plans: the same)
    compiled._torchdynamo_orig_callable = fn
    return compiled


_STANCE = ["default"]


# ---- mode="reduce-overhead": replay without running Python --------------------------------

def _flatten(obj, out):
    """The leaves of nested tuples, lists and dicts, in order."""
    t = type(obj)
    if t is tuple or t is list:
        for x in obj:
            _flatten(x, out)
    elif t is dict:
        for k in obj:
            _flatten(obj[k], out)
    else:
        out.append(obj)
    return out


class _ReplayPlan:
    """One captured call, replayed: its kernels on the arguments' memory, everything else
    (parameters, buffers, optimizer state, outputs) in the memory it had when captured."""

    def __init__(self, kept, guard, grad, arg_slots, result):
        self.guard = guard
        self.grad = grad
        self.arg_slots = arg_slots
        self.result = result
        self.kept = kept
        self.lock = threading.Lock()
        self.static = {s: r for s, r in zip(kept.outputs, kept.results)} if kept else {}
        if kept is not None:
            self.storages = list(kept.storages)
            for slot, _ in arg_slots:
                self.storages[slot] = None      # (the captured call's arguments: not kept)
            # every buffer's memory held by the plan, and launches recorded once where the
            # backend can (lazy.fixed_runner); the arguments' memory changes per call
            args = {slot for slot, _ in arg_slots}
            fixed = {i for i, st in enumerate(self.storages) if st is not None
                     and i not in args}
            varying = {i for _, _, a, b in kept.rand for i in (a, b)}
            self.run = L.fixed_runner(kept.runner, self.static, fixed, varying)

    def matches(self, leaves) -> bool:
        if MODE.grad != self.grad or len(leaves) != len(self.guard):
            return False
        try:
            return _guard_of(leaves) == self.guard
        except Exception:   # a value whose == raises or is ambiguous
            return False

    def replay(self, leaves):
        k = self.kept
        if k is not None:
            with self.lock:     # (one replay at a time: the plan's buffers are shared)
                self._replay(k, leaves)
        return self.result

    def _replay(self, k, leaves):
        storages = list(self.storages)
        for slot, pos in self.arg_slots:
            storages[slot] = leaves[pos]._storage
        values = list(k.values)
        for gen, n, i_seed, i_off in k.rand:
            values[i_seed], values[i_off] = gen._take(n)
        if self.run is not None:
            self.run(storages, values)
        else:
            k.runner(storages, values, self.static)


def _plan_of(region, leaves, guard, result):
    """The replay plan of a call captured by ``region``, or the reason it cannot be one."""
    if region.breaks:
        return f"the call broke the graph at {region.breaks[0][0]}"
    if len(region.kept) > 1:
        return "the call ran more than one graph"
    kept = region.kept[0] if region.kept else None
    if kept is not None and kept.stray_takes:
        return "the call drew random numbers no kernel used"
    if kept is not None and len(kept.rand) != sum(1 for n in kept.key[0]
                                                  if n[0] in ("uniform", "normal")):
        return "the call's random kernels could not be matched with their generators"
    outs = {id(r) for r in (kept.results if kept else ())}
    for x in _flatten(result, []):
        if isinstance(x, C.TensorBase):
            if id(x._storage) not in outs:
                return "it returns a tensor the graph does not make (an argument or a " \
                       "parameter)"
            if x.requires_grad:
                return "it returns a tensor that requires grad (replay does not rebuild " \
                       "the autograd graph)"
    arg_slots = []
    if kept is not None:
        where = {}
        for i, x in enumerate(leaves):
            if isinstance(x, C.TensorBase):
                where.setdefault(id(x._storage), i)
        for slot, st in enumerate(kept.storages):
            pos = where.get(id(st))
            if pos is not None:
                arg_slots.append((slot, pos))
    return _ReplayPlan(kept, guard, MODE.grad, arg_slots, result)


class _Replayer:
    """A function compiled with ``mode="reduce-overhead"`` (see docs/compile.md: the
    contract). Call 1 runs compiled as in the default mode (a warm-up: optimizer state and
    caches get made); later calls are captured whole, and calls whose arguments match a
    captured one (shapes, strides, dtypes, devices, requires_grad, aliasing, every
    non-tensor argument, grad mode) replay its kernels without running Python (the last 8
    captures are kept)."""

    def __init__(self, fn, compiler, key, fullgraph, watch):
        self.fn = fn
        self.compiler = compiler
        self.key = key
        self.fullgraph = fullgraph
        self.watch = watch
        self.calls = 0
        self.plans: list = []      # the most recent first, at most 8
        self.refused = None

    def __call__(self, *args, **kwargs):
        leaves = _flatten((args, kwargs), [])
        for plan in self.plans:
            if plan.matches(leaves):
                return plan.replay(leaves)
        self.calls += 1
        keep = self.calls >= 2 and self.refused is None
        region = L.Region(self.compiler, self.key, self.fullgraph, _on_break,
                          self.watch.on_compile, "recompiles" in _LOGS, keep=keep)
        guard = _guard_of(leaves) if keep else None
        with L.capture(region):
            result = self.fn(*args, **kwargs)
        if keep:
            plan = _plan_of(region, leaves, guard, result)
            if isinstance(plan, str):
                self.refused = plan
                if "graph_breaks" in _LOGS or "recompiles" in _LOGS:
                    log.info("mode='reduce-overhead': %s runs in the default mode: %s",
                             self.watch.name, plan)
            else:
                self.plans.insert(0, plan)
                del self.plans[8:]
        return result


class OptimizedModule(Module):
    """A module compiled by ``ember.compile``: calls run its original module (``_orig_mod``,
    whose parameters and attributes it shares) inside a capture region."""

    def __init__(self, mod, compiled_call):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_compiled_call"] = compiled_call

    def forward(self, *args, **kwargs):
        return self.__dict__["_compiled_call"](*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",
            mode=None, options=None, name=None, disable: bool = False,
            recompile_limit=None, isolate_recompiles: bool = False, shapes_spec=None):
    """Compile ``model`` (a function or a Module) as ``torch.compile``: its ops are captured
    lazily on each call and run as compiled graphs, cached by structure.

    Args:
        model: the function or module (``None``: returns a decorator).
        fullgraph: a graph break inside raises ``ember._dynamo.exc.Unsupported``, naming
            the line that broke it.
        dynamic: accepted; ember's graphs are keyed by their shapes, so a new shape
            compiles a new graph (see docs/compile.md).
        backend: ``"inductor"``/``"ember"`` (the default), ``"eager"``, a registered name,
            or a callable ``(gm, example_inputs) -> callable``.
        mode (str, optional): PyTorch's modes (``"default"``, ``"reduce-overhead"``,
            ``"max-autotune"``...), checked as PyTorch checks them; not with ``options``.
        options (dict, optional): compiler options, checked as PyTorch checks them.
        disable: return ``model`` unchanged.

    >>> import ember
    >>> f = ember.compile(lambda x: (x * 2).exp().sum())
    >>> round(f(ember.zeros(3)).item(), 4)
    3.0
    """
    if model is None:
        def deco(m):
            return compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, name=name, disable=disable,
                           recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
        return deco
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if backend in ("inductor", "ember", None):
        if mode is not None and mode not in _MODES:
            raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                               f"{', '.join(_MODES)}")
        for key in options or {}:
            if key not in _OPTIONS:
                raise RuntimeError(f"Unexpected optimization option {key}, known options "
                                   f"are {list(_OPTIONS)}")
    if shapes_spec is not None:
        raise NotImplementedError("ember.compile(shapes_spec=...) is not supported: ember "
                                  "keys graphs by their shapes")
    if disable:
        return model
    compiled_by = lookup_backend(backend)   # an invalid backend raises now, as in PyTorch
    # replay without Python (PyTorch: CUDA graphs) with the built-in compilers only
    replay = mode == "reduce-overhead" and (backend is None or isinstance(backend, str)
                                            and _BACKENDS[backend][0] is None)
    if isinstance(model, Module):
        label = name or type(model).__name__
        return OptimizedModule(model, _region_fn(model.__call__, compiled_by, fullgraph,
                                                 label, replay))
    label = name or getattr(model, "__qualname__", repr(model))
    return _region_fn(model, compiled_by, fullgraph, label, replay)


# ---- explain ------------------------------------------------------------------------------

class _BreakReason:
    __slots__ = ("reason", "user_stack")

    def __init__(self, reason, user_stack):
        self.reason = reason
        self.user_stack = user_stack

    def __repr__(self):
        return f"GraphBreak(reason={self.reason!r})"


class ExplainOutput:
    """What ``explain`` found: the graphs one call ran, the breaks and their reasons."""

    def __init__(self, graphs, break_reasons, op_count):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.graph_break_count = len(break_reasons)
        self.break_reasons = break_reasons
        self.op_count = op_count
        self.ops_per_graph = [[n.target for n in gm.graph.nodes if n.op == "call_function"
                               and n.target not in (_buffer, _view)] for gm in graphs]

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, b in enumerate(self.break_reasons, 1):
            lines.append(f"  Break Reason {i}:\n    Reason: {b.reason}\n    User Stack:\n"
                         f"      {b.user_stack}")
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines += [f"    {getattr(t, '__qualname__', t)}" for t in ops]
        return "\n".join(lines)


def explain(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` once under capture and report its graphs and breaks, as
    ``torch._dynamo.explain``; ``explain(fn)`` alone returns a function taking the
    arguments."""
    if not args and not kwargs:
        return functools.partial(explain, fn)
    graphs = []

    def keep(gm, examples):
        graphs.append(gm)
        return gm

    region = L.Region(_fx_compiler(keep), ("explain", id(keep)), False, None, None)
    with L.capture(region):
        fn(*args, **kwargs)
    L.forget(("explain", id(keep)))
    reasons = [_BreakReason(r, w) for r, w in region.breaks]
    ops = sum(len([n for n in gm.graph.nodes if n.op == "call_function"
                   and n.target not in (_buffer, _view)]) for gm in graphs)
    return ExplainOutput(graphs, reasons, ops)


def reset() -> None:
    """Forget every compiled graph and what compiled functions learnt about themselves
    (``torch._dynamo.reset``)."""
    L.clear_cache()
    forget_all()
    for w in list(_WATCHES):
        w.reset()
