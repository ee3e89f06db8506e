"""Render the elementwise ops' scalar bodies as C++: one header for the cpu and cuda backends.

For each op with a body the header holds a functor per mode (``gen::exp_op``,
``gen::div_floor_op``, ...): a template over the element type ``T`` whose
``operator()`` converts the inputs to the compute type ``C``, evaluates the body for
``T``'s kind, and converts back. Functors are ``EMBER_HD`` (host and device), so the
same text compiles into the cpu backend's loops and the cuda backend's grid kernels.

Then one kernel entry per op (``k_exp``): it parses the Python call with the
backend's ``ElementwiseCall`` (each backend defines that class over its own loops, with
the interface used below), runs the checks, picks the mode and launches. Last,
``register_generated_elementwise(defs)`` lists every entry.

Run at build time by each backend's CMake through ``python -m ember.dispatcher.codegen``.
"""
from __future__ import annotations

from .. import expr as X
from ..schema import CHECK_MESSAGES, KIND_MASKS, OPS, elementwise_ops, table_hash

__all__ = ["render_header", "render_functors", "functor_name", "check_extension",
           "render_fused_prelude", "render_fused_loop", "FUSED_CTYPES", "FUSED_INCLUDES"]

#: the headers a fused group's C++ source includes first (the CPU backend precompiles
#: them)
FUSED_INCLUDES = ("<cstdint>", "<cmath>", "<ember/dtype.h>", "<ember/scalar_ops.h>")

_KIND_TEST = {
    "float": "em::kind_v<T> == em::kFloatKind",
    "sint": "em::kind_v<T> == em::kSIntKind",
    "uint": "em::kind_v<T> == em::kUIntKind",
    "bool": "em::kind_v<T> == em::kBoolKind",
}


def functor_name(op_name: str, mode) -> str:
    return f"{op_name}_{mode}_op" if mode else f"{op_name}_op"


def _ctype(t: str) -> str:
    return "bool" if t == X.BOOL else "C"


def _const(v, t: str, kind: str) -> str:
    if isinstance(v, bool) or t == X.BOOL:
        return "true" if v else "false"
    if isinstance(v, float):
        if v != v:
            return "C(NAN)"
        if v in (float("inf"), float("-inf")):
            return "C(INFINITY)" if v > 0 else "C(-INFINITY)"
        if kind != "float" and v == int(v):
            return f"C({int(v)})"
        return f"C({v!r})"
    return f"C({v})" if -(1 << 31) <= v < (1 << 31) else f"C(INT64_C({v}))"


