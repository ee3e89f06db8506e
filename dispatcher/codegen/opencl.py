"""Render the elementwise ops' scalar bodies as OpenCL C (the opencl backend, at run time).

The ops fall into *classes* by signature (``ew1``: one input, same dtype out; ``ew2b``:
two inputs, bool out; ``ewsel``: a bool condition and two values; ...). Each class is
one kernel family: per dtype, an inline function per op (``K(op_exp)``) guarded by the
dtype kinds its body supports, and one kernel that switches on the op code; the
``_lin`` instantiation also has two kernels per op code, ``K(ew1_op3_1d)`` (one dim,
strides 0 or 1) and ``K(ew1_op3_2d)`` (rows of such), with no switch and no index
arithmetic, which PoCL's vectoriser widens into vector loads. The source
uses the macros of the backend's templates (``C`` the compute type, ``S`` storage,
``UT`` unsigned wrap type, ``KIND``/``SIGNED``, ``K(name)``, ``LD``/``ST``, ``VT``), so
the backend instantiates it per dtype like its hand-written families.

Op codes are derived from the table (``OP_<NAME>[_<MODE>]``), as are the error ids the
checks report with (``EOP_<NAME>``).
"""
from __future__ import annotations

from .. import expr as X
from ..schema import OPS, elementwise_ops

__all__ = ["op_classes", "opcodes", "class_of", "render_class", "render_fused",
           "render_fused_reduction", "MAX_ATTRS", "CHECK_CODES"]

#: scalar attributes a kernel takes (unused ones are passed as 0)
MAX_ATTRS = 2
#: check error name -> the backend's error code (kernels/common.cl)
CHECK_CODES = {"zero_div": "ERR_ZERO_DIV", "neg_pow": "ERR_NEG_POW"}

_KIND_COND = {"float": "KIND == 2", "sint": "(KIND == 1 && SIGNED)",
              "uint": "(KIND == 1 && !SIGNED)", "bool": "KIND == 0"}


def class_of(o) -> str:
    """``ew<arity>`` (+``b``: bool output; ``sel``: a bool first input)."""
    ins = o.body_inputs()
    if ins and ins[0].value[2] == X.BOOL:
        return "ewsel"
    return f"ew{len(ins)}" + ("b" if o.out_type() == X.BOOL else "")


def opcodes() -> dict:
    """(op name, mode) -> code, for every body in the table (mode None: default)."""
    out = {}
    for o in elementwise_ops():
        for mode in o.bodies():
            out[(o.name, mode)] = len(out)
    return out


def op_classes() -> dict:
    """class -> [op, ...] in table order."""
    out: dict = {}
    for o in elementwise_ops():
        out.setdefault(class_of(o), []).append(o)
    return out


def macro(name: str, mode) -> str:
    return f"OP_{name.upper()}" + (f"_{mode.upper()}" if mode else "")


def _lit(v, t, kind) -> str:
    if isinstance(v, bool) or t == X.BOOL:
        return "1" if v else "0"
    if isinstance(v, float):
        if v != v:
            return "((C)NAN)"
        if v in (float("inf"), float("-inf")):
            return "((C)INFINITY)" if v > 0 else "((C)-INFINITY)"
        if kind != "float":
            return f"((C){int(v)})"
        return f"LITF({v!r})"
    return f"((C){v}L)" if not -(1 << 31) <= v < (1 << 31) else f"((C){v})"


_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_WRAP = {"add": "+", "sub": "-", "mul": "*"}
_INTRINSICS = {"idiv_trunc", "idiv_floor", "imod", "ipow", "fdiv_floor", "igcd"}


def render_body(e: X.Expr, kind: str, arg_names: dict, attr_names: dict,
                indent: str) -> tuple[list, str]:
    """OpenCL C statements computing ``e`` for a dtype of ``kind`` (the template's ``C``),
    and the result's name; bool values are ``int``."""
    def leaf(n, t):
        if n.op == "input":
            return arg_names[n.value[0]]
        if n.op == "const":
            return _lit(n.value, t, kind)
        return f"((C){attr_names[n.value]})"
    return X.lower(e, leaf, lambda n, a, at: _node(n, a, at, kind),
                   lambda t: "int" if t == X.BOOL else "C", indent)


