"""Straight-line functions: the default mode of ``ember.compile`` replays their graph
without running their Python again (docs/compile.md, "Straight-line functions").

A compiled function normally runs its Python on every call inside a capture region: that
is what keeps graph breaks, side effects and Python-value decisions right, and it costs
the Python of every op (about 5 us each here). TorchDynamo avoids that cost by reading the
function's bytecode and guarding what the captured graph assumed. This module does the
same for the functions where a short bytecode scan can show the re-run would do nothing
the graph does not: no jumps (no Python control flow), no stores outside local variables,
no imports, no inner functions, and every call one of ember's own functions, a tensor
method, ``math``'s or a few pure builtins. For those, after a call captured as one graph
with no break, later calls whose guards hold run that graph's compiled kernels on the new
arguments' memory and return fresh output tensors.

The guards: the function's code and defaults; the identity of every global, closure cell
and module attribute the code reads; the arguments' structure (container types, lengths,
keyword names), each tensor's shape, strides, offset, dtype, device, type and aliasing,
each other argument's value (only immutable ones are allowed); grad mode, the default
dtype and device; no autocast region, forward-AD level or TorchFunctionMode open (Tensor
subclasses are not replayed either: ``__torch_function__`` must see the calls). A plan is
refused (the call keeps the ordinary capture path) when the call broke the graph, ran more than
one graph, drew random numbers, wrote to an argument, read a tensor that is neither an
argument nor one its code names (globals, closures and module attributes holding tensors
are guarded by identity and geometry; their values are read afresh), returned a tensor
the graph does not make or a view, or when a tensor argument requires grad with grad mode
on.
"""
from __future__ import annotations

import builtins
import dis
import math
import sys
import threading
import types

from ember.dispatcher import core as C
from ember.dispatcher import autocast
from ember.dispatcher import dtypes as D
from ember.dispatcher.device import device as Device
from ember.dispatcher import lazy as L
from ember.dispatcher.grad_mode import MODE
from ember.dispatcher.schema import OPS

from . import _defaults, overrides
from ._tensor import Tensor
from .autograd import forward_ad
from .nn.parameter import Parameter

__all__ = ["scan", "Plans", "forget_all", "guard_of"]

#: builtins whose calls have no effect beyond their result
_PURE_BUILTINS = frozenset(id(f) for f in (
    len, abs, min, max, float, int, round, pow, divmod, isinstance, sum, tuple, list, bool,
    complex, slice))

#: tensor attributes whose use is an effect, or reads state the guards do not cover
_TENSOR_DENY = frozenset({
    "backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad",
    "retains_grad", "item", "tolist", "numpy", "data_ptr", "untyped_storage", "storage",
    "grad", "data", "grad_fn", "is_leaf", "record_stream", "share_memory_", "pin_memory",
    "to_dlpack", "__dlpack__", "set_", "resize_", "resize_as_", "detach_",
    "requires_grad_", "apply_", "map_", "map2_", "__setitem__", "__delitem__",
    # (and the mutating methods of Python's containers: a list made inside the function
    # may be appended to, but the scan cannot tell it from anything else)
    "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
    "popitem", "add", "discard", "send", "write"})

#: ember functions that change or read global state
_STATEFUL = ("set_", "get_", "are_", "manual_seed", "seed", "initial_seed", "use_",
             "save", "load", "compile", "enable_grad", "no_grad", "inference_mode",
             "set_grad_enabled", "autocast", "profiler", "print", "cuda", "device")

#: the modules whose public functions are ops (the others: autograd, distributed, optim,
#: profiler, utils, ... have effects beyond their results)
_PURE_MODULES = ("ember._functions", "ember._ops_", "ember._creation", "ember._views",
                 "ember._spectral", "ember._tensor", "ember._numpy_aliases",
                 "ember._deprecated_overloads", "ember.nn.functional", "ember.special",
                 "ember.linalg", "ember.fft", "ember.dispatcher.views",
                 "ember.dispatcher.ops")

_IMMUTABLE = (int, float, bool, str, complex, type(None), D.DType, Device,
              type(C.as_size(())))

#: the types of the argument values a plan guards by value
_EXACT = frozenset(_IMMUTABLE) - {float, complex}  # (those two: with their signed zeros)

