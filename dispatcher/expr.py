"""The scalar expression language: what one element of an elementwise op computes.

An elementwise op's definition carries its scalar body as an expression over its inputs,
written with Python operators and the functions below::

    x = inputs("x")
    exp(x) - 1                                   # expm1's meaning
    precise("expm1", (x,), exp(x) - 1)           # ... and libm's accurate version of it
    where(isnan(a), a, where(a >= b, a, b))      # NaN-propagating maximum

The expression is data (:class:`Expr` nodes forming a DAG). Renderers turn it into
C++ (one text for the cpu backend and, with ``EMBER_HD`` functions, CUDA; see
``codegen/cxx.py``) and OpenCL C (``codegen/opencl.py``); :func:`evaluate` runs it with
tensor ops, which is how an op without a kernel on some backend computes (its composite).

Types. Every value is either ``T`` (the op's compute type: the dtype's own type, float
for float16/bfloat16) or ``bool``. Inputs are ``T`` unless declared ``bool``; constants
and scalar attributes are ``T``; comparisons, ``isnan``-style tests and logical ops give
``bool``; ``cast(e, T)`` turns a bool into 0/1. Arithmetic on integers wraps (two's
complement), as PyTorch's does; ``/`` is true division and exists only for floating
types; integer division, modulo and powers are the intrinsics ``idiv_trunc``,
``idiv_floor``, ``imod`` and ``ipow``, which give 0 for a zero divisor
(backends that can report it do so through the op's ``checks``).

Per-kind bodies. Integer and floating semantics differ (``abs`` of an unsigned integer,
``floor`` of an integer), so an op may give one body per dtype kind: ``float``, ``sint``
(signed integers), ``uint``, ``bool``, or the groups ``int`` (sint+uint), ``integral``
(int+bool), ``num`` (float+int) and ``any``. :func:`body_for` picks the most specific
one; a dtype with no body is not supported by the op.

Loops. A body is straight-line, but for recurrences whose trip count is data
(``chebyshev_polynomial_t(x, n)``'s n steps) :func:`loop` gives a counted loop carrying a
few values, with an optional early stop; the renderers emit a C ``for`` loop, and
:func:`evaluate` iterates while any element is still running.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass

__all__ = [
    "Expr", "inputs", "const", "attr", "where", "cast", "precise", "call", "T", "BOOL",
    "MATH_FUNCTIONS", "INTRINSICS", "KINDS", "kind_of", "body_for", "type_of", "walk",
    "evaluate", "resolve_precise", "lower", "variables", "nan_max", "nan_min", "isnan", "isinf",
    "isfinite",
    "logical_not", "loop",
] + ["exp", "log", "sin", "cos", "tan", "sqrt", "rsqrt", "erf", "tanh", "expm1", "log1p",
     "log2", "floor", "ceil", "trunc", "rint", "fabs", "fmod", "pow", "hypot", "copysign",
     "idiv_trunc", "idiv_floor", "imod", "ipow", "fdiv_floor", "asin", "acos", "atan",
     "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "log10", "lgamma", "erfc", "atan2",
     "nextafter", "igcd"]

T = "T"
BOOL = "bool"

#: the dtype kinds a body may be given for, most specific first in each lookup chain
KINDS = ("float", "sint", "uint", "bool")
_LOOKUP = {
    "float": ("float", "num", "any"),
    "sint": ("sint", "int", "integral", "num", "any"),
    "uint": ("uint", "int", "integral", "num", "any"),
    "bool": ("bool", "integral", "any"),
}
_GROUPS = {"float", "sint", "uint", "bool", "int", "integral", "num", "any"}


def kind_of(dtype) -> str:
    """The body kind of an ember dtype: float, sint, uint or bool."""
    if dtype.is_floating_point:
        return "float"
    if dtype.name == "bool":
        return "bool"
    return "sint" if dtype.is_signed else "uint"


def body_for(scalar: dict, kind: str):
    """The body a per-kind ``scalar`` mapping gives for ``kind`` (None: unsupported)."""
    for k in _LOOKUP[kind]:
        if k in scalar:
            return scalar[k]
    return None


class Expr:
    """One node of a scalar expression.

    ``op`` is ``input`` (``value``: (position, name, type)), ``const`` (``value``: a
    number), ``attr`` (``value``: an attribute name), ``call`` (``value``: a function
    name from :data:`MATH_FUNCTIONS` or :data:`INTRINSICS`), ``precise`` (``value``: a
    function name; ``args``: its arguments followed by the fallback expression), or an
    operator: add sub mul div neg eq ne lt le gt ge and or xor not band bor bxor bnot
    where cast (``value``: the target type).
    """
    __slots__ = ("op", "args", "value")

    def __init__(self, op: str, args: tuple = (), value=None):
        self.op = op
        self.args = args
        self.value = value

    # identity semantics: == builds a node, so hashing is by object
    __hash__ = object.__hash__

    def __repr__(self):
        return f"Expr({render_text(self)})"

    # arithmetic
    def __add__(self, o): return Expr("add", (self, lift(o)))
    def __radd__(self, o): return Expr("add", (lift(o), self))
    def __sub__(self, o): return Expr("sub", (self, lift(o)))
    def __rsub__(self, o): return Expr("sub", (lift(o), self))
    def __mul__(self, o): return Expr("mul", (self, lift(o)))
    def __rmul__(self, o): return Expr("mul", (lift(o), self))
    def __truediv__(self, o): return Expr("div", (self, lift(o)))
    def __rtruediv__(self, o): return Expr("div", (lift(o), self))
    def __neg__(self): return Expr("neg", (self,))

    # comparisons (bool)
    def __eq__(self, o): return Expr("eq", (self, lift(o)))  # type: ignore[override]
    def __ne__(self, o): return Expr("ne", (self, lift(o)))  # type: ignore[override]
    def __lt__(self, o): return Expr("lt", (self, lift(o)))
    def __le__(self, o): return Expr("le", (self, lift(o)))
    def __gt__(self, o): return Expr("gt", (self, lift(o)))
    def __ge__(self, o): return Expr("ge", (self, lift(o)))

    # & | ^ ~ : logical on bool values, bitwise on integers (decided by the operand type)
    def __and__(self, o): return Expr("and", (self, lift(o)))
    def __rand__(self, o): return Expr("and", (lift(o), self))
    def __or__(self, o): return Expr("or", (self, lift(o)))
    def __ror__(self, o): return Expr("or", (lift(o), self))
    def __xor__(self, o): return Expr("xor", (self, lift(o)))
    def __rxor__(self, o): return Expr("xor", (lift(o), self))
    def __invert__(self): return Expr("not", (self,))

    def __bool__(self):
        raise TypeError("a scalar expression has no truth value: use where(cond, a, b) and "
                        "&, |, ~ instead of if/and/or/not")


def lift(v) -> Expr:
    if isinstance(v, Expr):
        return v
    if isinstance(v, (bool, int, float)):
        return Expr("const", (), v)
    raise TypeError(f"cannot use {type(v).__name__} in a scalar expression")


def inputs(*names: str, types: dict | None = None):
    """Input variables of an op's body, in the kernel's argument order.

    >>> a, b = inputs("a", "b")
    >>> cond, x, y = inputs("cond", "x", "y", types={"cond": BOOL})
    """
    types = types or {}
    out = tuple(Expr("input", (), (i, n, types.get(n, T))) for i, n in enumerate(names))
    return out[0] if len(out) == 1 else out


def const(v) -> Expr:
    return lift(v)


def attr(name: str) -> Expr:
    """A scalar attribute of the kernel call (``addcmul``'s ``value``), of type ``T``."""
    return Expr("attr", (), name)


def where(cond, a, b) -> Expr:
    return Expr("where", (lift(cond), lift(a), lift(b)))


def cast(e, to: str) -> Expr:
    """``cast(b, T)``: a bool as 0/1 in the compute type; ``cast(x, BOOL)``: x != 0."""
    if to not in (T, BOOL):
        raise ValueError(f"cast(): target must be T or BOOL, got {to!r}")
    return Expr("cast", (lift(e),), to)


#: functions every renderer maps to the platform's math library: name -> arity.
#: They take and give the compute type; the cpu renderer may use faster vectorisable
#: versions of the same accuracy class (see ember/scalar_ops.h).
MATH_FUNCTIONS = {
    "exp": 1, "log": 1, "sin": 1, "cos": 1, "tan": 1, "sqrt": 1, "rsqrt": 1, "erf": 1,
    "tanh": 1, "expm1": 1, "log1p": 1, "log2": 1, "floor": 1, "ceil": 1, "trunc": 1,
    "rint": 1, "fabs": 1, "fmod": 2, "pow": 2, "hypot": 2, "copysign": 2,
    "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "asinh": 1, "acosh": 1,
    "atanh": 1, "exp2": 1, "log10": 1, "lgamma": 1, "erfc": 1, "atan2": 2, "nextafter": 2,
}
#: functions with integer or PyTorch-specific semantics, implemented once per dialect
#: (``ember/scalar_ops.h`` for C++/CUDA, ``kernels/common.cl`` for OpenCL)
INTRINSICS = {
    "idiv_trunc": 2, "idiv_floor": 2, "imod": 2, "ipow": 2, "fdiv_floor": 2,
    # PyTorch's gcd of integers: non-negative, by Euclid's algorithm (a loop)
    "igcd": 2,
    # tests that give bool: on integers isnan/isinf are false and isfinite true
    "isnan": 1, "isinf": 1, "isfinite": 1,
}
_BOOL_CALLS = {"isnan", "isinf", "isfinite"}


def call(name: str, *args) -> Expr:
    n = MATH_FUNCTIONS.get(name, INTRINSICS.get(name))
    if n is None:
        raise ValueError(f"unknown scalar function {name!r}")
    if len(args) != n:
        raise TypeError(f"{name}() takes {n} argument(s), got {len(args)}")
    return Expr("call", tuple(lift(a) for a in args), name)


def precise(name: str, args, fallback) -> Expr:
    """``fallback``'s value, computed by the more accurate library function ``name`` where
    the target language has it (every renderer here does); :func:`evaluate` (composites)
    computes the fallback."""
    if name not in MATH_FUNCTIONS:
        raise ValueError(f"precise(): {name!r} is not a library function")
    return Expr("precise", tuple(lift(a) for a in args) + (lift(fallback),), name)


def _fn(name):
    def f(*args):
        return call(name, *args)
    f.__name__ = name
    f.__doc__ = f"``{name}(...)`` as a scalar expression node."
    return f


exp, log, sin, cos, tan = _fn("exp"), _fn("log"), _fn("sin"), _fn("cos"), _fn("tan")
sqrt, rsqrt, erf, tanh = _fn("sqrt"), _fn("rsqrt"), _fn("erf"), _fn("tanh")
expm1, log1p, log2 = _fn("expm1"), _fn("log1p"), _fn("log2")
floor, ceil, trunc, rint, fabs = _fn("floor"), _fn("ceil"), _fn("trunc"), _fn("rint"), _fn("fabs")
fmod, pow, hypot, copysign = _fn("fmod"), _fn("pow"), _fn("hypot"), _fn("copysign")
idiv_trunc, idiv_floor, imod, ipow = (_fn("idiv_trunc"), _fn("idiv_floor"), _fn("imod"),
                                      _fn("ipow"))
fdiv_floor = _fn("fdiv_floor")
asin, acos, atan, atan2 = _fn("asin"), _fn("acos"), _fn("atan"), _fn("atan2")
sinh, cosh, asinh, acosh, atanh = (_fn("sinh"), _fn("cosh"), _fn("asinh"), _fn("acosh"),
                                   _fn("atanh"))
exp2, log10, lgamma, erfc, nextafter = (_fn("exp2"), _fn("log10"), _fn("lgamma"), _fn("erfc"),
                                        _fn("nextafter"))
igcd = _fn("igcd")
isnan, isinf, isfinite = _fn("isnan"), _fn("isinf"), _fn("isfinite")


def logical_not(e) -> Expr:
    return Expr("not", (lift(e),))


def nan_max(a, b) -> Expr:
    """max(a, b) where a NaN operand wins (PyTorch's maximum); ties keep ``a``."""
    return where(isnan(a), a, where(isnan(b), b, where(a >= b, a, b)))


def nan_min(a, b) -> Expr:
    return where(isnan(a), a, where(isnan(b), b, where(a <= b, a, b)))


class LoopSpec:
    """What a ``loop`` node runs: its counter and state variables (``loopvar`` nodes), the
    next value of each state variable, and the optional stop test."""
    __slots__ = ("counter", "state", "steps", "until")

    def __init__(self, counter, state, steps, until):
        self.counter, self.state, self.steps, self.until = counter, state, steps, until


#: a loop's count is clamped to this (it is converted to a C ``long``)
_LOOP_MAX = float(2 ** 62)


def loop(count, init, step, until=None) -> tuple:
    """A counted loop carrying the values ``init``; returns their final values.

    ``step(k, *state)`` gives the next value of each state variable (``k`` = 0, 1, ...:
    the step's number, of type ``T``); the loop runs ``count`` steps (rounded down; NaN,
    negative: none), stopping early where ``until(*state)`` (bool) holds before a step.
    Step and stop test read the loop's variables and anything else computed from the op's
    inputs, constants and attributes (computed again in each step: carry an expensive
    value as a state variable that steps to itself), not another loop's values::

        # T_n(x) for n >= 1: (p, q) = (T_{k}, T_{k+1}), n - 1 steps
        p, q = loop(n - 1, (1.0, x), lambda k, p, q: (q, (x + x) * q - p))
    """
    init = tuple(lift(v) for v in init)
    types = tuple(type_of(v) for v in init)
    spec = LoopSpec(None, None, None, None)
    spec.counter = Expr("loopvar", (), (spec, -1, T, "k"))
    spec.state = tuple(Expr("loopvar", (), (spec, j, t, f"s{j}")) for j, t in enumerate(types))
    steps = step(spec.counter, *spec.state)
    steps = tuple(lift(v) for v in (steps if isinstance(steps, tuple) else (steps,)))
    if len(steps) != len(init):
        raise TypeError(f"loop(): step gives {len(steps)} values for {len(init)} state "
                        f"variables")
    for j, (s, t) in enumerate(zip(steps, types)):
        if type_of(s) != t:
            raise TypeError(f"loop(): state variable {j} is {t} but its step gives "
                            f"{type_of(s)}")
    spec.steps = steps
    if until is not None:
        spec.until = lift(until(*spec.state))
        if type_of(spec.until) != BOOL:
            raise TypeError("loop(): the stop test must be bool")
    free = []
    for root in steps + ((spec.until,) if spec.until is not None else ()):
        for n in walk(root):
            if n.op in ("input", "attr") and all(n is not f for f in free):
                free.append(n)
            elif n.op == "loopvar" and n.value[0] is not spec or n.op in ("loop", "loopget"):
                raise ValueError("loop(): a step may not read another loop's values (pass "
                                 "them in as initial state)")
    count = lift(count)
    count = floor(where(count > 0, where(count < _LOOP_MAX, count, _LOOP_MAX), 0.0))
    # (the free inputs are operands so that walk() and variables() see them)
    node = Expr("loop", (count,) + init + tuple(free), spec)
    return tuple(Expr("loopget", (node,), (j, t)) for j, t in enumerate(types))


# ---------------------------------------------------------------------------------------
# analysis
# ---------------------------------------------------------------------------------------
_BOOL_OPS = {"eq", "ne", "lt", "le", "gt", "ge"}
_LOGIC = {"and", "or", "xor", "not"}


def walk(e: Expr, shown: bool = False):
    """Every node once, operands before the nodes using them (a topological order);
    ``shown``: without the fallbacks of ``precise`` nodes (what the text shows)."""
    seen = set()
    order = []
    stack = [(e, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for a in reversed(_shown_args(node) if shown else node.args):
            if id(a) not in seen:
                stack.append((a, False))
    return order


def type_of(e: Expr, types: dict | None = None) -> str:
    """``T`` or ``bool``; raises TypeError on ill-typed expressions."""
    types = {} if types is None else types
    for n in walk(e):
        types[id(n)] = _node_type(n, [types[id(a)] for a in n.args])
    return types[id(e)]


def _node_type(n: Expr, at: list) -> str:
    op = n.op
    if op == "input":
        return n.value[2]
    if op == "const":
        return BOOL if isinstance(n.value, bool) else T
    if op in ("attr", "loop"):
        return T
    if op in ("loopvar", "loopget"):
        return n.value[2] if op == "loopvar" else n.value[1]
    if op == "cast":
        return n.value
    if op in _BOOL_OPS:
        if at[0] != at[1]:
            raise TypeError(f"{op}: operands of different types ({at[0]}, {at[1]})")
        return BOOL
    if op in _LOGIC:
        return at[0] if all(t == at[0] for t in at) else _mismatch(op, at)
    if op == "where":
        if at[0] != BOOL:
            raise TypeError("where: the condition must be bool")
        if at[1] != at[2]:
            raise TypeError(f"where: branches of different types ({at[1]}, {at[2]})")
        return at[1]
    if op == "call" and n.value in _BOOL_CALLS:
        return BOOL
    if op in ("call", "precise"):
        return T
    if any(t != T for t in at):
        raise TypeError(f"{op}: arithmetic on bool values (cast them to T first)")
    return T


def _mismatch(op, at):
    raise TypeError(f"{op}: operands of different types {at}")


def _shown_args(n: Expr) -> tuple:
    return n.args[:-1] if n.op == "precise" else n.args


def variables(e: Expr) -> list:
    """The input nodes an expression reads, by position."""
    return sorted((n for n in walk(e) if n.op == "input"), key=lambda n: n.value[0])


def render_text(e: Expr) -> str:
    """A readable one-line form (docs, reprs). A subexpression used more than once is
    written once, as ``tK = ...;`` before the result (unrolled loops share their partial
    results: written out as a tree, their text would grow exponentially)."""
    order = walk(e, shown=True)
    uses: dict = {}
    for n in order:
        for a in _shown_args(n):
            uses[id(a)] = uses.get(id(a), 0) + 1
    names, lets = {}, []
    for n in order:
        text = _text(n, [names[id(a)] for a in _shown_args(n)] + [""] * (n.op == "precise"))
        if n.args and uses.get(id(n), 0) > 1:
            lets.append(f"t{len(lets)} = {text}")
            text = f"t{len(lets) - 1}"
        names[id(n)] = text
    return "; ".join(lets + [names[id(e)]])


_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "eq": "==", "ne": "!=", "lt": "<",
          "le": "<=", "gt": ">", "ge": ">=", "and": "&", "or": "|", "xor": "^"}


def _text(n, a):
    if n.op == "input":
        return n.value[1]
    if n.op == "loopvar":
        return n.value[3]
    if n.op == "loopget":
        return f"{a[0]}[{n.value[0]}]"
    if n.op == "loop":
        spec = n.value
        m = len(spec.state)
        init = ", ".join(a[1:1 + m])
        steps = ", ".join(render_text(s) for s in spec.steps)
        stop = "" if spec.until is None else f" until {render_text(spec.until)}"
        return f"loop({a[0]} times: s = ({init}); s <- ({steps}){stop})"
    if n.op == "const":
        return repr(n.value)
    if n.op == "attr":
        return n.value
    if n.op in _INFIX:
        return f"({a[0]} {_INFIX[n.op]} {a[1]})"
    if n.op == "neg":
        return f"-{a[0]}"
    if n.op == "not":
        return f"~{a[0]}"
    if n.op == "cast":
        return f"{n.value}({a[0]})"
    if n.op == "precise":
        return f"{n.value}({', '.join(a[:-1])})"
    if n.op == "call":
        return f"{n.value}({', '.join(a)})"
    return f"{n.op}({', '.join(a)})"


# ---------------------------------------------------------------------------------------
# evaluation with tensor ops (the composite of an op that has a body)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorOps:
    """The operations :func:`evaluate` needs, supplied by the caller (the dispatcher passes
    its elementwise entry points): ``ew(name, *args, **attrs)`` runs a schema
    elementwise op on tensors and numbers, ``where(c, a, b)``, ``cast(x, dtype)`` and
    ``full(like, value, is_bool)`` (a tensor of ``like``'s shape holding a constant);
    for bodies with a :func:`loop`, ``any(mask)``: whether a bool tensor holds a True
    (the loop runs while an element is still running)."""
    ew: object
    where: object
    cast: object
    full: object
    any: object = None


# expression operator -> primitive schema op (the others decompose into these below, so
# a backend with only the primitives evaluates every body without recursing)
_EVAL_OPS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "eq": "eq", "lt": "lt"}
# the same on two Python numbers (a body comparing a Scalar attribute with a constant)
_SCALAR_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
               "div": operator.truediv, "eq": operator.eq, "lt": operator.lt}