def _node(n, a, at, kind) -> str:
    op = n.op
    if op in _WRAP:
        if kind == "bool":
            raise TypeError(f"{op} on bool values")
        if kind == "float":
            return f"({a[0]} {_WRAP[op]} {a[1]})"
        return f"((C)((UT)({a[0]}) {_WRAP[op]} (UT)({a[1]})))"
    if op == "div":
        if kind != "float":
            raise TypeError("/ needs a floating type")
        return f"({a[0]} / {a[1]})"
    if op == "neg":
        if kind == "float":
            return f"(-{a[0]})"
        return f"((C)((UT)0 - (UT)({a[0]})))"
    if op in _CMP:
        return f"({a[0]} {_CMP[op]} {a[1]})"
    if op in ("and", "or", "xor"):
        if at[0] == X.BOOL or kind == "bool":
            sym = {"and": "&&", "or": "||", "xor": "!="}[op]
            return f"(({a[0]} != 0) {sym} ({a[1]} != 0))"
        sym = {"and": "&", "or": "|", "xor": "^"}[op]
        return f"((C)({a[0]} {sym} {a[1]}))"
    if op == "not":
        if at[0] == X.BOOL or kind == "bool":
            return f"({a[0]} == 0)"
        return f"((C)(~{a[0]}))"
    if op == "where":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    if op == "cast":
        if n.value == X.BOOL:
            return f"({a[0]} != (C)0)" if at[0] != X.BOOL else a[0]
        return f"((C)({a[0]}))"
    if op == "call":
        name = n.value
        if name in ("isnan", "isinf", "isfinite"):
            if kind != "float":
                return "1" if name == "isfinite" else "0"
            # comparisons, not the builtins: PoCL's isnan/isinf are calls its vectoriser
            # cannot widen across work-items (a clamp ran 5x slower through them)
            x = a[0]
            if name == "isnan":
                return f"({x} != {x})"
            if name == "isinf":
                return f"({x} == (C)INFINITY || {x} == -(C)INFINITY)"
            return f"({x} == {x} && {x} != (C)INFINITY && {x} != -(C)INFINITY)"
        if name in _INTRINSICS:
            return f"K(em_{name})({', '.join(a)})"
        return f"{name}({', '.join(a)})"
    raise AssertionError(op)


# intrinsics, per dtype (they use the template's C / UT / SIGNED macros)
_RUNTIME = r"""
#if KIND == 1
inline C K(em_idiv_trunc)(C a, C b) {
  if (b == 0) return 0;
#if SIGNED
  if (b == -1) return (C)((UT)0 - (UT)a);
#endif
  return (C)(a / b);
}
inline C K(em_idiv_floor)(C a, C b) {
  if (b == 0) return 0;
#if SIGNED
  if (b == -1) return (C)((UT)0 - (UT)a);
  const C q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? (C)(q - 1) : q;
#else
  return (C)(a / b);
#endif
}
inline C K(em_imod)(C a, C b) {
  if (b == 0) return 0;
#if SIGNED
  if (b == -1) return 0;
#endif
  return (C)(a % b);
}
inline C K(em_ipow)(C a, C e) {
#if SIGNED
  if (e < 0) return a == 1 ? (C)1 : a == -1 ? ((e & 1) ? (C)-1 : (C)1) : (C)0;
#endif
  UT r = 1, b = (UT)a;
  ulong k = (ulong)e;
  while (k) {
    if (k & 1) r *= b;
    b *= b;
    k >>= 1;
  }
  return (C)r;
}
// PyTorch's calc_gcd (see scalar_ops.h)
inline C K(em_igcd)(C a, C b) {
#if SIGNED
  a = a < 0 ? (C)((UT)0 - (UT)a) : a;
  b = b < 0 ? (C)((UT)0 - (UT)b) : b;
#endif
  while (a != 0) {
    const C c = a;
#if SIGNED
    a = (a == -1) ? (C)0 : (C)(b % a);
#else
    a = (C)(b % a);
#endif
    b = c;
  }
  return b;
}
#elif KIND == 2
// PyTorch's div_floor_floating
inline C K(em_fdiv_floor)(C a, C b) {
  if (b == 0) return a / b;
  const C mod = fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= (C)1;
  if (div != 0) {
    C f = floor(div);
    if (div - f > (C)0.5) f += (C)1;
    return f;
  }
  return copysign((C)0, a / b);
}
#endif
#if HAS_FP64
#define LITF(v) ((C)(v))
#else
#define LITF(v) ((C)(v##f))
#endif
"""


