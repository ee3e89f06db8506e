"""``ember.backends.cpu``: the CPU's SIMD capability as PyTorch reports it.

>>> import ember
>>> ember.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
True
"""
from __future__ import annotations

__all__ = ["get_cpu_capability"]


def _flags() -> set:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def get_cpu_capability() -> str:
    """"AVX512", "AVX2" or "DEFAULT", from the CPU's flags. ember's kernels are built for
    baseline x86-64; its transcendental loops have AVX2 and AVX-512 versions chosen at load
    time, and oneDNN (when installed) picks its own."""
    f = _flags()
    if "avx512f" in f:
        return "AVX512"
    if "avx2" in f:
        return "AVX2"
    return "DEFAULT"
