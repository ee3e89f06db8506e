"""The device itself: transfers, views, creation, random streams, training, memory.

- Round trips host → device → host are exact, bit for bit, for every dtype and shape.
- Views of device tensors (transposed, sliced with steps, broadcast, selected, diagonal,
  as_strided) read the right elements, and writes through views land in the base.
- Creation ops make tensors on the device; random ops reproduce the CPU's counter-based
  stream for the same seed (the Philox contract of ``ember.dispatcher.random``).
- A small MLP trains on the device to the same losses as on the CPU.
- When the backend exposes ``memory_stats(index)``: PyTorch's statistic keys, allocations
  visible in the stats, no device allocations in a steady-state training loop, memory
  back to its baseline when tensors die, ``OutOfMemoryError`` with its counter.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import ember
from ember.dispatcher import backend_for, to_device

from ._compare import assert_close, to_numpy
from ._samples import ALL_DTYPES, rng_for

DTYPES = [pytest.param(d, id=d.name) for d in ALL_DTYPES]
SHAPES = [(), (0,), (7,), (3, 5, 2), (2, 0, 3)]


def _host(dt, shape, rng):
    """Random CPU values of ``dt`` (floats include nan, ±inf, -0.0)."""
    if dt is ember.bool:
        return ember.tensor(rng.random(shape) < 0.5)
    if dt.is_floating_point:
        v = rng.standard_normal(shape) * 100
        flat = v.reshape(-1)
        flat[: min(4, flat.size)] = [np.nan, np.inf, -np.inf, -0.0][: min(4, flat.size)]
        return ember.tensor(v, dtype=dt)
    info = np.iinfo(dt.to_numpy())
    return ember.tensor(rng.integers(info.min, info.max, shape, endpoint=True), dtype=dt)


def _bits(t) -> bytes:
    """The bytes of a CPU tensor (bit-exact comparison, NaN payloads and -0.0 included)."""
    t = t.contiguous()
    if t.dtype is ember.bfloat16:   # widening to float32 is exact (the same high bits)
        t = t.float()
    return t.numpy().tobytes()


# ---- transfers ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_is_exact(ember_device, dtype):
    rng = rng_for("round-trip", dtype.name)
    for shape in SHAPES:
        x = _host(dtype, shape, rng)
        d = x.to(ember_device)
        assert d.device == to_device(ember_device) and d.dtype is dtype
        assert tuple(d.shape) == shape
        back = d.cpu()
        assert back.device.type == "cpu"
        assert _bits(back) == _bits(x), f"{dtype.name} {shape}: values changed in transit"


@pytest.mark.parametrize("nbytes", [1 << 20, (1 << 20) + 4, 12 << 20])
def test_round_trip_large(ember_device, nbytes):
    """Sizes at the allocator's pool and segment boundaries."""
    x = ember.tensor(np.arange(nbytes // 4, dtype=np.float32))
    assert _bits(x.to(ember_device).cpu()) == _bits(x)


def test_round_trip_of_views(ember_device):
    """Moving a non-contiguous view moves its values (not its storage)."""
    x = ember.arange(60.0).view(3, 4, 5)
    for v in (x.transpose(0, 2), x[1:, ::2, 1::3], x[:, 1], x.expand(2, 3, 4, 5)[1],
              x[..., None].expand(3, 4, 5, 2)):
        assert_close(v.to(ember_device).cpu(), v.contiguous())


VIEWS = {
    "transpose": lambda t: t.transpose(0, 1),
    "permute": lambda t: t.permute(2, 0, 1),
    "slice_steps": lambda t: t[1:, ::2, 1::2],
    "select": lambda t: t[2],
    "narrow": lambda t: t.narrow(2, 1, 3),
    "expand": lambda t: t[:, :1].expand(4, 3, 5),
    "diagonal": lambda t: t[0, :, :3].diagonal(),
    "as_strided": lambda t: t.as_strided((3, 3), (5, 2), 1),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "reshape": lambda t: t.transpose(1, 2).reshape(4, 15),
    "flatten": lambda t: t.flatten(),
    "unfold": lambda t: t[0, 0].unfold(0, 2, 1),
    "index": lambda t: t[1, 2, 3],
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_views_keep_values(ember_device, view):
    x = ember.arange(60.0, dtype=ember.float64).view(4, 3, 5)
    fn = VIEWS[view]
    got = fn(x.to(ember_device))
    assert got.device == to_device(ember_device)
    assert_close(got, fn(x).contiguous(), device=ember_device)


def test_writes_through_views_reach_the_base(ember_device):
    x = ember.zeros(4, 6, dtype=ember.int64)
    d = x.to(ember_device)
    for t in (x, d):
        t[1:, ::2] = 7
        t[0].fill_(3)
        t.t()[5].add_(1)
        t[2:, 1].mul_(2)
        t.diagonal().copy_(ember.arange(4))
    assert_close(d, x, device=ember_device)


def test_item_and_tolist(ember_device):
    x = ember.tensor([[1.5, -2.0], [3.25, 0.0]], dtype=ember.float64)
    d = x.to(ember_device)
    assert d[1, 0].item() == 3.25
    assert d.tolist() == x.tolist()
    assert ember.tensor(True).to(ember_device).item() is True
    assert d.sum().item() == pytest.approx(2.75)


def test_to_with_dtype(ember_device):
    x = ember.tensor([0.5, -1.75, 2.0])
    assert_close(x.to(ember_device, ember.float64), x.double(), device=ember_device)
    assert_close(x.to(ember_device).to(ember.int32), x.int(), device=ember_device)
    d = x.to(ember_device)
    assert d.to(ember_device) is d


def test_between_devices(ember_device):
    """Tensors move between two devices of the backend, and ops refuse mixed devices."""
    dev = to_device(ember_device)
    backend = backend_for(dev.type)
    if backend.device_count() < 2:
        pytest.skip(f"the {backend.name!r} backend has one device")
    other = f"{dev.type}:{1 - min(dev.index or 0, 1)}"
    x = ember.arange(12.0).view(3, 4)
    a = x.to(ember_device)
    b = a.to(other)
    assert str(b.device) == other
    assert_close((b * 2).cpu(), x * 2)
    with pytest.raises(RuntimeError, match="same device"):
        a + b


# ---- creation and random -------------------------------------------------------------------
def test_creation_on_device(ember_device):
    dev = to_device(ember_device)
    for t, want in [
        (ember.zeros(2, 3, device=ember_device), ember.zeros(2, 3)),
        (ember.ones(4, dtype=ember.int32, device=ember_device), ember.ones(4, dtype=ember.int32)),
        (ember.full((2, 2), 7.5, device=ember_device), ember.full((2, 2), 7.5)),
        (ember.arange(5, device=ember_device), ember.arange(5)),
        (ember.eye(3, device=ember_device), ember.eye(3)),
        (ember.tensor([[1, 2], [3, 4]], device=ember_device), ember.tensor([[1, 2], [3, 4]])),
        (ember.zeros_like(ember.ones(3, 2).to(ember_device)), ember.zeros(3, 2)),
    ]:
        assert t.device == dev
        assert_close(t, want, device=ember_device)
    e = ember.empty(3, 4, dtype=ember.float16, device=ember_device)
    assert e.device == dev and tuple(e.shape) == (3, 4) and e.dtype is ember.float16


def test_random_streams_match_the_cpu(ember_device):
    """Same seed, same numbers: uniform exactly (up to rounding), normal within a few ulp."""
    for dt in (ember.float32, ember.float64):
        g_dev = ember.Generator(ember_device).manual_seed(42)
        g_cpu = ember.Generator("cpu").manual_seed(42)
        for _ in range(2):     # the second draw continues the stream (offsets advance)
            a = ember.rand(1000, dtype=dt, generator=g_dev, device=ember_device)
            b = ember.rand(1000, dtype=dt, generator=g_cpu)
            assert_close(a, b, device=ember_device)
            a = ember.randn(500, dtype=dt, generator=g_dev, device=ember_device)
            b = ember.randn(500, dtype=dt, generator=g_cpu)
            assert_close(a, b, device=ember_device, scale=10)
    u = to_numpy(ember.rand(10000, device=ember_device))
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.02


def test_manual_seed_reseeds_the_device(ember_device):
    ember.manual_seed(123)
    a = ember.randn(50, device=ember_device)
    ember.manual_seed(123)
    b = ember.randn(50, device=ember_device)
    assert _bits(a.cpu()) == _bits(b.cpu())


# ---- training --------------------------------------------------------------------------------
def _train_mlp(device, steps=5):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(20, 8), ember.nn.Tanh(), ember.nn.Linear(8, 3))
    model.to(device)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((32, 20)), dtype=ember.float32).to(device)
    y = ember.tensor(rng.integers(0, 3, 32)).to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


def test_mlp_trains_like_on_cpu(ember_device):
    """A 20-8-3 MLP, SGD with momentum: the same losses on the device as on the CPU."""
    cpu_losses, _ = _train_mlp("cpu")
    dev_losses, model = _train_mlp(ember_device)
    assert all(p.device == to_device(ember_device) for p in model.parameters())
    assert dev_losses == pytest.approx(cpu_losses, rel=1e-5, abs=1e-6)
    assert dev_losses[-1] < dev_losses[0]


# ---- memory (backends that expose the caching allocator's statistics) -----------------------
REQUIRED_STATS = ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                  "reserved_bytes.all.current", "reserved_bytes.all.peak",
                  "active_bytes.all.current", "allocation.all.current", "segment.all.current",
                  "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free")


