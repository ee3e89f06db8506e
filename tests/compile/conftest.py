import contextlib
import logging

import pytest

import ember


@pytest.fixture
def ember_logs():
    """``with ember_logs(logger_name, **logs) as seen:`` turns ember's compile logs on
    (``ember._logging.set_logs(**logs)``) for the block and collects the messages the
    logger emits into the list ``seen``."""
    @contextlib.contextmanager
    def collect(name, **logs):
        seen = []

        class Keep(logging.Handler):
            def emit(self, record):
                seen.append(record.getMessage())
        keep = Keep()
        logger = logging.getLogger(name)
        logger.addHandler(keep)
        ember._logging.set_logs(**logs)
        try:
            yield seen
        finally:
            ember._logging.set_logs()
            logger.removeHandler(keep)
    return collect


def pytest_configure(config):
    config.addinivalue_line("markers", "timed_trial: the test keeps ember.compile's timed "
                            "trial (eager or compiled, whichever is faster) on")


@pytest.fixture(autouse=True)
def _no_timed_trial(request, monkeypatch):
    """Compiled functions keep capturing in these tests: the timed trial that may send a
    function that fuses back to eager mode (``_compile.TRIAL_CALLS``) depends on the
    machine's speed, so it is off except in the tests of it (marked ``timed_trial``)."""
    if request.node.get_closest_marker("timed_trial") is None:
        from ember import _compile
        monkeypatch.setattr(_compile, "TRIAL_CALLS", 0)
