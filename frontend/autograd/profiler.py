"""``ember.autograd.profiler``: PyTorch's older profiler entry points, over
``ember.profiler`` (the same recording and tables).

>>> x = ember.ones(2, 3)
>>> with ember.autograd.profiler.profile() as prof:
...     y = x.sum()
>>> [e.key for e in prof.key_averages()]
['ember::sum']
>>> print(prof.key_averages().table(sort_by="self_cpu_time_total"))  # doctest: +SKIP
"""
from __future__ import annotations

from ember.profiler import EventList, FunctionEvent, FunctionEventAvg
from ember.profiler import profile as _profile
from ember.profiler import record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg",
           "emit_nvtx"]


class profile(_profile):
    """``torch.autograd.profiler.profile(enabled=True, *, use_cuda=False, record_shapes=...)``:
    records while enabled; ``enabled=False`` records nothing."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, acc_events=acc_events)
        self.enabled = enabled

    def __enter__(self):
        if self.enabled:
            super().__enter__()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            super().__exit__(*exc)
        return False

    def table(self, **kwargs) -> str:
        return self.key_averages().table(**kwargs)


class emit_nvtx:
    """Context manager for NVTX ranges: accepted and inert (ember emits no NVTX)."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False):
        self.enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
