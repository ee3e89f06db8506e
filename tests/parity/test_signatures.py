"""Signature-level parity with PyTorch (issue 14): every entry of tests/parity/signatures.py is
expanded into the calls PyTorch's documentation shows, each call is made on both frameworks
with the same NumPy-made inputs, and ember must give what torch gives: the same result type
and structure, dtypes, shapes, ``requires_grad``, values (to a dtype-sized tolerance), the same
mutations of its inputs, the same float64 gradients, or an exception of the same class.

One test per op runs all its cases and lists every mismatch at once; known ember bugs (the
table's ``xfail``) run one by one as strict xfails. docs/compat.md says how to add an entry.
"""
import warnings
import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as torch_functional

import ember
import ember.nn.functional as ember_functional
from ember.dispatcher import BACKENDS, ensure_loaded

# (pytest puts tests/parity on sys.path: the folder has no __init__.py)
from signatures import LACKING, LACKING_INPLACE, SIGNATURES, D, T

NAMESPACES = {
    "torch": (torch, ember),
    "F": (torch_functional, ember_functional),
    "linalg": (torch.linalg, ember.linalg),
    "special": (torch.special, ember.special),
    "Tensor": (None, None),
}
DEFAULT_VARIANTS = {"torch": ("function", "method"), "F": ("function",),
                    "linalg": ("function",), "special": ("function",), "Tensor": ("method",)}
#: (rtol, atol) by the dtype of torch's result
TOLERANCE = {"float16": (5e-3, 2e-3), "bfloat16": (3e-2, 2e-2), "float32": (1e-4, 1e-5),
             "float64": (1e-7, 1e-9)}
FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")
#: inputs of the "specials" case (inf, NaN, signed zeros, tiny) and of the "kinks:grad" case
#: (the points where a gradient needs a convention: 0, +-1, ...)
SPECIAL_VALUES = {
    "special": np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-30, 3.5, -0.5]),
    "kink": np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 2.0, 6.0]),
}


class Case:
    """One call: ``variant`` is "function", "method" or "inplace"; ``mode`` is "call",
    "out" (with ``out_kind`` "right" / "resize" / "wrong"), "grad" or "bad"."""

    def __init__(self, op, ident, args, kwargs, variant, mode="call", in_dtype=None,
                 out_kind=None, noncontig=False):
        self.op, self.id, self.args, self.kwargs = op, ident, args, kwargs
        self.variant, self.mode, self.in_dtype, self.out_kind = variant, mode, in_dtype, out_kind
        self.noncontig = noncontig

    def describe(self):
        args = ", ".join([repr(a) for a in self.args] +
                         [f"{k}={v!r}" for k, v in self.kwargs.items()])
        if self.mode == "out":
            args += f", out=<{self.out_kind}>"
        dtype = f" [inputs {self.in_dtype}]" if self.in_dtype else ""
        dtype += " [inputs non-contiguous]" if self.noncontig else ""
        return f"{self.op} {self.id}: {self.variant}({args}){dtype}"


# ---- expanding a table entry into cases ---------------------------------------------------
def _first_tensor(args):
    for a in args:
        if isinstance(a, T):
            return a
        if isinstance(a, (list, tuple)):
            found = _first_tensor(a)
            if found is not None:
                return found
    return None


def _tensor_specs(args):
    for a in args:
        if isinstance(a, T):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensor_specs(a)


def _map_tensors(args, change):
    out = []
    for a in args:
        if isinstance(a, T):
            out.append(change(a))
        elif isinstance(a, (list, tuple)) and _first_tensor(a) is not None:
            out.append(type(a)(_map_tensors(a, change)))
        else:
            out.append(a)
    return out


