"""benchmarks/layers_misc.py runs: every layer's ember row is checked against
numpy and timed (a wrong kernel would be a WRONG row), the other libraries
are right or not installed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "layers_misc.py"
LAYERS = 8


def test_layers_misc_quick_checks_every_row():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--threads", "1", "--repeat", "1",
         "--min-time", "0.001"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout  # fmt: skip
    rows = re.findall(
        r"^(onnxruntime|torch|ember)\s+(WRONG|failed|not installed|\d+\.\d+)", out, re.M
    )
    assert len(rows) == 3 * LAYERS, out
    for name, status in rows:
        if name == "ember":
            assert status[0].isdigit(), out
        else:
            assert status[0].isdigit() or status == "not installed", out
