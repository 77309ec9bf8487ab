"""`ember.lower` and `ember.build`: a schedule to its loop nest, or to a runnable
module.

    print(ember.lower(s, [A, B, C], name="vecadd"))   # the scheduled loop nest
    mod = ember.build(s, [A, B, C], name="vecadd")     # machine code
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from ember import te
from ember.passes import get_context, run
from ember.passes.pipelines import TE_TO_LOOP
from ember.runtime.errors import EmberTypeError, EmberValueError
from ember.te import lowering

CHECKED_TE_TO_LOOP = "convert-te-to-loop{bounds-check=true}"
LOWER_STAGES = ("te", "loop")
"""The IR levels `ember.lower` stops at (`ember-opt --emit` names them too)."""

if TYPE_CHECKING:
    from ember.backends.llvm import LLVMModule, Target
    from ember.backends.source import DeviceTarget
    from ember.runtime import Module


def lower(
    sched: te.Schedule,
    args: Sequence[te.Tensor],
    name: str = "default_function",
    simple_mode: bool = False,
    emit: str = "loop",
) -> ModuleOp:
    """A scheduled computation as IR: the loop nest its schedule makes, as
    TVM's `lower` shows it (`TE_TO_LOOP`; what `get_source("loop")` of the
    built module shows), or its te IR.

    Args:
        sched: the schedule (its outputs must be among `args`).
        args: the function's tensors: the inputs first, then the outputs.
        name: the function's name.
        simple_mode: TVM's flag for a short printout; ember's module prints the
            same either way, so it changes nothing.
        emit: "loop" for the scheduled loop nest, "te" for the te IR (tensor
            expressions with the schedule written beside them, not applied).

    Returns:
        A module holding `func.func @name`.

    Raises:
        EmberValueError: `emit` names no stage, a bad name, or `args` that do
            not hold the schedule's inputs and outputs.

    Example:
        >>> xo, xi = s[C].split(C.op.axis[0], factor=64)
        >>> print(ember.lower(s, [A, B, C], simple_mode=True))  # two loop.for
    """
    del simple_mode
    if emit not in LOWER_STAGES:
        raise EmberValueError(
            f"ember.lower: expected emit to be one of {', '.join(LOWER_STAGES)}, "
            f"got {emit!r}"
        )
    module = lowering.lower(sched, args, name)
    if emit == "loop":
        run(module, ",".join(TE_TO_LOOP))
    return module


def build(
    inputs: te.Schedule | te.Tensor | ModuleOp | str,
    args: Sequence[te.Tensor] | None = None,
    target: str | dict | Target | DeviceTarget | None = None,
    name: str = "default_function",
    bounds_check: bool = False,
    tuning_records: str | os.PathLike | Sequence | None = None,
) -> LLVMModule | Module:
    """Compile a computation to machine code for `target`.

    Args:
        inputs: a schedule from `te.create_schedule` (or `ember.auto_schedule`),
            an output tensor (its default schedule), or a module of te or loop
            IR (an xDSL `ModuleOp` or its text).
        args: with a schedule, the tensors of the function: inputs first, then
            outputs.
        target: "llvm" for this machine, a TVM-style target string or dict;
            "c", "opencl" or "cuda" (`DeviceTarget`) for C-family source;
            None: the IR's own `ember.target`, else `Target.current()` (the
            host unless a target is entered).
            The module records it (`ember.target`), so `loop-vectorize` and the
            other passes see the machine's vector width.
        name: the function's name (with a schedule) and the module's entry.
        bounds_check: check every tensor read that bound inference cannot
            prove in range (an index read from another tensor, a clamp, a
            division); one outside its tensor makes the call raise an
            `EmberError` naming the read instead of reading out of bounds.
            Reads proven out of range are refused either way.
        tuning_records: a tuning log (`ember.tune.records`; a path, paths or
            records): each te function with a record for it on this target
            gets its best schedule instead of its own.

    Returns:
        The compiled module; `mod(a, b, c)` or `mod[name](a, b, c)` runs it.
        For `c` a library of packed functions built by the system compiler; for
        `opencl` and `cuda` a `DeviceModule` whose `get_source()` is the kernels'
        source, run on device arrays (`ember.runtime.cuda(0)`, `opencl(0)`).

    Example:
        >>> mod = ember.build(s, [A, B, C], name="vecadd")
        >>> mod(a, b, c)
    """
    from ember.backends import backend
    from ember.backends.llvm.target import (
        MODULE_ATTR,
        module_target,
        set_module_target,
    )
    from ember.backends.source import DeviceTarget, resolve_target, target_kind

    if isinstance(inputs, te.Tensor):
        inputs = te.create_schedule(inputs.op)
    if isinstance(inputs, te.Schedule):
        if args is None:
            raise EmberValueError("ember.build: a schedule needs its argument tensors")
        module = lowering.lower(inputs, args, name)
        entry: str | None = name
    else:
        if isinstance(inputs, str):
            module = _parse_verified(inputs)
        elif isinstance(inputs, ModuleOp):
            module = inputs.clone()
        else:
            raise EmberTypeError(
                f"ember.build: expected a schedule or IR module, got {type(inputs)}"
            )
        entry = name if name != "default_function" else None
        functions = [op.sym_name.data for op in module.ops if isinstance(op, FuncOp)]
        if entry is not None and entry not in functions:
            raise EmberValueError(
                f"ember.build: no function @{entry} in the IR; it defines "
                f"{', '.join('@' + f for f in functions) or 'no functions'}"
            )
    if target is None and MODULE_ATTR in module.attributes:
        attr = module.attributes[MODULE_ATTR]  # IR that says what it is for
        target = attr.data if isinstance(attr, StringAttr) else module_target(module)
    target = resolve_target(target)
    if isinstance(target, DeviceTarget):
        module.attributes[MODULE_ATTR] = StringAttr(str(target))
    else:
        set_module_target(module, target)
        if tuning_records is not None:
            from ember.tune.records import apply_history_best

            apply_history_best(module, tuning_records, target)
        _refuse_binds(module, str(target))
    te_to_loop = [
        CHECKED_TE_TO_LOOP if bounds_check and p == "convert-te-to-loop" else p
        for p in TE_TO_LOOP
    ]
    run(module, ",".join(te_to_loop))
    loop_source = str(module)
    mod = backend(target_kind(target)).build(module, target, entry)
    mod.loop_source = loop_source
    return mod


def _parse_verified(text: str) -> ModuleOp:
    """The module `text` holds, every op verified: IR text is input, and an op
    its verifier refuses (a split by a negative factor) must never lower."""
    try:
        module = Parser(get_context(), text, "<build>").parse_module()
        module.verify()
    except (ParseError, VerifyException) as e:
        raise EmberValueError(f"ember.build: invalid IR: {e}") from None
    return module


def _refuse_binds(module: ModuleOp, target: str) -> None:
    """A CPU has no thread hierarchy: a bound loop needs a GPU target."""
    from ember.dialects.te_schedule import BindOp
    from ember.te.schedule import ScheduleError

    for op in module.walk():
        if isinstance(op, BindOp):
            raise ScheduleError(
                f"loop '{op.axis.data}' of stage '{op.stage.data}' is bound to "
                f"{op.thread.data}; bind needs a GPU target: build with "
                f"target='cuda' or 'opencl' (not {target!r})"
            )
