"""The schedule primitives as passes: `te-split`, `te-tile`, `te-fuse`, ...

Each pass appends its primitive to the `te.schedule` of every te function that has
the named stage (creating the region if needed); `convert-te-to-loop` applies it.
They are small enough to share one file: each is a frozen dataclass whose fields
are the primitive's options, and whose `primitives` method builds the ops.

    ember-opt mm.mlir -p 'te-split{stage=C axis=i factor=32},te-vectorize{stage=C axis=i.inner}'

Before:

    %C = te.compute "C" (%i) -> tensor<100xf32> { ... }
    func.return %C : tensor<100xf32>

After `te-split{stage=C axis=i factor=32}`:

    %C = te.compute "C" (%i) -> tensor<100xf32> { ... }
    te.schedule {
      te.split "C" "i" factor 32 -> "i.outer", "i.inner"
    }
    func.return %C : tensor<100xf32>

Names of new loops follow TVM: `<axis>.outer`/`<axis>.inner` for split, the fused
names joined by "." plus ".fused" for fuse, `<stage>.<scope>` for cache stages.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.irdl import IRDLOperation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException, VerifyException

from ember.dialects import te
from ember.dialects import te_schedule as sch


def _names(value: str | tuple[str, ...]) -> list[str]:
    """A list option: `axes=i,j` arrives as a tuple, `axes="i.outer,j"` (quoted,
    for names with dots) as one string."""
    parts = value.split(",") if isinstance(value, str) else value
    return [n.strip() for n in parts if n.strip()]


@dataclass(frozen=True)
class _PrimitivePass(ModulePass):
    stage: str = ""

    def primitives(self) -> list[IRDLOperation]:
        raise NotImplementedError

    def _require(self, **options: object) -> None:
        for option, value in {"stage": self.stage, **options}.items():
            if value in ("", None, 0):
                raise PassFailedException(
                    f"{self.name}: expected option '{option.replace('_', '-')}'"
                )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self._require()
        self.primitives()  # missing or bad options fail before the IR is read
        found = False
        for function in op.walk():
            if not isinstance(function, func.FuncOp) or function.is_declaration:
                continue
            names = {
                c.tensor_name.data
                for c in function.body.block.ops
                if isinstance(c, te.ComputeOp)
            }
            schedule = next(
                (s for s in function.body.block.ops if isinstance(s, sch.ScheduleOp)),
                None,
            )
            if schedule is not None:
                names |= _made_stages(schedule)
            if self.stage not in names and not self._names_tensor(function):
                continue
            found = True
            if schedule is None:
                schedule = sch.ScheduleOp()
                last = function.body.block.last_op
                assert last is not None
                Rewriter.insert_op(schedule, InsertPoint.before(last))
            primitives = self.primitives()
            schedule.body.block.add_ops(primitives)
            for primitive in primitives:
                try:
                    primitive.verify()
                except VerifyException as error:
                    raise PassFailedException(f"{self.name}: {error}") from error
        if not found:
            raise PassFailedException(
                f"{self.name}: no function has a stage '{self.stage}'"
            )

    def _names_tensor(self, function: func.FuncOp) -> bool:
        return False


def _made_stages(schedule: sch.ScheduleOp) -> set[str]:
    return {
        op.result.data
        for op in schedule.body.block.ops
        if isinstance(op, sch.CacheReadOp | sch.CacheWriteOp)
    }


@dataclass(frozen=True)
class SplitPass(_PrimitivePass):
    """Split a loop by `factor` (inner extent) or `nparts` (outer extent)."""

    name = "te-split"

    axis: str = ""
    factor: int = 0
    nparts: int = 0

    def primitives(self) -> list[IRDLOperation]:
        self._require(axis=self.axis)
        if (self.factor > 0) == (self.nparts > 0):
            raise PassFailedException(
                f"te-split: expected exactly one positive factor or nparts, got "
                f"factor={self.factor} nparts={self.nparts}"
            )
        return [
            sch.SplitOp(
                self.stage,
                self.axis,
                f"{self.axis}.outer",
                f"{self.axis}.inner",
                factor=self.factor or None,
                nparts=self.nparts or None,
            )
        ]


@dataclass(frozen=True)
class TilePass(_PrimitivePass):
    """Split loops `x` and `y` and order them (x.outer, y.outer, x.inner, y.inner)."""

    name = "te-tile"

    x: str = ""
    y: str = ""
    x_factor: int = 0
    y_factor: int = 0

    def primitives(self) -> list[IRDLOperation]:
        self._require(
            x=self.x, y=self.y, x_factor=self.x_factor, y_factor=self.y_factor
        )
        x, y = self.x, self.y
        if x == y:
            raise PassFailedException(
                f"te-tile: expected two different loops x and y, got '{x}' twice"
            )
        return [
            sch.SplitOp(
                self.stage, x, f"{x}.outer", f"{x}.inner", factor=self.x_factor
            ),
            sch.SplitOp(
                self.stage, y, f"{y}.outer", f"{y}.inner", factor=self.y_factor
            ),
            sch.ReorderOp(
                self.stage, [f"{x}.outer", f"{y}.outer", f"{x}.inner", f"{y}.inner"]
            ),
        ]


@dataclass(frozen=True)
class FusePass(_PrimitivePass):
    """Fuse adjacent loops (`axes=a,b`, outermost first) into one."""

    name = "te-fuse"

    axes: str | tuple[str, ...] = ""

    def primitives(self) -> list[IRDLOperation]:
        self._require(axes=self.axes)
        axes = _names(self.axes)
        return [sch.FuseOp(self.stage, axes, ".".join(axes) + ".fused")]


@dataclass(frozen=True)
class ReorderPass(_PrimitivePass):
    """Order the given loops (`axes=k,i.inner`) in the positions they occupy."""

    name = "te-reorder"

    axes: str | tuple[str, ...] = ""

    def primitives(self) -> list[IRDLOperation]:
        self._require(axes=self.axes)
        return [sch.ReorderOp(self.stage, _names(self.axes))]


@dataclass(frozen=True)
class VectorizePass(_PrimitivePass):
    """Run loop `axis` as SIMD lanes."""

    name = "te-vectorize"

    axis: str = ""

    def primitives(self) -> list[IRDLOperation]:
        self._require(axis=self.axis)
        return [sch.VectorizeOp(self.stage, self.axis)]


@dataclass(frozen=True)
class ParallelPass(_PrimitivePass):
    """Run the iterations of loop `axis` on the thread pool."""

    name = "te-parallel"

    axis: str = ""

    def primitives(self) -> list[IRDLOperation]:
        self._require(axis=self.axis)
        return [sch.ParallelOp(self.stage, self.axis)]


@dataclass(frozen=True)
class UnrollPass(_PrimitivePass):
    """Unroll loop `axis` completely."""

    name = "te-unroll"

    axis: str = ""

    def primitives(self) -> list[IRDLOperation]:
        self._require(axis=self.axis)
        return [sch.UnrollOp(self.stage, self.axis)]


@dataclass(frozen=True)
class PragmaPass(_PrimitivePass):
    """Attach pragma `key` (with an integer `value`) to loop `axis`."""

    name = "te-pragma"

    axis: str = ""
    key: str = ""
    value: int | None = None

    def primitives(self) -> list[IRDLOperation]:
        self._require(axis=self.axis, key=self.key)
        value = None if self.value is None else IntegerAttr(self.value, 64)
        return [sch.PragmaOp(self.stage, self.axis, self.key, value)]


@dataclass(frozen=True)
class BindPass(_PrimitivePass):
    """Bind loop `axis` to GPU thread axis `thread` (e.g. threadIdx.x)."""

    name = "te-bind"

    axis: str = ""
    thread: str = ""

    def primitives(self) -> list[IRDLOperation]:
        self._require(axis=self.axis, thread=self.thread)
        return [sch.BindOp(self.stage, self.axis, self.thread)]


@dataclass(frozen=True)
class ComputeAtPass(_PrimitivePass):
    """Compute `stage` inside loop `axis` of stage `target`."""

    name = "te-compute-at"

    target: str = ""
    axis: str = ""

    def primitives(self) -> list[IRDLOperation]:
        self._require(target=self.target, axis=self.axis)
        return [sch.ComputeAtOp(self.stage, self.target, self.axis)]


@dataclass(frozen=True)
class ComputeInlinePass(_PrimitivePass):
    """Substitute `stage`'s expression into its readers."""

    name = "te-compute-inline"

    def primitives(self) -> list[IRDLOperation]:
        self._require()
        return [sch.ComputeInlineOp(self.stage)]