@pytest.fixture
def stats(ember_device):
    """``stats()`` -> the device's ``memory_stats`` now; skips when the backend has none."""
    dev = to_device(ember_device)
    backend = backend_for(dev.type)
    fn = getattr(backend, "memory_stats", None)
    api = getattr(backend, "device_api", None)
    if fn is None and api is not None and hasattr(api, "memory_stats"):
        fn = api.memory_stats        # the plugin's user-facing API (ember.<device>.*)
    try:
        exposed = fn is not None and fn(dev.index or 0) is not None
    except NotImplementedError:
        exposed = False
    if not exposed:
        pytest.skip(f"the {backend.name!r} backend does not expose memory_stats(index)")
    return lambda: fn(dev.index or 0)


def test_memory_stats_keys(stats):
    s = stats()
    missing = [k for k in REQUIRED_STATS if k not in s]
    assert not missing, f"memory_stats() lacks PyTorch's keys {missing}"


def test_allocations_show_in_the_stats(ember_device, stats):
    gc.collect()
    before = stats()["allocated_bytes.all.current"]
    t = ember.empty(1000, dtype=ember.float32, device=ember_device)
    during = stats()["allocated_bytes.all.current"]
    assert during - before >= 4000, "a 4000-byte tensor does not show in allocated_bytes"
    del t
    gc.collect()
    assert stats()["allocated_bytes.all.current"] == before, "the tensor's memory leaked"


