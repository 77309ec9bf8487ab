"""Bound inference and loop-nest emission for scheduled stages (not a pass).

`convert-te-to-loop` hands each function's scheduled `Stage`s to `NestEmitter`.
Domains are inferred consumers first: a root stage covers its whole tensor; a stage
attached inside loop `v` of stage `S` covers what `S` (and the stages attached
inside `v`) read in one iteration of `v`, an affine region whose offset depends on
the loops outside `v` and whose extent is a constant. Then every root stage is
emitted in order: its leaf loops, each attached stage at the start of its loop's
body, a reduction's initialization just outside its first reduction loop, guards
where a split does not divide or a region leaves its tensor, and the body with
index arithmetic rebuilt from simplified affine forms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    i1,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ember.dialects import loop, te
from ember.dialects.graph_shapes import dims_of
from ember.passes import affine
from ember.passes.affine import SYMBOLIC_RANGE, Extent, Form
from ember.passes.convert_loop_to_scf import MAX_UNROLL_COPIES
from ember.passes.func_packed_abi import DIMS_ATTR
from ember.passes.te_reductions import combine, identity
from ember.passes.te_stages import (
    IterVar,
    ScheduleError,
    Split,
    Stage,
    constant_attr,
    extern_reader,
    split_extents,
)
from ember.runtime.shape_expr import (
    Sym,
    SymExpr,
    sym_eq,
    sym_floordiv,
    sym_le,
    sym_max,
)


@dataclass(eq=False)
class Domain:
    """Where a stage's buffer sits in its tensor, and its loops' variables."""

    offsets: list[Form]
    extents: list[Extent]
    vars: dict[IterVar, affine.Var] = field(default_factory=dict[IterVar, affine.Var])
    roots: list[Form] = field(default_factory=list[Form])
    """Each root axis (data, then reduction) in tensor coordinates."""
    guards: list[tuple[Form, int, Extent]] = field(
        default_factory=list[tuple[Form, int, Extent]]
    )
    """(form, low, high): the body runs only where low <= form < high."""


@dataclass(eq=False)
class BoundsChecks:
    """The bounds-checked build mode: every load whose index bound inference
    cannot prove in range is checked.

    A failed check loads element 0 instead (the load never leaves its buffer)
    and records its site in the function's error cell, an i32 that is 0 while
    every check passed; the function then returns the site's message
    (`convert-te-to-loop{bounds-check=true}`).
    """

    cell: Callable[[], SSAValue]
    """The function's error cell (`memref<1xi32>`), made on first use."""
    name_of: Callable[[SSAValue], str]
    """A tensor's name for messages."""
    messages: list[str] = field(default_factory=list[str])
    """The message of each site; site k (from 1) is messages[k - 1]."""