_ARITH = {"add": "em::add", "sub": "em::sub", "mul": "em::mul"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def render_body(e: X.Expr, kind: str, arg_names: dict, indent: str) -> tuple[list, str]:
    """C++ statements computing ``e`` for a dtype of ``kind``, and the result's name.
    ``arg_names``: input position -> the local variable holding it (compute type)."""
    def leaf(n, t):
        if n.op == "input":
            return arg_names[n.value[0]]
        if n.op == "const":
            return _const(n.value, t, kind)
        return f"{n.value}.template as<C>()"
    return X.lower(e, leaf, lambda n, a, at: _node(n, a, at, kind), _ctype, indent)


def _node(n, a, at, kind) -> str:
    op = n.op
    if op in _ARITH:
        if kind == "bool":
            raise TypeError(f"{op} on bool values: give the op a 'bool' body (| for +, & "
                            f"for *)")
        return f"{_ARITH[op]}({a[0]}, {a[1]})"
    if op == "div":
        if kind != "float":
            raise TypeError("/ is true division and needs a floating type: use "
                            "idiv_trunc / idiv_floor for integers")
        return f"({a[0]} / {a[1]})"
    if op == "neg":
        if kind == "bool":
            raise TypeError("negation of bool values")
        return f"em::neg({a[0]})"
    if op in _CMP:
        return f"({a[0]} {_CMP[op]} {a[1]})"
    if op in ("and", "or", "xor"):
        if at[0] == X.BOOL or kind == "bool":
            sym = {"and": "&&", "or": "||", "xor": "!="}[op]
            return f"({a[0]} {sym} {a[1]})"
        if kind == "float":
            raise TypeError(f"bitwise {op} on floating values")
        sym = {"and": "&", "or": "|", "xor": "^"}[op]
        return f"static_cast<C>({a[0]} {sym} {a[1]})"
    if op == "not":
        if at[0] == X.BOOL or kind == "bool":
            return f"(!{a[0]})"
        if kind == "float":
            raise TypeError("bitwise not on floating values")
        return f"static_cast<C>(~{a[0]})"
    if op == "where":
        return f"em::select({a[0]}, {a[1]}, {a[2]})"
    if op == "cast":
        if n.value == X.BOOL:
            return f"({a[0]} != C(0))" if at[0] != X.BOOL else a[0]
        return f"static_cast<C>({a[0]})"
    if op == "call":
        return f"em::{n.value}({', '.join(a)})"
    raise AssertionError(op)


def _functor(o, mode, scalar: dict) -> str:
    inputs = o.body_inputs()
    out_t = X.type_of(next(iter(scalar.values())))
    params = ", ".join(f"{'bool' if v.value[2] == X.BOOL else 'T'} in{v.value[0]}"
                       for v in inputs)
    ret = "bool" if out_t == X.BOOL else "T"
    name = functor_name(o.name, mode)
    lines = [f"// {o.name}{'' if mode is None else f' ({o.mode_attr}={mode!r})'}",
             f"struct {name} {{"]
    for a in o.attrs:
        lines.append(f"  em::Scalar {a};")
    lines += ["  template <class T>",
              f"  EMBER_HD {ret} operator()({params}) const {{",
              "    using C = compute_t<T>;"]
    arg_names = {v.value[0]: f"{v.value[1]}_" for v in inputs}
    decls = [f"      const {'bool' if v.value[2] == X.BOOL else 'C'} {v.value[1]}_ = "
             f"static_cast<{'bool' if v.value[2] == X.BOOL else 'C'}>(in{v.value[0]});"
             for v in inputs]
    # one branch per distinct rendering (signed and unsigned integers often share one)
    groups: list = []
    for kind in X.KINDS:
        body = X.body_for(scalar, kind)
        if body is None:
            continue
        body_lines, res = render_body(body, kind, arg_names, "      ")
        text = "\n".join(decls + body_lines + [
            f"      return {res};" if out_t == X.BOOL else f"      return cvt<T>({res});"])
        same = next((g for g in groups if g[1] == text), None)
        if same is None:
            groups.append(([kind], text))
        else:
            same[0].append(kind)
    for gi, (kinds, text) in enumerate(groups):
        test = " || ".join(_KIND_TEST[k] for k in kinds)
        lines.append(f"    {'if' if gi == 0 else 'else if'} constexpr ({test}) {{")
        lines += [text, "    }"]
    lines.append(f"    else {{ return {ret}(); }}  // dtypes outside the op's mask never get here")
    lines += ["  }", "};", ""]
    return "\n".join(lines)


def _check_functor(o, idx: int, check) -> str:
    inp = o.body_inputs()[check.input]
    i, vname, _vt = inp.value
    lines = [f"struct {o.name}_check{idx} {{", "  template <class T>",
             "  EMBER_HD bool operator()(T v) const {", "    using C = compute_t<T>;",
             f"    const C {vname}_ = static_cast<C>(v);"]
    body, res = render_body(check.pred, "sint", {i: f"{vname}_"}, "    ")
    lines += body + [f"    return {res};", "  }", "};", ""]
    return "\n".join(lines)


def _mask(kinds, barebones=False) -> str:
    parts = [m for k in kinds for m in KIND_MASKS[k]]
    if barebones and "uint" in kinds:   # (uint16 / uint32 / uint64: the op says it takes them)
        parts.append("M_BAREBONES")
    return " | ".join(parts) if parts else "0u"


def _sig(o) -> str:
    """The template arguments naming the output and input types (E_T / E_B)."""
    out_t = o.out_type()
    types = ["E_B" if out_t == X.BOOL else "E_T"]
    types += ["E_B" if v.value[2] == X.BOOL else "E_T" for v in o.body_inputs()]
    return ", ".join(types)


def _entry(o) -> str:
    inputs = o.body_inputs()
    names = ["out"] + [v.value[1] for v in inputs]
    mode_index = None
    if o.mode_attr:
        mode_index = len(names)
        names.append(o.mode_attr)
    attr_index = {}
    for a in o.attrs:
        attr_index[a] = len(names)
        names.append(a)
    arg_list = ", ".join(f'"{n}"' for n in names)
    lines = [f"inline void k_{o.name}(PyObject* const* args, Py_ssize_t nargs, "
             f"PyObject* kwnames) {{",
             f'  ElementwiseCall call("{o.name}", args, nargs, kwnames, {{{arg_list}}}, '
             f"{len(inputs) + 1});"]
    sig = _sig(o)

    def launch(mode, indent):
        kinds = o.kinds(mode)
        out = []
        fname = functor_name(o.name, mode)
        for ci, chk in enumerate(o.checks):
            ck = [k for k in chk.kinds if k in kinds]
            if ck:
                out.append(f'{indent}call.check<{_mask(ck)}>({chk.input + 1}, '
                           f'gen::{o.name}_check{ci}{{}}, "{CHECK_MESSAGES[chk.error]}");')
        init = ", ".join(f"call.scalar({attr_index[a]}, {_cxx_default(o, a)})"
                         for a in o.attrs)
        out.append(f"{indent}call.run<{_mask(kinds, o.barebones)}, {sig}>"
                   f"(gen::{fname}{{{init}}});")
        return out

    if mode_index is None:
        lines += launch(None, "  ")
    else:
        lines.append(f"  const std::string mode = call.str({mode_index});")
        for mode in o.bodies():
            cond = "mode.empty()" if mode is None else f'mode == "{mode}"'
            lines.append(f"  if ({cond}) {{")
            lines += launch(mode, "    ")
            lines += ["    return;", "  }"]
        lines.append(f"  call.bad_mode({mode_index}, mode);")
    lines += ["}", ""]
    return "\n".join(lines)


def _cxx_default(o, a) -> str:
    return repr(float(o.attrs[a]))


def render_functors(uses) -> str:
    """The functors (``ember::gen::<op>[_<mode>]_op``) of the ``(op name, mode)`` pairs in
    ``uses``, for code generated at run time (``ember.compile``'s fused kernels). Needs
    <ember/dtype.h> and <ember/scalar_ops.h> before it."""
    out = ["namespace ember {", "namespace gen {", ""]
    for name, mode in sorted(set(uses), key=lambda u: (u[0], str(u[1]))):
        o = OPS[name]
        out.append(_functor(o, mode, o.bodies()[mode]))
    out += ["}  // namespace gen", "}  // namespace ember", ""]
    return "\n".join(out)


def render_header() -> str:
    """The whole generated header (deterministic text)."""
    ops = elementwise_ops()
    out = [
        "// Generated by `python -m ember.dispatcher.codegen cxx` from ember.dispatcher's op",
        "// definitions (dispatcher/defs/elementwise.py). Do not edit: change the definitions.",
        "//",
        "// Requires, before inclusion: <ember/scalar_ops.h> and a backend class",
        "// `ElementwiseCall` with: a constructor (op, args, nargs, kwnames, {names...},",
        "// nrequired); run<Mask, Out, In...>(functor); check<Mask>(input, pred, message);",
        "// scalar(index, default) -> em::Scalar; str(index) -> std::string;",
        "// bad_mode(index, mode).",
        "#pragma once",
        "",
        f'#define EMBER_OPS_TABLE_HASH "{table_hash()}"',
        "",
        "namespace ember {",
        "namespace gen {",
        "",
    ]
    for o in ops:
        for mode, scalar in o.bodies().items():
            out.append(_functor(o, mode, scalar))
        for ci, chk in enumerate(o.checks):
            out.append(_check_functor(o, ci, chk))
    out += ["}  // namespace gen", ""]
    for o in ops:
        out.append(_entry(o))
    out.append("// every generated kernel: the backend registers those it does not hand-write")
    out.append("inline const PyMethodDef kGeneratedKernels[] = {")
    for o in ops:
        out.append(f'    EMBER_DEF("{o.name}", k_{o.name}),')
    out += ["};", "", "}  // namespace ember", ""]
    return "\n".join(out)


def check_extension(plugin: str, kernel_names, ops_table_hash: str, helpers=()) -> None:
    """What a backend plugin built on the generated header checks when it loads: its
    kernels were generated from this ember's definitions (``ops_table_hash``, the header's
    ``EMBER_OPS_TABLE_HASH``), every op with a body has one, and every other name in its
    kernel table is an op or one of its ``helpers``. A stale or partial build would
    otherwise run old kernels or fall back to composites without a word."""
    if ops_table_hash != table_hash():
        raise RuntimeError(f"{plugin}: its elementwise kernels were generated from other op "
                           f"definitions than this ember's: rebuild it (make build)")
    names = set(kernel_names)
    missing = sorted(o.name for o in elementwise_ops() if o.name not in names)
    if missing:
        raise RuntimeError(f"{plugin}: no kernel registered for {', '.join(missing)}")
    stray = sorted(n for n in names if n not in OPS and n not in helpers)
    if stray:
        raise RuntimeError(f"{plugin}: kernels registered for unknown ops: {', '.join(stray)}")


# ---- fused groups (ember.compile): the loop shared by the cpu and cuda generators -------

#: the C++ type of each dtype's elements in generated code (ember/dtype.h)
FUSED_CTYPES = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
                "int32": "int32_t", "int64": "int64_t", "float16": "Half",
                "bfloat16": "BFloat16", "float32": "float", "float64": "double",
                "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t"}