#: bumped by ``forget_all`` (``ember.compiler.reset()``): plans made before are dropped
_GENERATION = [0]


def forget_all() -> None:
    """Drop every compiled function's plans (their next calls are captured afresh)."""
    _GENERATION[0] += 1

_ENV, _DYN, _CONST, _NULL = "env", "dyn", "const", "null"


class _Refuse(Exception):
    pass


def scan(fn):
    """The environment reads of ``fn`` if it is a straight-line function this module can
    replay (a list of ``(chain, use)``: ``chain`` is ``(("global", name) | ("cell", index, name),
    *attribute names)``, ``use`` ``"call"``, ``"value"`` or ``"base"``), else a sentence
    saying why not."""
    if type(fn) is not types.FunctionType:
        return "it is not a plain Python function"
    if sys.version_info[:2] not in ((3, 11), (3, 12)):
        return "the scan reads the bytecode of Python 3.11 and 3.12 only"
    code = fn.__code__
    if code.co_flags & (0x04 | 0x08 | 0x20 | 0x80 | 0x100 | 0x200):
        return "it takes *args or **kwargs, or is a generator or coroutine"
    if code.co_cellvars:
        return "it makes closures"
    try:
        return _scan(code)
    except _Refuse as e:
        return str(e)


def _scan(code):
    nargs = code.co_argcount + code.co_kwonlyargcount
    local = {name: (_DYN,) for name in code.co_varnames[:nargs]}
    stack: list = []
    reads: list = []
    methods: set = set()    # attribute names read from runtime values (Tensor's are guarded)
    v311 = sys.version_info[:2] == (3, 11)

    def pop(n=1):
        if len(stack) < n:
            raise _Refuse("its bytecode is beyond the scan")
        out = stack[len(stack) - n:]
        del stack[len(stack) - n:]
        return out

    def used(entry, use):
        if entry[0] == _ENV:
            reads.append((entry[1], use))

    for ins in dis.get_instructions(code):
        op = ins.opname
        if op in ("RESUME", "NOP", "CACHE", "COPY_FREE_VARS", "PRECALL", "KW_NAMES",
                  "EXTENDED_ARG"):
            continue
        if op in ("LOAD_FAST", "LOAD_FAST_CHECK"):
            e = local.get(ins.argval)
            if e is None:
                raise _Refuse(f"it reads local {ins.argval!r} before setting it")
            stack.append(e)
        elif op == "STORE_FAST":
            local[ins.argval] = pop()[0]
        elif op == "LOAD_CONST":
            stack.append((_CONST,))
        elif op == "LOAD_DEREF":
            if ins.argval not in code.co_freevars:
                raise _Refuse("it reads a cell variable")
            stack.append((_ENV, (("cell", code.co_freevars.index(ins.argval),
                                  ins.argval),)))
        elif op == "LOAD_GLOBAL":
            if ins.arg & 1:
                stack.append((_NULL,))
            stack.append((_ENV, (("global", ins.argval),)))
        elif op == "PUSH_NULL":
            stack.append((_NULL,))
        elif op in ("LOAD_ATTR", "LOAD_METHOD"):
            (obj,) = pop()
            method = op == "LOAD_METHOD" or (not v311 and ins.arg & 1)
            name = ins.argval
            if obj[0] == _ENV:
                used(obj, "base")
                attr = (_ENV, obj[1] + (name,))
            elif obj[0] == _DYN:
                if name in _TENSOR_DENY or name.startswith("_"):
                    raise _Refuse(f"it uses the attribute {name!r} of a runtime value")
                methods.add(name)
                attr = (_DYN,)
            else:
                raise _Refuse(f"it reads attribute {name!r} of a constant")
            if method:
                stack.append((_NULL,))
            stack.append(attr)
        elif op == "CALL":
            for e in pop(ins.arg):
                used(e, "value")
            (callee,) = pop()
            pop()               # (the NULL or self slot under the callable)
            used(callee, "call")
            if callee[0] == _CONST:
                raise _Refuse("it calls a constant")
            stack.append((_DYN,))
        elif op == "BINARY_OP" or op == "COMPARE_OP" or op == "BINARY_SUBSCR":
            for e in pop(2):
                used(e, "value")
            stack.append((_DYN,))
        elif op in ("UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT"):
            used(pop()[0], "value")
            stack.append((_DYN,))
        elif op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SLICE"):
            for e in pop(ins.arg):
                used(e, "value")
            stack.append((_DYN,))
        elif op == "UNPACK_SEQUENCE":
            used(pop()[0], "value")
            stack.extend([(_DYN,)] * ins.arg)
        elif op == "POP_TOP":
            pop()
        elif op == "RETURN_VALUE":
            used(pop()[0], "value")
            if stack:
                raise _Refuse("its bytecode is beyond the scan")
        elif op == "RETURN_CONST":
            if stack:
                raise _Refuse("its bytecode is beyond the scan")
        else:
            raise _Refuse(f"it has {op} (control flow, a store outside locals, an import "
                          f"or another form the scan does not follow)")
    # a tensor method the code calls, replaced on the class later, must be seen
    reads += [((("tensor", name),), "method") for name in sorted(methods)]
    return reads


