"""ember.distributed's names that answer without a process group, against torch.distributed
(the oracle for signatures, defaults, values and error types), and init_process_group's
refusals, which come before MPI starts. The collectives run on 2 ranks in
test_distributed.py."""
import inspect
import os
import subprocess
import sys
from datetime import timedelta

import pytest
import torch.distributed as tdist

import ember
import ember.distributed as dist

#: the names added for PyTorch's programs, whose signatures must be PyTorch's
SAME_SIGNATURE = [
    "all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
    "send_object_list", "recv_object_list", "all_to_all", "all_to_all_single",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "new_subgroups",
    "new_subgroups_by_enumeration", "get_pg_count", "monitored_barrier", "is_mpi_available",
    "is_gloo_available", "is_nccl_available", "is_ucc_available", "is_xccl_available",
    "is_backend_available", "get_default_backend_for_device", "is_torchelastic_launched",
    "get_node_local_rank", "supports_complex", "batch_isend_irecv", "P2POp",
    "init_process_group", "init_device_mesh", "barrier",
    "new_group",
]


def _params(fn):
    """(name, default, kind) of the public parameters (PyTorch's private ``_ranks`` apart)."""
    return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()
            if not p.name.startswith("_")]


@pytest.mark.parametrize("name", SAME_SIGNATURE)
def test_signature_is_pytorchs(name):
    assert _params(getattr(dist, name)) == _params(getattr(tdist, name))


def test_every_new_name_is_exported_and_documented():
    for name in dist.__all__:
        obj = getattr(dist, name)
        assert obj is not None, name
        if callable(obj):
            assert (obj.__doc__ or "").strip(), f"{name} has no docstring"
    torch_names = {n for n in dir(tdist) if not n.startswith("_")}
    for name in SAME_SIGNATURE + ["Backend", "GroupMember", "group", "DebugLevel", "Store",
                                  "HashStore", "PrefixStore", "FileStore", "TCPStore",
                                  "DeviceMesh", "DistError", "QueueEmptyError"]:
        assert name in torch_names and name in dist.__all__, name


@pytest.mark.parametrize("name", ["GLOO", "gloo", "Nccl", "mpi", "MPI", "ucc", "xccl",
                                  "UNDEFINED", "fake", "custom", "cpu:gloo,cuda:nccl"])
def test_backend_names_normalise_as_pytorchs(name):
    assert dist.Backend(name) == tdist.Backend(name)


def test_backend_constants_and_non_strings():
    for const in ("UNDEFINED", "GLOO", "NCCL", "UCC", "MPI", "XCCL", "FAKE"):
        assert getattr(dist.Backend, const) == getattr(tdist.Backend, const)
    assert dist.Backend.backend_list == tdist.Backend.backend_list
    # PyTorch's map grows when other code registers a backend (importing its fake
    # process group adds "hpu"), so compare the entries ember has and require the
    # four a fresh PyTorch starts with.
    ours, theirs = dist.Backend.default_device_backend_map, tdist.Backend.default_device_backend_map
    assert set(ours) == {"cpu", "cuda", "xpu", "mps"}
    assert ours == {k: theirs[k] for k in ours}
    for bad in (3, None):
        with pytest.raises(ValueError, match="string-ish"):
            tdist.Backend(bad)
        with pytest.raises(ValueError, match="string-ish"):
            dist.Backend(bad)
    with pytest.raises(NotImplementedError, match="over MPI"):
        dist.Backend.register_backend("mine", lambda *a: None)


def test_availability_says_only_mpi_is_there():
    assert dist.is_mpi_available() is dist.is_available()
    assert not (dist.is_gloo_available() or dist.is_nccl_available()
                or dist.is_ucc_available() or dist.is_xccl_available())
    assert dist.is_backend_available("MPI") is dist.is_mpi_available()
    for name in ("gloo", "nccl", "undefined", "foo"):
        assert dist.is_backend_available(name) is False
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device(ember.device("cuda:1")) == "mpi"
    for lib in (dist, tdist):
        with pytest.raises(ValueError, match="Default backend not registered"):
            lib.get_default_backend_for_device("meta")


