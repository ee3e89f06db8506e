"""Per-device random generators.

Backends implement counter-based generators (Philox4x32-10): a kernel gets the
generator's ``seed`` and an ``offset`` into its counter stream and consumes ``numel``
counters, so results depend only on (seed, offset) and are reproducible from
``manual_seed`` whatever the thread count.
"""
from __future__ import annotations

import os
import struct

from .device import to_device

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed"]

_DEFAULT_SEED = 67280421310721


class Generator:
    """A random-number stream for one device, as ``torch.Generator``.

    >>> import ember
    >>> g = ember.Generator().manual_seed(0)
    >>> a = ember.rand(3, generator=g)
    """

    def __init__(self, device="cpu"):
        self.device = to_device(device)
        self._seed = _DEFAULT_SEED
        self._offset = 0

    def manual_seed(self, seed) -> "Generator":
        seed = int(seed)
        if seed < -(1 << 63) or seed >= (1 << 64):
            raise RuntimeError("Overflow when unpacking long")
        self._seed = seed & ((1 << 64) - 1)
        self._offset = 0
        return self

    def seed(self) -> int:
        """Seed the generator with a fresh non-deterministic random number (from the OS) and
        return that seed.
        """
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed the generator was last seeded with."""
        return self._seed

    def get_state(self) -> bytes:
        return struct.pack("<QQ", self._seed, self._offset)

    def set_state(self, state) -> "Generator":
        state = bytes(state)
        if len(state) != 16:
            raise RuntimeError(f"Generator.set_state(): expected a 16-byte state, got "
                               f"{len(state)} bytes")
        self._seed, self._offset = struct.unpack("<QQ", state)
        return self

    def _take(self, n: int) -> tuple[int, int]:
        """Reserve ``n`` counters; returns (seed, first counter)."""
        off = self._offset
        self._offset += max(int(n), 1)
        return self._seed, off

    def __repr__(self):
        return f"<ember.Generator device={self.device}>"


_DEFAULTS: dict = {}
_LAST_SEED = None       # the last ember.manual_seed: seeds default generators made later


def default_generator(device) -> Generator:
    dev = to_device(device)
    g = _DEFAULTS.get(dev)
    if g is None:
        g = _DEFAULTS[dev] = Generator(dev)
        if _LAST_SEED is not None:
            g.manual_seed(_LAST_SEED)
    return g


def manual_seed(seed) -> Generator:
    """Seed every device's default generator, including those created later; returns the
    CPU one."""
    global _LAST_SEED
    cpu = default_generator("cpu")
    cpu.manual_seed(seed)
    _LAST_SEED = cpu.initial_seed()
    for g in _DEFAULTS.values():
        g.manual_seed(seed)
    return cpu


def seed() -> int:
    """Seed every default generator with a fresh non-deterministic random number (from the
    OS) and return it.
    """
    s = default_generator("cpu").seed()
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed the CPU default generator was last seeded with (by :func:`manual_seed` or
    :func:`seed`).

    Example:
        >>> _ = ember.manual_seed(3)
        >>> ember.initial_seed()
        3
    """
    return default_generator("cpu").initial_seed()
