"""ember.compile's default compiler: elementwise fusion over a captured trace (``lazy.py``).

A trace is a list of kernel calls on numbered storages. This compiler groups runs of
consecutive elementwise calls into *fused groups* and hands each group to its device's
plugin (``Backend.compile_elementwise``), which generates one kernel for it (C++ on the
cpu backend). Every other call runs its kernel as recorded, as ``lazy.replay`` does.

A call joins a group when:

- its op has a scalar body (``OpDef.scalar``: the expression its kernels are generated
  from) and no integer checks for its dtype, and the call passes exactly ``out`` and the
  body's inputs positionally, and only the body's attributes by keyword;
- every tensor it touches has the group's element count and is either contiguous or a
  single element (every stride 0): element ``i`` of each is then element ``i`` of the
  computation, whatever the shapes; or, on devices whose plugin says so
  (``Backend.fuses_broadcasts``), the group has a *two-level layout*: its ``n`` elements
  are ``outer`` rows of ``inner`` (``FusedGroup.inner``), and each tensor is contiguous
  (``flat``), one element (``single``), one value per row (``row``: a broadcast along
  the last dims, read at ``o * outer_stride``), one row for all rows (``col``: a
  broadcast along the first dims, read at ``j``) or a row per row at any outer stride
  (``strided``: read or written at ``o * outer_stride + j``) — what a bias add, a
  normalisation's per-row statistics and a slice of a larger buffer are;
- its dtypes are those of the body's functor: inputs declared ``T`` and the output (unless
  the body returns bool) have one dtype, inputs declared ``bool`` are bool;
- it reads and writes each storage through the same view as the rest of the group does
  (a read of other elements of a buffer the group writes would need values of other
  iterations).

On devices whose plugin says so (``Backend.fuses_reductions``), a group may end its
elementwise chain in a *reduction*: a float32 or float64 ``sum`` or ``mean`` over the
trailing dims of a contiguous tensor of the group's element count (the chain's value or an
operand). The group's layout is then ``outer`` rows of ``inner`` = the reduced length (each
row is one output), and elementwise calls over the ``outer`` outputs may follow (the
*epilogue*: ``x.pow(2).mean(-1, keepdim=True).add(eps).rsqrt()`` is one group); their
operands are contiguous or single (kind ``outer``: read or written at the row). The chain
feeds the same summation eager mode uses (``Reduction``), so the results are its bits.
After the epilogue, calls over the group's elements that read its values broadcast along
the row form the *row pass*, which may end in another reduction over the same rows, with
its own epilogue and row pass (a layer norm written out: the mean, then the variance of
``x - mean``, then the normalisation). Phases are numbered in order: 0 the chain, then per
reduction ``k`` (from 1) its epilogue ``2k - 1`` and its row pass ``2k``. A phase reads
what earlier element phases wrote only through memory the group does not write; an
epilogue's values stay in registers for the rest of the row.

Inside a group, values pass in registers. A written view is stored only when something
outside the group reads its storage, when the trace's caller keeps it (an output), or when
it is memory the user owns (an input); buffers only the group uses are never allocated.

The group description (:class:`FusedGroup`) is what a plugin's code generator reads: the
operands (storage slot, dtype, byte offset, whether a single element), and the nodes as
functor applications in order (op, mode, input references, attribute references).
"""
from __future__ import annotations

from . import core as C
from . import lazy as L
from .plugins import BACKENDS
from .schema import OPS

__all__ = ["FusedGroup", "FusedNode", "Operand", "plan", "compile_trace", "STATS"]

#: what the planner did, for tests and logs: groups compiled and calls fused
STATS = {"groups": 0, "fused_calls": 0, "kernel_calls": 0}

#: (op name, mode) -> the functor's input kinds ("T" or "bool") and whether it returns bool
_FUNCTORS: dict = {}


def _functor(o, mode):
    key = (o.name, mode)
    hit = _FUNCTORS.get(key)
    if hit is None:
        bodies = o.bodies() if o.scalar is not None else {}
        if mode not in bodies:
            hit = None
        else:
            ins = tuple("bool" if v.value[2] == "bool" else "T" for v in o.body_inputs())
            hit = (ins, o.out_type() == "bool")
        _FUNCTORS[key] = hit
    return hit


