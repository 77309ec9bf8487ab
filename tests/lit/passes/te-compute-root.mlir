// RUN: ember-opt %s -p 'te-compute-root{stage=B}' | filecheck %s
// RUN: ember-opt %s -p 'te-compute-root{stage=B},convert-te-to-loop,cse' | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s -p 'convert-te-to-loop,cse' | filecheck %s --check-prefix=ATTACHED

// te-compute-root undoes an earlier compute_at: the producer is computed whole,
// into a buffer at the top of the function, before its consumer's nest.

// CHECK-LABEL: func.func @chain(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.split "C" "i" factor 16 -> "i.outer", "i.inner"
// CHECK-NEXT:      te.compute_at "B" at "C" "i.outer"
// CHECK-NEXT:      te.compute_root "B"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @chain(
// LOOP-SAME:      %[[A:[^:]*]]: memref<64xf32> {{.*}}, %[[C:[^:]*]]: memref<64xf32>
// LOOP-NEXT:    %[[B:.*]] = loop.alloc : memref<64xf32>
// LOOP-DAG:     %[[C64:.*]] = arith.constant 64 : index
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP:         loop.for %[[BI:.*]] = %{{.*}} to %[[C64]] step %{{.*}} {
// LOOP-NEXT:      %[[VA:.*]] = memref.load %[[A]][%[[BI]]] : memref<64xf32>
// LOOP-NEXT:      %[[SQ:.*]] = arith.mulf %[[VA]], %[[VA]] : f32
// LOOP-NEXT:      memref.store %[[SQ]], %[[B]][%[[BI]]] : memref<64xf32>
// LOOP-NEXT:    }
// LOOP-NEXT:    loop.for %{{.*}} = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C16]] step %{{.*}} {
// LOOP-NOT:         loop.alloc
// LOOP:             memref.load %[[B]][%{{.*}}] : memref<64xf32>
// LOOP:         func.return

// Without te-compute-root, the schedule keeps B inside C's outer loop.
// ATTACHED-LABEL: func.func @chain(
// ATTACHED:         loop.for
// ATTACHED-NEXT:      loop.alloc local : memref<16xf32>
func.func @chain(%A: tensor<64xf32>) -> tensor<64xf32> {
  %B = te.compute "B" (%i) -> tensor<64xf32> {
    %a = te.read %A[%i] : tensor<64xf32>
    %m = arith.mulf %a, %a : f32
    te.yield %m : f32
  }
  %C = te.compute "C" (%i) -> tensor<64xf32> {
    %b = te.read %B[%i] : tensor<64xf32>
    %n = arith.negf %b : f32
    te.yield %n : f32
  }
  te.schedule {
    te.split "C" "i" factor 16 -> "i.outer", "i.inner"
    te.compute_at "B" at "C" "i.outer"
  }
  func.return %C : tensor<64xf32>
}
