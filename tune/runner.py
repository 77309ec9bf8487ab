"""The runner process: loads candidate libraries and times them, apart from the
tuner, so that a kernel that crashes or hangs takes only this process down.

    python -m ember.tune.runner      # JSON lines in on stdin, out on stdout

It imports the runtime only (ctypes and numpy). It prints `{"ready": true}`
once started, then answers each request line with one line:

    {"lib": "c3.so", "entry": "kernel", "inputs": "inputs.npz",
     "reference": "reference.npz" | null, "save": "reference.npz" | null,
     "rtol": 0.001, "number": 1, "repeat": 3, "min_repeat_ms": 20}
    -> {"costs": [seconds per call, one per repeat]}
    |  {"error": "wrong" | "run", "message": "..."}

The kernel runs once on the inputs (arrays `a0, a1, ...` of the npz, outputs
zeroed), its outputs are compared with the reference (or saved as it), then
`time_evaluator` times it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

BF16_ROUNDING = 2.0**-7
"""Two units in the last place of a bfloat16: a reordered float32 sum may
round to the neighbouring bfloat16."""


def check(outputs: list[np.ndarray], reference: list[np.ndarray], rtol: float) -> str:
    """ "" when `outputs` match `reference`, else why not. Integers and bools
    must be equal; floats within `rtol` of the reference's largest magnitude
    (a reordered sum rounds differently), NaN where the reference has NaN.
    uint16 outputs are bfloat16 bits (the activations a bfloat16 compilation
    stores between convolutions): compared as the float32s they hold, within
    `BF16_ROUNDING`."""
    for n, (got, want) in enumerate(zip(outputs, reference, strict=True)):
        if got.shape != want.shape or got.dtype != want.dtype:
            return (
                f"output {n}: {got.dtype}{got.shape}, expected {want.dtype}{want.shape}"
            )
        if want.dtype == np.uint16:
            got, want = (
                (a.astype(np.uint32) << 16).view(np.float32) for a in (got, want)
            )
            rtol = max(rtol, BF16_ROUNDING)
        if want.dtype.kind != "f":
            bad = np.flatnonzero(got != want)
            if bad.size:
                return f"output {n}: {bad.size} elements differ (first at {bad[0]})"
            continue
        scale = max(1.0, float(np.nanmax(np.abs(want), initial=0.0)))
        close = np.isclose(got, want, rtol=rtol, atol=rtol * scale, equal_nan=True)
        if not close.all():
            at = int(np.flatnonzero(~close)[0])
            diff = float(np.nanmax(np.abs(got.astype(np.float64) - want)))
            return (
                f"output {n}: {int((~close).sum())} elements differ, max "
                f"|diff| {diff:.3g} (first at {at}: {got.flat[at]!r} vs "
                f"{want.flat[at]!r})"
            )
    return ""


def compare_or_save(results: list[np.ndarray], request: dict) -> dict | None:
    """Check a candidate's outputs against the request's "reference" file, or
    save them as the "save" file; the "wrong" answer when they differ."""
    if request.get("reference"):
        with np.load(request["reference"]) as ref:
            why = check(
                results, [ref[f"o{n}"] for n in range(len(results))], request["rtol"]
            )
        if why:
            return {"error": "wrong", "message": why}
    if request.get("save"):
        arrays: dict[str, Any] = {f"o{n}": r for n, r in enumerate(results)}
        np.savez(request["save"], **arrays)
    return None


def run(request: dict) -> dict:
    from ember.runtime import cpu, load_module

    module = load_module(request["lib"])
    entry = request["entry"]
    with np.load(request["inputs"]) as data:
        arrays = [data[f"a{n}"].copy() for n in range(len(data.files))]
    outputs = request["outputs"]
    module[entry](*arrays)
    results = [arrays[n] for n in outputs]
    wrong = compare_or_save(results, request)
    if wrong is not None:
        return wrong
    timer = module.time_evaluator(
        entry,
        cpu(),
        number=request.get("number", 1),
        repeat=request.get("repeat", 3),
        min_repeat_ms=request.get("min_repeat_ms", 0),
    )
    return {"costs": list(timer(*arrays).results)}


def main() -> None:
    import faulthandler

    faulthandler.enable()  # a crash leaves its Python stack on stderr for the tuner
    out = sys.stdout
    sys.stdout = sys.stderr  # only answers go to the tuner's pipe
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            answer = run(json.loads(line))
        except Exception as e:  # any failure is the candidate's, reported
            answer = {"error": "run", "message": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
