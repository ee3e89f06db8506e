"""``ember.utils.checkpoint``: activation checkpointing — trade compute for memory.

``checkpoint(fn, *args)`` runs ``fn`` without keeping the activations its ops would save
for backward; backward runs ``fn`` again on the same inputs (with the same random numbers
when ``preserve_rng_state``) and differentiates that recomputation. Two implementations,
as PyTorch's:

- ``use_reentrant=True``: ``fn`` runs under ``no_grad`` inside a custom autograd
  Function whose backward recomputes it with grad on and calls ``autograd.backward`` on
  the recomputed graph (at least one input must require grad for gradients to flow);
- ``use_reentrant=False`` (recommended): ``fn`` runs with grad on under
  ``autograd.graph.saved_tensors_hooks`` whose pack hook keeps only a position; the first
  unpack in backward recomputes ``fn`` and hands out the recomputed tensors. Parameters
  inside ``fn`` get gradients even when no input requires grad, and ``autograd.grad``
  works.

>>> from ember.utils.checkpoint import checkpoint
>>> x = ember.tensor([1., 2.], requires_grad=True)
>>> y = checkpoint(lambda t: t.sin() * 2, x, use_reentrant=False)
>>> y.sum().backward()
>>> x.grad
tensor([ 1.0806, -0.8323])
"""
from __future__ import annotations

import contextlib
import enum

from ember.dispatcher import autocast as AC
from ember.dispatcher.core import TensorBase
from ember.dispatcher.random import default_generator

from ..amp import autocast
from ..autograd import _engine
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks
from ember.dispatcher.warn import warn as _warn

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction", "CheckpointError",
           "detach_variable", "noop_context_fn", "set_checkpoint_early_stop",
           "DefaultDeviceType", "check_backward_validity", "get_device_states",
           "set_device_states", "set_checkpoint_debug_enabled", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts"]


class CheckpointError(RuntimeError):
    """The recomputation did not save the same tensors as the original forward."""


def noop_context_fn():
    """The default ``context_fn`` of ``checkpoint``: two ``contextlib.nullcontext()`` (for the
    forward run and for the recomputation).
    """
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Accepted for PyTorch compatibility: ember always recomputes the whole function."""
    yield


class DefaultDeviceType:
    """The device type whose RNG state checkpointing saves besides the CPU's."""
    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device: str = "cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        return DefaultDeviceType._default_device_type