class Operand:
    """A tensor a group reads or writes: a view of storage ``slot``."""
    __slots__ = ("slot", "dtype", "offset", "single", "enc", "load", "store", "kind",
                 "outer_stride")

    def __init__(self, enc, kind="flat", outer_stride=0):
        _, slot, shape, stride, offset, dtype, _ = enc
        self.enc = enc
        self.slot = slot
        self.dtype = dtype
        self.offset = offset            # in elements of dtype
        self.single = not any(stride) if stride else True
        #: how element (o, j) of the group's layout addresses it: flat, single, row, col,
        #: strided (see the module docstring); flat and single only in a flat group
        self.kind = "single" if self.single else kind
        self.outer_stride = outer_stride    # elements between rows (row, strided)
        self.load = False               # the group reads it from memory
        self.store = None               # the value id the group writes into it, if any


class FusedNode:
    """One functor application: ``value = op[mode](*inputs)`` with ``T = dtype``."""
    __slots__ = ("op", "mode", "inputs", "attrs", "dtype", "out_dtype", "value")

    def __init__(self, op, mode, inputs, attrs, dtype, out_dtype, value):
        self.op = op                    # op name
        self.mode = mode                # the mode attribute's value, or None
        self.inputs = inputs            # ("operand", i) | ("value", id)
        self.attrs = attrs              # [(name, ("const", v) | ("runtime", index))]
        self.dtype = dtype              # the functor's T
        self.out_dtype = out_dtype
        self.value = value              # the id of the value it makes


class Reduction:
    """A group's reduction: ``nodes[index]`` is ``op`` (sum or mean) over rows of ``inner``
    (``FusedGroup.inner``) elements of its input, one output per row; nodes after it are
    the epilogue, over the outputs. Like eager mode's CPU kernel, one output (a full
    reduction) sums blocks of 65,536 elements and adds the block sums in order; several
    outputs sum each row whole."""
    __slots__ = ("op", "index", "dtype", "full", "row_pass")

    def __init__(self, op, index, dtype, full):
        self.op = op                    # "sum" | "mean"
        self.index = index              # the reduction's node
        self.dtype = dtype              # its input's and output's dtype
        self.full = full                # one output (blocks of 65,536, no row pass)
        #: the first node of the row pass, or None: calls over the group's ``n`` elements
        #: after the epilogue, run per row once its outputs are known (the normalisation
        #: of ``x * rsqrt(mean(x * x) + eps)``); they read the epilogue's values as one
        #: value per row, in registers
        self.row_pass = None