# Only functions that are themselves primitive ops (or decompose into them) evaluate; a
# body using another library function must wrap it in precise() with a fallback, so a
# backend with only the primitives can still compute it.
_EVAL_CALLS = {
    "exp": ("exp", {}), "log": ("log", {}), "sin": ("sin", {}), "cos": ("cos", {}),
    "sqrt": ("sqrt", {}), "erf": ("erf", {}), "floor": ("floor", {}), "fmod": ("fmod", {}),
    "pow": ("pow", {}), "expm1": ("expm1", {}), "log1p": ("log1p", {}),
    "idiv_trunc": ("div", {"rounding_mode": "trunc"}),
    "idiv_floor": ("div", {"rounding_mode": "floor"}),
    "fdiv_floor": ("div", {"rounding_mode": "floor"}),
    "imod": ("fmod", {}), "ipow": ("pow", {}),
}


def _trunc_div(x, y):
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


# the same functions on Python numbers (a body's subexpression of attributes and constants)
_SCALAR_CALLS = {
    "exp": math.exp, "log": math.log, "sin": math.sin, "cos": math.cos, "sqrt": math.sqrt,
    "erf": math.erf, "floor": math.floor, "fmod": math.fmod, "pow": math.pow,
    "expm1": math.expm1, "log1p": math.log1p, "idiv_trunc": _trunc_div,
    "idiv_floor": operator.floordiv, "fdiv_floor": lambda x, y: math.floor(x / y),
    "imod": lambda x, y: x - _trunc_div(x, y) * y, "ipow": operator.pow,
    "isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite,
}