def _guard(kinds) -> str:
    return " || ".join(_KIND_COND[k] for k in kinds)


def _groups(scalar, render):
    """[(kinds, rendered)]: the kinds with a body, grouped where ``render(kind, body)``
    gives the same text (signed and unsigned integers often share one function)."""
    groups: list = []
    for k in X.KINDS:
        body = X.body_for(scalar, k)
        if body is None:
            continue
        text = render(k, body)
        same = next((g for g in groups if g[1] == text), None)
        if same is None:
            groups.append(([k], text))
        else:
            same[0].append(k)
    return groups


def _fn_name(o, mode) -> str:
    return f"op_{o.name}" + (f"_{mode}" if mode else "")


def _op_functions(o) -> list:
    """Per mode and kind group: ``inline R K(op_x)(args, attrs)`` under its KIND guard."""
    ins = o.body_inputs()
    out_bool = o.out_type() == X.BOOL
    params = [f"{'int' if v.value[2] == X.BOOL else 'C'} {v.value[1]}_" for v in ins]
    attr_names = {a: f"p{i}" for i, a in enumerate(o.attrs)}
    params += [f"VT {p}" for p in attr_names.values()]
    arg_names = {v.value[0]: f"{v.value[1]}_" for v in ins}
    ret = "int" if out_bool else "C"

    def render(kind, body):
        body_lines, res = render_body(body, kind, arg_names, attr_names, "  ")
        return "\n".join(body_lines + [f"  return {res};"])

    lines = []
    for mode, scalar in o.bodies().items():
        for kinds, text in _groups(scalar, render):
            lines.append(f"#if {_guard(kinds)}")
            lines.append(f"inline {ret} K({_fn_name(o, mode)})({', '.join(params)}) {{")
            lines += [text, "}", "#endif"]
    return lines


def _check_lines(o, mode, kinds, eop: str) -> list:
    """In the kernel's case: report and stop when a check's predicate holds."""
    out = []
    for chk in o.checks:
        ck = [k for k in chk.kinds if k in kinds]
        if not ck:
            continue
        v = o.body_inputs()[chk.input]
        body, res = render_body(chk.pred, ck[0], {v.value[0]: f"x{chk.input}"}, {}, "      ")
        out.append(f"#if {_guard(ck)}")
        out += ["      {"] + body
        out.append(f"      if ({res}) {{ report_error(err, {CHECK_CODES[chk.error]}, "
                   f"{eop} << 8, 0, 0); v = 0; break; }}")
        out += ["      }", "#endif"]
    return out