class FusedGroup:
    """Consecutive elementwise calls fused into one kernel over ``n`` elements."""

    def __init__(self, n, device):
        self.n = n
        self.device = device            # device type
        #: the row length of a two-level layout (``n // inner`` rows), or None: flat
        self.inner = None
        #: the group's reductions (``Reduction``), in order: each but the last has a row pass
        #: that ends in the next one
        self.reductions: list = []
        self.operands: list = []
        self.nodes: list = []
        self.calls: list = []           # the trace's node indices it stands for
        self._by_enc: dict = {}         # operand view (_view) -> index
        self._current: dict = {}        # operand index -> value id it holds now
        self._written_view: dict = {}   # slot -> the view the group writes it through
        self._written_phase: dict = {}  # slot -> the phase that writes it (phase_of)
        self._read_views: dict = {}     # slot -> set of views read
        #: slots whose loads a row pass recomputes a value from (the group writes none)
        self._remat_slots: set = set()

    def operand(self, enc, kind="flat", outer_stride=0) -> int:
        v = _view(enc)
        i = self._by_enc.get(v)
        if i is None:
            i = self._by_enc[v] = len(self.operands)
            self.operands.append(Operand(enc, kind, outer_stride))
        return i

    @property
    def reduction(self):
        """The group's first reduction (``Reduction``), or None."""
        return self.reductions[0] if self.reductions else None

    def phase_of(self, n) -> int | None:
        """Where a call over ``n`` elements would go now: 0 (the chain, no reduction yet),
        ``2k - 1`` (the epilogue of the ``k``-th reduction, the last one), ``2k`` (its row
        pass), None (nowhere)."""
        if not self.reductions:
            return 0 if n == self.n else None
        k = len(self.reductions)
        r = self.reductions[-1]
        if n == self.n // self.inner:
            # (once the row pass started, an epilogue call joins the epilogue, before it:
            # it reads nothing the row pass makes, whose values are the row's elements)
            return 2 * k - 1
        if n == self.n and not r.full:
            return 2 * k
        return None

    def node_phase(self, index) -> int:
        """The phase of node ``index`` (a reduction's node is in its epilogue's phase)."""
        ph = 0
        for k, r in enumerate(self.reductions, 1):
            if index >= r.index:
                ph = 2 * k - 1
            if r.row_pass is not None and index >= r.row_pass:
                ph = 2 * k
        return ph

    def rematerialized(self, phase) -> list:
        """The nodes of earlier element phases (the chain, earlier row passes) whose values
        the row pass ``phase`` (or the reduction that ends it) reads: it computes them
        again, from the operands they load (which the group does not write) and values
        still in registers (epilogues'), instead of keeping them. In node order."""
        mine = [k for k in range(len(self.nodes)) if self.node_phase(k) == phase]
        mine += [r.index for r in self.reductions if self.node_phase(r.index) == phase + 1]
        return sorted(self.earlier_producers(
            [ref[1] for k in mine for ref in self.nodes[k].inputs if ref[0] == "value"],
            phase))

    def earlier_producers(self, values, phase) -> list:
        """The nodes that make ``values`` and, back through their inputs, the values those
        read, in element phases before ``phase`` (an epilogue's values are in registers,
        ``phase``'s own are made there): what ``phase`` must compute again to have them."""
        producer = {nd.value: k for k, nd in enumerate(self.nodes)}
        need: list = []
        todo = list(values)
        while todo:
            k = producer.get(todo.pop())
            if k is None or k in need:
                continue
            ph = self.node_phase(k)
            if ph % 2 == 1 or ph == phase:
                continue
            need.append(k)
            todo += [ref[1] for ref in self.nodes[k].inputs if ref[0] == "value"]
        return need

    def phase_values(self) -> list:
        """The value ids each phase makes (``2k - 1``: the ``k``-th reduction's and its
        epilogue's)."""
        out = [set() for _ in range(2 * len(self.reductions) + 1)]
        for k, nd in enumerate(self.nodes):
            out[self.node_phase(k)].add(nd.value)
        return out

    @property
    def runtime_values(self) -> list:
        """The trace's runtime values the group's attributes read, in order."""
        out = []
        for nd in self.nodes:
            for _, ref in nd.attrs:
                if ref[0] == "runtime" and ref[1] not in out:
                    out.append(ref[1])
        return out

    def key(self) -> tuple:
        """What the generated code depends on (its cache key): not ``n``, which the code
        takes at run time."""
        ops = tuple((o.dtype.name, o.single, o.load, o.store, o.kind) for o in self.operands)
        nodes = tuple((nd.op, nd.mode, nd.inputs, tuple(nd.attrs), nd.dtype.name,
                       nd.out_dtype.name, nd.value) for nd in self.nodes)
        red = tuple((r.op, r.index, r.full, r.row_pass) for r in self.reductions)
        return (self.device, self.inner is not None, ops, nodes, red)

    def layout(self) -> list:
        """The run-time numbers of a two-level layout: ``[inner, outer stride of each
        operand]`` (0 for operands without one); ``[n]`` for a flat group."""
        if self.inner is None:
            return [self.n] + [0] * len(self.operands)
        return [self.inner] + [o.outer_stride for o in self.operands]