def evaluate(e: Expr, args: tuple, attrs: dict, ops: TensorOps):
    """Compute ``e`` elementwise over tensors (``args``, by input position; all of one
    dtype and shape, as a kernel receives them) with ``ops``. ``precise`` nodes compute
    their fallback, so the result uses only the ops the fallback names."""
    dtype = next((a.dtype for a in args if hasattr(a, "dtype") and a.dtype.name != "bool"),
                 None)
    body = _strip_precise(e)
    res = _eval_roots((body,), {}, args, attrs, ops, dtype)[0]
    if not hasattr(res, "dtype"):  # a constant body (isfinite of an integer tensor)
        res = ops.full(args[0], res, type_of(body) == BOOL)
    return res


def _eval_roots(roots, env: dict, args, attrs, ops, dtype) -> list:
    """The values of ``roots`` (precise nodes already stripped); ``env``: the values of a
    loop's variables, by node id."""
    vals = dict(env)
    for root in roots:
        for n in walk(root):
            if id(n) in vals:
                continue
            a = [vals[id(x)] for x in n.args]
            if n.op == "loop":
                vals[id(n)] = _eval_loop(n, a, args, attrs, ops, dtype)
            elif n.op == "loopget":
                vals[id(n)] = a[0][n.value[0]]
            else:
                vals[id(n)] = _eval_node(n, a, args, attrs, ops, dtype)
    return [vals[id(r)] for r in roots]


