"""Shared memory lives exactly as long as some process holds it: nothing is left behind in
/dev/shm or in the kernel's shared-memory total after a normal exit, nor after a process
holding it is killed with SIGKILL.

Oracle: the kernel's own count of shared-memory pages (``Shmem`` in /proc/meminfo), with
segments of 192 MiB so that other programs' noise cannot pass for them."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import ember
import ember.multiprocessing as mp

TIMEOUT = 30
MIB = 1 << 20
SIZE = 192 * MIB  # a segment clearly visible in Shmem


def shmem() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no Shmem line in /proc/meminfo")


def ours_in_dev_shm() -> set:
    return {n for n in os.listdir("/dev/shm") if "ember" in n}


def held(before: int) -> bool:
    return shmem() - before > SIZE * 3 // 4


def released(before: int) -> bool:
    # polled for a while: other programs' shared memory comes and goes too
    deadline = time.monotonic() + 3
    while shmem() - before >= SIZE // 4:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def make_big_and_send(q, release):
    t = ember.zeros(SIZE // 4)  # float32
    t[0], t[-1] = 1.0, 2.0
    q.put(t)
    release.get(timeout=TIMEOUT)  # killed while waiting here


def map_and_wait(q, mapped, release):
    t = q.get(timeout=TIMEOUT)
    mapped.put(float(t[-1]))
    release.get(timeout=TIMEOUT)


pytestmark = pytest.mark.skipif(not os.path.exists("/proc/meminfo"),
                                reason="needs Linux's /proc/meminfo")


def test_receiver_keeps_memory_of_a_killed_sender_until_it_lets_go(procs):
    before, names = shmem(), ours_in_dev_shm()
    ctx = mp.get_context("fork")
    q, release = ctx.Queue(), ctx.Queue()
    p = procs.start("fork", make_big_and_send, q, release)
    t = q.get(timeout=TIMEOUT)
    os.kill(p.pid, signal.SIGKILL)
    assert procs.join(p) == -signal.SIGKILL
    # the sender is gone; the mapping here keeps the memory, and it is intact
    assert float(t[0]) == 1.0 and float(t[-1]) == 2.0 and held(before)
    del t
    assert released(before), f"{(shmem() - before) / MIB:.0f} MiB still held"
    assert ours_in_dev_shm() == names


def test_killed_receiver_releases_its_mapping(procs):
    before, names = shmem(), ours_in_dev_shm()
    ctx = mp.get_context("fork")
    q, mapped, release = ctx.Queue(), ctx.Queue(), ctx.Queue()
    p = procs.start("fork", map_and_wait, q, mapped, release)
    t = ember.ones(SIZE // 4)
    q.put(t)
    assert mapped.get(timeout=TIMEOUT) == 1.0 and held(before)
    os.kill(p.pid, signal.SIGKILL)
    assert procs.join(p) == -signal.SIGKILL
    del t
    assert released(before), f"{(shmem() - before) / MIB:.0f} MiB still held"
    assert ours_in_dev_shm() == names


SCRIPT = textwrap.dedent("""
    import sys
    import ember
    import ember.multiprocessing as mp

    def child(q, back):
        t = q.get(timeout=30)
        t.add_(1)
        back.put(t[:4])       # a view goes back

    if __name__ == "__main__":
        ctx = mp.get_context(sys.argv[1])
        q, back = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=child, args=(q, back))
        p.start()
        t = ember.zeros(int(sys.argv[2]))
        q.put(t)
        v = back.get(timeout=30)
        assert v.tolist() == [1.0] * 4 and t[-1].item() == 1.0
        p.join(30)
        assert p.exitcode == 0, p.exitcode
        print("ok", p.pid)
""")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_nothing_left_after_normal_exit(method, tmp_path):
    before, names = shmem(), ours_in_dev_shm()
    script = tmp_path / "share.py"
    script.write_text(SCRIPT)
    r = subprocess.run([sys.executable, str(script), method, str(SIZE // 4)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr
    child_pid = int(r.stdout.split()[1])
    with pytest.raises(ProcessLookupError):
        os.kill(child_pid, 0)
    assert released(before), f"{(shmem() - before) / MIB:.0f} MiB still held"
    assert ours_in_dev_shm() == names


class BigThenDie(ember.utils.data.Dataset):
    """Item 0 is SIZE bytes; the worker loading item 1 kills itself once item 0 arrived."""

    def __init__(self):
        self.arrived = mp.get_context("fork").Event()

    def __len__(self):
        return 2

    def __getitem__(self, i):
        if i == 1:
            self.arrived.wait(TIMEOUT)
            os.kill(os.getpid(), signal.SIGKILL)
        return ember.ones(SIZE // 4)


def test_dataloader_with_a_killed_worker_leaves_nothing():
    before, names = shmem(), ours_in_dev_shm()
    ds = BigThenDie()
    loader = ember.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         multiprocessing_context="fork")
    it = iter(loader)
    workers = it._workers
    first = next(it)
    ds.arrived.set()
    assert first.is_shared() and float(first[-1]) == 1.0 and held(before)
    with pytest.raises(RuntimeError, match="killed by signal SIGKILL"):
        next(it)
    del first, it, loader
    for w in workers:
        w.join(TIMEOUT)
        assert not w.is_alive()
    assert released(before), f"{(shmem() - before) / MIB:.0f} MiB still held"
    assert ours_in_dev_shm() == names
