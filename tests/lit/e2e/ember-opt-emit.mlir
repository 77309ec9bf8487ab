// RUN: ember-opt %s --emit=loop | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s --emit=llvm | filecheck %s --check-prefix=LLVM
// RUN: ember-opt %s --emit=asm -t "llvm -mtriple=aarch64-linux-gnu" | filecheck %s --check-prefix=ASM
// RUN: not ember-opt %s --emit=graph 2>&1 | filecheck %s --check-prefix=WRONG
// RUN: ember-opt %s -p ember-cpu --print-ir-after=loop-vectorize --time-passes 2>%t.err | filecheck %s --check-prefix=LLVM
// RUN: filecheck %s --check-prefix=ERR < %t.err

// --emit stops at a stage and prints it; -t "llvm -mtriple=..." picks the machine.
// LOOP: loop.for
// LOOP-NOT: llvm.func
// LLVM: llvm.func @neg
// ASM: fneg
// WRONG: error: --emit=graph expects graph IR, got te IR

// IR dumps and the timing report go to stderr; stdout stays the IR.
// ERR: // -----// IR Dump After loop-vectorize //----- //
// ERR: Execution time report
// ERR: convert-te-to-loop
// ERR: Total

func.func @neg(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute "B" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    %b = arith.negf %a : f32
    te.yield %b : f32
  }
  func.return %B : tensor<4xf32>
}
