"""ember's intra-op thread count, forwarded to every loaded backend that has a pool."""
from ember.dispatcher.plugins import BACKENDS, ensure_loaded


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for intra-op parallelism (the CPU pool and its BLAS)."""
    n = int(n)
    if n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    ensure_loaded()
    for b in BACKENDS.values():
        b.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads the CPU backend uses for intra-op parallelism (see
    :func:`set_num_threads`).
    """
    ensure_loaded()
    cpu = BACKENDS.get("cpu")
    return cpu.get_num_threads() if cpu is not None else 1
