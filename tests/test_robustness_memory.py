"""Building frees what it allocates: repeated `ember.build`s leave resident
memory where it was (issue 16: every build leaked ~100 KiB of LLVM passes, so
150 builds grew 15 MiB against the 3 MiB allowed)."""

import subprocess
import sys
import textwrap

import pytest

LIMIT_PER_1000 = 20 * 2**20
"""Resident growth allowed over 1,000 builds, after a warm-up."""

SCRIPT = textwrap.dedent(
    """
    import gc, os, sys
    import ember
    from ember import te

    def rss():
        return int(open("/proc/self/statm").read().split()[1]) * os.sysconf(
            "SC_PAGE_SIZE")

    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] * 2.0 + 1.0, name="C")
    s = te.create_schedule(C.op)
    for _ in range(20):  # caches, pools, first-build costs
        ember.build(s, [A, C], name="k")
    gc.collect()
    before = rss()
    for _ in range(int(sys.argv[1])):
        ember.build(s, [A, C], name="k")
    gc.collect()
    print(rss() - before)
    """
)


def _growth(builds: int) -> int:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(builds)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/statm")
@pytest.mark.parametrize(
    "builds", [150, pytest.param(1000, marks=pytest.mark.slow)], ids=str
)
def test_builds_do_not_grow_resident_memory(builds):
    growth = _growth(builds)
    limit = LIMIT_PER_1000 * builds // 1000
    assert growth <= limit, (
        f"{builds} builds grew resident memory by {growth / 2**20:.1f} MiB "
        f"(limit {limit / 2**20:.1f} MiB)"
    )