def _fused_scalar(ref) -> str:
    kind, v = ref
    if kind == "runtime":
        return f"scalar_of(s[{v}])"
    if isinstance(v, bool) or isinstance(v, int):
        return f"em::Scalar{{true, INT64_C({int(v)}), {float(v)!r}}}"
    return f"scalar_of({v!r})"


def render_fused_prelude(group) -> list:
    """The includes, the functors ``group`` applies and ``scalar_of`` (a runtime value as
    an ``em::Scalar``): the top of a fused group's source."""
    cuts = {r.index for r in group.reductions}
    uses = {(nd.op, nd.mode) for k, nd in enumerate(group.nodes) if k not in cuts}
    return [f"#include {h}" for h in FUSED_INCLUDES] + ["", render_functors(uses),
            "using namespace ember;", "namespace {",
            "EMBER_HD inline em::Scalar scalar_of(double v) {",
            "  return em::Scalar{false, std::isfinite(v) ? (int64_t)v : 0, v};", "}"]


def render_fused_loop(group, pointer) -> tuple[list, list, list]:
    """A fused group's kernel as C++ lines: the setup (typed operand pointers ``p<k>``
    from the ``void*`` expression ``pointer(k)``, loop-invariant loads, functor instances;
    ``s`` names the runtime values, doubles), the lines that start row ``o`` of a
    two-level layout (``d[1 + k]``: operand ``k``'s outer stride; empty for a flat group)
    and the body for element ``i`` = (``o``, ``j``): each operand loaded once, the functors
    applied with values in registers, the kept stores. (A group with a reduction:
    ``render_fused_phases``.)"""
    if group.reduction is not None:
        raise ValueError("render_fused_loop: this group ends in a reduction, which is not "
                         "one loop over its elements (render_fused_phases)")
    p = render_fused_phases(group, pointer)
    return p["setup"], p["row"], p["body"]


