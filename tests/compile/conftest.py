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
