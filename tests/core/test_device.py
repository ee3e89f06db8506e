import pytest

import ember


def test_device_parsing():
    d = ember.device("opencl:1")
    assert (d.type, d.index) == ("opencl", 1)
    assert str(d) == "opencl:1" and repr(d) == "device(type='opencl', index=1)"
    assert ember.device("cpu") == "cpu"
    assert ember.device("cuda", 0) == ember.device("cuda:0")
    assert ember.device(ember.device("cpu")) is ember.device("cpu")
    assert hash(ember.device("cuda:0")) == hash(ember.device("cuda", 0))


@pytest.mark.parametrize("bad", ["", "cuda:x", "cuda:-1", "CUDA", "cu da", "cuda:0:1"])
def test_bad_device_strings(bad):
    with pytest.raises(RuntimeError, match="Invalid device string"):
        ember.device(bad)


def test_bad_device_arguments():
    with pytest.raises(TypeError):
        ember.device(3)
    with pytest.raises(ValueError):
        ember.device("cuda:0", 1)
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.device("cuda", -2)