class NestEmitter:
    """Emits the loop nests of one function's stages."""

    def __init__(
        self,
        stages: list[Stage],
        buffer_of: Callable[[Stage], SSAValue | None],
        tensor_buffer: Callable[[SSAValue], SSAValue | None],
        constant: Callable[[int], SSAValue],
        constant_attr: Callable[[Attribute, str], SSAValue],
        checks: BoundsChecks | None = None,
        size: Callable[[Extent], SSAValue] | None = None,
        symbols: dict[SSAValue, str] | None = None,
        dims: Callable[[SSAValue], tuple[Extent, ...]] | None = None,
    ):
        """`size` gives a symbolic extent's value (computed once, at the
        function's entry); `symbols` names the function's size symbol
        arguments, which bodies may read; `dims` gives a tensor's dims
        (its buffer's type may no longer name them)."""
        self.stages = stages

        def static(extent: Extent) -> SSAValue:
            assert isinstance(extent, int), f"no size for the extent {extent}"
            return constant(extent)

        self.size = size or static
        self.dims = dims or (lambda value: tuple(dims_of(value.type)))
        self.symbols = {
            value: affine.Var(name, Sym(name) + 1, value)
            for value, name in (symbols or {}).items()
        }
        self.checks = checks
        self.buffer_of = buffer_of
        self.tensor_buffer = tensor_buffer
        self.constant = constant
        self.constant_attr = constant_attr
        self.index = affine.Emitter(constant, self.size)
        self.domains: dict[Stage, Domain] = {}
        self.buffers: dict[SSAValue, tuple[SSAValue, Domain | None]] = {}
        self.attached: dict[IterVar, list[Stage]] = {}
        for stage in stages:
            if stage.attach_var is not None:
                self.attached.setdefault(stage.attach_var, []).append(stage)
        for stage in reversed(stages):
            self.domains[stage] = self._infer(stage)

    # --- bound inference ---------------------------------------------------------

    def _infer(self, stage: Stage) -> Domain:
        shape: list[Extent] = list(dims_of(stage.op.output_type))
        if stage.extern:  # opaque: it writes its whole buffer
            return Domain([Form() for _ in shape], shape)
        if stage.attach is None:
            return self._domain(stage, [Form() for _ in shape], shape)
        target = stage.attach[0]
        var = stage.attach_var
        assert var is not None
        reader = extern_reader(stage.op.result)
        if reader is not None:
            raise ScheduleError(
                f"te.compute_at: stage '{stage.name}' is read by extern stage "
                f"'{reader.tensor_name.data}', which needs it whole, at the root"
            )
        position = target.leaves.index(var)
        # What runs inside one iteration of `var`: the target's body, the stages
        # attached at `var` after this one (they are emitted in order, so a
        # producer attached at the same loop comes first), those attached deeper,
        # and whatever is attached inside any of these.
        siblings = self.attached[var]
        inside = siblings[siblings.index(stage) + 1 :] + [
            s for v in target.leaves[position + 1 :] for s in self.attached.get(v, [])
        ]
        readers = [target]
        while inside:
            reader = inside.pop(0)
            readers.append(reader)
            inside += [s for v in reader.leaves for s in self.attached.get(v, [])]
        for read in _reads(stage):
            if not any(r.op.is_ancestor(read) for r in readers):
                reader = read.parent_op()
                while reader is not None and not isinstance(reader, te.ComputeOp):
                    reader = reader.parent_op()
                name = reader.tensor_name.data if reader is not None else "?"
                raise ScheduleError(
                    f"te.compute_at: stage '{stage.name}' is read by '{name}', which "
                    f"does not run inside loop '{var.name}' of stage '{target.name}'"
                )
        if any(r not in self.domains for r in readers):
            raise ScheduleError(
                f"te.compute_at: stage '{stage.name}' is attached to '{target.name}', "
                "which does not read it"
            )
        free: set[affine.Var] = set()
        target_domain = self.domains[target]
        free |= {target_domain.vars[v] for v in target.leaves[position + 1 :]}
        free |= self._relaxed(stage, target, position)
        for s in readers[1:]:
            free |= set(self.domains[s].vars.values())
        offsets: list[Form] = []
        extents: list[Extent] = []
        regions = self._read_regions(stage, readers, free)
        for d, size in enumerate(shape):
            region = regions[d]
            if region is None:
                offsets.append(Form())
                extents.append(size)
                continue
            offset, extent = region
            if sym_le(size, extent):  # the whole dim (a padded row too)
                offset, extent = Form(), size
            offsets.append(offset)
            extents.append(extent)
        return self._domain(stage, offsets, extents)

    def _relaxed(self, stage: Stage, target: Stage, position: int) -> set[affine.Var]:
        """The thread-bound loops around the attach point that `stage`'s buffer
        is shared across, so it covers all their iterations (TVM's rule: `shared`
        spans the threads of a block, `local` nothing). An attached stage of the
        default scope is, as TVM infers it there, local to the thread."""
        if stage.scope != "shared":
            return set()
        relaxed: set[affine.Var] = set()
        owner = target
        while True:
            for v in owner.leaves[: position + 1]:
                if v.thread is not None and not v.thread.startswith("blockIdx"):
                    relaxed.add(self.domains[owner].vars[v])
            if owner.attach is None or owner.attach_var is None:
                return relaxed
            owner, position = (
                owner.attach[0],
                owner.attach[0].leaves.index(owner.attach_var),
            )

    def _read_regions(
        self, stage: Stage, readers: list[Stage], free: set[affine.Var]
    ) -> list[tuple[Form, Extent] | None]:
        """Per dimension of `stage`'s tensor: (offset, extent) covering every read
        of it by `readers` while the `free` loops run, or None if unknown; the
        extent is symbolic where a free loop runs over a symbolic extent (a
        row of symbolic length)."""
        rank = stage.op.output_type.get_num_dims()
        found: list[list[tuple[Form, int, Extent]] | None] = [[] for _ in range(rank)]
        for reader in readers:
            forms = self._index_forms(reader)
            for read in reader.op.walk():
                if not isinstance(read, te.ReadOp) or read.tensor != stage.op.result:
                    continue
                for d, index in enumerate(read.indices):
                    if found[d] is None:
                        continue
                    form = forms.get(index)
                    if form is None:
                        found[d] = None
                        continue
                    fixed_vars = form.vars() - free
                    fixed, rest = form.split(fixed_vars)
                    low, high = rest.range()
                    top: Extent | None = high
                    if low <= -SYMBOLIC_RANGE // 2:  # runs down a symbolic extent
                        found[d] = None  # the whole dim
                        continue
                    if high >= SYMBOLIC_RANGE // 2:
                        top = highest(rest)
                        if top is None:
                            found[d] = None
                            continue
                    found[d].append((fixed, low, top))  # type: ignore[union-attr]
        regions: list[tuple[Form, Extent] | None] = []
        for entries in found:
            if not entries or any(e[0] != entries[0][0] for e in entries):
                regions.append(None)
                continue
            low = min(e[1] for e in entries)
            high: Extent = entries[0][2]
            for e in entries[1:]:
                high = sym_max(high, e[2])
            regions.append((entries[0][0] + low, high - low + 1))
        return regions

    def _domain(
        self, stage: Stage, offsets: list[Form], extents: list[Extent]
    ) -> Domain:
        domain = Domain(offsets, extents)
        extent: dict[IterVar, Extent] = dict(zip(stage.axes, extents, strict=True))
        for v, e in zip(stage.reduce_axes, stage.compute.extents, strict=True):
            extent[v] = e
        guards: list[tuple[IterVar, Extent]] = []
        for r in stage.relations:
            if isinstance(r, Split):
                outer, inner = split_extents(r, extent[r.parent])
                extent[r.outer], extent[r.inner] = outer, inner
                if sym_eq(outer * inner, extent[r.parent]) is not True:
                    guards.append((r.parent, extent[r.parent]))
            else:
                total: Extent = 1
                for v in r.axes:
                    total = total * extent[v]
                extent[r.fused] = total
        domain.vars = {v: affine.Var(v.name, extent[v]) for v in stage.leaves}
        form: dict[IterVar, Form] = {v: Form.of(x) for v, x in domain.vars.items()}
        for r in reversed(stage.relations):
            if isinstance(r, Split):
                step = _constant(
                    stage, extent[r.inner], f"te.split of '{r.parent.name}'"
                )
                form[r.parent] = form[r.outer] * step + form[r.inner]
            else:
                rest = form[r.fused]
                for v in reversed(r.axes[1:]):
                    form[v] = affine.mod(rest, extent[v])
                    rest = affine.floordiv(rest, extent[v])
                form[r.axes[0]] = rest
        for v, bound in guards:
            if not below(form[v], bound):
                domain.guards.append((form[v], 0, bound))
        shape = dims_of(stage.op.output_type)
        for d, v in enumerate(stage.axes):
            domain.roots.append(offsets[d] + form[v])
            if offsets[d].is_const() and not offsets[d].const:
                continue  # the split guards keep it inside the tensor
            if domain.roots[-1].range()[0] < 0 or not below(domain.roots[-1], shape[d]):
                domain.guards.append((domain.roots[-1], 0, shape[d]))
        domain.roots += [form[v] for v in stage.reduce_axes]
        return domain

    def _index_forms(self, stage: Stage) -> dict[SSAValue, Form]:
        """The affine form of every index value of `stage`'s body that has one."""
        domain = self.domains[stage]
        forms: dict[SSAValue, Form] = {
            value: Form.of(var) for value, var in self.symbols.items()
        }
        forms.update(zip(stage.op.body.block.args, domain.roots, strict=True))
        consts: dict[SSAValue, int] = {}
        for op in stage.op.body.walk():
            if op is not stage.op:
                _record(op, forms, consts)
        return forms

    # --- emission ----------------------------------------------------------------

    def emit_root(self, stage: Stage, at: InsertPoint) -> None:
        buffer = self.buffer_of(stage)
        assert buffer is not None
        self.buffers[stage.op.result] = (buffer, None)
        if isinstance(stage.op, te.ExternOp):
            self._emit_extern(stage.op, buffer, at)
        else:
            self._emit_stage(stage, at)

    def _emit_extern(self, op: te.ExternOp, buffer: SSAValue, at: InsertPoint) -> None:
        """The extern's body, on the whole buffers of its inputs and its own."""
        mapping: dict[SSAValue, SSAValue] = {op.body.block.args[-1]: buffer}
        for arg, tensor in zip(op.body.block.args, op.inputs, strict=False):
            found, domain = self.buffers.get(tensor, (self.tensor_buffer(tensor), None))
            assert found is not None and domain is None  # read whole, at the root
            mapping[arg] = found
        for inner in op.body.block.ops:
            clone = inner.clone(mapping)
            Rewriter.insert_op(clone, at)
            for old, new in zip(inner.results, clone.results, strict=True):
                mapping[old] = new

    def _emit_attached(self, stage: Stage, at: InsertPoint) -> None:
        domain = self.domains[stage]
        t = stage.op.output_type
        scope = "shared" if stage.scope == "shared" else "local"
        extents = domain.extents
        symbolic = [e for e in extents if isinstance(e, SymExpr)]
        if symbolic and scope == "shared":
            raise ScheduleError(
                f"te.compute_at: shared stage '{stage.name}' would need a buffer "
                f"of symbolic shape {list(map(str, extents))}; attach it inside "
                "the loops over the symbolic extents"
            )
        shape = [DYNAMIC_INDEX if isinstance(e, SymExpr) else e for e in extents]
        sizes = [self.size(e) for e in symbolic]
        alloc = loop.AllocOp(MemRefType(t.element_type, shape), scope, sizes)
        if symbolic:  # a row of symbolic length, computed each iteration
            names = ArrayAttr([StringAttr(str(e)) for e in symbolic])
            alloc.attributes[DIMS_ATTR] = names
        alloc.buffer.name_hint = stage.op.result.name_hint
        Rewriter.insert_op(alloc, at)
        self.buffers[stage.op.result] = (alloc.buffer, domain)
        self._emit_stage(stage, at)

    def _emit_stage(self, stage: Stage, at: InsertPoint) -> None:
        domain = self.domains[stage]
        leaves = stage.leaves
        first = next((n for n, v in enumerate(leaves) if v.reduce), len(leaves))
        at = self._loops(stage, leaves[:first], at, attach=True)
        op = stage.compute
        if op.reduce is not None:
            data = [v for v in leaves[first:] if not v.reduce]
            init_at = self._loops(stage, data, at, attach=False)
            data_vars = {domain.vars[v] for v in stage.leaves if not v.reduce}
            init_at = self._guard(domain, init_at, data_vars)
            init = self.constant_attr(identity(op), f"{op.reduce.data}_init")
            self._store(stage, init, init_at)
            at = self._loops(stage, leaves[first:], at, attach=True)
        at = self._guard(domain, at, None)
        self._body(stage, at)

    def _loops(
        self, stage: Stage, leaves: list[IterVar], at: InsertPoint, attach: bool
    ) -> InsertPoint:
        domain = self.domains[stage]
        unroll_limits = _unroll_limits(stage, domain)
        _check_unroll(stage, domain, unroll_limits)
        for v in leaves:
            x = domain.vars[v]
            end = loop.YieldOp()
            body = Block([end], arg_types=[IndexType()])
            body.args[0].name_hint = _hint(v.name)
            kind = v.kind
            if kind == "serial" and unroll_limits.get(v, False):
                kind = "unrolled"
            for_op = loop.ForOp(
                self.constant(0), self.size(x.extent), self.constant(1), body, kind
            )
            if v.thread is not None:
                for_op.attributes["ember.thread"] = StringAttr(v.thread)
            for key, value in v.pragmas.items():
                for_op.attributes[f"ember.pragma.{key}"] = value or StringAttr("")
            Rewriter.insert_op(for_op, at)
            x.value = body.args[0]
            at = InsertPoint.before(end)
            if attach:
                for inner in self.attached.get(v, []):
                    self._emit_attached(inner, at)
        return at

    def _guard(
        self, domain: Domain, at: InsertPoint, only: set[affine.Var] | None
    ) -> InsertPoint:
        conditions: list[SSAValue] = []
        for form, low, high in domain.guards:
            if only is not None and not form.vars() <= only:
                continue
            value = self.index.emit(form, at)
            lowest, highest = form.range()
            checks = []
            if lowest < low:
                checks.append(arith.CmpiOp(value, self.constant(low), "sge"))
            if isinstance(high, SymExpr) or highest >= high:
                checks.append(arith.CmpiOp(value, self.size(high), "slt"))
            for check in checks:
                Rewriter.insert_op(check, at)
                conditions.append(check.result)
        if not conditions:
            return at
        cond = conditions[0]
        for other in conditions[1:]:
            both = arith.AndIOp(cond, other)
            Rewriter.insert_op(both, at)
            cond = both.result
        end = scf.YieldOp()
        guard = scf.IfOp(cond, [], [Block([end])])
        Rewriter.insert_op(guard, at)
        return InsertPoint.before(end)

    def _store(self, stage: Stage, value: SSAValue, at: InsertPoint) -> None:
        buffer, indices = self._location(stage, at)
        Rewriter.insert_op(memref.StoreOp.get(value, buffer, indices), at)

    def _location(
        self, stage: Stage, at: InsertPoint
    ) -> tuple[SSAValue, list[SSAValue]]:
        buffer, domain = self.buffers[stage.op.result]
        own = self.domains[stage]
        rank = len(stage.axes)
        forms = own.roots[:rank]
        if domain is not None:
            forms = [f - o for f, o in zip(forms, domain.offsets, strict=True)]
        return buffer, [self.index.emit(f, at) for f in forms]

    def _body(self, stage: Stage, at: InsertPoint) -> None:
        block = stage.op.body.block
        forms = self._index_forms(stage)
        mapping: dict[SSAValue, SSAValue] = {}
        for arg, form in zip(block.args, self.domains[stage].roots, strict=True):
            mapping[arg] = self.index.emit(form, at)
        yielded = block.last_op
        assert isinstance(yielded, te.YieldOp)
        for op in list(block.ops)[:-1]:
            if op.results and op.results[0] in forms and not op.regions:
                mapping[op.results[0]] = self.index.emit(forms[op.results[0]], at)
                continue
            if isinstance(op, te.ReadOp):
                mapping[op.result] = self._load(op, forms, mapping, at)
                continue
            clone = op.clone(mapping)
            Rewriter.insert_op(clone, at)
            for old, new in zip(op.results, clone.results, strict=True):
                mapping[old] = new
            for read in [o for o in clone.walk() if isinstance(o, te.ReadOp)]:
                load = self._load(read, {}, {}, InsertPoint.before(read))
                Rewriter.replace_op(read, [], [load])
        value = mapping.get(yielded.value, yielded.value)
        if stage.compute.reduce is not None:
            buffer, indices = self._location(stage, at)
            acc = memref.LoadOp.get(buffer, indices)
            acc.res.name_hint = "acc"
            Rewriter.insert_op(acc, at)
            value = combine(stage.compute, acc.res, value, at)
        self._store(stage, value, at)

    def _load(
        self,
        read: te.ReadOp,
        forms: dict[SSAValue, Form],
        mapping: dict[SSAValue, SSAValue],
        at: InsertPoint,
    ) -> SSAValue:
        tensor = read.tensor
        if tensor in self.buffers:
            buffer, domain = self.buffers[tensor]
        else:
            buffer, domain = self.tensor_buffer(tensor), None
            assert buffer is not None
        indices: list[SSAValue] = []
        shape = self.dims(read.tensor)
        for d, index in enumerate(read.indices):
            offset = domain.offsets[d] if domain is not None else Form()
            form = forms.get(index)
            checked = self.checks is not None and not (
                form is not None and within(form, shape[d])
            )
            if form is not None and not checked:
                indices.append(self.index.emit(form - offset, at))
                continue
            if form is not None:
                value = self.index.emit(form, at)
            else:
                value = mapping.get(index, index)
            if checked:
                value = self._checked(read, d, shape[d], value, at)
            if not offset.is_const() or offset.const:
                shift = arith.SubiOp(value, self.index.emit(offset, at))
                Rewriter.insert_op(shift, at)
                value = shift.result
            indices.append(value)
        load = memref.LoadOp.get(buffer, indices)
        Rewriter.insert_op(load, at)
        return load.res

    def _checked(
        self, read: te.ReadOp, d: int, size: Extent, value: SSAValue, at: InsertPoint
    ) -> SSAValue:
        """`value` where `0 <= value < size`, else 0 with the failure recorded."""
        checks = self.checks
        assert checks is not None
        stage = read.parent_op()
        while stage is not None and not isinstance(stage, te.ComputeOp):
            stage = stage.parent_op()
        where = f" in stage '{stage.tensor_name.data}'" if stage is not None else ""
        checks.messages.append(
            f"te.read of '{checks.name_of(read.tensor)}' index {d}{where} is "
            f"outside [0, {size - 1}]"
        )
        site = self.constant_attr(IntegerAttr(len(checks.messages), i32), "site")
        cell = checks.cell()
        zero = self.constant(0)
        ok = arith.CmpiOp(value, self.size(size), "ult")  # negatives too
        safe = arith.SelectOp(ok, value, zero)
        # Only a failed check writes the cell: iterations that pass must not
        # write back an older value over another thread's failure.
        failed = arith.XOrIOp(ok, self.constant_attr(IntegerAttr(1, i1), "true"))
        record = Block([memref.StoreOp.get(site, cell, [zero]), scf.YieldOp()])
        Rewriter.insert_op([ok, safe, failed, scf.IfOp(failed, [], [record])], at)
        return safe.result


