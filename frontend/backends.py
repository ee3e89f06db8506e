"""The installed backends, their op coverage, and the CPU fallback's accounting.

>>> import ember
>>> sorted(ember.backends.coverage("cpu").values())[:1]
['composite']
"""
from ember.dispatcher.fallback import fallback_report, reset_fallback_report
from ember.dispatcher.plugins import plugin_records
from ember.dispatcher.schema import coverage

__all__ = ["fallback_report", "reset_fallback_report", "plugin_records", "coverage"]