def _is_tensor(v) -> bool:
    return hasattr(v, "dtype")


def _eval_loop(n, a, args, attrs, ops, dtype) -> list:
    """A loop over whole tensors: every step computed everywhere, kept where the element
    is still running (its count not reached, its stop test false), until none is."""
    spec = n.value
    m = len(spec.state)
    count, state = a[0], list(a[1:1 + m])
    steps = tuple(_strip_precise(s) for s in spec.steps)
    until = _strip_precise(spec.until) if spec.until is not None else None
    k = 0
    while True:
        env = {id(spec.counter): k}
        env.update((id(v), s) for v, s in zip(spec.state, state))
        run = ops.ew("lt", k, count) if _is_tensor(count) else k < count
        if until is not None:
            stop = _eval_roots((until,), env, args, attrs, ops, dtype)[0]
            if _is_tensor(stop):
                stop = ops.ew("bitwise_not", stop)
                run = ops.ew("bitwise_and", run, stop) if _is_tensor(run) else \
                    (stop if run else False)
            else:
                run = run if not stop else False
        if _is_tensor(run):
            if ops.any is None:
                raise NotImplementedError("evaluate(): a body with a loop needs TensorOps.any")
            if not ops.any(run):
                return state
        elif not run:
            return state
        new = _eval_roots(steps, env, args, attrs, ops, dtype)
        state = [ops.where(run, v, s) if _is_tensor(run) else v for v, s in zip(new, state)]
        k += 1


