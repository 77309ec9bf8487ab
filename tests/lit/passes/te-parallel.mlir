// RUN: ember-opt %s -p 'te-parallel{stage=C axis=i}' | filecheck %s
// RUN: ember-opt %s -p 'te-parallel{stage=C axis=i},convert-te-to-loop' | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s -p 'te-split{stage=C axis=j factor=4},te-parallel{stage=C axis="j.outer"},convert-te-to-loop' | filecheck %s --check-prefix=SPLIT

// te-parallel marks a loop `parallel`; a reduction's data-parallel loops may be
// parallel, and its reduction loop stays serial.

// CHECK-LABEL: func.func @rowsum(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.parallel "C" "i"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @rowsum(
// LOOP-SAME:      %{{[^:]*}}: memref<16x8x4xf32> {{.*}}, %[[C:[^:]*]]: memref<16x8xf32>
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP:         loop.for %[[I:.*]] = %{{.*}} to %[[C16]] step %{{.*}} parallel {
// LOOP-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
// LOOP-NEXT:        memref.store %{{.*}}, %[[C]][%[[I]], %[[J]]] : memref<16x8xf32>
// LOOP-NEXT:        loop.for %{{.*}} = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP:               arith.addf

// SPLIT-LABEL: func.func @rowsum(
// SPLIT-DAG:     %[[C16:.*]] = arith.constant 16 : index
// SPLIT-DAG:     %[[C2:.*]] = arith.constant 2 : index
// SPLIT-DAG:     %[[C4:.*]] = arith.constant 4 : index
// SPLIT:         loop.for %{{.*}} = %{{.*}} to %[[C16]] step %{{.*}} {
// SPLIT-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C2]] step %{{.*}} parallel {
// SPLIT-NEXT:        loop.for %{{.*}} = %{{.*}} to %[[C4]] step %{{.*}} {
// SPLIT-NOT:           parallel
// SPLIT:         func.return
func.func @rowsum(%A: tensor<16x8x4xf32>) -> tensor<16x8xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 4) -> tensor<16x8xf32> {
    %a = te.read %A[%i, %j, %k] : tensor<16x8x4xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<16x8xf32>
}
