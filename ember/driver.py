"""`ember.build`: a schedule or te/loop IR to a runnable module."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from ember import te
from ember.lowering import lower
from ember.passes import get_context, run
from ember.passes.pipelines import EMBER_CPU, TE_TO_LOOP
from ember.runtime.errors import EmberTypeError, EmberValueError

CHECKED_TE_TO_LOOP = "convert-te-to-loop{bounds-check=true}"

if TYPE_CHECKING:
    from ember.backends.llvm import LLVMModule, Target
    from ember.backends.source import DeviceTarget
    from ember.runtime import Module


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
    from ember.backends.llvm import build_module
    from ember.backends.llvm.target import (
        MODULE_ATTR,
        module_target,
        set_module_target,
    )
    from ember.backends.source import DeviceTarget, build_source, resolve_target

    if isinstance(inputs, te.Tensor):
        inputs = te.create_schedule(inputs.op)
    if isinstance(inputs, te.Schedule):
        if args is None:
            raise EmberValueError("ember.build: a schedule needs its argument tensors")
        module = lower(inputs, args, name)
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
    if isinstance(target, DeviceTarget):
        return build_source(module, target, entry, loop_source)
    run(module, ",".join(EMBER_CPU[len(TE_TO_LOOP) :]))
    mod = build_module(module, target=target, entry_name=entry)
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
    from ember.schedule import ScheduleError

    for op in module.walk():
        if isinstance(op, BindOp):
            raise ScheduleError(
                f"loop '{op.axis.data}' of stage '{op.stage.data}' is bound to "
                f"{op.thread.data}; bind needs a GPU target: build with "
                f"target='cuda' or 'opencl' (not {target!r})"
            )