def _contiguous_or_single(enc) -> bool:
    _, _, shape, stride, _, _, _ = enc
    if not any(stride):
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(stride)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def _view(enc):
    """What identifies a view in a group: contiguous views of one storage at one offset, of
    one dtype and element count, are one view whatever their shapes (a sum's ``(6, 1, 1)``
    result read as ``(6,)``); any other view is its encoding."""
    _, slot, shape, stride, offset, dtype, _ = enc
    if any(stride) and _contiguous_or_single(enc):
        return ("contiguous", slot, offset, dtype, C.numel(shape))
    return enc


def _numel(enc) -> int:
    return C.numel(enc[2])


def _blocks(enc) -> list:
    """The view as (size, stride) blocks, outermost first: dims of size 1 dropped and
    adjacent dims merged where the outer one steps over the inner one exactly."""
    _, _, shape, stride, _, _, _ = enc
    out = []
    for n, s in zip(shape, stride):
        if n == 1:
            continue
        if out and out[-1][1] == s * n:
            out[-1] = (out[-1][0] * n, s)
        elif out and out[-1][1] == 0 and s == 0:
            out[-1] = (out[-1][0] * n, 0)
        else:
            out.append((n, s))
    return out


def _place(group, enc):
    """How the view ``enc`` (of the group's element count) is addressed in ``group``'s
    layout: ``(kind, outer stride, inner it needs or None)``, or None when it fits no
    two-level layout (or not the group's)."""
    if _contiguous_or_single(enc):
        return ("flat", 0, None)
    b = _blocks(enc)
    if len(b) == 1 and b[0][1] == 0:
        return ("single", 0, None)
    if len(b) != 2 or b[1][1] not in (0, 1):
        return None
    (rows, os), (inner, is_) = b
    if group.inner is not None and group.inner != inner:
        return None
    if is_ == 0:
        return ("row", os, inner)
    return ("col", 0, inner) if os == 0 else ("strided", os, inner)


def _fusible(o, args, attrs):
    """``(mode, functor)`` when the call can join a group, else None."""
    if o.scalar is None or o.kind != "elementwise":
        return None
    mode = None
    names = set(o.attrs)
    for k, v in attrs:
        if k == o.mode_attr:
            if v[0] != "c":
                return None
            mode = v[1]
        elif k not in names:
            return None
    fn = _functor(o, mode)
    if fn is None or len(args) != 1 + len(fn[0]):
        return None
    return mode, fn


