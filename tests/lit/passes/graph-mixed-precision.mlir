// RUN: ember-opt %s -p graph-mixed-precision | filecheck %s
// RUN: sed 's/-mcpu=znver4/-mcpu=haswell/' %s | ember-opt -p graph-mixed-precision | filecheck %s --check-prefix=NOBF16
// RUN: ember-opt %s --emit te --precision auto | filecheck %s --check-prefix=EMIT
// RUN: sed 's/graph.constant dense<\[\[1.0, -1.0\]\]>/graph.param "w2"/' %s | not ember-opt -p graph-mixed-precision 2>&1 | filecheck %s --check-prefix=NOVALUE

// Each layer with a bfloat16 kernel is measured on a (here synthetic)
// calibration example: %y1 copies x0 and adds a thousandth of x1, which
// bfloat16 rounds well (relative error about 2^-9); %y2 subtracts the two
// columns, the thousandth that is left is below bfloat16's rounding of x0,
// so it stays float32. The depthwise convolution has no bfloat16 kernel; a
// layer marked already keeps its mark.

// CHECK:      %y1 = graph.matmul %x, %w1 {ember.precision = "bf16"}
// CHECK:      %y2 = graph.dense %y1, %w2 {ember.precision = "float32"}
// CHECK:      %d = graph.conv2d %i, %k {groups = 4} :
// CHECK:      %y3 = graph.dense %y1, %w2 {ember.precision = "bf16"}

// On a CPU without a bfloat16 dot product nothing is marked.
// NOBF16-NOT: ember.precision = "float32"
// NOBF16:     graph.dense %y1, %w2 {ember.precision = "bf16"}
// NOBF16-NOT: ember.precision = "float32"

// The model pipeline runs it before fusion: the marked layer's kernel on
// words, the other's on floats.
// EMIT: func.func private @ember_matmul_{{.*}}tensor<{{[0-9x]+}}xi32>
// EMIT: dot.bf16

// NOVALUE: error: graph-mixed-precision: param 'w2' has no value; measuring each layer needs the weights

builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4"} {
func.func @main(%x: tensor<64x2xf32> {ember.name = "x"}, %i: tensor<1x4x6x6xf32> {ember.name = "i"}) -> (tensor<64x1xf32>, tensor<1x4x4x4xf32>, tensor<64x1xf32>) {
  %w1 = graph.constant dense<[[1.0, 1.0], [0.0, 0.001]]> : tensor<2x2xf32>
  %y1 = graph.matmul %x, %w1 : (tensor<64x2xf32>, tensor<2x2xf32>) -> tensor<64x2xf32>
  %w2 = graph.constant dense<[[1.0, -1.0]]> : tensor<1x2xf32>
  %y2 = graph.dense %y1, %w2 : (tensor<64x2xf32>, tensor<1x2xf32>) -> tensor<64x1xf32>
  %k = graph.constant dense<0.5> : tensor<4x1x3x3xf32>
  %d = graph.conv2d %i, %k {groups = 4} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  %y3 = graph.dense %y1, %w2 {ember.precision = "bf16"} : (tensor<64x2xf32>, tensor<1x2xf32>) -> tensor<64x1xf32>
  func.return %y2, %d, %y3 : tensor<64x1xf32>, tensor<1x4x4x4xf32>, tensor<64x1xf32>
}
}