@dataclass(frozen=True)
class ComputeRootPass(_PrimitivePass):
    """Compute `stage` whole at the top of its function."""

    name = "te-compute-root"

    def primitives(self) -> list[IRDLOperation]:
        self._require()
        return [sch.ComputeRootOp(self.stage)]


@dataclass(frozen=True)
class CacheReadPass(_PrimitivePass):
    """Copy tensor `stage` into a `scope` buffer read by `readers` (a,b)."""

    name = "te-cache-read"

    scope: str = "local"
    readers: str | tuple[str, ...] = ""

    def primitives(self) -> list[IRDLOperation]:
        self._require(readers=self.readers)
        result = f"{self.stage}.{self.scope}"
        return [sch.CacheReadOp(self.stage, self.scope, _names(self.readers), result)]

    def _names_tensor(self, function: func.FuncOp) -> bool:
        attrs = function.arg_attrs
        names = {
            a.data.get("ember.name", StringAttr("")).data  # type: ignore[union-attr]
            for a in (attrs.data if attrs is not None else ())
        }
        hints = {arg.name_hint for arg in function.body.block.args}
        return self.stage in names or self.stage in hints


@dataclass(frozen=True)
class CacheWritePass(_PrimitivePass):
    """Compute `stage` into a new `scope` stage that it then copies out."""

    name = "te-cache-write"

    scope: str = "local"

    def primitives(self) -> list[IRDLOperation]:
        self._require()
        return [sch.CacheWriteOp(self.stage, self.scope, f"{self.stage}.{self.scope}")]


PRIMITIVE_PASSES = (
    SplitPass,
    TilePass,
    FusePass,
    ReorderPass,
    VectorizePass,
    ParallelPass,
    UnrollPass,
    PragmaPass,
    BindPass,
    ComputeAtPass,
    ComputeInlinePass,
    ComputeRootPass,
    CacheReadPass,
    CacheWritePass,
)
