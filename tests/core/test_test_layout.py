"""The suite's own layout: test modules are imported by basename (the test folders are
not packages), so two ``test_x.py`` files in different folders break collection of the
whole run."""
import collections
import os

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_test_module_basenames_are_unique():
    seen = collections.defaultdict(list)
    for root, _dirs, files in os.walk(TESTS):
        for f in files:
            if f.startswith("test_") and f.endswith(".py"):
                seen[f].append(os.path.relpath(os.path.join(root, f), TESTS))
    assert not {k: v for k, v in seen.items() if len(v) > 1}