def _try_add(group, name, o, dev, args, attrs, mode, fn, values_ids):
    """Add the call to ``group`` if it fits; returns whether it did."""
    out = args[0]
    ins = args[1:]
    if any(a[0] != "t" for a in args):
        return False
    n = _numel(out)
    phase = group.phase_of(n) if n and group.device == dev else None
    if phase is None:
        return False
    places = {}
    epilogue = phase % 2 == 1
    row_pass = phase > 0 and not epilogue
    last = group.reductions[-1] if group.reductions else None
    two_level = getattr(BACKENDS.get(dev), "fuses_broadcasts", False) and not epilogue
    inner = group.inner
    from_epilogue = {}      # a row pass's input -> the epilogue value it reads
    for a in args:
        if _numel(a) != n:
            return False
        if row_pass and a is not out:
            v = _epilogue_value(group, a)
            if v is not None:
                from_epilogue[a] = v
                continue
        if _contiguous_or_single(a):
            if epilogue:
                places[a] = ("outer", 0, None)
            continue
        if not two_level:
            return False
        p = _place(group, a)
        if p is None or (inner is not None and p[2] is not None and p[2] != inner):
            return False
        if p[2] is not None:
            inner = p[2]
        places[a] = p
    if row_pass and last.row_pass is None and not from_epilogue:
        return False        # a row pass starts with a call that reads what the epilogue made
    in_kinds, returns_bool = fn
    t_dtype = None
    for a, kind in zip(ins, in_kinds):
        if kind == "T":
            if t_dtype is None:
                t_dtype = a[5]
            elif a[5] is not t_dtype:
                return False
        elif a[5].name != "bool":
            return False
    if t_dtype is None:
        t_dtype = out[5]
    out_dtype = out[5]
    if returns_bool:
        if out_dtype.name != "bool":
            return False
    elif out_dtype is not t_dtype:
        return False
    if o.checks and not t_dtype.is_floating_point:
        return False
    if _single_write(out) or places.get(out, ("flat",))[0] in ("row", "col"):
        return False
    # the views: a storage is read and written through one view in the group; a row pass
    # reads nothing the chain before the reduction wrote (its values are gone by then) and
    # writes nothing written before it
    remat = []              # slots a row pass's recomputed values load
    for a in ins:
        if a in from_epilogue:
            continue
        slots = _readable(group, a, phase)
        if slots is None:
            return False
        remat += slots
    if out[1] in group._remat_slots or out[1] in remat:
        return False        # (a recomputed value would read what this writes)
    w = group._written_view.get(out[1])
    if w is not None and (w != _view(out) or group._written_phase[out[1]] < phase):
        return False
    reads = group._read_views.get(out[1])
    if reads and any(r != _view(out) for r in reads):
        return False
    # the attributes
    node_attrs = []
    for k, v in attrs:
        if k == o.mode_attr:
            continue
        if v[0] == "c":
            if not isinstance(v[1], (bool, int, float)):
                return False
            node_attrs.append((k, ("const", v[1])))
        elif v[0] == "v":
            node_attrs.append((k, ("runtime", v[1])))
        else:
            return False
    if inner is not None and group.inner is None:
        group.inner = inner
    group._remat_slots.update(remat)
    refs = []
    if row_pass and last.row_pass is None:
        last.row_pass = len(group.nodes)
    for a in ins:
        if a in from_epilogue:
            refs.append(("value", from_epilogue[a]))
        else:
            refs.append(_read(group, a, *places.get(a, ("flat", 0, None))[:2]))
    value = values_ids[0]
    values_ids[0] += 1
    node = FusedNode(name, mode, tuple(refs), node_attrs, t_dtype, out_dtype, value)
    if epilogue and last.row_pass is not None:      # a late epilogue call: moved before
        group.nodes.insert(last.row_pass, node)
        last.row_pass += 1
    else:
        group.nodes.append(node)
    _write(group, out, places.get(out, ("flat", 0, None))[:2], value, phase)
    return True


#: ops a row pass computes again rather than keep (a few cycles a vector: storing and
#: loading the value costs more); exp, tanh, division... are kept (measured on a
#: hand-written softmax: computing exp twice took 1.39 ms where storing it took 1.12)
_CHEAP = frozenset({"add", "sub", "mul", "neg", "abs", "clamp", "where", "maximum",
                    "minimum", "relu"})


def _recomputable(group, enc, phase):
    """The slots the row pass ``phase`` would load to compute again the value an earlier
    element phase wrote through ``enc`` (its chain back to operands and epilogue values),
    or None when it cannot or should not: a reduction's value, a load of memory the group
    writes, or an op that costs more to compute again than to keep (``_CHEAP``)."""
    vid = group._current.get(group._by_enc.get(_view(enc)))
    if vid is None:
        return None
    cuts = {r.index for r in group.reductions}
    slots = []
    for k in group.earlier_producers([vid], phase):
        if k in cuts or group.nodes[k].op not in _CHEAP:
            return None
        for ref in group.nodes[k].inputs:
            if ref[0] == "operand":
                op = group.operands[ref[1]]
                if op.slot in group._written_view:
                    return None
                slots.append(op.slot)
    return slots


def _readable(group, enc, phase):
    """How ``phase`` reads ``enc``: ``[]`` when the group does not write that storage or
    holds the value in registers, the slots a row pass loads to compute the value again
    (``_recomputable``), or None when it cannot read it."""
    w = group._written_view.get(enc[1])
    if w is None or (w == _view(enc) and _live_in(group, enc[1], phase)):
        return []
    if w != _view(enc) or phase == 0 or phase % 2 == 1:
        return None
    return _recomputable(group, enc, phase)