_STRIPPED: dict = {}


def _strip_precise(e: Expr) -> Expr:
    """``e`` with every ``precise`` node replaced by its fallback (memoised per node)."""
    hit = _STRIPPED.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    res = _rewrite(e, lambda n, args: args[-1])
    _STRIPPED[id(e)] = (e, res)
    return res


def resolve_precise(e: Expr) -> Expr:
    """``e`` with every ``precise`` node turned into a call of its library function (what
    the renderers emit; the fallback is dropped)."""
    return _rewrite(e, lambda n, args: Expr("call", args[:-1], n.value))


def lower(e: Expr, leaf, node, decl, indent: str) -> tuple[list, str]:
    """Straight-line code for ``e`` (what both kernel generators emit): ``precise`` nodes
    become their library calls, each inner node one ``const DECL vI = NODE;`` line, each
    leaf (input, const, attr) an inline name. ``leaf(n, type)`` and ``node(n, arg_names,
    arg_types)`` give the text, ``decl(type)`` the declared type. Returns the lines and the
    name holding the result."""
    lines: list = []
    return lines, _lower_roots((e,), leaf, node, decl, indent, "v", lines)[0]


def _lower_roots(roots, leaf, node, decl, indent, prefix, lines) -> list:
    """Append the statements computing ``roots`` to ``lines``; their names. A ``loop``
    node becomes a C ``for`` statement (the same text in C++, CUDA and OpenCL C) over
    mutable state variables ``{name}_{j}``, its counter a ``long``."""
    roots = tuple(resolve_precise(r) for r in roots)
    types: dict = {}
    for r in roots:
        type_of(r, types)
    names: dict = {}
    order, seen = [], set()
    for r in roots:
        for n in walk(r):
            if id(n) not in seen:
                seen.add(id(n))
                order.append(n)
    for i, n in enumerate(order):
        t = types[id(n)]
        if n.op in ("input", "const", "attr", "loopvar"):
            names[id(n)] = leaf(n, t)
            continue
        a = [names[id(x)] for x in n.args]
        if n.op == "loopget":
            names[id(n)] = f"{a[0]}_{n.value[0]}"
            continue
        if n.op == "loop":
            names[id(n)] = f"{prefix}{i}"
            _lower_loop(n, a, leaf, node, decl, indent, f"{prefix}{i}", lines)
            continue
        at = [types[id(x)] for x in n.args]
        lines.append(f"{indent}const {decl(t)} {prefix}{i} = {node(n, a, at)};")
        names[id(n)] = f"{prefix}{i}"
    return [names[id(r)] for r in roots]


