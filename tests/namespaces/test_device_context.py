"""``with ember.device(...)`` (``torch.device`` as a context manager) and the automatic
``ember.<device type>`` namespace of any installed backend plugin."""
import threading

import pytest
import torch

import ember


def test_device_block_sets_the_default_and_restores_it_as_torch():
    with torch.device("meta") as d:
        assert d == torch.device("meta") and torch.ones(1).device.type == "meta"
    assert torch.ones(1).device.type == "cpu"
    with ember.device("example") as d:
        assert d == ember.device("example")
        assert ember.ones(2).device == ember.device("example:0")
        with ember.device("cpu"):
            assert ember.zeros(1).device.type == "cpu"
        assert ember.empty(1).device.type == "example"
        assert ember.ones(1, device="cpu").device.type == "cpu"     # explicit wins
    assert ember.ones(1).device.type == "cpu"
    with pytest.raises(ValueError):
        with ember.device("example"):
            raise ValueError
    assert ember.get_default_device() == ember.device("cpu")


def test_device_block_is_per_thread():
    seen = []
    with ember.device("example"):
        t = threading.Thread(target=lambda: seen.append(ember.ones(1).device.type))
        t.start()
        t.join()
    assert seen == ["cpu"]


def test_every_plugin_gets_a_device_namespace():
    ns = ember.example
    assert ns is ember.example and repr(ns) == "<ember.example device namespace>"
    assert ns.is_available() and ns.device_count() >= 1
    assert ns.memory_allocated() == 0
    with pytest.raises(AttributeError, match="no attribute 'no_such_device'"):
        ember.no_such_device