def _live_in(group, slot, phase) -> bool:
    """Whether what the group wrote into ``slot`` is still a value in ``phase``: written in
    that phase, or in an epilogue read by a later epilogue (per row, in registers)."""
    written = group._written_phase[slot]
    return written == phase or (written % 2 == 1 and phase % 2 == 1)


def _read(group, enc, kind="flat", outer_stride=0):
    """A node's input ``enc``: the value the group holds for that view, else a load."""
    i = group.operand(enc, kind, outer_stride)
    group._read_views.setdefault(enc[1], set()).add(_view(enc))
    vid = group._current.get(i)
    if vid is None:
        group.operands[i].load = True
        return ("operand", i)
    return ("value", vid)


def _write(group, enc, place, value, phase):
    """``value`` written through ``enc`` by ``phase`` (stored unless ``_decide_stores``
    finds no reader)."""
    i = group.operand(enc, *place)
    group._current[i] = value
    group._written_view[enc[1]] = _view(enc)
    group._written_phase[enc[1]] = phase
    group.operands[i].store = value


#: the reductions a group can end in, and the dtypes they fuse in
_REDUCTIONS = ("sum", "mean")
_REDUCTION_DTYPES = ("float32", "float64")


def _reducible(name, dev, args, attrs):
    """The reduced row length when the call can be a group's reduction (see the module
    docstring), else None."""
    if name not in _REDUCTIONS or not getattr(BACKENDS.get(dev), "fuses_reductions", False):
        return None
    if len(args) != 2 or any(a[0] != "t" for a in args):
        return None
    out, x = args
    if x[5].name not in _REDUCTION_DTYPES or out[5] is not x[5] or out[1] == x[1]:
        return None
    dims = None
    for k, v in attrs:
        if k != "dims" or v[0] != "T" or any(d[0] != "c" or type(d[1]) is not int
                                             for d in v[1]):
            return None
        dims = [d[1] for d in v[1]]
    shape, stride = x[2], x[3]
    if not dims or not shape or not any(stride) or not _contiguous_or_single(x):
        return None
    nd = len(shape)
    red = {d % nd for d in dims if -nd <= d < nd}
    if len(red) != len(set(dims)):
        return None
    # the reduced dims (of size > 1) are the trailing ones: each output is a run of memory
    seen_reduced = False
    for d in range(nd):
        if shape[d] == 1:
            continue
        if d in red:
            seen_reduced = True
        elif seen_reduced:
            return None
    m = 1
    for d in red:
        m *= shape[d]
    n = _numel(x)
    if m < 2 or n == 0 or _numel(out) * m != n or not _contiguous_or_single(out):
        return None
    if _single_write(out):
        return None
    return m


def _try_reduce(group, name, dev, args, m, values_ids):
    """End ``group``'s chain, or the row pass of its last reduction, in the reduction call
    if it fits; returns whether it did."""
    out, x = args
    if (group.device != dev or group.n != _numel(x)
            or (group.inner is not None and group.inner != m)):
        return False
    phase = 2 * len(group.reductions)   # the chain, or the last reduction's row pass
    if group.reductions and (group.reductions[-1].row_pass is None
                             or x[5] is not group.reductions[0].dtype):
        return False
    remat = _readable(group, x, phase)
    if remat is None:
        return False
    if out[1] in group._written_view or out[1] in group._read_views:
        return False
    group._remat_slots.update(remat)
    group.inner = m
    ref = _read(group, x)
    value = values_ids[0]
    values_ids[0] += 1
    group.reductions.append(Reduction(name, len(group.nodes), x[5], _numel(x) == m))
    group.nodes.append(FusedNode(name, None, (ref,), [], x[5], out[5], value))
    _write(group, out, ("outer", 0), value, phase + 1)
    return True


def _epilogue_value(group, enc):
    """The value id of the epilogue's result that ``enc`` reads one element of per row of
    the group (a ``keepdim`` statistic broadcast along the row), or None."""
    w = group._written_view.get(enc[1])
    if w is None or group._written_phase[enc[1]] % 2 != 1 or w[0] != "contiguous":
        return None
    _, slot, offset, dtype, count = w
    p = _place(group, enc)
    if p is None or p[:2] != ("row", 1) or enc[4] != offset or enc[5] is not dtype:
        return None
    return group._current.get(group._by_enc[w])