def render_fused_phases(group, pointer) -> dict:
    """``render_fused_loop``'s lines, split at the group's reductions (if any): ``setup``,
    ``row``, ``body`` (the nodes before the first reduction, for element (``o``, ``j``),
    and their stores) and ``stages``, one per reduction: ``source`` (the C++ expression of
    its input inside the element lines before it), ``result`` (the name its epilogue
    reads the reduced value by), ``epilogue`` (the nodes after it, for output ``o``, and
    their stores; ``epilogue_values`` and ``epilogue_stores`` hold the two parts) and
    ``row_pass`` (the nodes after the epilogue, for element (``o``, ``j``) again: the next
    reduction's input is computed there). The first stage's
    entries are also ``source``, ``result``, ``epilogue`` and ``row_pass``."""
    reds = group.reductions
    cuts = {r.index for r in reds}
    cut = reds[0].index if reds else len(group.nodes)
    runtime = group.runtime_values
    slot_of_runtime = {v: i for i, v in enumerate(runtime)}
    # no stored operand shares a storage with another one: the pointers do not alias
    slots = [op.slot for op in group.operands if op.load or op.store is not None]
    restrict = all(slots.count(op.slot) == 1 for op in group.operands
                   if op.store is not None)
    qual = " __restrict__" if restrict else ""
    setup, row = [], []
    for k, op in enumerate(group.operands):
        if not op.load and op.store is None:
            continue
        ct = FUSED_CTYPES[op.dtype.name]
        if ct == "bool":
            ct = "uint8_t"
        const = "const " if op.store is None else ""
        setup.append(f"  {const}{ct}*{qual} p{k} = ({const}{ct}*){pointer(k)};")
        vt = "bool" if op.dtype.name == "bool" else ct
        if op.kind == "single" and op.load:
            load = f"(p{k}[0] != 0)" if op.dtype.name == "bool" else f"p{k}[0]"
            setup.append(f"  const {vt} x{k} = {load};")
        elif op.kind == "row" and op.load:
            load = f"p{k}[o * d[{1 + k}]]"
            row.append(f"    const {vt} x{k} = {load}{' != 0' if vt == 'bool' else ''};")
        elif op.kind == "strided":
            row.append(f"    {const}{ct}*{qual} q{k} = p{k} + o * d[{1 + k}];")
    for k, nd in enumerate(group.nodes):
        if k in cuts:
            continue
        fname = functor_name(nd.op, nd.mode)
        inits = ", ".join(_fused_scalar(("runtime", slot_of_runtime[r[1]])
                                        if r[0] == "runtime" else r) for _, r in nd.attrs)
        setup.append(f"  const gen::{fname} f{k}{{{inits}}};")

    def element(k):
        op = group.operands[k]
        return {"flat": f"p{k}[i]", "col": f"p{k}[j]", "strided": f"q{k}[j]",
                "outer": f"p{k}[o]"}[op.kind]

    def arg(ref):
        if ref[0] == "value":
            return f"v{ref[1]}"
        op = group.operands[ref[1]]
        if op.kind in ("single", "row"):
            return f"x{ref[1]}"
        if op.dtype.name == "bool":
            return f"({element(ref[1])} != 0)"
        return element(ref[1])

    def lines(nodes, stores):
        out = []
        for k, nd in nodes:
            vt = FUSED_CTYPES[nd.out_dtype.name]
            out.append(f"    const {vt} v{nd.value} = f{k}({', '.join(map(arg, nd.inputs))});")
        for k, op in stores:
            target = "p{}[0]".format(k) if op.kind == "single" else element(k)
            out.append(f"    {target} = v{op.store};")
        return out

    nodes = list(enumerate(group.nodes))
    stored = [(k, op) for k, op in enumerate(group.operands) if op.store is not None]
    made = group.phase_values()     # the value ids of each phase: stores go with them

    def phase(i):
        return [(k, op) for k, op in stored if op.store in made[i]]
    out = {"setup": setup, "row": row, "body": lines(nodes[:cut], phase(0)), "stages": []}
    for k, red in enumerate(reds):
        end = red.row_pass if red.row_pass is not None else len(nodes)
        stop = reds[k + 1].index if k + 1 < len(reds) else len(nodes)
        # (apart too: a generator whose threads share a row computes the values on every
        # thread and stores them from one)
        values = lines(nodes[red.index + 1:end], [])
        stores = lines([], phase(2 * k + 1))
        out["stages"].append({
            "source": arg(group.nodes[red.index].inputs[0]),
            "result": f"v{group.nodes[red.index].value}",
            "epilogue": values + stores,
            "epilogue_values": values,
            "epilogue_stores": stores,
            # (values of earlier element phases it reads are computed again: no stores)
            "row_pass": lines([(i, group.nodes[i]) for i in group.rematerialized(2 * k + 2)],
                              []) + lines(nodes[end:stop], phase(2 * k + 2))})
    if reds:
        out.update(out["stages"][0])
    return out