def test_error_classes_have_pytorchs_bases():
    pairs = [("DistError", "RuntimeError"), ("DistBackendError", "DistError"),
             ("DistNetworkError", "DistError"), ("DistStoreError", "DistError"),
             ("QueueEmptyError", "DistStoreError")]
    for name, base in pairs:
        ours, theirs = getattr(dist, name), getattr(tdist, name)
        assert [c.__name__ for c in ours.__mro__] == [c.__name__ for c in theirs.__mro__]
        assert ours.__bases__[0].__name__ == base


def test_debug_level_follows_pytorchs_rules(monkeypatch):
    assert {k: int(v) for k, v in dist.DebugLevel.__members__.items()} == \
        {k: int(v) for k, v in tdist.DebugLevel.__members__.items()}
    for value in ("detail", "INFO", "off"):
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", value)
        dist.set_debug_level_from_env()
        tdist.set_debug_level_from_env()
        assert dist.get_debug_level().name == tdist.get_debug_level().name
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "loud")
    for lib in (dist, tdist):
        with pytest.raises(ValueError, match="must be OFF, INFO, or DETAIL"):
            lib.set_debug_level_from_env()
    dist.set_debug_level(dist.DebugLevel.INFO)
    assert dist.get_debug_level() is dist.DebugLevel.INFO
    with pytest.raises(TypeError):
        dist.set_debug_level("INFO")
    dist.set_debug_level(dist.DebugLevel.OFF)
    tdist.set_debug_level(tdist.DebugLevel.OFF)


def test_launch_environment_helpers(monkeypatch):
    for var in ("TORCHELASTIC_RUN_ID", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                "MPI_LOCALRANKID"):
        monkeypatch.delenv(var, raising=False)
    assert dist.is_torchelastic_launched() is tdist.is_torchelastic_launched() is False
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "abc")
    assert dist.is_torchelastic_launched() is tdist.is_torchelastic_launched() is True
    for lib in (dist, tdist):
        with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
            lib.get_node_local_rank()
        assert lib.get_node_local_rank(fallback_rank=3) == 3
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")       # Open MPI's
    assert dist.get_node_local_rank() == 1
    monkeypatch.setenv("LOCAL_RANK", "2")                       # PyTorch's comes first
    assert dist.get_node_local_rank(fallback_rank=3) == tdist.get_node_local_rank(3) == 2


def test_supports_complex_matches_pytorch():
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        assert dist.supports_complex(getattr(dist.ReduceOp, name)) is \
            tdist.supports_complex(getattr(tdist.ReduceOp, name)), name


def test_group_names_before_init():
    assert not dist.is_initialized()
    assert dist.group.WORLD is dist.GroupMember.WORLD is None
    assert tdist.group.WORLD is None
    assert dist.GroupMember.NON_GROUP_MEMBER == tdist.GroupMember.NON_GROUP_MEMBER
    assert dist.get_pg_count() == tdist.get_pg_count() == 0
    assert dist.default_pg_timeout == timedelta(seconds=300)
    for fn in (lambda: dist.all_gather_object([None], 1), lambda: dist.all_to_all([], []),
               lambda: dist.get_process_group_ranks(None), lambda: dist.monitored_barrier(),
               lambda: dist.P2POp(dist.isend, ember.ones(1), 0)):
        with pytest.raises(ValueError, match="init_process_group"):     # as PyTorch's
            fn()


def test_hash_store_behaves_as_pytorchs():
    ours, theirs = dist.HashStore(), tdist.HashStore()
    for s in (ours, theirs):
        s.set("a", "1")
        s.set("b", b"\x00\xff")
        s.append("l", "ab")
        s.append("l", "cd")
        s.multi_set(["x", "y"], ["1", "2"])
        s.queue_push("q", "first")
    steps = [lambda s: s.get("a"), lambda s: s.get("b"), lambda s: s.get("l"),
             lambda s: s.add("n", 3), lambda s: s.add("n", -1), lambda s: s.get("n"),
             lambda s: s.compare_set("a", "1", "2"), lambda s: s.compare_set("a", "x", "3"),
             lambda s: s.compare_set("new", "", "v"), lambda s: s.compare_set("nope", "x", "v"),
             lambda s: s.check(["a", "new"]), lambda s: s.check(["nope"]),
             lambda s: s.multi_get(["x", "y"]), lambda s: s.delete_key("a"),
             lambda s: s.delete_key("a"), lambda s: s.num_keys(),
             lambda s: s.queue_len("q"), lambda s: s.queue_pop("q"), lambda s: s.timeout,
             lambda s: sorted(s.list_keys()), lambda s: s.has_extended_api()]
    for i, step in enumerate(steps):
        assert step(ours) == step(theirs), i
    for s in (ours, theirs):
        s.set_timeout(timedelta(milliseconds=50))
    for step, error in ((lambda s: s.get("missing"), "DistStoreError"),
                        (lambda s: s.wait(["missing"]), "DistStoreError"),
                        (lambda s: s.queue_pop("q", block=False), "QueueEmptyError")):
        for s, lib in ((ours, dist), (theirs, tdist)):
            with pytest.raises(getattr(lib, error)):
                step(s)


