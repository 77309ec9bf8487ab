// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s -p graph-fold-constants | filecheck %s --check-prefix=FOLD

// A constant holding inf or NaN prints its raw bytes in a hex string, which
// reads back exact; a hex literal among float elements is read as MLIR reads
// it, its bits (xDSL alone reads 0xff800000 as the integer 4286578688), and
// among integers as the integer.

// CHECK-LABEL: func.func @masks(
// CHECK:         graph.constant dense<"0x000080FF0000803F0000C07F"> : tensor<3xf32>
// CHECK:         graph.constant dense<"0x007C"> : tensor<f16>
func.func @masks() -> (tensor<3xf32>, tensor<f16>) {
  %a = graph.constant dense<"0x000080FF0000803F0000C07F"> : tensor<3xf32>
  %b = graph.constant dense<"0x007C"> : tensor<f16>
  func.return %a, %b : tensor<3xf32>, tensor<f16>
}

// CHECK-LABEL: func.func @hex_literals(
// CHECK:         graph.constant dense<"0x000080FF"> : tensor<f32>
// CHECK:         graph.constant dense<"0x0000C07F0000803F"> : tensor<2xf32>
// CHECK:         graph.constant dense<"0x007C"> : tensor<f16>
// CHECK:         graph.constant dense<[16, 3]> : tensor<2xi32>
func.func @hex_literals() -> (tensor<f32>, tensor<2xf32>, tensor<f16>, tensor<2xi32>) {
  %c = graph.constant dense<0xFF800000> : tensor<f32>
  %d = graph.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %e = graph.constant dense<0x7C00> : tensor<f16>
  %i = graph.constant dense<[0x10, 3]> : tensor<2xi32>
  func.return %c, %d, %e, %i : tensor<f32>, tensor<2xf32>, tensor<f16>, tensor<2xi32>
}

// Folding -inf * 2 keeps -inf.
// FOLD-LABEL: func.func @folded(
// FOLD:         graph.constant dense<"0x000080FF"> : tensor<f32>
func.func @folded() -> tensor<f32> {
  %a = graph.constant dense<"0x000080FF"> : tensor<f32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %m = graph.mul %a, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return %m : tensor<f32>
}
