// RUN: ember-opt %s -p convert-loop-to-scf --split-input-file --verify-diagnostics | filecheck %s

// Unrolling is capped at 4096 copies of a body, counting the unrolled loops
// around it: 64 * 128 copies of the inner body are refused.

func.func @nested(%A: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %c64 step %c1 unrolled {
    loop.for %j = %c0 to %c128 step %c1 unrolled {
      %x = memref.load %A[%j] : memref<128xf32>
      memref.store %x, %A[%j] : memref<128xf32>
    }
  }
  func.return
}

// CHECK: convert-loop-to-scf: 'loop.for' unrolling loop %j makes 8192 copies of its body (with the unrolled loops around it), more than the cap of 4096
