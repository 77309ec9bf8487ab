// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @vecadd(
// CHECK-SAME:      %[[A:.*]]: tensor<16xf32>, %[[B:.*]]: tensor<16xf32>) -> tensor<16xf32>
// CHECK:         %[[C:.*]] = te.compute "C" (%[[I:.*]]) -> tensor<16xf32> {
// CHECK-NEXT:      %[[X:.*]] = te.read %[[A]][%[[I]]] : tensor<16xf32>
// CHECK-NEXT:      %[[Y:.*]] = te.read %[[B]][%[[I]]] : tensor<16xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      te.yield %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]] : tensor<16xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "vecadd"
// GENERIC:         "te.compute"() <{name = "C"}> ({
// GENERIC-NEXT:    ^bb0(%{{.*}}: index):
// GENERIC:           "te.read"(%{{.*}}, %{{.*}}) : (tensor<16xf32>, index) -> f32
// GENERIC:           "te.yield"(%{{.*}}) : (f32) -> ()
// GENERIC-NEXT:    }) : () -> tensor<16xf32>
func.func @vecadd(%A: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<16xf32> {
  %C = te.compute "C" (%i) -> tensor<16xf32> {
    %x = te.read %A[%i] : tensor<16xf32>
    %y = te.read %B[%i] : tensor<16xf32>
    %s = arith.addf %x, %y : f32
    te.yield %s : f32
  }
  func.return %C : tensor<16xf32>
}

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:      %[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x3xf32>
// CHECK:         te.compute "C" (%[[I:.*]], %[[J:.*]]) reduce sum (%[[K:.*]] : 8) -> tensor<4x3xf32> {
// CHECK-NEXT:      te.read %[[A]][%[[I]], %[[K]]] : tensor<4x8xf32>
// CHECK-NEXT:      te.read %[[B]][%[[K]], %[[J]]] : tensor<8x3xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "matmul"
// GENERIC:         "te.compute"() <{name = "C", reduce = "sum", reduce_extents = array<i64: 8>}> ({
// GENERIC-NEXT:    ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
func.func @matmul(%A: tensor<4x8xf32>, %B: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 8) -> tensor<4x3xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    %b = te.read %B[%k, %j] : tensor<8x3xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  func.return %C : tensor<4x3xf32>
}

// A reduction over two axes with max, a compute carrying a discardable attribute.
// CHECK-LABEL: func.func @pool(
// CHECK:         te.compute "P" (%[[C:.*]]) reduce max (%[[H:.*]] : 2, %[[W:.*]] : 3) -> tensor<5xi32> {
// CHECK:           te.read %{{.*}}[%[[C]], %[[H]], %[[W]]] : tensor<5x2x3xi32>
// CHECK:         } {ember.tag = "pool"}
// CHECK:         te.compute "N" (%{{.*}}) reduce min (%{{.*}} : 3) -> tensor<5xi32>
func.func @pool(%X: tensor<5x2x3xi32>) -> (tensor<5xi32>, tensor<5xi32>) {
  %P = te.compute "P" (%c) reduce max (%h : 2, %w : 3) -> tensor<5xi32> {
    %x = te.read %X[%c, %h, %w] : tensor<5x2x3xi32>
    te.yield %x : i32
  } {ember.tag = "pool"}
  %N = te.compute "N" (%c) reduce min (%w : 3) -> tensor<5xi32> {
    %z = arith.constant 0 : index
    %x = te.read %X[%c, %z, %w] : tensor<5x2x3xi32>
    te.yield %x : i32
  }
  func.return %P, %N : tensor<5xi32>, tensor<5xi32>
}

// A rank-0 compute: no indices at all.
// CHECK-LABEL: func.func @scalar(
// CHECK:         te.compute "S" () -> tensor<f64> {
// CHECK-NEXT:      %[[V:.*]] = te.read %{{.*}}[] : tensor<f64>
// CHECK-NEXT:      te.yield %[[V]] : f64
func.func @scalar(%A: tensor<f64>) -> tensor<f64> {
  %S = te.compute "S" () -> tensor<f64> {
    %v = te.read %A[] : tensor<f64>
    te.yield %v : f64
  }
  func.return %S : tensor<f64>
}