def below(form: Form, bound: Extent) -> bool:
    """Whether bound inference proves `form < bound` (over symbolic extents
    too: `6 * jo + ji` with `jo < (n + 5) // 6`, `ji < 6` is below
    `6 * ((n + 5) // 6)`)."""
    if isinstance(bound, int) and not any(v.symbolic for v in form.vars()):
        return form.range()[1] < bound
    high = highest(form)
    return high is not None and sym_le(high, bound - 1)


def highest(form: Form) -> Extent | None:
    """The largest value of `form` as an expression over the size symbols
    (loops over symbolic extents reach their extent less one), or None
    where a division or remainder hides it."""
    total: Extent = form.const
    for atom, coef in form.terms.items():
        if isinstance(atom, affine.Var):
            top = atom.extent - 1
        elif atom.op == "mod":
            top = atom.divisor - 1
        else:
            inner = highest(atom.form)
            if inner is None or atom.form.range()[0] < 0:
                return None
            # (x * d - 1) // d is x - 1: the last row of a fused loop
            quotient = sym_floordiv(inner + 1, atom.divisor)
            if sym_eq(quotient * atom.divisor, inner + 1) is not True:
                return None
            top = quotient - 1
        if coef < 0:
            if isinstance(atom, affine.DivMod) and atom.range[0] < 0:
                return None
            continue  # at most 0, the atom being at least 0
        total = total + coef * top
    return total


