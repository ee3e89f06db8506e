"""Shared helpers: every process a test starts is joined with a timeout and killed if it
is still alive at teardown, so a bug fails a test instead of hanging the suite."""
import pytest

import ember.multiprocessing as mp

TIMEOUT = 30  # seconds for any get/join; generous for a loaded 2-core machine


class Procs:
    def __init__(self):
        self.started = []

    def start(self, method, target, *args):
        p = mp.get_context(method).Process(target=target, args=args, daemon=True)
        p.start()
        self.started.append(p)
        return p

    def join(self, p, timeout=TIMEOUT):
        p.join(timeout)
        assert not p.is_alive(), f"process {p.pid} did not finish within {timeout} s"
        return p.exitcode


@pytest.fixture(autouse=True)
def _workers_fork_as_in_a_fresh_process(request, monkeypatch):
    # these tests are about workers, not about the start method DataLoader picks after a
    # fork-unsafe device started in this process (that is test_fork_safety.py's subject)
    if request.module.__name__.endswith("test_dataloader_workers"):
        monkeypatch.setattr("ember.utils.data.dataloader.fork_unsafe_devices", lambda: [])


@pytest.fixture
def procs():
    ps = Procs()
    yield ps
    for p in ps.started:
        if p.is_alive():
            p.kill()
        p.join(5)