def render_class(cls: str, ops=None) -> str:
    """The OpenCL C template of one class (instantiated per dtype by the backend)."""
    ops = ops if ops is not None else op_classes()[cls]
    codes = opcodes()
    sample = ops[0]
    ins = sample.body_inputs()
    out_bool = sample.out_type() == X.BOOL
    lines = ["// Generated from ember.dispatcher's op definitions by",
             "// ember.dispatcher.codegen.opencl; instantiated once per dtype.",
             "#if defined(TYPE)", _RUNTIME]
    for o in ops:
        lines += _op_functions(o)
    n = len(ins)
    args = [f"__global {'uchar' if out_bool else 'S'}* o"]
    for i, v in enumerate(ins):
        args.append(f"__global const {'uchar' if v.value[2] == X.BOOL else 'S'}* a{i}")
    args += [f"VT p{i}" for i in range(MAX_ATTRS)] + ["__global int* err"]
    call_args = ", ".join([f"x{i}" for i in range(n)])

    def at(k, unit):
        """Operand k's element: strided walk (off[]), one dim of stride 0/1 ("1d"), or
        rows of stride 0/1 at any row stride ("2d", a 2-D launch: i the column, r the row)."""
        if unit == "1d":
            return f"g.off[{k}] + (g.st[{k}][0] ? i : 0)"
        if unit == "2d":
            return f"g.off[{k}] + r * g.st[{k}][0] + (g.st[{k}][1] ? i : 0)"
        return f"off[{k}]"          # "strided": EW_OFFSETS's walk

    def loads(unit):
        out = []
        for i, v in enumerate(ins):
            at_ = at(i + 1, unit)
            if v.value[2] == X.BOOL:
                out.append(f"  const int x{i} = a{i}[{at_}] != 0;")
            else:  # a bool byte other than 0 / 1 reads as true (as in PyTorch)
                out += ["#if KIND == 0", f"  const C x{i} = (C)(LD(a{i}, {at_}) != 0);",
                        "#else", f"  const C x{i} = LD(a{i}, {at_});", "#endif"]
        return out

    def store(unit):
        at_ = {"1d": "g.off[0] + i", "2d": "g.off[0] + r * g.st[0][0] + i"}.get(unit, "off[0]")
        return f"  o[{at_}] = (uchar)(v != 0);" if out_bool else f"  ST(o, {at_}, v);"

    lines += [f"__kernel void K({cls})(int op, Geom g, {', '.join(args)}) {{",
              "  const long i = get_global_id(0);",
              "  if (PAST_END(i, g.n)) return;",
              f"  long off[{n + 1}];",
              f"  EW_OFFSETS(&g, i, {n + 1}, off);"] + loads("strided")
    lines += [f"  {'int' if out_bool else 'C'} v = 0;", "  switch (op) {"]
    # the _lin instantiation also has two kernels per op: K(<cls>_op<code>_1d) for one dim
    # whose operands have stride 1 (the output) or 0 / 1 (inputs), and K(..._2d) for rows
    # of such operands at any row stride (a bias add, a slice): no switch and no index
    # arithmetic, which PoCL's vectoriser widens into vector loads (the switch kernel
    # with strides ran 3-5x slower on PoCL)
    unit = []
    for o in ops:
        eop = f"EOP_{o.name.upper()}"
        for mode, scalar in o.bodies().items():
            kinds = [k for k in X.KINDS if X.body_for(scalar, k) is not None]
            extra = "".join(f", p{i}" for i in range(len(o.attrs)))
            code = codes[(o.name, mode)]
            checks = _check_lines(o, mode, kinds, eop)
            call = f"      v = K({_fn_name(o, mode)})({call_args}{extra});"
            lines.append(f"#if {_guard(kinds)}")
            lines.append(f"    case {code}: {{  // {macro(o.name, mode)}")
            lines += checks + [call, "      break;", "    }", "#endif"]
            for u, head in (("1d", ["  const long i = get_global_id(0);",
                                    "  if (PAST_END(i, g.n)) return;"]),
                            ("2d", ["  const long i = get_global_id(0), r = get_global_id(1);",
                                    "  if (PAST_END(i, g.shape[1])) return;"])):
                unit += [f"#if {_guard(kinds)}",
                         f"__kernel void K({cls}_op{code}_{u})(int op, Geom g, "
                         f"{', '.join(args)}) {{"] + head
                unit += loads(u) + [f"  {'int' if out_bool else 'C'} v = 0;", "  do {"]
                unit += checks + [call, "  } while (0);", store(u), "}", "#endif"]
    lines.append("  }")
    lines.append(store("strided"))
    lines += ["}", "#if EW_LIN"] + unit + ["#endif", "#endif", ""]
    return "\n".join(lines)


def error_ops() -> list:
    """The ops whose kernels report check errors, in a fixed order (EOP_<NAME> ids)."""
    return [o.name for o in elementwise_ops() if o.checks]


def _fused_head(group, tag: str) -> list:
    lines = ["// ember.compile: a fused elementwise group, generated by",
             f"// ember.dispatcher.codegen.opencl.{tag}", "#if defined(TYPE)", _RUNTIME]
    cuts = {r.index for r in group.reductions}
    for name in sorted({nd.op for k, nd in enumerate(group.nodes) if k not in cuts}):
        lines += _op_functions(OPS[name])
    return lines


def _fused_params(group, used, layout: bool) -> list:
    params = ["long n"]
    for k in used:
        op = group.operands[k]
        stype = "uchar" if op.dtype.name == "bool" else "S"
        params.append(f"__global {'const ' if op.store is None else ''}{stype}* a{k}")
        params.append(f"long o{k}")
    params += [f"VT r{j}" for j in range(len(group.runtime_values))]
    if layout:
        params.append("long inner")
        params += [f"long d{k}" for k in used if group.operands[k].kind in ("row", "strided")]
    return params


def _at(op, k) -> str:
    """Where element (``row``, ``j``; flat index ``i``) of operand ``k`` is."""
    return {"single": f"o{k}", "flat": f"o{k} + i", "col": f"o{k} + j",
            "row": f"o{k} + row * d{k}", "strided": f"o{k} + row * d{k} + j",
            "outer": f"o{k} + row"}[op.kind]


