"""Small helpers shared by the layers and ``nn.functional`` (as ``torch.nn.modules.utils``)."""
from __future__ import annotations

import collections.abc
import contextlib
from itertools import repeat

import ember

__all__ = ["_single", "_pair", "_triple", "_ntuple", "_reverse_repeat_tuple", "_no_grad"]


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")


def _reverse_repeat_tuple(t, n):
    """Reverse ``t`` and repeat each element ``n`` times: (1, 2) -> (2, 2, 1, 1)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _no_grad():
    """``ember.no_grad()`` once autograd is there; a no-op context before that."""
    cm = getattr(ember, "no_grad", None)
    if cm is None:
        cm = getattr(getattr(ember, "autograd", None), "no_grad", None)
    return cm() if cm is not None else contextlib.nullcontext()
