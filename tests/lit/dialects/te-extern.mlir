// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @sort_then_double(
// CHECK-SAME:      %[[A:.*]]: tensor<16xf32>) -> tensor<16xf32>
// CHECK-NEXT:    %[[B:.*]] = te.extern "B" (%[[A]]) : (tensor<16xf32>) -> tensor<16xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[IN:.*]]: memref<16xf32>, %[[OUT:.*]]: memref<16xf32>):
// CHECK-NEXT:      %[[K:.*]] = arith.constant 3 : i64
// CHECK-NEXT:      loop.call_packed "my.sort"(%[[IN]], %[[OUT]], %[[K]], "asc") : memref<16xf32>, memref<16xf32>, i64
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[C:.*]] = te.compute "C" (%{{.*}}) -> tensor<16xf32> {
// CHECK-NEXT:      %{{.*}} = te.read %[[B]][%{{.*}}] : tensor<16xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "sort_then_double"
// GENERIC:         %{{.*}} = "te.extern"(%{{.*}}) <{name = "B"}> ({
// GENERIC-NEXT:    ^{{.*}}(%{{.*}}: memref<16xf32>, %{{.*}}: memref<16xf32>):
// GENERIC:         }) : (tensor<16xf32>) -> tensor<16xf32>
func.func @sort_then_double(%A: tensor<16xf32>) -> tensor<16xf32> {
  %B = te.extern "B" (%A) : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%a: memref<16xf32>, %b: memref<16xf32>):
    %k = arith.constant 3 : i64
    loop.call_packed "my.sort"(%a, %b, %k, "asc") : memref<16xf32>, memref<16xf32>, i64
  }
  %C = te.compute "C" (%i) -> tensor<16xf32> {
    %x = te.read %B[%i] : tensor<16xf32>
    %y = arith.addf %x, %x : f32
    te.yield %y : f32
  }
  func.return %C : tensor<16xf32>
}

// An extern without inputs, producing integers.
// CHECK-LABEL: func.func @no_inputs(
// CHECK-NEXT:    %{{.*}} = te.extern "R" () : () -> tensor<2x3xi32> {
// CHECK-NEXT:    ^{{.*}}(%[[R:.*]]: memref<2x3xi32>):
// CHECK-NEXT:      loop.call_packed "my.iota"(%[[R]]) : memref<2x3xi32>
func.func @no_inputs() -> tensor<2x3xi32> {
  %R = te.extern "R" () : () -> tensor<2x3xi32> {
  ^bb0(%r: memref<2x3xi32>):
    loop.call_packed "my.iota"(%r) : memref<2x3xi32>
  }
  func.return %R : tensor<2x3xi32>
}