def expand(op, entry):
    ns = entry.get("ns", "torch")
    args, kwargs = list(entry["args"]), dict(entry.get("kwargs", {}))
    variants = entry.get("variants", DEFAULT_VARIANTS[ns])
    primary = variants[0]
    cases = []

    def add(ident, a, kw, variant=primary, **opts):
        cases.append(Case(op, ident, list(a), dict(kw), variant, **opts))

    for variant in variants:
        add(variant, args, kwargs, variant)
    if any(len(t.shape) >= 2 for t in _tensor_specs(args)):
        add("noncontiguous", args, kwargs, noncontig=True)
    names = entry.get("names")
    if names and "function" in variants:
        add("kw", [], {**dict(zip(names, args)), **kwargs}, "function")
    if names and len(args) > 1 and "method" in variants and entry.get("method_kw", True):
        add("method:kw", args[:1], {**dict(zip(names[1:], args[1:])), **kwargs}, "method")
    first = _first_tensor(args)
    dims = entry.get("dims")
    if dims:
        ndim = len(first.shape)
        choices = [1, -1] + ([(0, 2), (-1, 0), None] if dims == "reduce" else [])
        for d in choices:
            add(f"dim={d}", args, {**kwargs, "dim": d})
        if entry.get("dim_positional", True):
            add("dim_positional", args + [1], kwargs)
        if "method" in variants:
            add("method:dim=-1", args, {**kwargs, "dim": -1}, "method")
        if entry.get("keepdim"):
            add("keepdim", args, {**kwargs, "dim": 1, "keepdim": True})
            if dims == "reduce":
                add("keepdim:dim=(0,2)", args, {**kwargs, "dim": (0, 2), "keepdim": True})
            if entry.get("dim_positional", True):
                add("keepdim_positional", args + [1, True], kwargs)
        add("bad:dim_out_of_range", args, {**kwargs, "dim": ndim}, mode="bad")
    if entry.get("dtype_arg"):
        add("dtype=float64", args, {**kwargs, "dtype": D("float64")})
        if dims:
            add("dtype=float64:dim=1", args, {**kwargs, "dim": 1, "dtype": D("float64")})
    if entry.get("out") and "function" in variants:
        for kind in ("right", "resize", "wrong"):
            add(f"out_{kind}", args, kwargs, "function", mode="out", out_kind=kind)
        if dims:
            add("out_right:dim=1", args, {**kwargs, "dim": 1}, "function", mode="out",
                out_kind="right")
    if entry.get("zero_d"):
        add("zero_d", _map_tensors(args, lambda t: t.reshaped(())), kwargs)
    if entry.get("empty"):
        def emptied(t):
            return t.reshaped((0,) + t.shape[1:]) if t.shape == first.shape else t
        add("empty", _map_tensors(args, emptied), kwargs)
        if dims:
            add("empty:dim=-1", _map_tensors(args, emptied), {**kwargs, "dim": -1})
            if dims == "reduce":
                add("empty:dim=0", _map_tensors(args, emptied), {**kwargs, "dim": 0})
    if entry.get("specials"):
        def special(kind):
            return lambda t: t if t.pinned else T(*t.shape, kind=kind, grad=t.grad)
        add("specials", _map_tensors(args, special("special")), kwargs)
        if entry.get("grad"):
            add("kinks:grad", _map_tensors(args, special("kink")), kwargs, mode="grad",
                in_dtype="float64")
    for dtype in entry.get("dtypes", ()):
        add(f"in={dtype}", args, kwargs, in_dtype=dtype)
        if dims:
            add(f"in={dtype}:dim=1", args, {**kwargs, "dim": 1}, in_dtype=dtype)
    if entry.get("grad"):
        add("grad", args, kwargs, mode="grad", in_dtype="float64")
        if dims:
            add("grad:dim=1", args, {**kwargs, "dim": 1}, mode="grad", in_dtype="float64")
    for ident, (a, kw, *variant) in entry.get("extra", {}).items():
        add(f"x:{ident}", a, kw, *variant)
        low_precision = any(t.dtype in ("float16", "bfloat16") for t in _tensor_specs(a))
        if entry.get("grad") and _first_tensor(a) is not None and not low_precision:
            add(f"x:{ident}:grad", a, kw, *variant, mode="grad", in_dtype="float64")
    for ident, (a, kw) in entry.get("bad", {}).items():
        add(f"bad:{ident}", a, kw, mode="bad")
    return cases


# ---- inputs ---------------------------------------------------------------------------------
class Made:
    """A tensor input made from NumPy: the array, its dtype name, whether it needs grad."""

    def __init__(self, array, dtype, requires_grad, noncontig=False):
        self.array, self.dtype, self.requires_grad = array, dtype, requires_grad
        self.noncontig = noncontig and array.ndim >= 2