def _single_write(enc) -> bool:
    """A write through a stride-0 view (several elements, one address): not fused."""
    _, _, shape, stride, _, _, _ = enc
    return C.numel(shape) > 1 and not any(stride)


def plan(info):
    """The trace's steps: ``("call", index)`` for a kernel call run as recorded, and
    ``("group", FusedGroup)``; groups of one call are left as calls."""
    steps = []
    group = None
    counter = [0]
    for i, (name, dev, args, attrs) in enumerate(info.nodes):
        o = OPS[name]
        m = _reducible(name, dev, args, attrs)
        if m is not None:
            if group is None or not _try_reduce(group, name, dev, args, m, counter):
                if group is not None:
                    steps.append(("group", group))
                group = FusedGroup(_numel(args[1]), dev)
                _try_reduce(group, name, dev, args, m, counter)
            group.calls.append(i)
            continue
        f = _fusible(o, args, attrs)
        added = False
        if f is not None:
            mode, fn = f
            if group is not None and _try_add(group, name, o, dev, args, attrs, mode, fn,
                                              counter):
                added = True
            else:
                if group is not None:
                    steps.append(("group", group))
                group = FusedGroup(_numel(args[0]) if args and args[0][0] == "t" else -1,
                                   dev)
                if _try_add(group, name, o, dev, args, attrs, mode, fn, counter):
                    added = True
                else:
                    group = None
            if added:
                group.calls.append(i)
                continue
        if group is not None:
            steps.append(("group", group))
            group = None
        steps.append(("call", i))
    if group is not None:
        steps.append(("group", group))
    # groups of one call run their kernel as recorded
    out = []
    for s in steps:
        if s[0] == "group" and len(s[1].calls) == 1:
            out.append(("call", s[1].calls[0]))
        else:
            out.append(s)
    _decide_stores(info, out)
    return out


def _decide_stores(info, steps):
    """Keep a group's store only where the value is read outside the group, is an output,
    or is an input's memory; loads of values the group made are registers."""
    access: dict = {}       # slot -> node indices touching it
    for i, node in enumerate(info.nodes):
        for s in L.node_slots(node):
            access.setdefault(s, set()).add(i)
    outputs = set(info.outputs)
    for kind, g in steps:
        if kind != "group":
            continue
        mine = set(g.calls)
        for op in g.operands:
            if op.store is None:
                continue
            slot = op.slot
            keep = (info.slot_kinds[slot][0] == "i" or slot in outputs
                    or bool(access.get(slot, set()) - mine))
            if not keep:
                op.store = None


def compile_trace(info, storages=None, values=None):
    """The default compiler: fused groups through their device's plugin, the rest as
    recorded (``lazy.runner``). A device whose plugin has no ``compile_elementwise``
    runs everything as recorded."""
    steps = []
    planned = plan(info)
    by_device: dict = {}
    for kind, s in planned:
        if kind == "group":
            by_device.setdefault(s.device, []).append(s)
    for dev, groups in by_device.items():
        prepare = getattr(BACKENDS.get(dev), "prepare_elementwise", None)
        if prepare is not None and len(groups) > 1:
            prepare(groups)
    for kind, s in planned:
        fn = None
        if kind == "group":
            make = getattr(BACKENDS.get(s.device), "compile_elementwise", None)
            fn = make(s) if make is not None else None
        if fn is not None:
            STATS["groups"] += 1
            STATS["fused_calls"] += len(s.calls)
            # (operands the kernel neither loads nor stores need no memory)
            live = [(op.slot, op.offset * op.dtype.itemsize) if op.load or op.store is not None
                    else (None, 0) for op in s.operands]
            steps.append(("fused", (fn, live, s.runtime_values, s.n, s.device)))
        else:
            for i in (s.calls if kind == "group" else (s,)):
                STATS["kernel_calls"] += 1
                steps.append(("call", i))
    return L.runner(info, steps)
