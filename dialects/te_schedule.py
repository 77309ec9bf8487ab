"""Schedule IR: TVM's schedule primitives as ops of the `te` dialect.

A te function may end (before `func.return`) in one `te.schedule` region that says
how its computes run. Stages are named by their `te.compute` name, loops by name
within a stage: a compute's axes are named by its block arguments (`%i` is "i"),
and every primitive that makes loops names them. `convert-te-to-loop` applies the
primitives in order; it checks that every stage and loop exists.

    te.schedule {
      te.split "C" "i" factor 32 -> "i.outer", "i.inner"
      te.vectorize "C" "i.inner"
      te.parallel "C" "i.outer"
    }
"""

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, NoTerminator
from xdsl.utils.exceptions import VerifyException

SCOPES = ("global", "shared", "local")
THREAD_TAGS = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
    "vthread",
)


def _names(attr: ArrayAttr[StringAttr]) -> list[str]:
    return [a.data for a in attr.data]


@irdl_op_definition
class ScheduleOp(IRDLOperation):
    """The schedule of the enclosing te function, applied in order.

    te.schedule {
      te.unroll "C" "k"
    }
    """

    name = "te.schedule"

    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(self, primitives: list[IRDLOperation] | Region | None = None):
        if not isinstance(primitives, Region):
            primitives = Region(Block(primitives or []))
        super().__init__(regions=[primitives])

    def verify_(self) -> None:
        for op in self.body.block.ops:
            if not isinstance(op, _Primitive):
                raise VerifyException(
                    f"expected only schedule primitives in te.schedule, got {op.name}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.body.block.ops:
            printer.print_region(self.body, print_entry_block_args=False)
        else:
            printer.print_string("{")
            printer.print_string("\n")
            printer.print_string("}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> "ScheduleOp":
        # `te.schedule {}` parses as a region without blocks; an empty schedule
        # still has its (empty) block, as the single-block region requires.
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        op = cls(region)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


class _Primitive(IRDLOperation):
    """A primitive applied to the loops of one stage."""

    stage = prop_def(StringAttr)

    traits = lazy_traits_def(lambda: (HasParent(ScheduleOp),))

    def _axis_names(self) -> list[str]:
        return []

    def verify_(self) -> None:
        for name in (self.stage.data, *self._axis_names()):
            if not name:
                raise VerifyException("expected non-empty stage and loop names")


@irdl_op_definition
class SplitOp(_Primitive):
    """Split loop `axis` into `outer` and `inner`; inner runs `factor` times, or
    outer runs `nparts` times.

    te.split "C" "i" factor 32 -> "i.outer", "i.inner"
    """

    name = "te.split"

    axis = prop_def(StringAttr)
    factor = opt_prop_def(IntegerAttr[I64])
    nparts = opt_prop_def(IntegerAttr[I64])
    outer = prop_def(StringAttr)
    inner = prop_def(StringAttr)

    assembly_format = (
        "$stage $axis (`factor` $factor^)? (`nparts` $nparts^)? "
        "`->` $outer `,` $inner attr-dict"
    )

    def __init__(
        self, stage: str, axis: str, outer: str, inner: str, *, factor=None, nparts=None
    ):
        props: dict[str, Attribute] = {
            "stage": StringAttr(stage),
            "axis": StringAttr(axis),
            "outer": StringAttr(outer),
            "inner": StringAttr(inner),
        }
        if factor is not None:
            props["factor"] = IntegerAttr(factor, 64)
        if nparts is not None:
            props["nparts"] = IntegerAttr(nparts, 64)
        super().__init__(properties=props)

    def _axis_names(self) -> list[str]:
        return [self.axis.data, self.outer.data, self.inner.data]

    @property
    def amount(self) -> int:
        # not `factor or nparts`: an IntegerAttr of 0 is falsy
        attr = self.factor if self.factor is not None else self.nparts
        assert attr is not None
        return attr.value.data

    def verify_(self) -> None:
        super().verify_()
        if (self.factor is None) == (self.nparts is None):
            raise VerifyException("expected exactly one of factor and nparts")
        if self.amount <= 0:
            raise VerifyException(f"expected a positive split, got {self.amount}")
        if self.outer.data == self.inner.data:
            raise VerifyException(
                f"expected distinct names for the outer and inner loops, got "
                f"'{self.outer.data}' twice"
            )


@irdl_op_definition
class FuseOp(_Primitive):
    """Fuse adjacent loops, outermost first, into one.

    te.fuse "C" ["i", "j"] -> "i.j.fused"
    """

    name = "te.fuse"

    axes = prop_def(ArrayAttr[StringAttr])
    fused = prop_def(StringAttr)

    assembly_format = "$stage $axes `->` $fused attr-dict"

    def __init__(self, stage: str, axes: list[str], fused: str):
        super().__init__(
            properties={
                "stage": StringAttr(stage),
                "axes": ArrayAttr([StringAttr(a) for a in axes]),
                "fused": StringAttr(fused),
            }
        )

    def _axis_names(self) -> list[str]:
        return [*_names(self.axes), self.fused.data]

    def verify_(self) -> None:
        super().verify_()
        if len(self.axes.data) < 2:
            raise VerifyException(
                f"expected at least two loops to fuse, got {len(self.axes.data)}"
            )


@irdl_op_definition
class ReorderOp(_Primitive):
    """Put the given loops in this order, in the positions they occupy.

    te.reorder "C" ["k", "i.inner"]
    """

    name = "te.reorder"

    axes = prop_def(ArrayAttr[StringAttr])

    assembly_format = "$stage $axes attr-dict"

    def __init__(self, stage: str, axes: list[str]):
        super().__init__(
            properties={
                "stage": StringAttr(stage),
                "axes": ArrayAttr([StringAttr(a) for a in axes]),
            }
        )

    def _axis_names(self) -> list[str]:
        return _names(self.axes)

    def verify_(self) -> None:
        super().verify_()
        names = _names(self.axes)
        if len(set(names)) != len(names):
            raise VerifyException(f"expected distinct loops, got {names}")


class _Annotation(_Primitive):
    """Marks how one loop runs."""

    axis = prop_def(StringAttr)

    assembly_format = "$stage $axis attr-dict"

    def __init__(self, stage: str, axis: str):
        super().__init__(
            properties={"stage": StringAttr(stage), "axis": StringAttr(axis)}
        )

    def _axis_names(self) -> list[str]:
        return [self.axis.data]


@irdl_op_definition
class VectorizeOp(_Annotation):
    """Run a loop as SIMD lanes.

    te.vectorize "C" "i.inner"
    """

    name = "te.vectorize"


@irdl_op_definition
class ParallelOp(_Annotation):
    """Run the iterations of a loop on the thread pool.

    te.parallel "C" "i.outer"
    """

    name = "te.parallel"


@irdl_op_definition
class UnrollOp(_Annotation):
    """Unroll a loop completely.

    te.unroll "C" "k"
    """

    name = "te.unroll"


@irdl_op_definition
class PragmaOp(_Primitive):
    """Attach a pragma to a loop; `auto_unroll_max_step` unrolls every loop
    inside it whose whole trip count is at most the value.

    te.pragma "C" "i.outer" "auto_unroll_max_step" = 16
    """

    name = "te.pragma"

    axis = prop_def(StringAttr)
    key = prop_def(StringAttr)
    value = opt_prop_def(Attribute)

    assembly_format = "$stage $axis $key (`=` $value^)? attr-dict"

    def __init__(self, stage: str, axis: str, key: str, value: Attribute | None):
        props: dict[str, Attribute] = {
            "stage": StringAttr(stage),
            "axis": StringAttr(axis),
            "key": StringAttr(key),
        }
        if value is not None:
            props["value"] = value
        super().__init__(properties=props)

    def _axis_names(self) -> list[str]:
        return [self.axis.data, self.key.data]

    def verify_(self) -> None:
        super().verify_()
        if self.value is not None and not isinstance(
            self.value, IntegerAttr | StringAttr
        ):
            raise VerifyException(
                f"expected an integer or string pragma value, got {self.value}"
            )


@irdl_op_definition
class BindOp(_Primitive):
    """Bind a loop to a GPU thread axis; recorded on the loop for GPU targets.

    te.bind "C" "i.outer" "blockIdx.x"
    """

    name = "te.bind"

    axis = prop_def(StringAttr)
    thread = prop_def(StringAttr)

    assembly_format = "$stage $axis $thread attr-dict"

    def __init__(self, stage: str, axis: str, thread: str):
        super().__init__(
            properties={
                "stage": StringAttr(stage),
                "axis": StringAttr(axis),
                "thread": StringAttr(thread),
            }
        )

    def _axis_names(self) -> list[str]:
        return [self.axis.data]

    def verify_(self) -> None:
        super().verify_()
        if self.thread.data not in THREAD_TAGS:
            raise VerifyException(
                f"expected a thread axis ({', '.join(THREAD_TAGS)}), "
                f"got '{self.thread.data}'"
            )


@irdl_op_definition
class ComputeAtOp(_Primitive):
    """Compute stage `stage` inside loop `axis` of stage `target`: only the part
    one iteration of that loop needs.

    te.compute_at "B" at "C" "i.outer"
    """

    name = "te.compute_at"

    target = prop_def(StringAttr)
    axis = prop_def(StringAttr)

    assembly_format = "$stage `at` $target $axis attr-dict"

    def __init__(self, stage: str, target: str, axis: str):
        super().__init__(
            properties={
                "stage": StringAttr(stage),
                "target": StringAttr(target),
                "axis": StringAttr(axis),
            }
        )

    def _axis_names(self) -> list[str]:
        return [self.target.data, self.axis.data]


@irdl_op_definition
class ComputeInlineOp(_Primitive):
    """Substitute a stage's expression into every stage that reads it.

    te.compute_inline "B"
    """

    name = "te.compute_inline"

    assembly_format = "$stage attr-dict"

    def __init__(self, stage: str):
        super().__init__(properties={"stage": StringAttr(stage)})


@irdl_op_definition
class ComputeRootOp(_Primitive):
    """Compute a stage whole at the top of the function (the default).

    te.compute_root "B"
    """

    name = "te.compute_root"

    assembly_format = "$stage attr-dict"

    def __init__(self, stage: str):
        super().__init__(properties={"stage": StringAttr(stage)})


class _Cache(_Primitive):
    scope = prop_def(StringAttr)
    result = prop_def(StringAttr)

    def _axis_names(self) -> list[str]:
        return [self.result.data]

    def verify_(self) -> None:
        super().verify_()
        if self.scope.data not in SCOPES:
            raise VerifyException(
                f"expected scope global, shared or local, got '{self.scope.data}'"
            )


@irdl_op_definition
class CacheReadOp(_Cache):
    """A new stage `result` copying tensor `stage` into a `scope` buffer; the
    `readers` read the copy instead.

    te.cache_read "A" "local" readers ["C"] -> "A.local"
    """

    name = "te.cache_read"

    readers = prop_def(ArrayAttr[StringAttr])

    assembly_format = "$stage $scope `readers` $readers `->` $result attr-dict"

    def __init__(self, tensor: str, scope: str, readers: list[str], result: str):
        super().__init__(
            properties={
                "stage": StringAttr(tensor),
                "scope": StringAttr(scope),
                "readers": ArrayAttr([StringAttr(r) for r in readers]),
                "result": StringAttr(result),
            }
        )

    def _axis_names(self) -> list[str]:
        return [*super()._axis_names(), *_names(self.readers)]

    def verify_(self) -> None:
        super().verify_()
        if not self.readers.data:
            raise VerifyException("expected at least one reader")


@irdl_op_definition
class CacheWriteOp(_Cache):
    """A new stage `result` computing stage `stage`'s expression into a `scope`
    buffer; `stage` then copies it out. Its axes are `stage`'s, suffixed ".c".

    te.cache_write "C" "local" -> "C.local"
    """

    name = "te.cache_write"

    assembly_format = "$stage $scope `->` $result attr-dict"

    def __init__(self, stage: str, scope: str, result: str):
        super().__init__(
            properties={
                "stage": StringAttr(stage),
                "scope": StringAttr(scope),
                "result": StringAttr(result),
            }
        )


SCHEDULE_OPS: list[type[IRDLOperation]] = [
    ScheduleOp,
    SplitOp,
    FuseOp,
    ReorderOp,
    VectorizeOp,
    ParallelOp,
    UnrollOp,
    PragmaOp,
    BindOp,
    ComputeAtOp,
    ComputeInlineOp,
    ComputeRootOp,
    CacheReadOp,
    CacheWriteOp,
]
