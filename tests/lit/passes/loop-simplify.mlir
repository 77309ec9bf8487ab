// RUN: ember-opt %s -p loop-simplify --split-input-file | filecheck %s

// A loop that runs once becomes its body; the guard its bounds decide goes.
// CHECK-LABEL: func.func @once(
// CHECK-SAME:      %[[B:.*]]: memref<16xf32>, %[[V:.*]]: f32)
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} vectorized {
// CHECK-NEXT:      memref.store %[[V]], %[[B]][%[[I]]] : memref<16xf32>
// CHECK-NEXT:    }
// CHECK-NOT:     scf.if
func.func @once(%B: memref<16xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  loop.for %io = %c0 to %c1 step %c1 {
    loop.for %ii = %c0 to %c16 step %c1 vectorized {
      %x = arith.muli %io, %c16 : index
      %i = arith.addi %x, %ii : index
      %in = arith.cmpi slt, %i, %c16 : index
      scf.if %in {
        memref.store %v, %B[%i] : memref<16xf32>
      }
    }
  }
  func.return
}

// -----

// A loop that never runs is dropped; a guard its bounds cannot decide stays.
// CHECK-LABEL: func.func @never(
// CHECK:         loop.for %[[I:.*]] =
// CHECK:           %[[IN:.*]] = arith.cmpi slt, %[[I]], %{{.*}} : index
// CHECK:           scf.if %[[IN]] {
// CHECK-NOT:     loop.for
func.func @never(%B: memref<16xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %c16 = arith.constant 16 : index
  loop.for %i = %c0 to %c16 step %c1 {
    %in = arith.cmpi slt, %i, %c10 : index
    scf.if %in {
      memref.store %v, %B[%i] : memref<16xf32>
    }
  }
  loop.for %e = %c1 to %c1 step %c1 {
    memref.store %v, %B[%e] : memref<16xf32>
  }
  func.return
}

// -----

// A guard that never holds removes its body.
// CHECK-LABEL: func.func @dead_guard(
// CHECK-NOT:     memref.store
func.func @dead_guard(%B: memref<16xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  loop.for %i = %c0 to %c4 step %c1 {
    %j = arith.addi %i, %c16 : index
    %in = arith.cmpi slt, %j, %c16 : index
    scf.if %in {
      memref.store %v, %B[%i] : memref<16xf32>
    }
  }
  func.return
}

// -----

// A loop bound to a GPU thread axis stays, even running once: it is a launch
// dimension of its kernel. A vthread loop is a plain loop.
// CHECK-LABEL: func.func @bound_once(
// CHECK:         loop.for
// CHECK:         } {ember.thread = "blockIdx.x"}
// CHECK-NOT:     vthread
func.func @bound_once(%B: memref<16xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %c1 step %c1 {
    loop.for %j = %c0 to %c1 step %c1 {
      memref.store %v, %B[%i] : memref<16xf32>
    } {ember.thread = "vthread"}
  } {ember.thread = "blockIdx.x"}
  func.return
}