def _lower_loop(n, a, leaf, node, decl, indent, name, lines) -> None:
    spec = n.value
    m = len(spec.state)
    for j, v in enumerate(spec.state):
        lines.append(f"{indent}{decl(v.value[2])} {name}_{j} = {a[1 + j]};")
    lines.append(f"{indent}for (long {name}_i = 0; {name}_i < (long)({a[0]}); ++{name}_i) {{")
    inner = indent + "  "
    roots = spec.steps + ((spec.until,) if spec.until is not None else ())
    if any(v is spec.counter for r in roots for v in walk(r)):
        lines.append(f"{inner}const {decl(T)} {name}_k = ({decl(T)}){name}_i;")

    def inner_leaf(v, t):
        if v.op == "loopvar" and v.value[0] is spec:
            return f"{name}_k" if v.value[1] < 0 else f"{name}_{v.value[1]}"
        return leaf(v, t)
    if spec.until is not None:
        stop = _lower_roots((spec.until,), inner_leaf, node, decl, inner, f"{name}u", lines)
        lines.append(f"{inner}if ({stop[0]}) break;")
    new = _lower_roots(spec.steps, inner_leaf, node, decl, inner, f"{name}s", lines)
    # (every next value first, then the assignments: a step may read another's variable)
    moved = [j for j in range(m) if new[j] != f"{name}_{j}"]
    for j in moved:
        lines.append(f"{inner}const {decl(spec.state[j].value[2])} {name}_n{j} = {new[j]};")
    for j in moved:
        lines.append(f"{inner}{name}_{j} = {name}_n{j};")
    lines.append(f"{indent}}}")