def _resolve(fn, chain):
    root = chain[0]
    if root[0] == "tensor":
        return getattr(Tensor, root[1], None)
    if root[0] == "cell":
        obj = fn.__closure__[root[1]].cell_contents
    else:
        g = fn.__globals__
        obj = g.get(root[1], _resolve)
        if obj is _resolve:
            b = g.get("__builtins__", builtins)
            obj = (b.get(root[1], _resolve) if type(b) is dict
                   else getattr(b, root[1], _resolve))
            if obj is _resolve:
                raise _Refuse(f"{root[1]!r} is not defined")
    for name in chain[1:]:
        obj = getattr(obj, name)
    return obj


def _normalize(fn, reads) -> list:
    """``reads`` with every chain that passes through a tensor (a global or closure
    tensor, ``W``, ``W.T``, ``W.t()``) cut at the tensor: the tensor is guarded by identity
    and geometry (its values may change: a replay reads its memory), the attribute after it
    as a Tensor method."""
    out: list = []
    for chain, use in reads:
        if chain[0][0] == "tensor":
            out.append((chain, use))
            continue
        obj = _resolve(fn, chain[:1])
        for i in range(1, len(chain) + 1):
            if type(obj) in (Tensor, Parameter):
                out.append((chain[:i], "tensor"))
                if i < len(chain):
                    name = chain[i]
                    if name in _TENSOR_DENY or name.startswith("_"):
                        raise _Refuse(f"it uses the attribute {name!r} of a tensor it "
                                      f"reads from outside")
                    out.append(((("tensor", name),), "method"))
                break
            if i == len(chain):
                out.append((chain, use))
                break
            obj = getattr(obj, chain[i])
    seen: set = set()
    return [r for r in out if not (r in seen or seen.add(r))]


def _geometry(t):
    """What a tensor read from the environment must keep for a plan to hold (not its
    version: its values may change)."""
    return (t._storage, t.shape, t._stride, t._offset, t.dtype, t.device, t.requires_grad)


def _is_ember_module(m) -> bool:
    name = getattr(m, "__name__", "")
    return name == "ember" or name.startswith("ember.") or m is math


def _check(obj, use, chain):
    label = ".".join(c[-1] if type(c) is tuple else c for c in chain)
    if use == "method":
        return
    if use == "tensor":
        if type(obj) not in (Tensor, Parameter):
            raise _Refuse(f"it reads {label}, which is no longer a tensor")
        return
    if use == "base":
        if type(obj) is not types.ModuleType:
            raise _Refuse(f"it reads attributes of {label}, which is not a module")
        return
    if use == "call":
        if id(obj) in _PURE_BUILTINS:
            return
        mod = getattr(obj, "__module__", None) or ""
        name = getattr(obj, "__name__", "")
        if type(obj) is types.BuiltinFunctionType and mod == "math":
            return
        if (mod == "ember" or mod.startswith(_PURE_MODULES)) and callable(obj) and \
                not isinstance(obj, type) and not name.endswith("_") and \
                not name.startswith(_STATEFUL) and not name.startswith("_") and \
                not (name.startswith("is_") and name.endswith("_enabled")):
            return
        raise _Refuse(f"it calls {label}, which is not one of ember's pure functions")
    if isinstance(obj, _IMMUTABLE) or type(obj) is types.ModuleType and \
            _is_ember_module(obj):
        return
    if callable(obj) and (getattr(obj, "__module__", "") or "").startswith("ember"):
        return
    raise _Refuse(f"it reads {label}, a {type(obj).__name__} (guards need immutable values)")


