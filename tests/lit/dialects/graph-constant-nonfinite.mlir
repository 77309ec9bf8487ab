// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s -p graph-fold-constants | filecheck %s --check-prefix=FOLD

// A constant holding inf or NaN prints its raw bytes in a hex string, which
// reads back exact (xDSL reads the hex float literal 0xff800000 as the
// integer 4286578688).

// CHECK-LABEL: func.func @masks(
// CHECK:         graph.constant dense<"0x000080FF0000803F0000C07F"> : tensor<3xf32>
// CHECK:         graph.constant dense<"0x007C"> : tensor<f16>
func.func @masks() -> (tensor<3xf32>, tensor<f16>) {
  %a = graph.constant dense<"0x000080FF0000803F0000C07F"> : tensor<3xf32>
  %b = graph.constant dense<"0x007C"> : tensor<f16>
  func.return %a, %b : tensor<3xf32>, tensor<f16>
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
