# lit configuration for ember's FileCheck tests.
import os

import lit.formats

config.name = "ember"
config.test_format = lit.formats.ShTest(preamble_commands=[])
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PATH"] = os.environ["PATH"]
for var in ("PYTHONPATH", "HOME", "EMBER_NUM_THREADS", "OMP_NUM_THREADS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