def _spec(obj, spec, leaves):
    """The structure of a call's arguments (container types and lengths, keyword names,
    non-tensor values) into ``spec``, its tensors into ``leaves``; False for an argument
    a plan cannot guard."""
    t = type(obj)
    if t is Tensor or t is Parameter:
        spec.append(t)
        leaves.append(obj)
        return True
    if t is tuple:      # (lists and dicts: the function could change them)
        spec.append((t, len(obj)))
        for x in obj:
            if not _spec(x, spec, leaves):
                return False
        return True
    if t is float:
        spec.append((float, obj, math.copysign(1.0, obj)))
        return True
    if t is complex:
        spec.append((complex, obj, math.copysign(1.0, obj.real),
                     math.copysign(1.0, obj.imag)))
        return True
    if t in _EXACT:     # (exact types: a subclass may carry attributes the code reads)
        spec.append((t, obj))
        return True
    return False


def _state():
    return (MODE.grad, MODE.inference, D.get_default_dtype(), _defaults._STATE.device)


def _quiet() -> bool:
    """No autocast region, no forward-AD level and no ``TorchFunctionMode``: ops record
    what they always do, and nothing outside the graph wants to see the calls."""
    return autocast.ACTIVE[0] == 0 and forward_ad._STATE.level is None and \
        not overrides._STATE.mode_on


class _Plan:
    __slots__ = ("spec", "meta", "state", "storages", "arg_slots", "values", "run", "out",
                 "shape_of", "lock", "fused", "env_slots")

    def __init__(self, spec, meta, state, storages, arg_slots, values, run, out):
        self.spec = spec
        self.meta = meta
        self.state = state
        self.storages = storages
        self.arg_slots = arg_slots
        self.values = values
        self.run = run
        self.out = out
        self.shape_of = None
        self.env_slots: list = []   # (slot, index of the environment tensor it reads)
        self.fused = bool(getattr(run, "groups", 0))     # (whether it runs a fused kernel)
        # one replay at a time: a host runner points shared tensor objects at the run's
        # memory (lazy._bound_call)
        self.lock = threading.Lock()


def _defaults_spec(kwdefaults):
    """Keyword-only defaults by value (their dict can be changed in place)."""
    if not kwdefaults:
        return ()
    spec: list = [tuple(kwdefaults)]
    if not _spec(tuple(kwdefaults.values()), spec, []):
        raise _Refuse("a keyword-only default is not an immutable value")
    return spec


def _state_of(x):
    return x._vc[0], _geometry(x)


def guard_of(leaves) -> list:
    """What a replay is keyed on for a call's leaves: each tensor's shape, strides,
    offset, dtype, device, requires_grad and the first leaf sharing its storage
    (aliasing); each other value itself (``mode="reduce-overhead"``'s plans and these)."""
    g = []
    first: dict = {}
    for i, x in enumerate(leaves):
        if isinstance(x, C.TensorBase):
            g.append(("t", x.shape, x._stride, x._offset, x.dtype, x.device,
                      x.requires_grad, first.setdefault(id(x._storage), i)))
        else:
            g.append(("v", x))
    return g


