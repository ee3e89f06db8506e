"""``python -m ember.testing mydevice``: run the conformance kit on ``mydevice``."""
import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