def within(form: Form, size: Extent) -> bool:
    """Whether bound inference proves `0 <= form < size`: over a symbolic
    size, only a loop variable over exactly that extent is."""
    if isinstance(size, SymExpr):
        atoms = list(form.terms.items())
        return (
            not form.const
            and len(atoms) == 1
            and atoms[0][1] == 1
            and isinstance(atoms[0][0], affine.Var)
            and sym_eq(atoms[0][0].extent, size) is True
        )
    low, high = form.range()
    return 0 <= low and high < size


def out_of_bounds(compute: te.ComputeOp, name_of: Callable[[SSAValue], str]) -> str:
    """The first read of `compute` that is out of its tensor's bounds at some
    point of the compute's domain (a message), or "".

    Only what is proven is reported: a read in the body's own block (one in a
    guarded branch runs only where its condition holds) whose every index is
    an affine form of distinct loop variables, so its range over the domain
    (the output's extents, then the reduction extents) is exact.
    """
    shape = list(dims_of(compute.output_type))
    extents = shape + list(compute.extents)
    block = compute.body.block
    forms: dict[SSAValue, Form] = {
        arg: Form.of(affine.Var(arg.name_hint or f"i{n}", extent))
        for n, (arg, extent) in enumerate(zip(block.args, extents, strict=True))
    }
    consts: dict[SSAValue, int] = {}
    for op in block.ops:
        _record(op, forms, consts)
        if not isinstance(op, te.ReadOp):
            continue
        for d, (index, size) in enumerate(
            zip(op.indices, dims_of(op.tensor.type), strict=True)
        ):
            form = forms.get(index)
            if form is None or within(form, size):
                continue
            if not all(
                isinstance(a, affine.Var) and not a.symbolic for a in form.terms
            ) or isinstance(size, SymExpr):
                continue  # divisions, remainders, symbols: ranges are bounds only
            low, high = form.range()
            return (
                f"te.read of '{name_of(op.tensor)}' index {d} ranges over "
                f"[{low}, {high}], outside [0, {size - 1}] (in compute "
                f"'{compute.tensor_name.data}')"
            )
    return ""


