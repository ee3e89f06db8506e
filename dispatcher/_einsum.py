"""einsum as a chain of pairwise contractions, each one permute + reshape + bmm (or a
broadcast multiply where nothing is summed, as PyTorch does).

Written in views and ops that record themselves for autograd, so einsum is differentiated
through them.
"""
from __future__ import annotations

import string

from . import core as C
from . import ops as O
from . import views as V


def _parse(equation: str, operands):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError("einsum(): more operands were provided than specified in the equation"
                         if len(operands) > len(terms) else
                         "einsum(): fewer operands were provided than specified in the equation")
    used = set(c for c in eq if c.isalpha())
    free = [c for c in string.ascii_letters if c not in used]
    # the ellipses of all operands broadcast together, right-aligned: one letter per dim of
    # the longest, and an operand with fewer ellipsis dims takes the rightmost letters
    n_ells = [len(t.shape) - (len(term) - 3) for term, t in zip(terms, operands)
              if "..." in term]
    ell_letters = free[:max(n_ells)] if n_ells else None
    out_terms = []
    for term, t in zip(terms, operands):
        if "..." in term:
            n_ell = len(t.shape) - (len(term) - 3)
            term = term.replace("...", "".join(ell_letters[len(ell_letters) - n_ell:]))
        for c in term:
            if not c.isalpha():
                raise ValueError(f"einsum(): invalid subscript given at index {term.index(c)} "
                                 "in the equation string, subscripts must be in [a-zA-Z]")
        if len(term) != len(t.shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                               f"({len(term)}) does not match the number of dimensions "
                               f"({len(t.shape)}) for operand {len(out_terms)}")
        out_terms.append(term)
    if rhs is None:
        counts = {}
        for term in out_terms:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        ell = "".join(ell_letters or [])
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    elif "..." in rhs:
        rhs = rhs.replace("...", "".join(ell_letters or []))
    return out_terms, rhs


def _diag(t, term):
    """Collapse repeated letters within one operand (``ii->i``) to a diagonal view."""
    while True:
        dup = next((c for c in term if term.count(c) > 1), None)
        if dup is None:
            return t, term
        i = term.index(dup)
        j = term.index(dup, i + 1)
        t = V.diagonal(t, 0, i, j)
        term = "".join(c for k, c in enumerate(term) if k not in (i, j)) + dup


def _sum_out(t, term, keep):
    dims = [i for i, c in enumerate(term) if c not in keep]
    if not dims:
        return t, term
    t = O.reduce("sum", t, tuple(dims))
    return t, "".join(c for c in term if c in keep)


def _contract(a, ta, b, tb, keep):
    sizes = {}
    for t, term in ((a, ta), (b, tb)):
        for c, n in zip(term, t.shape):
            m = sizes.get(c)
            if m is not None and m != n and n != 1 and m != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes "
                                   f"(subscript {c!r} has sizes {m} and {n})")
            # a size-1 dim broadcasts to the other size, 0 included (not max(): 1 > 0)
            sizes[c] = n if m is None or m == 1 else m
    batch = [c for c in ta if c in tb and c in keep]
    contr = [c for c in ta if c in tb and c not in keep]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]

    def arrange(t, term, order):
        t = V.permute(t, [term.index(c) for c in order])
        return V.expand(t, tuple(sizes[c] for c in order))

    A = arrange(a, ta, batch + left + contr)
    B = arrange(b, tb, batch + contr + right)
    nb = C.numel([sizes[c] for c in batch])
    nl = C.numel([sizes[c] for c in left])
    nc = C.numel([sizes[c] for c in contr])
    nr = C.numel([sizes[c] for c in right])
    if contr:
        R = O.bmm(V.reshape(A, (nb, nl, nc)), V.reshape(B, (nb, nc, nr)))
    else:  # nothing summed: PyTorch multiplies (so mixed dtypes promote, as mul's do)
        R = O.elementwise("mul", V.reshape(A, (nb, nl, 1)), V.reshape(B, (nb, 1, nr)))
    R = V.reshape(R, tuple(sizes[c] for c in batch + left + right))
    return R, "".join(batch + left + right)


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, rhs = _parse(equation, operands)
    items = [_diag(t, term) for t, term in zip(operands, terms)]
    # sum out letters used by one operand only and absent from the output
    for i, (t, term) in enumerate(items):
        others = set(rhs).union(*(set(tt) for j, (_, tt) in enumerate(items) if j != i))
        items[i] = _sum_out(t, term, others)
    t, term = items[0]
    for k in range(1, len(items)):
        b, tb = items[k]
        later = set(rhs).union(*(set(tt) for _, tt in items[k + 1:]))
        t, term = _contract(t, term, b, tb, later)
    t, term = _sum_out(t, term, set(rhs))
    for c in rhs:
        if c not in term:
            raise ValueError(f"einsum(): output subscript {c} does not appear in the equation "
                             "for any input operand")
    return O.contiguous(V.permute(t, [term.index(c) for c in rhs])) if rhs else t