def _loads(group, ks, indent) -> list:
    """``const C x<k> = ...`` per operand (a bool one: ``int``, from its ``uchar``)."""
    out = []
    for k in ks:
        op = group.operands[k]
        at = _at(op, k)
        load = f"int x{k} = (a{k}[{at}] != 0)" if op.dtype.name == "bool" else \
            f"C x{k} = LD(a{k}, {at})"
        out.append(f"{indent}const {load};")
    return out


def _nodes(group, nodes, indent) -> list:
    """``const C v<id> = K(op_x)(...)`` per node (inputs ``x<k>``: loaded operands)."""
    runtime = group.runtime_values
    out = []
    for nd in nodes:
        o = OPS[nd.op]
        args = [f"v{ref[1]}" if ref[0] == "value" else f"x{ref[1]}" for ref in nd.inputs]
        given = dict(nd.attrs)
        for a, default in o.attrs.items():
            ref = given.get(a)
            if ref is None:
                args.append(f"(VT)({float(default)!r})")
            elif ref[0] == "runtime":
                args.append(f"r{runtime.index(ref[1])}")
            else:
                args.append(f"(VT)({float(ref[1])!r})")
        vt = "int" if nd.out_dtype.name == "bool" else "C"
        out.append(f"{indent}const {vt} v{nd.value} = "
                   f"K({_fn_name(o, nd.mode)})({', '.join(args)});")
    return out


def _stores(group, ks, indent) -> list:
    """Each operand's stored value (a bool one as ``uchar`` 0 or 1)."""
    out = []
    for k in ks:
        op = group.operands[k]
        at, v = _at(op, k), f"v{op.store}"
        out.append(f"{indent}a{k}[{at}] = (uchar)({v} != 0);" if op.dtype.name == "bool"
                   else f"{indent}ST(a{k}, {at}, {v});")
    return out


def render_fused(group) -> str:
    """The OpenCL C template of one fused group (``ember.dispatcher.fusion.FusedGroup``)
    whose functors all compute in one floating dtype (instantiated for it; bool values,
    a comparison's result or a ``where``'s condition, are ``int`` in registers and
    ``uchar`` in memory), applying the ops' functions element by element, values in
    registers. A flat group is a kernel
    ``K(fused)(long n, [S* a<k>, long o<k>] per operand, VT r<j> per runtime value)`` over
    ``n`` work-items. A group with a two-level layout (``group.inner``) adds ``long inner``
    and, per operand addressed by rows (``row``, ``strided``), its outer stride ``long
    d<k>``; it is launched over ``(inner, n / inner)``: ``get_global_id(0)`` is the column
    ``j``, ``get_global_id(1)`` the row ``o``. (A group with reductions:
    ``render_fused_reduction``.)"""
    if group.reductions:
        raise ValueError("render_fused: this group has reductions (render_fused_reduction)")
    two = group.inner is not None
    used = [k for k, op in enumerate(group.operands) if op.load or op.store is not None]
    lines = _fused_head(group, "render_fused")
    lines.append(f"__kernel void K(fused)({', '.join(_fused_params(group, used, two))}) {{")
    if two:
        lines += ["  const long j = get_global_id(0), row = get_global_id(1);",
                  "  if (PAST_END(j, inner)) return;", "  const long i = row * inner + j;"]
    else:
        lines += ["  const long i = get_global_id(0);", "  if (PAST_END(i, n)) return;"]
    lines += _loads(group, [k for k in used if group.operands[k].load], "  ")
    lines += _nodes(group, group.nodes, "  ")
    lines += _stores(group, [k for k in used if group.operands[k].store is not None], "  ")
    lines += ["}", "#endif", ""]
    return "\n".join(lines)