def detach_variable(inputs):
    """Detached copies (sharing memory) of the tensors in ``inputs``, keeping their
    ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, TensorBase):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    """Warn when no input requires grad (the reentrant checkpoint then gives no
    gradients)."""
    if not any(isinstance(inp, TensorBase) and inp.requires_grad for inp in inputs):
        _warn("None of the inputs have requires_grad=True. Gradients will be None",
              UserWarning)


_DEBUG = [False]


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Context manager for checkpoint's debug mode (the ``debug`` argument's default)."""
    prev = _DEBUG[0]
    _DEBUG[0] = enabled
    try:
        yield
    finally:
        _DEBUG[0] = prev


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with an op's output."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class SelectiveCheckpointContext:
    """What a selective-checkpoint policy function receives."""

    def __init__(self, *, is_recompute: bool):
        self.is_recompute = is_recompute


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The ``context_fn`` of selective checkpointing. ember recomputes every op of a
    checkpointed region (any policy's allowed outcome: the values and gradients are the
    same, only memory and time differ), so the policy is validated and then unused."""
    if not (callable(policy_fn_or_list) or isinstance(policy_fn_or_list, (list, tuple))):
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    return contextlib.nullcontext(), contextlib.nullcontext()


# ---- random-number state ----------------------------------------------------------------
def _devices(args):
    devs = {"cpu"}
    for a in args:
        if isinstance(a, TensorBase):
            devs.add(str(a.device))
    return sorted(devs)


def _rng_states(devices):
    return {d: default_generator(d).get_state() for d in devices}


def get_device_states(*args):
    """``(devices, states)``: the random-generator states of the non-CPU devices the
    tensors in ``args`` live on (PyTorch's helper of the same name)."""
    devices = [d for d in _devices(args) if d != "cpu"]
    return devices, [default_generator(d).get_state() for d in devices]


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restore the random-generator ``states`` of ``devices``, as returned by
    :func:`get_device_states`. ``device_type`` is accepted for compatibility.
    """
    for d, s in zip(devices, states):
        default_generator(d).set_state(s)


@contextlib.contextmanager
def _rng_restored(states):
    """Run the block with the generators in ``states``; the states from before the block
    come back afterwards (PyTorch's ``fork_rng``)."""
    if states is None:
        yield
        return
    current = {d: default_generator(d).get_state() for d in states}
    for d, s in states.items():
        default_generator(d).set_state(s)
    try:
        yield
    finally:
        for d, s in current.items():
            default_generator(d).set_state(s)


# ---- autocast state ------------------------------------------------------------------------
def _autocast_states():
    """The autocast switches of this thread (the CPU's and every device type's set so far):
    device type -> (enabled, dtype, cache_enabled). The recomputation runs under the same
    ones as the forward, as PyTorch's does, so that a block checkpointed inside
    ``autocast`` is recomputed in the same dtypes whatever region backward runs in."""
    return {dt: (AC.is_enabled(dt), AC.get_dtype(dt), AC.STATE.cache_enabled)
            for dt in {"cpu", *AC.STATE.enabled}}


def _autocast_restored(states):
    """A context entering ``autocast`` regions that restore ``states``."""
    stack = contextlib.ExitStack()
    for dt, (enabled, dtype, cache) in sorted(states.items()):
        stack.enter_context(autocast(dt, dtype=dtype, enabled=enabled, cache_enabled=cache))
    return stack


# ---- the reentrant variant ----------------------------------------------------------------
class CheckpointFunction(Function):
    """``apply(run_function, preserve_rng_state, *args)``: ``run_function(*args)`` without
    saving its activations; backward recomputes it."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng = _rng_states(_devices(args)) if preserve_rng_state else None
        ctx.autocast = _autocast_states()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, TensorBase):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with _engine.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _rng_restored(ctx.rng):
            detached = detach_variable(tuple(inputs))
            with _engine.enable_grad(), _autocast_restored(ctx.autocast):
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, TensorBase):
            outputs = (outputs,)
        outs, gs = [], []
        for o, g in zip(outputs, grads):
            if isinstance(o, TensorBase) and o.requires_grad:
                outs.append(o)
                gs.append(g)
        if not outs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        _engine.backward(tuple(outs), tuple(gs))
        return (None, None) + tuple(d.grad if isinstance(d, TensorBase) else None
                                    for d in detached)


# ---- the non-reentrant variant ------------------------------------------------------------
class _Frame:
    """One checkpointed call: how to recompute it and what the recomputation saved.

    The recomputed tensors are kept detached (their own graph is not needed: unpacking
    puts each in the saved tensor's place) and each is dropped once unpacked, so device
    memory falls as backward goes through the call; a second backward (``retain_graph``)
    recomputes again."""

    def __init__(self, recompute):
        self.recompute = recompute
        self.count = 0
        self.storage = None
        self.left = 0

    def unpack(self, idx):
        if self.storage is None:
            saved = []

            def pack(t):
                # (detached: a recomputed tensor's graph would hold this list, and the list
                # the tensor, a cycle only the garbage collector frees)
                saved.append(t.detach())
                return len(saved) - 1

            def unpack(i):
                return saved[i]
            with saved_tensors_hooks(pack, unpack):
                self.recompute()
            if len(saved) != self.count:
                raise CheckpointError(
                    "torch.utils.checkpoint: A different number of tensors was saved during "
                    f"the original forward and recomputation.\nNumber of tensors saved during "
                    f"forward: {self.count}\nNumber of tensors saved during recomputation: "
                    f"{len(saved)}")
            self.storage = saved
            self.left = len(saved)
        t = self.storage[idx]
        if t is None:       # unpacked twice in one pass: recompute it
            self.storage = None
            return self.unpack(idx)
        self.storage[idx] = None
        self.left -= 1
        if self.left == 0:
            self.storage = None
        return t


def _checkpoint_without_reentrant(fn, preserve_rng_state, context_fn, args, kwargs):
    rng = _rng_states(_devices(args)) if preserve_rng_state else None
    forward_ctx, recompute_ctx = context_fn()
    autocast_states = _autocast_states()

    def recompute():
        with _rng_restored(rng), _engine.enable_grad(), _autocast_restored(autocast_states), \
                recompute_ctx:
            fn(*args, **kwargs)

    frame = _Frame(recompute)

    def pack(t):
        frame.count += 1
        return frame.count - 1

    with saved_tensors_hooks(pack, frame.unpack), forward_ctx:
        return fn(*args, **kwargs)


def checkpoint(function, *args, use_reentrant: bool | None = None,
               context_fn=noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, **kwargs):
    """``function(*args, **kwargs)``, with its activations recomputed in backward instead
    of kept (see the module docstring). ``preserve_rng_state=True`` (a keyword) replays
    the same random numbers in the recomputation."""
    if use_reentrant is None:
        _warn("ember.utils.checkpoint: the use_reentrant parameter should be passed "
              "explicitly. use_reentrant=False is recommended, but if you need to "
              "preserve the current default behavior, you can pass "
              "use_reentrant=True. Refer to docs for more details on the "
              "differences between the two variants.", UserWarning)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        if _engine.MODE.grad and not any(isinstance(a, TensorBase) and a.requires_grad
                                         for a in args):
            _warn("None of the inputs have requires_grad=True. Gradients will be None",
                  UserWarning)
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a sequential model (an ``nn.Sequential`` or a list of modules/functions) in
    ``segments`` chunks, checkpointing all but the last."""
    if use_reentrant is None:
        _warn("ember.utils.checkpoint.checkpoint_sequential: the use_reentrant "
              "parameter should be passed explicitly. use_reentrant=False is "
              "recommended.", UserWarning)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