class Plans:
    """The replay plans of one compiled function (at most 8, the most recent first)."""

    MISS = object()

    def __init__(self, fn):
        self.fn = fn
        self.code = getattr(fn, "__code__", None)
        self.kwdefaults = None
        self.reads = scan(fn)
        self.refused = self.reads if isinstance(self.reads, str) else None
        self.env = None
        self.guards = None          # the reads as guarded (``_normalize``)
        self.env_tensors: list = []  # tensors the function reads from its environment
        self.env_geometry: list = []
        self.env_storages: set = set()
        self.plans: list = []
        self.failures = 0
        self.refused_call = None    # why the last call captured made no plan (debugging)
        self.generation = _GENERATION[0]
        self.fused = False          # whether the last replayed plan ran a fused kernel

    @property
    def active(self) -> bool:
        """Whether calls should be captured so that plans can be made."""
        return self.refused is None and self.failures < 4 and len(self.plans) < 8

    def _env(self):
        fn = self.fn
        return [fn.__code__, fn.__defaults__] + \
            [_resolve(fn, chain) for chain, _ in self.guards]

    def _env_holds(self) -> bool:
        try:
            now = self._env()
            kw = _defaults_spec(self.fn.__kwdefaults__)
        except Exception:
            return False
        return kw == self.kwdefaults and all(a is b for a, b in zip(now, self.env)) and \
            all(_geometry(t) == g for t, g in zip(self.env_tensors, self.env_geometry))

    def call(self, args, kwargs):
        """The result of replaying a plan whose guards hold for this call, or MISS."""
        if self.generation != _GENERATION[0]:
            self.plans.clear()
            self.env = None
            self.failures = 0
            self.generation = _GENERATION[0]
            return Plans.MISS
        if not _quiet() or not self._env_holds():
            return Plans.MISS
        spec: list = [len(args), tuple(kwargs)]
        leaves: list = []
        if not _spec(args, spec, leaves) or not _spec(tuple(kwargs.values()), spec, leaves):
            return Plans.MISS
        if self.env_storages and any(x._storage in self.env_storages for x in leaves):
            return Plans.MISS       # (an argument sharing memory with a tensor it reads)
        state = _state()
        meta = None
        for plan in self.plans:
            if plan.spec != spec or plan.state != state:
                continue
            if meta is None:
                meta = guard_of(leaves)
            if plan.meta == meta:
                return self._replay(plan, leaves)
        return Plans.MISS

    def _replay(self, plan, leaves):
        storages = list(plan.storages)
        for slot, pos in plan.arg_slots:
            storages[slot] = leaves[pos]._storage
        for slot, k in plan.env_slots:
            storages[slot] = self.env_tensors[k]._storage
        with plan.lock:
            reals = plan.run(storages, plan.values)
        L.STATS["replays"] += 1
        self.fused = plan.fused
        make = C.new_tensor
        out = []
        for item in plan.out:
            if item[0] == "t":
                _, j, shape, stride, offset, dtype, device, version = item
                out.append(make(reals[j], shape, stride, offset, dtype, device, [version]))
            else:
                out.append(item[1])
        kind = plan.shape_of
        if kind is None:
            return out[0]
        return kind(out)

    def versions(self, args, kwargs) -> tuple:
        """The version counters and geometry of a call's tensor arguments, before it runs
        (an in-place op bumps the one; ``unsqueeze_``, ``t_``, ``set_`` change the other),
        and the versions of the tensors its code reads from globals and closures."""
        leaves: list = []
        _spec((args, tuple(kwargs.values())), [], leaves)
        env = {}
        try:
            for chain, use in _normalize(self.fn, self.reads):
                if use == "tensor":
                    obj = _resolve(self.fn, chain)
                    env[id(obj)] = obj._vc[0]
        except Exception:   # (a cell not filled yet, a missing attribute: _plan says why)
            pass
        return [_state_of(x) for x in leaves], env

    def learn(self, region, args, kwargs, result, versions) -> None:
        """Make a plan from a call captured by ``region`` (``keep=True``), if it can be
        (``versions``: what ``versions`` gave before the call)."""
        why = self._plan(region, args, kwargs, result, versions)
        if isinstance(why, str):
            self.failures += 1
            self.refused_call = why

    def _plan(self, region, args, kwargs, result, versions):
        if self.fn.__code__ is not self.code:    # (replaced: what it reads is new)
            self.code = self.fn.__code__
            self.reads = scan(self.fn)
            if isinstance(self.reads, str):
                self.refused = self.reads
                return self.refused
        try:
            guards = _normalize(self.fn, self.reads)
            env = []
            for chain, use in guards:
                obj = _resolve(self.fn, chain)
                _check(obj, use, chain)
                env.append(obj)
            if not _spec(tuple(self.fn.__defaults__ or ()), [], []):
                raise _Refuse("a default argument is not an immutable value")
            kw = _defaults_spec(self.fn.__kwdefaults__)
        except _Refuse as e:
            self.refused = str(e)
            return self.refused
        except Exception as e:     # a closure cell not filled yet, a missing attribute
            self.refused = f"its environment could not be read ({e})"
            return self.refused
        tensors = [obj for (_, use), obj in zip(guards, env) if use == "tensor"]
        geometry = [_geometry(t) for t in tensors]
        env = [self.fn.__code__, self.fn.__defaults__] + env
        if self.env is None or kw != self.kwdefaults or len(env) != len(self.env) or \
                any(a is not b for a, b in zip(env, self.env)) or \
                geometry != self.env_geometry:
            self.plans.clear()      # (what the function reads changed: older plans
            self.env = env          # can never match again)
            self.kwdefaults = kw
            self.guards = guards
            self.env_tensors, self.env_geometry = tensors, geometry
            self.env_storages = {t._storage for t in tensors}
        if MODE.grad and any(t.requires_grad for t in tensors):
            return "a tensor the function reads from outside requires grad"
        arg_versions, env_versions = versions
        if any(t._vc[0] != env_versions.get(id(t), t._vc[0]) for t in tensors):
            return "the call wrote to a tensor the function reads from outside"
        if not _quiet():
            return "an autocast region or a forward-AD level is open"
        if region.breaks:
            return "the call broke the graph"
        if len(region.kept) != 1:
            return "the call ran no graph or more than one"
        kept = region.kept[0]
        if kept.rand or kept.stray_takes:
            return "the call drew random numbers"
        spec: list = [len(args), tuple(kwargs)]
        leaves: list = []
        if not _spec(args, spec, leaves) or not _spec(tuple(kwargs.values()), spec, leaves):
            return "an argument is neither a tensor nor an immutable value"
        if MODE.grad and any(x.requires_grad for x in leaves):
            return "a tensor argument requires grad"
        where: dict = {}
        for i, x in enumerate(leaves):
            where.setdefault(id(x._storage), i)
        storages = [None] * len(kept.storages)
        arg_slots = []
        # Python numbers reach kernels as the dispatcher's cached, never-written scalar
        # tensors (core.scalar_like): the plan keeps those storages
        constants = {id(t._storage) for t in list(C._SCALARS.values())}
        inputs = set()
        env_index = {id(t._storage): k for k, t in enumerate(tensors)}
        env_slots = []
        for slot, st in enumerate(kept.storages):
            if st.__class__ is L.LazyStorage:
                continue
            inputs.add(slot)
            pos = where.get(id(st))
            if pos is not None:
                if id(st) in env_index:
                    return "an argument shares memory with a tensor the function reads"
                arg_slots.append((slot, pos))
            elif id(st) in env_index:
                env_slots.append((slot, env_index[id(st)]))
            elif id(st) in constants:
                storages[slot] = st
            else:
                return "the graph reads a tensor that is neither an argument nor read " \
                       "by the function's code"
        # what writes to an argument: an in-place op or out= bumps its version counter
        # (shared by its views); a kernel writing its first argument (``out``) is checked
        # as well
        if any(_state_of(x) != v for x, v in zip(leaves, arg_versions)):
            return "the call wrote to an argument or changed its shape"
        if region.host_reads:
            return "the call read tensor values into Python (a replay would not)"
        for node in kept.key[0]:
            enc = node[2]
            if enc and enc[0][0] == "t" and enc[0][1] in inputs and \
                    OPS[node[0]].kernel.startswith("(out,"):
                return "the graph writes to an argument"
        index = {id(r): j for j, r in enumerate(kept.results)}
        single = isinstance(result, C.TensorBase)
        items = [result] if single else result
        if type(items) not in (tuple, list):
            return "it returns something other than a tensor or a tuple or list of them"
        out = []
        seen = set()
        for x in items:
            if isinstance(x, C.TensorBase):
                j = index.get(id(x._storage))
                if j is None or type(x) is not Tensor:
                    return "it returns a tensor the graph does not make"
                if j in seen or x._base is not None or x.requires_grad:
                    return "it returns a view, or a tensor that requires grad"
                seen.add(j)
                out.append(("t", j, x.shape, x._stride, x._offset, x.dtype, x.device,
                            x._vc[0]))
            elif isinstance(x, _IMMUTABLE):
                out.append(("c", x))
            else:
                return "it returns a value that is not a tensor or an immutable value"
        plan = _Plan(spec, guard_of(leaves), _state(), storages, arg_slots, list(kept.values),
                     kept.runner, out)
        plan.env_slots = env_slots
        plan.shape_of = None if single else type(items)
        self.plans.insert(0, plan)
        return plan
