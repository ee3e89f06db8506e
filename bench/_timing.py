"""Shared timing helper for the benchmarks."""
import time


def best_of(fn, repeat=7, number=1):
    """Best wall time of ``number`` calls over ``repeat`` rounds (seconds per call), after
    one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def interleaved(fns, rounds, number):
    """Per-call minimum over ``rounds`` rounds of each function, the functions taking turns
    within every round."""
    for f in fns.values():
        f()
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            best[k] = min(best[k], (time.perf_counter() - t0) / number)
    return best
