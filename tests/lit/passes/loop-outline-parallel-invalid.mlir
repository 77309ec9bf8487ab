// RUN: ember-opt %s --split-input-file --verify-diagnostics -p loop-outline-parallel | filecheck %s

// A value the outlined loop cannot take through its struct is a diagnostic naming
// the function and the type: a symbolic buffer must say its dims (an argument
// or a loop.alloc with ember.dims), which the outlined function computes its
// strides from.

func.func @dynamic(%A: memref<?xf32>, %n: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %n step %c1 parallel {
    memref.store %x, %A[%i] : memref<?xf32>
  }
  func.return
}

// CHECK: loop-outline-parallel: parallel loop in @dynamic: cannot capture memref<?xf32>: a symbolic buffer must be an argument of @dynamic or a loop.alloc, with ember.dims

// -----

func.func @dynamic_alloc(%n: index {ember.symbol = "n"}, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %T = loop.alloc(%n) : memref<?xf32>
  loop.for %i = %c0 to %n step %c1 parallel {
    memref.store %x, %T[%i] : memref<?xf32>
  }
  func.return
}

// CHECK: loop-outline-parallel: parallel loop in @dynamic_alloc: cannot capture memref<?xf32>: a symbolic buffer must be an argument of @dynamic_alloc or a loop.alloc, with ember.dims

// -----

// libgomp's functions, when the module declares them, must have libgomp's types.

func.func @wrong_declaration(%A: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 parallel {
    %t = func.call @omp_get_thread_num() : () -> i64
    memref.store %t, %A[%i] : memref<4xi64>
  }
  func.return
}
func.func private @omp_get_thread_num() -> i64

// CHECK: loop-outline-parallel: @omp_get_thread_num must be a function of type () -> i32, got () -> i64

// -----

// The thread-count global's name is ember's.

func.func @taken(%A: memref<4xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 parallel {
    memref.store %x, %A[%i] : memref<4xf32>
  }
  func.return
}
func.func private @__ember_num_threads()

// CHECK: loop-outline-parallel: @__ember_num_threads must be an i32 llvm.mlir.global, got 'func.func'

// -----

// A host function is called from the calling thread only: a worker could neither
// report its failure nor stop the other threads.

func.func @host_call(%A: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 parallel {
    loop.call_packed "my.step"(%A, %i) : memref<4xf32>, index
  }
  func.return
}

// CHECK: loop-outline-parallel: parallel loop in @host_call: loop.call_packed "my.step" cannot run in a parallel loop; make the loop serial