def make_array(spec, dtype, rng):
    shape = spec.shape
    if spec.kind == "index":
        return rng.integers(0, int(spec.high), size=shape)
    if spec.kind == "perm":
        n = max(shape[-1] if shape else 1, int(spec.high))
        rows = [rng.permutation(n)[:shape[-1] if shape else 1]
                for _ in range(int(np.prod(shape[:-1])) if shape else 1)]
        return np.array(rows).reshape(shape)
    if spec.kind == "sorted":
        return np.sort(rng.uniform(spec.low, spec.high, size=shape), axis=-1)
    if spec.kind in SPECIAL_VALUES:
        values = SPECIAL_VALUES[spec.kind]
        return np.resize(rng.permutation(values), shape)
    if spec.kind == "sign":
        return np.where(rng.random(shape) > 0.5, 1.0, -1.0)
    if dtype == "bool" or spec.kind == "bool":
        return rng.random(shape) > 0.5
    if dtype in ("int64", "int32", "uint8") or spec.kind == "int":
        low = max(0, int(np.floor(spec.low))) if dtype == "uint8" else int(np.floor(spec.low))
        return rng.integers(low, max(low + 1, int(np.ceil(spec.high))) + 1, size=shape)
    return rng.uniform(spec.low, spec.high, size=shape)


def make_inputs(case):
    """The case's arguments with every ``T`` replaced by a ``Made`` (same for both frameworks)."""
    rng = np.random.default_rng(zlib.crc32(f"{case.op}/{case.id}".encode()))

    def make(obj):
        if isinstance(obj, T):
            dtype = obj.dtype if obj.pinned else (case.in_dtype or "float32")
            grad = (case.mode == "grad" and obj.grad and dtype in FLOAT_NAMES)
            return Made(make_array(obj, dtype, rng), dtype, grad, case.noncontig)
        if isinstance(obj, (list, tuple)):
            return type(obj)(make(o) for o in obj)
        if isinstance(obj, dict):
            return {k: make(v) for k, v in obj.items()}
        return obj

    return make(case.args), make(case.kwargs)


def convert(obj, lib, device="cpu"):
    """``Made`` -> a tensor of ``lib`` (torch or ember; ember's on ``device``); ``D`` ->
    ``lib``'s dtype."""
    if lib is torch:
        device = "cpu"
    if isinstance(obj, Made):
        if obj.noncontig:  # the same values, as a permuted view of a reversed-layout tensor
            order = tuple(reversed(range(obj.array.ndim)))
            base = lib.tensor(np.ascontiguousarray(obj.array.transpose(order)))
            return base.to(device, getattr(lib, obj.dtype)).permute(order)
        tensor = lib.tensor(np.ascontiguousarray(obj.array)).to(device, getattr(lib, obj.dtype))
        if obj.requires_grad:
            tensor.requires_grad_(True)
        return tensor
    if isinstance(obj, D):
        return getattr(lib, obj.name)
    if isinstance(obj, (list, tuple)):
        return type(obj)(convert(o, lib, device) for o in obj)
    if isinstance(obj, dict):
        return {k: convert(v, lib, device) for k, v in obj.items()}
    return obj


def leaves(obj):
    """Every tensor in a (nested) argument or result, in order."""
    if isinstance(obj, (torch.Tensor, ember.Tensor)):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in leaves(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in leaves(o)]
    return []


# ---- calling ----------------------------------------------------------------------------------
def call(case, lib, args, kwargs):
    entry = SIGNATURES[case.op]
    name = entry.get("fn", case.op)
    if case.variant == "function":
        namespace = NAMESPACES[entry.get("ns", "torch")][0 if lib is torch else 1]
        return getattr(namespace, name)(*args, **kwargs)
    suffix = "_" if case.variant == "inplace" else ""
    return getattr(args[0], name + suffix)(*args[1:], **kwargs)


def synced(result, lib, device):
    """``result`` once ``device``'s queue has run: an asynchronous device reports an error
    its kernel found (an index out of range) at the next synchronisation, as CUDA does."""
    if lib is ember and device != "cpu":
        BACKENDS[device].synchronize()
    return result


def outcome(thunk):
    """("ok", value) or ("raised", exception)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", thunk()
        except Exception as exc:  # noqa: BLE001 - the class is what we compare
            return "raised", exc


def empty_like_result(result, lib, kind, device="cpu"):
    """Tensors for ``out=`` shaped as torch's ``result`` (``kind``: right / resize / wrong)."""
    if isinstance(result, (tuple, list)):
        return tuple(empty_like_result(r, lib, kind, device) for r in result)
    dtype = str(result.dtype).split(".")[-1]
    shape = tuple(result.shape)
    if kind == "resize":
        shape = (0,)
    if kind == "wrong":
        dtype = "int64" if dtype in FLOAT_NAMES else ("bool" if dtype != "bool" else "float32")
    if lib is torch:
        return lib.empty(shape, dtype=getattr(lib, dtype))
    return lib.empty(shape, dtype=getattr(lib, dtype), device=device)