def render_fused_reduction(group, plan: str) -> str:
    """The OpenCL C template of a fused group with reductions (``group.reductions``: sums
    or means over rows of ``inner``, each row pass but the last ending in the next one),
    summing as the backend's ``reduce`` kernels do for the same shape, so the results are
    eager mode's bits: ``plan`` ``"wi"`` is ``reduce_wi`` (one work-item per row, the
    elements in order, launched over ``n / inner`` work-items), ``"wg"`` is
    ``reduce_wg`` (a work-group of ``RL`` per row: work-item ``lid`` takes elements
    ``lid, lid + RL, ...``, then the local-memory tree; launched over ``n / inner * RL``).
    Accumulators are ``SACC`` (the widest float); a mean divides in it; the result is
    rounded to ``C`` once. Per row: the chain into the first sum, its epilogue (stored by
    one work-item), then each row pass over the row's elements (into the next sum)."""
    reds = group.reductions
    used = [k for k, op in enumerate(group.operands) if op.load or op.store is not None]
    made = group.phase_values()
    loaded = [k for k in used if group.operands[k].load]
    stored = [k for k in used if group.operands[k].store is not None]

    def refs(nodes, extra=()):
        ks = {r[1] for nd in nodes for r in nd.inputs if r[0] == "operand"} | set(extra)
        return [k for k in loaded if k in ks]

    def phase_stores(ph):
        return [k for k in stored if group.operands[k].store in made[ph]]
    wg = plan == "wg"
    lines = _fused_head(group, "render_fused_reduction")
    if wg:
        lines += ["inline void K(fused_tree)(__local SACC* buf, int lid) {",
                  "  for (int s = RL / 2; s > 0; s >>= 1) {",
                  "    barrier(CLK_LOCAL_MEM_FENCE);",
                  "    if (lid < s) buf[lid] = buf[lid] + buf[lid + s];", "  }",
                  "  barrier(CLK_LOCAL_MEM_FENCE);", "}"]
    lines.append(f"__kernel void K(fused)({', '.join(_fused_params(group, used, True))}) {{")
    if wg:
        lines += ["  __local SACC buf[RL];", "  const long row = get_group_id(0);",
                  "  const int lid = get_local_id(0);", "  (void)lid;"]
        first, step, one = "lid", "RL", "  if (lid == 0) {"
    else:
        lines += ["  const long row = get_global_id(0);", "  if (PAST_END(row, n / inner)) return;"]
        first, step, one = "0", "1", "  {"
    per_row = [k for k in loaded if group.operands[k].kind in ("single", "row")]
    lines += _loads(group, per_row, "  ")
    at_row = set(per_row)
    # the element loops: the chain before the first reduction, then each row pass
    cuts = [r.index for r in reds] + [len(group.nodes)]
    starts = [0] + [r.row_pass if r.row_pass is not None else cuts[k + 1]
                    for k, r in enumerate(reds)]
    for k in range(len(reds) + 1):
        # (a row pass computes again the earlier element values it reads: no stores)
        again = [group.nodes[i] for i in group.rematerialized(2 * k)] if k else []
        nodes = again + group.nodes[starts[k]:cuts[k]]
        src = group.nodes[cuts[k]].inputs[0] if k < len(reds) else None
        if k == len(reds) and not nodes:
            break
        element = [x for x in refs(nodes, [src[1]] if src and src[0] == "operand" else [])
                   if group.operands[x].kind not in ("single", "row")]
        body = ["    const long i = row * inner + j;", "    (void)i;"]
        body += _loads(group, element, "    ") + _nodes(group, nodes, "    ")
        body += _stores(group, phase_stores(2 * k), "    ")
        if k < len(reds):
            value = f"v{src[1]}" if src[0] == "value" else f"x{src[1]}"
            lines.append(f"  SACC acc{k} = 0;")
            body.append(f"    acc{k} = acc{k} + (SACC){value};")
        lines += [f"  for (long j = {first}; j < inner; j += {step}) {{"] + body + ["  }"]
        if k == len(reds):
            break
        if wg:
            if k > 0:
                lines.append("  barrier(CLK_LOCAL_MEM_FENCE);")
            lines += [f"  buf[lid] = acc{k};", "  K(fused_tree)(buf, lid);",
                      f"  acc{k} = buf[0];"]
        red = reds[k]
        if red.op == "mean":
            lines.append(f"  acc{k} = acc{k} / (SACC)inner;")
        lines.append(f"  const C v{group.nodes[red.index].value} = (C)acc{k};")
        epi = group.nodes[red.index + 1:starts[k + 1]]
        outer = [x for x in refs(epi) if group.operands[x].kind == "outer"
                 and x not in at_row]
        at_row.update(outer)        # (an epilogue's operand is loaded once per row)
        lines += _loads(group, outer, "  ")
        lines += _nodes(group, epi, "  ")
        st = phase_stores(2 * k + 1)
        if st:
            lines += [one] + _stores(group, st, "    ") + ["  }"]
    lines += ["}", "#endif", ""]
    return "\n".join(lines)