def test_steady_state_training_allocates_no_device_memory(ember_device, stats):
    """After warm-up, a training loop reuses cached blocks: no new device allocations, and
    what it allocated is released when its tensors die."""
    def train():
        ember.manual_seed(0)
        # activations of 2 MiB: large-pool blocks as well as small ones
        model = ember.nn.Sequential(ember.nn.Linear(32, 512), ember.nn.ReLU(),
                                    ember.nn.Linear(512, 10)).to(ember_device)
        opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        x = ember.randn(1024, 32, device=ember_device)
        y = ember.randint(0, 10, (1024,), device=ember_device)

        def step():
            opt.zero_grad()
            loss = ember.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.item()

        for _ in range(3):
            step()
        warm = stats()["num_device_alloc"]
        for _ in range(5):
            step()
        return stats()["num_device_alloc"] - warm

    train()             # the first run also fills ember's caches of constants
    gc.collect()
    base = stats()["allocated_bytes.all.current"]
    new = train()
    assert new == 0, f"{new} device allocations in 5 steady-state training steps"
    gc.collect()
    assert stats()["allocated_bytes.all.current"] == base, "memory leaked by training"


def test_out_of_memory_is_reported(ember_device, stats):
    before = stats()["num_ooms"]
    with pytest.raises(ember.OutOfMemoryError, match="Tried to allocate"):
        ember.empty(1 << 50, dtype=ember.uint8, device=ember_device)
    assert stats()["num_ooms"] == before + 1
    t = ember.ones(10, device=ember_device)      # the allocator still works
    assert t.sum().item() == 10