# ---- comparing --------------------------------------------------------------------------------
def dtype_name(dtype):
    return str(dtype).split(".")[-1]


def to_numpy(tensor):
    tensor = tensor.detach().cpu()
    if getattr(tensor, "_is_zerotensor", lambda: False)():
        tensor = tensor.clone()   # torch's symbolic zero gradient (e.g. of sgn) as zeros
    if dtype_name(tensor.dtype) == "bfloat16":
        tensor = tensor.float()
    return np.asarray(tensor.numpy())


def close(a, b, rtol, atol):
    """np.allclose(a, b, rtol, atol, equal_nan=True), without its overhead on tiny arrays."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    nan = np.isnan(a)
    if not np.array_equal(nan, np.isnan(b)):
        return False
    exact = nan | np.isinf(a) | np.isinf(b)
    if not np.array_equal(a[exact & ~nan], b[exact & ~nan]):
        return False
    a, b = a[~exact], b[~exact]
    return bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


def compare(want, got, where, values=True):
    """Differences between torch's ``want`` and ember's ``got``, as sentences."""
    if isinstance(want, torch.Tensor):
        if not isinstance(got, ember.Tensor):
            return [f"{where}: torch gives a Tensor, ember a {type(got).__name__}"]
        problems = []
        if dtype_name(want.dtype) != dtype_name(got.dtype):
            problems.append(f"{where}: dtype torch {dtype_name(want.dtype)}, "
                            f"ember {dtype_name(got.dtype)}")
        if tuple(want.shape) != tuple(got.shape):
            return problems + [f"{where}: shape torch {tuple(want.shape)}, ember "
                               f"{tuple(got.shape)}"]
        if want.requires_grad != got.requires_grad:
            problems.append(f"{where}: requires_grad torch {want.requires_grad}, ember "
                            f"{got.requires_grad}")
        if values and not problems:
            a, b = to_numpy(want), to_numpy(got)
            name = dtype_name(want.dtype)
            same = a.tobytes() == b.tobytes() or (name in TOLERANCE
                                                  and close(a, b, *TOLERANCE[name]))
            if not same:
                flat_a, flat_b = a.ravel()[:6], b.ravel()[:6]
                problems.append(f"{where}: values differ: torch {flat_a.tolist()}, ember "
                                f"{flat_b.tolist()}")
        return problems
    if isinstance(want, torch.dtype):
        same = isinstance(got, ember.dtype) and dtype_name(got) == dtype_name(want)
        return [] if same else [f"{where}: torch {want}, ember {got!r}"]
    if isinstance(want, torch.Size):
        same = isinstance(got, tuple) and tuple(got) == tuple(want)
        return [] if same else [f"{where}: torch {tuple(want)}, ember {got!r}"]
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)):
            return [f"{where}: torch gives a {type(want).__name__}, ember a "
                    f"{type(got).__name__}"]
        if len(want) != len(got):
            return [f"{where}: torch gives {len(want)} items, ember {len(got)}"]
        problems = []
        for field in getattr(want, "_fields", ()):
            if not hasattr(got, field):
                problems.append(f"{where}: ember's result has no field .{field}")
        for i, (w, g) in enumerate(zip(want, got)):
            problems += compare(w, g, f"{where}[{i}]", values)
        return problems
    if isinstance(want, (bool, int, float)) and not isinstance(want, type(None)):
        if type(got) is not type(want):
            return [f"{where}: torch gives {type(want).__name__} {want!r}, ember "
                    f"{type(got).__name__} {got!r}"]
        if isinstance(want, float):
            same = np.isclose(want, got, rtol=1e-5, atol=1e-6, equal_nan=True)
        else:
            same = want == got
        return [] if same else [f"{where}: torch {want!r}, ember {got!r}"]
    if want is None:
        return [] if got is None else [f"{where}: torch gives None, ember {got!r}"]
    return [] if want == got else [f"{where}: torch {want!r}, ember {got!r}"]


def builtin_base(cls):
    """The first built-in exception class in ``cls``'s ancestry (torch's LinAlgError ->
    RuntimeError)."""
    for base in cls.__mro__:
        if base.__module__ == "builtins":
            return base
    return Exception


def compare_outcomes(want, got, where, values=True):
    (want_kind, want_value), (got_kind, got_value) = want, got
    if want_kind == "raised":
        expected = builtin_base(type(want_value))
        if got_kind == "ok":
            return [f"{where}: torch raises {type(want_value).__name__} "
                    f"({str(want_value).splitlines()[0][:90] if str(want_value) else ''}), "
                    "ember returns"]
        # torch.nn.functional's Python wrappers give AttributeError for a non-tensor where
        # its C++ ops give TypeError: either class is fine then
        if expected is AttributeError:
            expected = (AttributeError, TypeError)
        if not isinstance(got_value, expected):
            return [f"{where}: torch raises {type(want_value).__name__}, ember "
                    f"{type(got_value).__name__}: {str(got_value)[:120]}"]
        return []
    if got_kind == "raised":
        return [f"{where}: ember raises {type(got_value).__name__}: {str(got_value)[:160]}"]
    return compare(want_value, got_value, where, values)


def run_case(case, device="cpu"):
    """Every difference between torch and ember (its inputs on ``device``) on ``case``, as
    sentences."""
    values = SIGNATURES[case.op].get("values", True)
    made_args, made_kwargs = make_inputs(case)
    if case.mode == "out":
        plain = outcome(lambda: call(case, torch, *convert((made_args, made_kwargs), torch)))
        if plain[0] == "raised":
            return []  # torch has no result to shape out= from: the plain case covers it
    inputs = {}
    results = {}
    for lib in (torch, ember):
        args, kwargs = convert(made_args, lib, device), convert(made_kwargs, lib, device)
        if case.mode == "out":
            kwargs = {**kwargs, "out": empty_like_result(plain[1], lib, case.out_kind,
                                                         device)}
        inputs[lib] = (args, kwargs)
        results[lib] = outcome(lambda: synced(call(case, lib, args, kwargs), lib, device))
    where = case.describe()
    want, got = results[torch], results[ember]
    if case.mode == "bad" and want[0] == "ok":
        return [f"{where}: table error: torch does not raise"]
    problems = compare_outcomes(want, got, where, values)
    if problems or want[0] == "raised":
        return problems
    # in-place and out= results: the mutated inputs (and out tensors) must agree too
    problems += compare(leaves(inputs[torch]), leaves(inputs[ember]),
                        where + " (inputs after the call)", values)
    if case.mode == "out" or case.variant == "inplace":
        target_t = inputs[torch][1]["out"] if case.mode == "out" else inputs[torch][0][0]
        target_e = inputs[ember][1]["out"] if case.mode == "out" else inputs[ember][0][0]
        if (want[1] is target_t) != (got[1] is target_e):
            problems.append(f"{where}: torch returns {'the' if want[1] is target_t else 'a new'}"
                            f" tensor, ember {'the' if got[1] is target_e else 'a new'} one")
    if case.mode == "grad":
        problems += compare_grads(case, want[1], got[1], inputs, where)
    return problems


def compare_grads(case, want, got, inputs, where):
    outs_t, outs_e = leaves(want), leaves(got)
    if len(outs_t) != len(outs_e):
        return []  # the result comparison reports it
    pairs = [(t, e) for t, e in zip(outs_t, outs_e)
             if t.requires_grad and dtype_name(t.dtype) in FLOAT_NAMES]
    params_t = [t for t in leaves(inputs[torch]) if t.requires_grad and t.is_leaf]
    params_e = [t for t in leaves(inputs[ember]) if t.requires_grad and t.is_leaf]
    if not pairs or not params_t:
        return []
    rng = np.random.default_rng(zlib.crc32(f"{case.op}/{case.id}/grad".encode()))
    cots = [rng.normal(size=tuple(t.shape)) for t, _ in pairs]
    grads = {}
    for lib, outs, params in ((torch, [p[0] for p in pairs], params_t),
                              (ember, [p[1] for p in pairs], params_e)):
        cot = [lib.tensor(c).to(o.device, o.dtype) for c, o in zip(cots, outs)]
        grads[lib] = outcome(lambda: lib.autograd.grad(outs, params, cot, allow_unused=True))
    if grads[torch][0] == "raised":
        # torch's own backward gaps (scatter(reduce=), vander's in-place, ...): no oracle
        return []
    if grads[ember][0] == "raised":
        return compare_outcomes(grads[torch], grads[ember], f"{where} backward")
    problems = []
    for i, (gt, ge, pt, pe) in enumerate(zip(grads[torch][1], grads[ember][1], params_t,
                                             params_e)):
        gt = torch.zeros_like(pt) if gt is None else gt
        ge = ember.zeros_like(pe) if ge is None else ge
        problems += compare(gt.detach(), ge.detach(), f"{where} gradient of input {i}")
    return problems


# ---- the tests --------------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny tensors: one intra-op thread each, so that neither framework's pool spins against
    the other on a loaded machine (10x faster here); restored afterwards."""
    before = torch.get_num_threads(), ember.get_num_threads()
    torch.set_num_threads(1)
    ember.set_num_threads(1)
    yield
    torch.set_num_threads(before[0])
    ember.set_num_threads(before[1])


