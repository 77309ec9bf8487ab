// RUN: ember-opt %s -p 'te-unroll{stage=C axis=k}' | filecheck %s
// RUN: ember-opt %s -p 'te-unroll{stage=C axis=k},convert-te-to-loop' | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s -p 'te-unroll{stage=C axis=k},convert-te-to-loop,convert-loop-to-scf' | filecheck %s --check-prefix=SCF

// te-unroll marks a loop `unrolled`; unlike vectorize and parallel it may be a
// reduction loop. convert-loop-to-scf then clones the body once per iteration.

// CHECK-LABEL: func.func @dot4(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.unroll "C" "k"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @dot4(
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP:         loop.for %{{.*}} = %{{.*}} to %[[C8]] step %{{.*}} {
// LOOP-NEXT:      memref.store
// LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C4]] step %{{.*}} unrolled {
// LOOP:             arith.addf
// LOOP-NOT:         arith.addf
// LOOP:           }
// LOOP-NEXT:    }
// LOOP-NEXT:    func.return

// SCF-LABEL: func.func @dot4(
// SCF:         scf.for
// SCF-COUNT-4:   arith.addf
// SCF-NOT:       arith.addf
// SCF:         func.return
func.func @dot4(%A: tensor<8x4xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 4) -> tensor<8xf32> {
    %a = te.read %A[%i, %k] : tensor<8x4xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<8xf32>
}
