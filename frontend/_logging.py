"""``ember._logging``: ``set_logs`` for ``ember.compile``'s logs (``EMBER_LOGS`` in the
environment does the same: ``EMBER_LOGS=graph_breaks,recompiles,output_code``)."""
from ._compile import set_logs

__all__ = ["set_logs"]