def _rewrite(e: Expr, on_precise) -> Expr:
    """A copy of ``e`` with each ``precise`` node replaced by ``on_precise(node, args)``
    (args already rewritten); untouched subtrees are shared, not copied."""
    memo = {}
    for n in walk(e):
        if n.op == "precise":
            memo[id(n)] = on_precise(n, tuple(memo[id(a)] for a in n.args))
        elif n.args:
            new = tuple(memo[id(a)] for a in n.args)
            memo[id(n)] = n if all(x is y for x, y in zip(new, n.args)) else \
                Expr(n.op, new, n.value)
        else:
            memo[id(n)] = n
    return memo[id(e)]


def _eval_node(n, a, args, attrs, ops, dtype):
    op = n.op
    if op == "input":
        return args[n.value[0]]
    if op == "const":
        return n.value
    if op == "attr":  # a Scalar attribute takes the op's dtype (0.5 is 0 for integers)
        v = attrs[n.value]
        return v if dtype is None or dtype.is_floating_point else int(v)
    if op == "neg":  # x * -1: keeps -0.0, wraps integers, never recurses into neg itself
        return ops.ew("mul", a[0], -1) if hasattr(a[0], "dtype") else -a[0]
    if op == "where":
        if isinstance(a[0], bool):  # folded: an integer input is never NaN
            return a[1] if a[0] else a[2]
        return ops.where(a[0], a[1], a[2])
    if op == "cast":
        if n.value == BOOL:
            return ops.ew("ne", a[0], 0)
        return ops.cast(a[0], dtype) if hasattr(a[0], "dtype") else (1 if a[0] else 0)
    if op == "not":
        return (not a[0]) if isinstance(a[0], bool) else ops.ew("bitwise_not", a[0])
    if op in ("and", "or", "xor"):
        x, y = a
        if isinstance(x, bool) and isinstance(y, bool):
            return {"and": x and y, "or": x or y, "xor": x != y}[op]
        if isinstance(x, bool):
            x, y = y, x
        if isinstance(y, bool):  # folded: a constant operand (isnan of an integer)
            if op == "and":
                return x if y else False
            if op == "or":
                return True if y else x
            return ops.ew("bitwise_not", x) if y else x
        return ops.ew({"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}[op],
                      x, y)
    if op in _EVAL_OPS:
        if not any(hasattr(v, "dtype") for v in a):  # folded: scalar attributes/constants
            return _SCALAR_OPS[op](*a)
        return ops.ew(_EVAL_OPS[op], *a)
    if op == "ne":
        if not any(hasattr(v, "dtype") for v in a):
            return a[0] != a[1]
        return ops.ew("bitwise_not", ops.ew("eq", a[0], a[1]))
    if op in ("le", "ge") and not any(hasattr(v, "dtype") for v in a):
        return a[0] <= a[1] if op == "le" else a[0] >= a[1]
    if op in ("le", "ge"):
        x, y = (a[0], a[1]) if op == "le" else (a[1], a[0])
        return ops.ew("bitwise_or", ops.ew("lt", x, y), ops.ew("eq", x, y))
    if op == "gt":
        if not any(hasattr(v, "dtype") for v in a):
            return a[0] > a[1]
        return ops.ew("lt", a[1], a[0])
    if op == "call" and n.value in _SCALAR_CALLS and not any(hasattr(v, "dtype") for v in a):
        return _SCALAR_CALLS[n.value](*a)
    if op == "call":
        if n.value in ("isnan", "isinf", "isfinite") and not a[0].dtype.is_floating_point:
            return n.value == "isfinite"
        if n.value == "isnan":
            return ops.ew("ne", a[0], a[0])
        if n.value == "isfinite":
            return ops.ew("eq", ops.ew("sub", a[0], a[0]), 0)
        if n.value == "isinf":  # x - x is NaN for ±inf and NaN; x == x drops NaN
            d = ops.ew("sub", a[0], a[0])
            return ops.ew("bitwise_and", ops.ew("ne", d, d), ops.ew("eq", a[0], a[0]))
        if n.value == "ipow" and hasattr(a[1], "dtype") and a[1].dtype.is_signed:
            return _ipow(a[0], a[1], ops)
        if n.value in ("idiv_trunc", "idiv_floor", "imod") and hasattr(a[1], "dtype"):
            zero = ops.ew("eq", a[1], 0)  # (a zero divisor gives 0, as the intrinsics do)
            name, at = _EVAL_CALLS[n.value]
            return ops.where(zero, 0, ops.ew(name, a[0], ops.where(zero, 1, a[1]), **at))
        hit = _EVAL_CALLS.get(n.value)
        if hit is None:
            raise NotImplementedError(
                f"{n.value}() has no tensor-op form: wrap it in precise({n.value!r}, args, "
                f"fallback) so backends without a kernel can compute the fallback")
        name, at = hit
        return ops.ew(name, *a, **at)
    raise AssertionError(op)


def _ipow(x, e, ops):
    """Integer power with a signed exponent tensor, as the scalar ``ipow``: a negative
    exponent gives the truncated 1 / x**|e| (0 unless x is 1 or -1)."""
    neg = ops.ew("lt", e, 0)
    r = ops.ew("pow", x, ops.where(neg, 0, e))
    if not hasattr(x, "dtype"):  # (a constant base: the shifts' 2 ** b)
        if x not in (1, -1):
            return ops.where(neg, 0, r)
        x = ops.full(e, x, False)
    odd = ops.ew("ne", ops.ew("fmod", e, 2), 0)
    unit = ops.where(ops.ew("eq", x, 1), 1, ops.where(ops.ew("eq", x, -1),
                                                       ops.where(odd, -1, 1), 0))
    return ops.where(neg, unit, r)


def is_constant_nan(e: Expr) -> bool:
    return e.op == "const" and isinstance(e.value, float) and math.isnan(e.value)
