"""ember.utils.data: datasets, samplers, collation and the DataLoader.

torch.utils.data is the oracle wherever the result does not depend on the random stream
(lengths, batch boundaries, collation, option errors); for shuffling we check the
properties (a permutation per epoch, reproducible from the seed).
"""
import collections
import math
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as eud
from ember.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                              IterableDataset, RandomSampler, SequentialSampler, Subset,
                              SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                              default_collate, default_convert, random_split)

Point = collections.namedtuple("Point", ["x", "y"])


def plain(x):
    """A comparable form of a (possibly nested) ember or torch result."""
    if isinstance(x, ember.Tensor):
        return ("T", x.dtype.name, x.shape, x.numpy().tolist())
    if isinstance(x, torch.Tensor):
        name = str(x.dtype).replace("torch.", "")
        return ("T", name, tuple(x.shape), x.numpy().tolist())
    if isinstance(x, dict):
        return (type(x).__name__, {k: plain(v) for k, v in x.items()})
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [plain(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    return x


def to_torch(x):
    """The same sample with ember tensors replaced by torch tensors."""
    if isinstance(x, ember.Tensor):
        return torch.from_numpy(x.numpy().copy())
    if isinstance(x, dict):
        return type(x)((k, to_torch(v)) for k, v in x.items())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(to_torch(v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch(v) for v in x)
    return x


def labels(loader):
    return [b[-1].tolist() for b in loader]


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Stream(IterableDataset):
    def __init__(self, n, with_len=True):
        self.n, self.with_len = n, with_len

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        if not self.with_len:
            raise TypeError("no len")
        return self.n


class TorchStream(tud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


# ---- datasets -------------------------------------------------------------------------------
class TestDatasets:
    def test_tensor_dataset_rows(self):
        x = ember.arange(12.).view(6, 2)
        y = ember.arange(6)
        ds = TensorDataset(x, y)
        assert len(ds) == 6
        xi, yi = ds[4]
        assert xi.tolist() == [8.0, 9.0] and yi.item() == 4

    def test_tensor_dataset_size_mismatch(self):
        with pytest.raises(AssertionError, match="Size mismatch between tensors"):
            TensorDataset(ember.zeros(3, 2), ember.zeros(4))

    def test_subset_and_concat(self):
        sub = Subset(Squares(10), [9, 0, 3])
        assert [sub[i] for i in range(3)] == [81, 0, 9] and len(sub) == 3
        cat = ConcatDataset([Squares(3), [10, 11], Squares(2)])
        assert len(cat) == 7
        assert [cat[i] for i in range(7)] == [0, 1, 4, 10, 11, 0, 1]
        assert cat[-1] == 1 and cat[-7] == 0
        assert cat.cumulative_sizes == [3, 5, 7]
        with pytest.raises(ValueError, match="absolute value of index"):
            cat[-8]
        with pytest.raises(IndexError):
            cat[7]
        both = Squares(2) + Squares(3)
        assert isinstance(both, ConcatDataset) and [both[i] for i in range(5)] == [0, 1, 0, 1, 4]

    def test_concat_rejects_empty_and_iterable(self):
        with pytest.raises(AssertionError, match="empty iterable"):
            ConcatDataset([])
        with pytest.raises(AssertionError, match="IterableDataset"):
            ConcatDataset([Stream(3)])

    def test_chain_and_stack(self):
        assert list(Stream(2) + Stream(3)) == [0, 1, 0, 1, 2]
        st = eud.StackDataset(a=[1, 2], b="xy")
        assert st[1] == {"a": 2, "b": "y"} and len(st) == 2
        with pytest.raises(ValueError, match="Size mismatch"):
            eud.StackDataset([1], [1, 2])

    @pytest.mark.parametrize("n,lengths", [(10, [3, 7]), (10, [0.5, 0.5]), (11, [0.3, 0.3, 0.4]),
                                           (7, [0.1, 0.2, 0.7]), (3, [0.1, 0.1, 0.8]), (5, [5, 0])])
    def test_random_split_lengths_match_torch(self, n, lengths):
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            want = [len(p) for p in tud.random_split(range(n), lengths,
                                                     generator=torch.Generator().manual_seed(0))]
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            parts = random_split(range(n), lengths, generator=ember.Generator().manual_seed(0))
        assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
        assert [len(p) for p in parts] == want
        seen = sorted(i for p in parts for i in (p[j] for j in range(len(p))))
        assert seen == list(range(n))

    def test_random_split_reproducible(self):
        def split(seed):
            return [list(p.indices) for p in
                    random_split(range(20), [5, 15], generator=ember.Generator().manual_seed(seed))]
        assert split(3) == split(3)
        assert split(3) != split(4)
        ember.manual_seed(7)
        a = [list(p.indices) for p in random_split(range(20), [10, 10])]
        ember.manual_seed(7)
        assert a == [list(p.indices) for p in random_split(range(20), [10, 10])]

    def test_random_split_bad_lengths(self):
        with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
            random_split(range(5), [2, 2])
        with pytest.raises(ValueError, match="not between 0 and 1"):
            random_split(range(5), [1.5, -0.5])


# ---- samplers -------------------------------------------------------------------------------
class TestSamplers:
    def test_sequential(self):
        assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
        assert len(SequentialSampler([1, 2])) == 2

    def test_random_is_permutation_and_reproducible(self):
        s = RandomSampler(range(50), generator=ember.Generator().manual_seed(1))
        a, b = list(s), list(s)
        assert sorted(a) == list(range(50)) and sorted(b) == list(range(50))
        assert a != b  # the stream advances: a new order each epoch
        again = RandomSampler(range(50), generator=ember.Generator().manual_seed(1))
        assert list(again) == a

    def test_random_global_seed(self):
        ember.manual_seed(123)
        a = list(RandomSampler(range(30)))
        ember.manual_seed(123)
        assert list(RandomSampler(range(30))) == a

    def test_random_replacement_and_num_samples(self):
        s = RandomSampler(range(5), replacement=True, num_samples=200,
                          generator=ember.Generator().manual_seed(0))
        out = list(s)
        assert len(out) == len(s) == 200 and set(out) == set(range(5))
        over = list(RandomSampler(range(4), num_samples=10,
                                  generator=ember.Generator().manual_seed(0)))
        counts = collections.Counter(over)
        assert len(over) == 10 and all(counts[i] >= 2 for i in range(4))
        under = list(RandomSampler(range(10), num_samples=3))
        assert len(under) == len(set(under)) == 3

    @pytest.mark.parametrize("kw,exc", [({"num_samples": 0}, ValueError),
                                        ({"num_samples": -1}, ValueError),
                                        ({"replacement": 1}, TypeError)])
    def test_random_bad_args_like_torch(self, kw, exc):
        with pytest.raises(exc) as theirs:
            tud.RandomSampler(range(3), **kw)
        with pytest.raises(exc) as ours:
            RandomSampler(range(3), **kw)
        assert str(ours.value) == str(theirs.value)

    def test_subset_random(self):
        idx = [3, 8, 21, 40]
        out = list(SubsetRandomSampler(idx, generator=ember.Generator().manual_seed(0)))
        assert sorted(out) == idx and len(SubsetRandomSampler(idx)) == 4

    def test_weighted_with_replacement(self):
        w = [0.0, 1.0, 3.0, 0.0, 4.0]
        out = list(WeightedRandomSampler(w, 16000, generator=ember.Generator().manual_seed(0)))
        c = collections.Counter(out)
        assert set(c) == {1, 2, 4}
        for i in (1, 2, 4):
            assert abs(c[i] / 16000 - w[i] / 8) < 0.02

    def test_weighted_without_replacement(self):
        g = ember.Generator().manual_seed(5)
        for _ in range(20):
            out = list(WeightedRandomSampler([1, 0, 5, 2, 2], 4, replacement=False, generator=g))
            assert sorted(out) == [0, 2, 3, 4]
        first = collections.Counter(
            next(iter(WeightedRandomSampler([1, 8, 1], 1, replacement=False, generator=g)))
            for _ in range(2000))
        assert first[1] / 2000 > 0.7
        with pytest.raises(RuntimeError, match="without replacement"):
            WeightedRandomSampler([1, 0, 1], 3, replacement=False)
        with pytest.raises(ValueError, match="1d sequence"):
            WeightedRandomSampler([[1.0]], 1)

    @pytest.mark.parametrize("n", [0, 1, 7, 12])
    @pytest.mark.parametrize("bs", [1, 3, 5, 12, 13])
    @pytest.mark.parametrize("drop_last", [False, True])
    def test_batch_sampler_matches_torch(self, n, bs, drop_last):
        ours = BatchSampler(SequentialSampler(range(n)), bs, drop_last)
        theirs = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)

    @pytest.mark.parametrize("bs,drop_last", [(0, False), (-1, False), (True, False),
                                              (2, 1), (1.5, False)])
    def test_batch_sampler_bad_args_like_torch(self, bs, drop_last):
        with pytest.raises(ValueError) as theirs:
            tud.BatchSampler(range(3), bs, drop_last)
        with pytest.raises(ValueError) as ours:
            BatchSampler(range(3), bs, drop_last)
        assert str(ours.value) == str(theirs.value)


# ---- collation ---------------------------------------------------------------------------------
COLLATE_CASES = {
    "ints": [0, 5, -3],
    "floats": [0.5, 1.0, -2.25],
    "bools": [True, False, True],
    "strings": ["a", "bc"],
    "bytes": [b"x", b"yz"],
    "tuples": [(0, 1.5), (2, 2.5)],
    "lists": [[0, 1], [2, 3]],
    "dicts": [{"A": 0, "B": [1.0, "s"]}, {"A": 100, "B": [2.0, "t"]}],
    "ordered": [collections.OrderedDict(a=1, b=2), collections.OrderedDict(a=3, b=4)],
    "namedtuple": [Point(0, 0.5), Point(1, 1.5)],
    "numpy_arrays": [np.arange(6, dtype=np.float32).reshape(2, 3),
                     np.ones((2, 3), np.float32)],
    "numpy_int_arrays": [np.array([1, 2], np.int16), np.array([3, 4], np.int16)],
    "numpy_scalars": [np.float64(1.5), np.float64(2.5)],
    "numpy_int_scalars": [np.int32(1), np.int32(7)],
    "numpy_0d": [np.array(1.5), np.array(2.5)],
    "tensors": [ember.tensor([1, 2]), ember.tensor([3, 4])],
    "float_tensors": [ember.tensor([[1.5]]), ember.tensor([[2.5]])],
    "bool_tensors": [ember.tensor(True), ember.tensor(False)],
    "mixed": [(ember.tensor([1.0, 2.0]), 3, "a"), (ember.tensor([4.0, 5.0]), 6, "b")],
    "nested": [{"x": (np.int64(1), [0.5, 1])}, {"x": (np.int64(2), [1.5, 2])}],
}


class TestCollate:
    @pytest.mark.parametrize("case", list(COLLATE_CASES))
    def test_default_collate_matches_torch(self, case):
        batch = COLLATE_CASES[case]
        assert plain(default_collate(batch)) == plain(tud.default_collate(to_torch(batch)))

    @pytest.mark.parametrize("case", ["ints", "strings", "tuples", "dicts", "namedtuple",
                                      "numpy_arrays", "numpy_scalars", "tensors", "nested"])
    def test_default_convert_matches_torch(self, case):
        sample = COLLATE_CASES[case][0]
        assert plain(default_convert(sample)) == plain(tud.default_convert(to_torch(sample)))

    def test_python_float_is_float64(self):
        out = default_collate([1.0, 2.0])
        assert out.dtype is ember.float64

    def test_stack_adds_batch_dim(self):
        out = default_collate([ember.zeros(3, 4), ember.ones(3, 4)])
        assert out.shape == (2, 3, 4) and out.sum().item() == 12

    def test_errors(self):
        with pytest.raises(RuntimeError, match="each element in list of batch should be of "
                                               "equal size"):
            default_collate([[1, 2], [3]])
        with pytest.raises(TypeError, match="default_collate: batch must contain"):
            default_collate([object(), object()])
        with pytest.raises(TypeError, match="default_collate: batch must contain"):
            default_collate([np.array(["a"]), np.array(["b"])])

    def test_fn_map_is_extensible(self):
        class Box:
            def __init__(self, v):
                self.v = v

        fmap = dict(eud.default_collate_fn_map)
        fmap[Box] = lambda batch, *, collate_fn_map: sum(b.v for b in batch)
        assert eud.collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=fmap)[0] == 4


# ---- the DataLoader ---------------------------------------------------------------------------
def _ds(n=10):
    return TensorDataset(ember.arange(2. * n).view(n, 2), ember.arange(n))


class TestDataLoader:
    @pytest.mark.parametrize("n", [0, 1, 9, 10])
    @pytest.mark.parametrize("bs", [1, 3, 10, None])
    @pytest.mark.parametrize("drop_last", [False, True])
    def test_batches_and_len_match_torch(self, n, bs, drop_last):
        if bs is None and drop_last:
            return
        x = np.arange(2. * n).reshape(n, 2)
        ours = DataLoader(TensorDataset(ember.tensor(x), ember.arange(n)), batch_size=bs,
                          drop_last=drop_last)
        theirs = tud.DataLoader(tud.TensorDataset(torch.tensor(x), torch.arange(n)),
                                batch_size=bs, drop_last=drop_last)
        assert len(ours) == len(theirs)
        assert [plain(b) for b in ours] == [plain(b) for b in theirs]

    def test_shuffle_each_epoch_is_a_permutation(self):
        loader = DataLoader(_ds(17), batch_size=4, shuffle=True)
        epochs = []
        for _ in range(3):
            seen = [i for b in labels(loader) for i in b]
            assert sorted(seen) == list(range(17))
            epochs.append(seen)
        assert epochs[0] != epochs[1] or epochs[1] != epochs[2]

    def test_shuffle_reproducible_from_manual_seed(self):
        loader = DataLoader(_ds(), batch_size=3, shuffle=True)
        ember.manual_seed(0)
        a = labels(loader)
        ember.manual_seed(0)
        assert labels(loader) == a
        ember.manual_seed(1)
        assert labels(loader) != a

    def test_shuffle_with_generator(self):
        def run(seed):
            return labels(DataLoader(_ds(), batch_size=3, shuffle=True,
                                     generator=ember.Generator().manual_seed(seed)))
        assert run(5) == run(5) and run(5) != run(6)

    def test_sampler_and_batch_sampler(self):
        loader = DataLoader(_ds(), batch_size=2, sampler=[9, 0, 4])
        assert labels(loader) == [[9, 0], [4]]
        loader = DataLoader(_ds(), batch_sampler=[[1, 2, 3], [7]])
        assert labels(loader) == [[1, 2, 3], [7]] and len(loader) == 2
        loader = DataLoader(_ds(), batch_size=2,
                            sampler=SubsetRandomSampler([1, 3, 5],
                                                        ember.Generator().manual_seed(0)))
        assert sorted(i for b in labels(loader) for i in b) == [1, 3, 5]

    def test_no_auto_batching(self):
        loader = DataLoader(Squares(4), batch_size=None)
        assert list(loader) == [0, 1, 4, 9] and len(loader) == 4
        loader = DataLoader([np.array([1, 2]), np.array([3, 4])], batch_size=None)
        out = list(loader)
        assert isinstance(out[0], ember.Tensor) and out[1].tolist() == [3, 4]

    def test_custom_collate_and_plain_list_dataset(self):
        loader = DataLoader(list(range(7)), batch_size=3, collate_fn=lambda b: tuple(b))
        assert list(loader) == [(0, 1, 2), (3, 4, 5), (6,)]
        assert [b.tolist() for b in DataLoader(list(range(5)), batch_size=2)] == \
            [[0, 1], [2, 3], [4]]

    def test_iterator_object(self):
        it = iter(DataLoader(_ds(5), batch_size=2))
        assert len(it) == 3 and iter(it) is it
        assert next(it)[1].tolist() == [0, 1]

    def test_getitems_is_used(self):
        class Batched(Squares):
            calls = 0

            def __getitems__(self, idx):
                Batched.calls += 1
                return [i * i for i in idx]

        assert [b.tolist() for b in DataLoader(Batched(5), batch_size=2)] == \
            [[0, 1], [4, 9], [16]]
        assert Batched.calls == 3

    @pytest.mark.parametrize("n", [0, 5, 6])
    @pytest.mark.parametrize("bs", [1, 2, 6, None])
    @pytest.mark.parametrize("drop_last", [False, True])
    def test_iterable_dataset_matches_torch(self, n, bs, drop_last):
        if bs is None and drop_last:
            return
        ours = DataLoader(Stream(n), batch_size=bs, drop_last=drop_last)
        theirs = tud.DataLoader(TorchStream(n), batch_size=bs, drop_last=drop_last)
        assert [plain(b) for b in ours] == [plain(b) for b in theirs]
        assert len(ours) == len(theirs)

    def test_iterable_without_len(self):
        loader = DataLoader(Stream(5, with_len=False), batch_size=2)
        assert labels_of_stream(loader) == [[0, 1], [2, 3], [4]]
        with pytest.raises(TypeError):
            len(loader)


def labels_of_stream(loader):
    return [b.tolist() for b in loader]


# the option errors: same exception type and message as PyTorch
OPTION_ERRORS = [
    ("map", dict(sampler=[0, 1], shuffle=True)),
    ("map", dict(batch_sampler=[[0]], batch_size=2)),
    ("map", dict(batch_sampler=[[0]], shuffle=True)),
    ("map", dict(batch_sampler=[[0]], sampler=[0])),
    ("map", dict(batch_sampler=[[0]], drop_last=True)),
    ("map", dict(batch_size=None, drop_last=True)),
    ("map", dict(num_workers=-1)),
    ("map", dict(timeout=-1)),
    ("map", dict(prefetch_factor=2)),
    ("map", dict(persistent_workers=True)),
    ("iter", dict(shuffle=True)),
    ("iter", dict(sampler=[0])),
    ("iter", dict(batch_sampler=[[0]])),
]


@pytest.mark.parametrize("kind,kw", OPTION_ERRORS)
def test_option_errors_match_torch(kind, kw):
    ours_ds = Stream(3) if kind == "iter" else _ds(3)
    theirs_ds = TorchStream(3) if kind == "iter" else tud.TensorDataset(torch.zeros(3))
    with pytest.raises(Exception) as theirs:
        tud.DataLoader(theirs_ds, **kw)
    with pytest.raises(type(theirs.value)) as ours:
        DataLoader(ours_ds, **kw)
    if "sampler=" in str(theirs.value):   # the message embeds the sampler object's repr
        assert str(ours.value).split("got")[0] == str(theirs.value).split("got")[0]
    else:  # (spaces ignored: PyTorch's prefetch_factor message lacks one after a period)
        assert str(ours.value).replace(" ", "") == str(theirs.value).replace(" ", "")


def test_training_style_loop_sees_every_sample_once_per_epoch():
    n = 50
    x = ember.randn(n, 3)
    y = ember.arange(n)
    train, val = random_split(TensorDataset(x, y), [0.8, 0.2],
                              generator=ember.Generator().manual_seed(0))
    loader = DataLoader(train, batch_size=8, shuffle=True, drop_last=False)
    assert len(loader) == math.ceil(40 / 8)
    for _ in range(2):
        seen = []
        for xb, yb in loader:
            assert xb.shape[1:] == (3,) and xb.shape[0] == yb.shape[0]
            np.testing.assert_array_equal(xb.numpy(), x[yb].numpy())
            seen += yb.tolist()
        assert sorted(seen) == sorted(val.dataset.tensors[1][i].item() for i in train.indices)
        assert not set(seen) & set(int(val.dataset.tensors[1][i]) for i in val.indices)


class _PinnedAPI:
    """A stand-in accelerator API offering pinned host memory (bytearrays here)."""

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def pinned_buffer(nbytes):
        return bytearray(nbytes)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_pin_memory_pins_batches_when_an_accelerator_offers_it(num_workers):
    from ember.dispatcher import register_backend, unregister_backend
    from ember_cpu.plugin import CPUBackend

    class PinDev(CPUBackend):
        name = device_type = "pindev"
        version = "test"
        host_accessible = False
        device_api = _PinnedAPI()

    register_backend(PinDev())
    try:
        ds = ember.utils.data.TensorDataset(ember.arange(12.).reshape(6, 2), ember.arange(6))
        for xb, yb in DataLoader(ds, batch_size=3, pin_memory=True, num_workers=num_workers):
            assert xb.is_pinned() and yb.is_pinned()
        np.testing.assert_array_equal(xb.numpy(), np.arange(6., 12.).reshape(3, 2))
        unpinned = next(iter(DataLoader(ds, batch_size=3)))
        assert not unpinned[0].is_pinned()
    finally:
        unregister_backend("pindev")


def test_random_sampler_with_replacement_draws_lazily():
    """PyTorch draws a replacement sampler's indices in blocks: an effectively infinite
    ``num_samples`` must not allocate them all (it used to raise MemoryError)."""
    import itertools

    from ember.utils.data import RandomSampler
    s = RandomSampler(range(10), replacement=True, num_samples=10**10,
                      generator=ember.Generator().manual_seed(0))
    assert len(s) == 10**10
    first = list(itertools.islice(iter(s), 10000))
    assert len(first) == 10000 and min(first) >= 0 and max(first) <= 9
    assert len(set(first)) == 10
    small = list(RandomSampler(range(3), replacement=True, num_samples=4097))
    assert len(small) == 4097