CASES = {op: expand(op, entry) for op, entry in SIGNATURES.items()}
KNOWN = {(op, ident): reason for op, entry in SIGNATURES.items()
         for ident, reason in entry.get("xfail", {}).items()}


@pytest.mark.parametrize("op", sorted(CASES))
def test_signature(op):
    problems = []
    for case in CASES[op]:
        if (op, case.id) not in KNOWN:
            problems += run_case(case)
    if problems:  # (pytrace=False: the message says it all, and is cheap to report)
        pytest.fail(f"{len(problems)} differences from torch:\n" + "\n".join(problems),
                    pytrace=False)


ensure_loaded()
#: the other devices the whole table runs on (an asynchronous device's kernel errors, such
#: as an index out of range, surface at the synchronisation after each call)
OTHER_DEVICES = [d for d in ("opencl", "example") if d in BACKENDS]


@pytest.mark.parametrize("device", OTHER_DEVICES)
def test_signatures_on_device(device):
    """The whole table with ember's inputs on ``device`` (torch's stay on the CPU)."""
    problems = []
    for op in sorted(CASES):
        for case in CASES[op]:
            if (op, case.id) not in KNOWN:
                problems += run_case(case, device)
    if problems:
        pytest.fail(f"{len(problems)} differences from torch on {device}:\n" +
                    "\n".join(problems), pytrace=False)


