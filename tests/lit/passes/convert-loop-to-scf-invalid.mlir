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

// -----

// A CPU runs no thread hierarchy: a loop bound to a GPU thread axis is refused,
// naming the loop, the stage it stores to and the targets that take it.

func.func @bound(%A: memref<64xf32> {ember.name = "A"}, %C: memref<64xf32> {ember.name = "C", ember.output}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  loop.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %A[%i] : memref<64xf32>
    memref.store %x, %C[%i] : memref<64xf32>
  } {ember.thread = "threadIdx.x"}
  func.return
}

// CHECK: convert-loop-to-scf: 'loop.for' loop 'i' of stage 'C' is bound to threadIdx.x; bind needs a GPU target: build with target='cuda' or 'opencl'
