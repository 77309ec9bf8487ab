// RUN: ember-opt %s -p 'te-split{stage=C axis=i factor=16},te-bind{stage=C axis="i.outer" thread="blockIdx.x"},te-bind{stage=C axis="i.inner" thread="threadIdx.x"}' | filecheck %s
// RUN: ember-opt %s -p 'te-split{stage=C axis=i factor=16},te-bind{stage=C axis="i.outer" thread="blockIdx.x"},te-bind{stage=C axis="i.inner" thread="threadIdx.x"},convert-te-to-loop' | filecheck %s --check-prefix=LOOP

// te-bind records a GPU thread axis on a loop as its `ember.thread` attribute;
// the GPU targets make it a thread index, the CPU pipeline refuses it
// (convert-loop-to-scf-invalid.mlir).

// CHECK-LABEL: func.func @vecadd(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.split "C" "i" factor 16 -> "i.outer", "i.inner"
// CHECK-NEXT:      te.bind "C" "i.outer" "blockIdx.x"
// CHECK-NEXT:      te.bind "C" "i.inner" "threadIdx.x"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @vecadd(
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP:         loop.for %{{.*}} = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C16]] step %{{.*}} {
// LOOP:             memref.store
// LOOP-NEXT:      } {ember.thread = "threadIdx.x"}
// LOOP-NEXT:    } {ember.thread = "blockIdx.x"}
// LOOP-NEXT:    func.return
func.func @vecadd(%A: tensor<64xf32>, %B: tensor<64xf32>) -> tensor<64xf32> {
  %C = te.compute "C" (%i) -> tensor<64xf32> {
    %a = te.read %A[%i] : tensor<64xf32>
    %b = te.read %B[%i] : tensor<64xf32>
    %s = arith.addf %a, %b : f32
    te.yield %s : f32
  }
  func.return %C : tensor<64xf32>
}
