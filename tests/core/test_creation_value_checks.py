"""PyTorch's checks on the Python numbers a tensor is built from (``tensor([300],
dtype=int8)`` raises instead of wrapping to 44) and on ``randint``'s bounds; PyTorch is
the oracle for each call."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CALLS = [
    "L.tensor([300], dtype=L.int8)", "L.tensor([70000], dtype=L.int16)",
    "L.tensor([-1], dtype=L.uint8)", "L.tensor([-255], dtype=L.uint8)",
    "L.tensor([-256], dtype=L.uint8)", "L.tensor([2**63], dtype=L.int64)", "L.tensor(2**63)",
    "L.tensor([256, 1], dtype=L.uint8)", "L.tensor([[1, 2], [3, 2**40]], dtype=L.int32)",
    "L.tensor([True, 300], dtype=L.int8)", "L.tensor(300, dtype=L.int8)",
    "L.tensor([300.0], dtype=L.int8)", "L.tensor([-1.0], dtype=L.uint8)",
    "L.tensor([1e20], dtype=L.int64)", "L.tensor([2**31], dtype=L.int32)",
    "L.tensor([2**31 - 1, -2**31], dtype=L.int32)", "L.tensor([-70000], dtype=L.uint16)",
    "L.tensor([2**63 + 5], dtype=L.uint64)", "L.tensor([70000], dtype=L.float16)",
    "L.as_tensor([300], dtype=L.int8)", "L.tensor(np.array([300]), dtype=L.int8)",
    "L.tensor([True, 2], dtype=L.bool)",
    "L.randint(0, 256, (2,), dtype=L.uint8).dtype", "L.randint(0, 257, (2,), dtype=L.uint8)",
    "L.randint(-5, 3, (2,), dtype=L.uint8)", "L.randint(-128, 128, (2,), dtype=L.int8).dtype",
    "L.randint(0, 129, (2,), dtype=L.int8)", "L.randint(0, 3, (2,), dtype=L.bool)",
    "L.randint(0, 70000, (2,), dtype=L.float16)", "L.randint(0, 2**40, (2,), dtype=L.int32)",
    # NumPy scalars in a sequence bring their dtypes into the inference
    "L.tensor([np.int32(1)]).dtype", "L.tensor([np.int32(1), 2]).dtype",
    "L.tensor([np.int16(1), np.int32(2)]).dtype", "L.tensor([np.float64(1)]).dtype",
    "L.tensor([np.float64(1), 2.0]).dtype", "L.tensor([np.float16(1)]).dtype",
    "L.tensor([np.int32(1), 2.5]).dtype", "L.tensor([[np.int8(1)], [np.int8(2)]]).dtype",
    "L.tensor([np.uint8(1)]).dtype", "L.tensor([np.bool_(True)]).dtype",
    "L.tensor([np.int32(1), np.float32(2)]).dtype", "L.tensor([np.float64(0.1), 1]).tolist()",
    "L.tensor([np.uint16(5), 1])",
]


def _run(L, call):
    try:
        r = eval(call, {"L": L, "np": np})  # noqa: S307 - the calls above
    except Exception as e:  # noqa: BLE001 - the type and message are compared
        return type(e), str(e)
    return r.tolist() if hasattr(r, "tolist") else str(r).split(".")[-1]


@pytest.mark.parametrize("call", CALLS)
def test_value_checks_as_pytorch(call):
    want, got = _run(torch, call), _run(ember, call)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and got[0] is want[0], (want, got)
        assert got[1] == want[1]
    else:
        assert got == want