@pytest.mark.parametrize("op,ident", [
    pytest.param(op, ident, marks=pytest.mark.xfail(strict=True, reason=reason),
                 id=f"{op}-{ident}") for (op, ident), reason in sorted(KNOWN.items())])
def test_known_ember_bug(op, ident):
    case = next(c for c in CASES[op] if c.id == ident)
    problems = run_case(case)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_table_is_consistent():
    """Every xfail names a real case; every entry names something torch and ember have; the
    table covers the ~250 most used names."""
    problems = []
    for (op, ident) in KNOWN:
        if not any(c.id == ident for c in CASES[op]):
            problems.append(f"xfail {op} {ident!r} names no case")
    for op, entry in SIGNATURES.items():
        name = entry.get("fn", op)
        namespaces = NAMESPACES[entry.get("ns", "torch")]
        variants = entry.get("variants", DEFAULT_VARIANTS[entry.get("ns", "torch")])
        for variant in variants:
            suffix = "_" if variant == "inplace" else ""
            for ns, label in zip((torch.Tensor, ember.Tensor) if variant != "function"
                                 else namespaces, ("torch", "ember")):
                if not hasattr(ns, name + suffix):
                    problems.append(f"{op}: {label} has no {variant} {name + suffix}")
    assert not problems, "\n".join(problems)
    assert len({(e.get("ns", "torch"), e.get("fn", op)) for op, e in SIGNATURES.items()}) >= 250


@pytest.mark.parametrize("name", LACKING + tuple(n + "_" for n in LACKING_INPLACE))
def test_lacking_name_still_lacking(name):
    """The table leaves out names ember lacks; once ember has one, its entry must go in."""
    where = ember.Tensor if name.endswith("_") else (
        ember.special if name in ("expit", "ndtr", "log_ndtr", "entr", "erfcx", "i0") else ember)
    assert not hasattr(where, name), (
        f"ember now has {name}: delete it from LACKING / LACKING_INPLACE in "
        "tests/parity/signatures.py so the parity table checks it")
