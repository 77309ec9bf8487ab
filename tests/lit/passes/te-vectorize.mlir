// RUN: ember-opt %s -p 'te-split{stage=C axis=i factor=16},te-vectorize{stage=C axis="i.inner"}' | filecheck %s
// RUN: ember-opt %s -p 'te-split{stage=C axis=i factor=16},te-vectorize{stage=C axis="i.inner"},convert-te-to-loop,cse' | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s -p 'te-vectorize{stage=C axis=i},convert-te-to-loop' | filecheck %s --check-prefix=WHOLE

// te-vectorize marks a loop `vectorized`; the other loops stay serial.

// CHECK-LABEL: func.func @vecadd(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.split "C" "i" factor 16 -> "i.outer", "i.inner"
// CHECK-NEXT:      te.vectorize "C" "i.inner"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @vecadd(
// LOOP-SAME:      %[[A:[^:]*]]: memref<64xf32> {{.*}}, %[[B:[^:]*]]: memref<64xf32> {{.*}}, %[[C:[^:]*]]: memref<64xf32>
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP:         loop.for %[[O:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:      loop.for %[[I:.*]] = %{{.*}} to %[[C16]] step %{{.*}} vectorized {
// LOOP-NEXT:        %[[M:.*]] = arith.muli %[[O]], %[[C16]] : index
// LOOP-NEXT:        %[[X:.*]] = arith.addi %[[M]], %[[I]] : index
// LOOP-NEXT:        %[[VA:.*]] = memref.load %[[A]][%[[X]]] : memref<64xf32>
// LOOP-NEXT:        %[[VB:.*]] = memref.load %[[B]][%[[X]]] : memref<64xf32>
// LOOP-NEXT:        %[[S:.*]] = arith.addf %[[VA]], %[[VB]] : f32
// LOOP-NEXT:        memref.store %[[S]], %[[C]][%[[X]]] : memref<64xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:    }

// Without a split the whole loop is vectorized.
// WHOLE-LABEL: func.func @vecadd(
// WHOLE:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} vectorized {
// WHOLE-NOT:     loop.for
// WHOLE:         func.return
func.func @vecadd(%A: tensor<64xf32>, %B: tensor<64xf32>) -> tensor<64xf32> {
  %C = te.compute "C" (%i) -> tensor<64xf32> {
    %a = te.read %A[%i] : tensor<64xf32>
    %b = te.read %B[%i] : tensor<64xf32>
    %s = arith.addf %a, %b : f32
    te.yield %s : f32
  }
  func.return %C : tensor<64xf32>
}
