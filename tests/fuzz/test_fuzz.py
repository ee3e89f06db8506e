"""The op fuzz suite in CI: a bounded run of tests/fuzz/opfuzz.py per device, each in child
processes so that a crash or hang is recorded with its case. Any crash, hang or
mismatch with PyTorch fails, printing the seed and the command that reproduces it.

``EMBER_FUZZ_SEED`` / ``EMBER_FUZZ_EXAMPLES`` override the seed and the cases per op;
``make fuzz`` runs a longer random-seeded run (20,000+ cases per device)."""
import os
import sys

import pytest

import ember

sys.path.insert(0, os.path.dirname(__file__))
import opfuzz  # noqa: E402

SEED = int(os.environ.get("EMBER_FUZZ_SEED", "20261201"))
EXAMPLES = int(os.environ.get("EMBER_FUZZ_EXAMPLES", "8"))
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_every_op_fuzzed_against_pytorch(device, tmp_path):
    log = tmp_path / f"fuzz-{device}.jsonl"
    records = opfuzz.drive(device, EXAMPLES, SEED, str(log), total_timeout=1200)
    text, bad = opfuzz.summary(records)
    print(text)
    cases = sum(r.get("cases", 0) for r in records)
    assert cases >= EXAMPLES * len(opfuzz.GEN) // 2, text
    assert bad == 0, (
        f"{text}\n\nreproduce: EMBER_FUZZ_SEED={SEED} EMBER_FUZZ_EXAMPLES={EXAMPLES} "
        f"python tests/fuzz/opfuzz.py --drive --device {device} --seed {SEED} "
        f"--examples {EXAMPLES} --log /tmp/fuzz.jsonl")
