"""Compile workers die with their parent: stopping `ember-compile` (even with
kill -9) leaves no worker processes behind (issue 16)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.test_compile_model import BLOCK

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's"
)


def _children(pid: int) -> set[int]:
    """Live (not zombie) processes whose parent is `pid`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_workers_die_when_the_compiler_is_killed(tmp_path):
    script = textwrap.dedent(
        f"""
        import numpy as np
        from ember.compiler.model import compile_model
        from ember.backends.kernel_cache import CompileCache

        rng = np.random.default_rng(0)
        shapes = {{"w1": (16, 8, 3, 3), "b1": (16,), "w2": (16, 16, 3, 3),
                   "w3": (16, 16, 3, 3), "s": (16, 1, 1)}}
        params = {{k: rng.standard_normal(v).astype("float32")
                   for k, v in shapes.items()}}
        compile_model({BLOCK!r}, params, opt_level=0, workers=2,
                      cache=CompileCache({str(tmp_path)!r}))
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and time.monotonic() < deadline:
            assert parent.poll() is None, "compiled before its workers were seen"
            workers |= _children(parent.pid)
            time.sleep(0.05)
        assert workers, "no compile workers started"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 5
        while any(map(_alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [w for w in workers if _alive(w)]
        assert not left, f"workers {left} outlived their killed parent"
    finally:
        parent.kill()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