def _constant(stage: Stage, extent: Extent, what: str) -> int:
    """`extent` where the schedule needs a constant (an inner split, an inner
    fused loop): loops step by it."""
    if isinstance(extent, SymExpr):
        raise ScheduleError(
            f"{what} of stage '{stage.name}' makes a loop of symbolic extent "
            f"{extent} that others step by; split a symbolic loop by a factor"
        )
    return extent


def _reads(stage: Stage) -> list[te.ReadOp]:
    return [
        u.operation for u in stage.op.result.uses if isinstance(u.operation, te.ReadOp)
    ]


def _hint(name: str) -> str | None:
    cleaned = "".join(c if c.isalnum() or c in "_$" else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else None


def _unroll_limits(stage: Stage, domain: Domain) -> dict[IterVar, bool]:
    """Loops that an `auto_unroll_max_step` pragma on an enclosing loop unrolls:
    those whose whole nest below (itself included) runs at most that many steps,
    and never more than `MAX_UNROLL_COPIES` (a pragma is a hint: beyond the cap
    loops stay serial)."""
    result: dict[IterVar, bool] = {}
    for n, v in enumerate(stage.leaves):
        limit = constant_attr(v.pragmas.get("auto_unroll_max_step"))
        if limit is None:
            continue
        limit = min(limit, MAX_UNROLL_COPIES)
        steps = 1
        for inner in reversed(stage.leaves[n + 1 :]):
            extent = domain.vars[inner].extent
            if isinstance(extent, SymExpr):
                break
            steps *= extent
            if steps <= limit:
                result[inner] = True
    return result


def _check_unroll(stage: Stage, domain: Domain, auto: dict[IterVar, bool]) -> None:
    """Refuse a stage whose unrolled loops would copy its body more than
    `MAX_UNROLL_COPIES` times (their extents multiply: they are nested)."""
    unrolled = [v for v in stage.leaves if v.kind == "unrolled" or auto.get(v)]
    copies = 1
    for v in unrolled:
        extent = domain.vars[v].extent
        if isinstance(extent, SymExpr):
            raise ScheduleError(
                f"te.unroll: loop '{v.name}' of stage '{stage.name}' has the "
                f"symbolic extent {extent}; split it by a factor and unroll the "
                "inner loop"
            )
        copies *= extent
    if copies > MAX_UNROLL_COPIES:
        loops = (
            f"loop '{unrolled[0].name}'"
            if len(unrolled) == 1
            else "loops "
            + ", ".join(f"'{v.name}' ({domain.vars[v].extent})" for v in unrolled)
        )
        raise ScheduleError(
            f"te.unroll: unrolling {loops} "
            f"of stage '{stage.name}' makes {copies} copies of its body, more than "
            f"ember's cap of {MAX_UNROLL_COPIES}; split the loop and unroll the "
            "inner part"
        )


def _record(
    op: Operation, forms: dict[SSAValue, Form], consts: dict[SSAValue, int]
) -> None:
    """Note what `op` computes: an affine form, or a constant (an index
    constant is also a form)."""
    result = _evaluate(op, forms, consts)
    if isinstance(result, Form):
        forms[op.results[0]] = result
    elif isinstance(result, int):
        consts[op.results[0]] = result
        if isinstance(op.results[0].type, IndexType):
            forms[op.results[0]] = Form({}, result)


def _evaluate(
    op: Operation, forms: dict[SSAValue, Form], consts: dict[SSAValue, int]
) -> Form | int | None:
    """Fold `op` symbolically: an affine form for index results, an int for
    constants (and comparisons of constants), else None."""
    if len(op.results) != 1:
        return None
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        value = op.value.value.data
        return value & 1 if op.value.type == i1 else value
    operands = list(op.operands)
    if all(o in consts for o in operands) and operands:
        folded = _fold(op, [consts[o] for o in operands])
        if folded is not None:
            return folded
    if isinstance(op, arith.SelectOp) and op.cond in consts:
        chosen = op.lhs if consts[op.cond] else op.rhs
        return consts.get(chosen, forms.get(chosen))
    if not isinstance(op.results[0].type, IndexType):
        return None
    args = [f for o in operands if (f := forms.get(o)) is not None]
    if len(args) != len(operands):
        return None
    match op, args:
        case arith.AddiOp(), [a, b]:
            return a + b
        case arith.SubiOp(), [a, b]:
            return a - b
        case arith.MuliOp(), [a, b] if b.is_const():
            return a * b.const
        case arith.MuliOp(), [a, b] if a.is_const():
            return b * a.const
        case arith.FloorDivSIOp(), [a, b] if b.is_const() and b.const > 0:
            return affine.floordiv(a, b.const)
        case arith.DivSIOp(), [a, b] if (
            b.is_const() and b.const > 0 and a.range()[0] >= 0
        ):
            return affine.floordiv(a, b.const)
        case arith.RemSIOp(), [a, b] if (
            b.is_const() and b.const > 0 and a.range()[0] >= 0
        ):
            return affine.mod(a, b.const)
    return None


def _fold(op: Operation, values: list[int]) -> int | None:
    match op, values:
        case arith.CmpiOp(), [a, b]:
            predicate = op.predicate.value.data
            if predicate >= 6:  # unsigned comparisons: not needed for indices
                return None
            return int([a == b, a != b, a < b, a <= b, a > b, a >= b][predicate])
        case arith.OrIOp(), [a, b]:
            return a | b
        case arith.AndIOp(), [a, b]:
            return a & b
        case arith.AddiOp(), [a, b]:
            return a + b
        case arith.SubiOp(), [a, b]:
            return a - b
        case arith.MuliOp(), [a, b]:
            return a * b
    return None