def test_prefix_store_behaves_as_pytorchs():
    results = []
    for lib in (dist, tdist):
        base = lib.HashStore()
        store = lib.PrefixStore("trainer", base)
        store.set("step", "1")
        assert store.underlying_store is base
        results.append((base.get("trainer/step"), store.get("step"), store.add("c", 2),
                        base.check(["trainer/c"]), store.check(["c"]), store.num_keys()))
    assert results[0] == results[1]
    with pytest.raises(TypeError, match="Store"):
        dist.PrefixStore("p", {})


def test_what_is_not_implemented_says_so():
    for make in (lambda: dist.FileStore("/tmp/x", 1), lambda: dist.TCPStore("localhost", 1),
                 lambda: dist.DeviceMesh("cpu", [0, 1]),
                 lambda: dist.init_device_mesh("cpu", (2,))):
        with pytest.raises(NotImplementedError, match="ember"):
            make()
    with pytest.raises(NotImplementedError, match="Store"):
        dist.Store().get("a")


@pytest.mark.parametrize("backend", ["foo", "fake", "xccl", "undefined", "cpu:gloo,xpu:xccl"])
def test_unknown_backends_name_what_ember_supports(backend):
    with pytest.raises(ValueError, match=r"backend='mpi'.*ember\.distributed\.run -n N"):
        dist.init_process_group(backend)
    assert not dist.is_initialized()


@pytest.mark.parametrize("backend", ["gloo", "nccl", "mpi", None, "cpu:gloo,cuda:nccl"])
def test_a_torchrun_environment_is_refused_not_run_alone(monkeypatch, backend):
    """torchrun sets RANK/WORLD_SIZE/MASTER_ADDR but starts no MPI job: a world of size 1
    would train alone, silently (the refusal comes before MPI starts)."""
    for var in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "PMI_FD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("MASTER_ADDR", "localhost")
    monkeypatch.setenv("MASTER_PORT", "29500")
    with pytest.raises(RuntimeError, match=r"WORLD_SIZE.*ember\.distributed\.run -n 4"):
        dist.init_process_group(backend)
    monkeypatch.delenv("WORLD_SIZE")
    with pytest.raises(RuntimeError, match=r"world_size argument.*-n 2 script"):
        dist.init_process_group(backend, world_size=2, rank=0)
    assert not dist.is_initialized()


@pytest.mark.skipif(not dist.is_available(), reason="mpi4py not installed")
def test_one_process_job_with_pytorch_backend_names_and_a_store():
    """Without a launcher (and nothing asking for more) a script is a world of size 1."""
    code = ("import ember, ember.distributed as dist\n"
            "dist.init_process_group('cpu:gloo,cuda:nccl', store=dist.HashStore(), "
            "world_size=1, rank=0)\n"
            "out = [None]\n"
            "dist.all_gather_object(out, {'x': 1})\n"
            "t = ember.arange(4.0)\n"
            "y = ember.empty(4)\n"
            "dist.all_to_all_single(y, t)\n"
            "mine, subs = dist.new_subgroups(1)\n"
            "dist.monitored_barrier()\n"
            "print(dist.get_world_size(), dist.get_backend(), out, y.tolist(),\n"
            "      dist.get_process_group_ranks(mine), dist.get_pg_count())\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("WORLD_SIZE", "RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "1 mpi [{'x': 1}] [0.0, 1.0, 2.0, 3.0] [0] 2"
