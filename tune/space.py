"""The search space of a task: sketches by Ansor's rules, knobs sampled from
ranges the `Target` gives, rendered as schedule IR.

A *sketch* is the structure of a schedule, fixed per task:

- an elementwise stage that is not an output (nor read by a `te.extern`) is
  inlined into its readers;
- a reduction whose reads reuse data (a read leaves out an output axis:
  matmul's A[i, k] serves every j) gets multi-level tiling, Ansor's CPU
  structure SSRSRS: its output loops split in three levels (outer, cache tile,
  register tile), its reduction loops in two. The accumulator is a
  `cache_write` "local" stage computed at the cache-tile loop of the stage
  that writes the result, or, where the reduction's one reader (after
  inlining) is an elementwise output of the same shape, the reduction itself
  is computed there and that reader is the copy-out (the epilogue is fused);
- other reductions and elementwise stages split their last (contiguous) axis
  for vectors; all of them fuse their outer loops into one parallel loop.

The *knobs* fill a sketch in: tile factors (perfect tiles: their product
divides the extent, so no tail guards), the vector split, `auto_unroll_max_step`
and whether the outer loop runs in parallel. Their ranges come from the
target: the register tile holds at most 3/4 of the vector registers'
elements, the cache tile's accumulators fit in half the L2, a reduction slab
of the tile's vector columns fits in L1, vector splits are divisors of the
extent up to four vectors. A config is a dict of knob values (JSON-able);
`render` writes it as a `te.schedule` op, the candidate's text.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

from ember.dialects import te_schedule as ir
from ember.tune.task import StageInfo, Task

UNROLL_STEPS = (0, 16, 64, 512)
"""`auto_unroll_max_step` choices (Ansor's CPU values): steps of a loop nest,
not an ISA fact."""


@dataclass
class Tiled:
    """A multi-level tiled reduction: `inner` computes at a loop of `outer`."""

    reduction: str
    outer: str
    inner: str
    cache: bool
    """Whether `inner` is a cache_write stage (else it is the reduction and
    `outer` its elementwise reader)."""


def _primes(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


class SearchSpace:
    """The sketch of `task` and its knobs.

    Args:
        task: the task.
    """

    def __init__(self, task: Task):
        self.task = task
        target = task.target
        self.inline: list[str] = []
        self.tiled: list[Tiled] = []
        self.roots: list[StageInfo] = []
        stages = {s.name: s for s in task.stages}
        for s in task.stages:
            if not s.output and not s.is_reduction and not s.read_by_extern:
                self.inline.append(s.name)
        fused_readers: set[str] = set()
        inner_stages: set[str] = set()
        for s in task.stages:
            if s.name in self.inline or not s.is_reduction or not s.axes:
                continue
            if not s.has_reuse() or s.read_by_extern:
                continue
            readers = self._effective_readers(s.name, stages)
            reader = stages[readers[0]] if len(readers) == 1 else None
            if (
                not s.output
                and reader is not None
                and reader.output
                and not reader.is_reduction
                and reader.shape == s.shape
                and reader.name not in fused_readers
            ):
                fused_readers.add(reader.name)
                inner_stages.add(s.name)
                self.tiled.append(Tiled(s.name, reader.name, s.name, False))
            else:
                self.tiled.append(Tiled(s.name, s.name, f"{s.name}.local", True))
        tiled = {t.reduction for t in self.tiled} | fused_readers
        self.roots = [
            s
            for s in task.stages
            if s.name not in self.inline and s.name not in tiled | inner_stages
        ]
        self.parallel_choices = [True, False] if target.num_cores > 1 else [False]
        self._stages = stages

    def _effective_readers(self, name: str, stages: dict[str, StageInfo]) -> list[str]:
        """The readers of `name` once the inlined stages are substituted."""
        out: list[str] = []
        for r in stages[name].readers:
            more = self._effective_readers(r, stages) if r in self.inline else [r]
            out += [m for m in more if m not in out]
        return out

    def _lanes(self, stage: StageInfo) -> int:
        return self.task.target.vector_lanes(stage.dtype)

    def _itemsize(self, stage: StageInfo) -> int:
        return np.dtype(stage.dtype).itemsize

    def vector_choices(self, stage: StageInfo) -> list[int]:
        """Splits of the last axis: divisors up to four vectors, and 1."""
        extent = stage.shape[-1]
        limit = 4 * self._lanes(stage)
        return [d for d in _divisors(extent) if d <= limit][-4:] or [1]

    # ---- sampling ----------------------------------------------------------

    def sample(self, rng: random.Random) -> dict:
        """A random config: every knob drawn from its range."""
        config: dict = {}
        for t in self.tiled:
            self._sample_tiles(t, rng, config)
            config[f"unroll.{t.reduction}"] = rng.choice(UNROLL_STEPS)
            config[f"parallel.{t.reduction}"] = self._sample_parallel(rng)
        for s in self.roots:
            if not s.axes:
                continue
            config[f"vec.{s.name}"] = rng.choice(self.vector_choices(s))
            config[f"unroll.{s.name}"] = rng.choice(UNROLL_STEPS)
            config[f"parallel.{s.name}"] = self._sample_parallel(rng)
        return config

    def _sample_parallel(self, rng: random.Random) -> bool:
        choices = self.parallel_choices
        return choices[0] if rng.random() < 0.8 else rng.choice(choices)

    def _sample_tiles(self, t: Tiled, rng: random.Random, config: dict) -> None:
        s = self._stages[t.reduction]
        for _ in range(100):
            for d, extent in enumerate(s.shape):
                config[f"tile.{s.name}.{d}"] = self._perfect_tile(extent, rng)
            for r, extent in enumerate(s.reduce_extents):
                config[f"rtile.{s.name}.{r}"] = rng.choice(_divisors(extent))
            if self.tile_fits(s, config):
                return
        for d in range(len(s.shape)):
            config[f"tile.{s.name}.{d}"] = [1, 1, 1]
        for r in range(len(s.reduce_extents)):
            config[f"rtile.{s.name}.{r}"] = 1

    @staticmethod
    def _perfect_tile(extent: int, rng: random.Random) -> list[int]:
        """Three inner factors whose product divides `extent`: each prime
        factor goes to one of four levels (the first is the outer loop)."""
        levels = [1, 1, 1, 1]
        for p in _primes(extent):
            levels[rng.randrange(4)] *= p
        return levels[1:]

    def tile_fits(self, s: StageInfo, config: dict) -> bool:
        """The target's bounds on a tiled reduction's knobs."""
        target = self.task.target
        lanes, size = self._lanes(s), self._itemsize(s)
        tiles = [config[f"tile.{s.name}.{d}"] for d in range(len(s.shape))]
        register = math.prod(f[2] for f in tiles)
        if register > target.vector_registers * lanes * 3 // 4:
            return False
        cache = math.prod(f[1] * f[2] for f in tiles)
        if cache * size > target.l2_bytes // 2:
            return False
        columns = tiles[-1][1] * tiles[-1][2]
        slab = math.prod(
            config[f"rtile.{s.name}.{r}"] for r in range(len(s.reduce_extents))
        )
        return slab * columns * size <= target.l1d_bytes

    def mutate(self, config: dict, rng: random.Random) -> dict:
        """`config` with one knob changed (a tile factor moved between two
        levels, or another value drawn); the bounds still hold."""
        for _ in range(20):
            new = {k: list(v) if isinstance(v, list) else v for k, v in config.items()}
            if not new:
                return new
            key = rng.choice(sorted(new))
            kind, stage, index = _knob(key)
            if kind == "tile":
                extent = self._stages[stage].shape[index]
                levels = [extent // math.prod(new[key]), *new[key]]
                src = rng.choice([i for i, v in enumerate(levels) if v > 1] or [0])
                if levels[src] > 1:
                    p = rng.choice(_primes(levels[src]))
                    dst = rng.randrange(4)
                    levels[src] //= p
                    levels[dst] *= p
                new[key] = levels[1:]
            elif kind == "rtile":
                extent = self._stages[stage].reduce_extents[index]
                new[key] = rng.choice(_divisors(extent))
            elif kind == "vec":
                new[key] = rng.choice(self.vector_choices(self._stages[stage]))
            elif kind == "unroll":
                new[key] = rng.choice(UNROLL_STEPS)
            elif kind == "parallel":
                new[key] = rng.choice(self.parallel_choices)
            if kind in ("tile", "rtile") and not self.tile_fits(
                self._stages[stage], new
            ):
                continue
            if new != config:
                return new
        return config

    def crossover(self, a: dict, b: dict, rng: random.Random) -> dict:
        """Each stage's knobs from one parent or the other."""
        out, pick = {}, {}
        for key in a:
            stage = _knob(key)[1]
            parent = pick.setdefault(stage, a if rng.random() < 0.5 else b)
            out[key] = parent.get(key, a[key])
        for t in self.tiled:
            if not self.tile_fits(self._stages[t.reduction], out):
                return a
        return out

    # ---- rendering ---------------------------------------------------------

    def render(self, config: dict) -> str:
        """The schedule IR text of `config`."""
        ops: list = [ir.ComputeInlineOp(n) for n in self.inline]
        ops += [
            ir.CacheWriteOp(t.reduction, "local", t.inner)
            for t in self.tiled
            if t.cache
        ]
        for t in self.tiled:
            ops += self._render_tiled(t, config)
        for s in self.roots:
            ops += self._render_root(s, config)
        return str(ir.ScheduleOp(ops))

    def _render_tiled(self, t: Tiled, config: dict) -> list:
        s = self._stages[t.reduction]
        outer_axes = self._stages[t.outer].axes
        inner_axes = [f"{a}.c" for a in s.axes] if t.cache else list(s.axes)
        tiles = [config[f"tile.{s.name}.{d}"] for d in range(len(s.shape))]
        ops: list = []
        outer, middle, inner = [], [], []
        for a, (f1, f2, f3) in zip(outer_axes, tiles, strict=True):
            ops.append(
                ir.SplitOp(t.outer, a, f"{a}.outer", f"{a}.inner", factor=f1 * f2 * f3)
            )
            ops.append(
                ir.SplitOp(
                    t.outer,
                    f"{a}.inner",
                    f"{a}.inner.outer",
                    f"{a}.inner.inner",
                    factor=f2 * f3,
                )
            )
            outer.append(f"{a}.outer")
            middle.append(f"{a}.inner.outer")
            inner.append(f"{a}.inner.inner")
        ops.append(ir.ReorderOp(t.outer, outer + middle + inner))
        ops += self._parallel(t.outer, outer, config[f"parallel.{s.name}"])
        if tiles[-1][1] * tiles[-1][2] > 1:
            ops.append(ir.VectorizeOp(t.outer, inner[-1]))
        ops.append(ir.ComputeAtOp(t.inner, t.outer, middle[-1]))
        data_o, data_i, red_o, red_i = [], [], [], []
        for a, (_, _, f3) in zip(inner_axes, tiles, strict=True):
            ops.append(ir.SplitOp(t.inner, a, f"{a}.outer", f"{a}.inner", factor=f3))
            data_o.append(f"{a}.outer")
            data_i.append(f"{a}.inner")
        for r, a in enumerate(s.reduce_axes):
            factor = config[f"rtile.{s.name}.{r}"]
            ops.append(
                ir.SplitOp(t.inner, a, f"{a}.outer", f"{a}.inner", factor=factor)
            )
            red_o.append(f"{a}.outer")
            red_i.append(f"{a}.inner")
        ops.append(ir.ReorderOp(t.inner, red_o + data_o + red_i + data_i))
        if tiles[-1][2] > 1:
            ops.append(ir.VectorizeOp(t.inner, data_i[-1]))
        unroll = config[f"unroll.{s.name}"]
        if unroll:
            first = (red_o + data_o)[0]
            ops.append(
                ir.PragmaOp(t.inner, first, "auto_unroll_max_step", _int(unroll))
            )
        return ops

    def _render_root(self, s: StageInfo, config: dict) -> list:
        if not s.axes:
            return []
        ops: list = []
        last = s.axes[-1]
        v = config[f"vec.{s.name}"]
        outer = list(s.axes)
        if v > 1:
            ops.append(
                ir.SplitOp(s.name, last, f"{last}.outer", f"{last}.inner", factor=v)
            )
            outer[-1] = f"{last}.outer"
            ops.append(ir.ReorderOp(s.name, [*outer, *s.reduce_axes, f"{last}.inner"]))
            ops.append(ir.VectorizeOp(s.name, f"{last}.inner"))
        ops += self._parallel(s.name, outer, config[f"parallel.{s.name}"])
        unroll = config[f"unroll.{s.name}"]
        if unroll:
            first = ".".join(outer) + ".fused" if len(outer) > 1 else outer[0]
            ops.append(ir.PragmaOp(s.name, first, "auto_unroll_max_step", _int(unroll)))
        return ops

    @staticmethod
    def _parallel(stage: str, loops: list[str], parallel: bool) -> list:
        ops: list = []
        loop = loops[0]
        if len(loops) > 1:
            loop = ".".join(loops) + ".fused"
            ops.append(ir.FuseOp(stage, loops, loop))
        if parallel:
            ops.append(ir.ParallelOp(stage, loop))
        return ops


def _knob(key: str) -> tuple[str, str, int]:
    """(kind, stage, axis index or -1) of a config key: `tile.<stage>.<d>`,
    `rtile.<stage>.<r>`, `vec.<stage>`... (stage names may hold dots)."""
    kind, rest = key.split(".", 1)
    if kind in ("tile", "rtile"):
        stage, index = rest.rsplit(".", 1)
        return kind, stage, int(index)
    return kind, rest, -1


def _int(value: int):
    from xdsl.dialects.builtin import IntegerAttr

    return IntegerAttr(value, 64)
