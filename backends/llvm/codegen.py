"""LLVM IR text → verified LLVM module → -O3 → object code or assembly."""

from functools import cache

import llvmlite.binding as llvm
from llvmlite import ir


@cache
def initialize() -> None:
    """Register every target LLVM was built with (once per process)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_asmparser()


def parse(module: ir.Module | str) -> llvm.ModuleRef:
    """Parse and verify LLVM IR (an llvmlite module or its text).

    Raises:
        ValueError: with LLVM's message when the IR does not parse or verify.
    """
    initialize()
    try:
        parsed = llvm.parse_assembly(str(module))
        parsed.verify()
    except RuntimeError as e:
        raise ValueError(f"invalid LLVM IR: {str(e).strip()}") from None
    return parsed


def optimize(
    module: llvm.ModuleRef, target_machine: llvm.TargetMachine, opt_level: int = 3
) -> None:
    """Run LLVM's default `-O<opt_level>` pipeline (new pass manager) in place.

    Loop and SLP vectorization are on; the module takes the machine's triple and
    data layout so that the cost models are the target's.
    """
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    tuning.loop_vectorization = opt_level >= 2
    tuning.slp_vectorization = opt_level >= 2
    tuning.loop_interleaving = opt_level >= 2
    tuning.loop_unrolling = opt_level >= 2
    builder = llvm.create_pass_builder(target_machine, tuning)
    builder.getModulePassManager().run(module, builder)


def emit_object(module: llvm.ModuleRef, target_machine: llvm.TargetMachine) -> bytes:
    """Machine code of `module` as a relocatable object file (ELF on Linux)."""
    return target_machine.emit_object(module)


def emit_assembly(module: llvm.ModuleRef, target_machine: llvm.TargetMachine) -> str:
    """Assembly text of `module`."""
    return target_machine.emit_assembly(module)


__all__ = ["emit_assembly", "emit_object", "initialize", "optimize", "parse"]
