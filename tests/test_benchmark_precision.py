"""benchmarks/precision.py --quick: every runtime classifies the fixed images
and is timed; ember's int8 agrees with onnxruntime's float32 on most of them."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "precision.py"
ROW = re.compile(
    r"^  (ember (?:f32|int8)|onnxruntime \w+|openvino \w+)\s+(\d+\.\d+)\s+(\d+\.\d\d)x\s+(\d+)/16$",
    re.M,
)


@pytest.mark.slow
def test_precision_quick_times_and_checks_every_runtime():
    pytest.importorskip("onnxruntime")
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--model", "mobilenet_v2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {m[0]: m for m in ROW.findall(done.stdout)}
    assert {"ember f32", "ember int8", "onnxruntime f32", "onnxruntime int8"} <= set(
        rows
    ), done.stdout
    assert rows["ember f32"][2] == "1.00"
    assert int(rows["ember int8"][3]) >= 12, done.stdout  # top-1 of 16 images
