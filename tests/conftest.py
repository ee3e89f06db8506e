import os

# keep the suite deterministic and quiet about deprecation noise from the oracle
os.environ.setdefault("OMP_NUM_THREADS", "2")
