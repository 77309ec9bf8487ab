// RUN: ember-opt %s -p 'convert-graph-to-te{precision=bf16}' | filecheck %s
// RUN: ember-opt %s -p convert-graph-to-te | filecheck %s --check-prefix=F32
// RUN: sed 's/-mcpu=znver4/-mcpu=haswell/' %s | not ember-opt -p 'convert-graph-to-te{precision=bf16}' 2>&1 | filecheck %s --check-prefix=NOBF16
// RUN: ember-opt %s --emit te --precision bf16 | filecheck %s --check-prefix=EMIT
// RUN: sed 's/-mcpu=znver4/-mcpu=haswell/' %s | not ember-opt --emit te --precision bf16 2>&1 | filecheck %s --check-prefix=NOBF16

// With precision=bf16 on a CPU with AVX512-BF16 (Zen 4), convolutions and
// dense layers multiply bfloat16 pairs: the data rounded (truncf) and packed two
// channels (or two columns) an i32 word, even one low, the weight packed to
// words at compile time, and each product a dot.bf16 summed in f32. The 1x1
// convolution is direct on NCHW16c words; the 3x3 one is Winograd's, its
// transformed data packed to words.

// CHECK-LABEL: func.func private @ember_conv2d_{{[0-9a-f]+}}(%data0: tensor<1x64x8x8xf32> {{.*}}, %conv2d.weight: tensor<4x2x1x1x16x16xi32>
// CHECK:         te.compute "conv2d.data_pack" {{.*}} -> tensor<1x2x8x8x16xi32>
// CHECK:           %[[LO:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK:           arith.bitcast %[[LO]] : bf16 to i16
// CHECK:           %[[HI:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK:           arith.bitcast %[[HI]] : bf16 to i16
// CHECK:           arith.shli
// CHECK:           arith.ori
// CHECK:         te.compute "conv2d.conv" {{.*}} reduce sum {{.*}} -> tensor<1x4x8x8x16xf32>
// CHECK:           %[[D:.*]] = te.read %conv2d.data_pack
// CHECK:           %[[W:.*]] = te.read %conv2d.weight
// CHECK:           dot.bf16 %{{.*}}, %[[D]], %[[W]] : f32, i32
// CHECK-LABEL: func.func private @ember_conv2d_{{[0-9a-f]+}}(%data0: tensor<1x64x8x8xf32> {{.*}}, %conv2d.weight: tensor<{{[0-9x]+}}xi32>
// CHECK:         te.compute "conv2d.data_transform" {{.*}} -> tensor<{{[0-9x]+}}xi32>
// CHECK:         te.compute "conv2d.gemm" {{.*}} reduce sum
// CHECK:           dot.bf16 %{{.*}}, %{{.*}}, %{{.*}} : f32, i32
// CHECK-LABEL: func.func private @ember_dense_{{[0-9a-f]+}}(%data0: tensor<1x4096xf32> {{.*}}, %dense.weight: tensor<1x2048x16xi32>
// CHECK:         te.compute "dense.words" {{.*}} -> tensor<1x2048xi32>
// CHECK:         te.compute "dense.gemm" {{.*}} reduce sum (%{{.*}} : 2048)
// CHECK:           dot.bf16 %{{.*}}, %{{.*}}, %{{.*}} : f32, i32
// CHECK-LABEL: func.func @main(
// CHECK-DAG:     %[[DW:.*]] = graph.param "dw.packed.{{[0-9a-f]+}}" : tensor<1x2048x16xi32>
// CHECK-DAG:     %[[W3:.*]] = graph.param "w3.packed.{{[0-9a-f]+}}" : tensor<{{[0-9x]+}}xi32>
// CHECK-DAG:     %[[W1:.*]] = graph.param "w1.packed.{{[0-9a-f]+}}" : tensor<4x2x1x1x16x16xi32>
// CHECK:         %[[C1:.*]] = graph.call_kernel @ember_conv2d_{{[0-9a-f]+}}(%x, %[[W1]])
// CHECK:         %[[C3:.*]] = graph.call_kernel @ember_conv2d_{{[0-9a-f]+}}(%[[C1]], %[[W3]])
// CHECK:         graph.call_kernel @ember_dense_{{[0-9a-f]+}}(%{{.*}}, %[[DW]])

// float32 products by default, on the same CPU: float32 weights, arith.mulf.

// F32-LABEL: func.func private @ember_conv2d_{{[0-9a-f]+}}(%data0: tensor<1x64x8x8xf32> {{.*}}, %conv2d.weight: tensor<4x4x1x1x16x16xf32>
// F32-NOT:     dot.bf16
// F32:         te.compute "conv2d.conv"
// F32:           arith.mulf
// F32-NOT:     dot.bf16
// F32-LABEL: func.func @main(

// A CPU without a bfloat16 dot product (Haswell) is refused: bfloat16
// products widened there would be slower than float32's.

// NOBF16: error: convert-graph-to-te: precision 'bf16' needs a CPU with a bfloat16 dot product (x86 avx512bf16, aarch64 bf16); target 'llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell' has none
// NOBF16-NOT: func.func

builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4"} {
func.func @main(%x: tensor<1x64x8x8xf32> {ember.name = "data"}) -> tensor<1x10xf32> {
  %w1 = graph.param "w1" : tensor<64x64x1x1xf32>
  %c1 = graph.conv2d %x, %w1 {padding = [0, 0, 0, 0]} : (tensor<1x64x8x8xf32>, tensor<64x64x1x1xf32>) -> tensor<1x64x8x8xf32>
  %w3 = graph.param "w3" : tensor<64x64x3x3xf32>
  %c3 = graph.conv2d %c1, %w3 {padding = [1, 1, 1, 1]} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32>
  %f = graph.reshape %c3 : (tensor<1x64x8x8xf32>) -> tensor<1x4096xf32>
  %dw = graph.param "dw" : tensor<10x4096xf32>
  %d = graph.dense %f, %dw : (tensor<1x4096xf32>, tensor<10x4096xf32>) -> tensor<1x10xf32>
  func.return %d : tensor<1x10xf32>
}
}

// The model pipeline to te, as `ember-opt --emit te --precision bf16` runs it.
// EMIT: dot.bf16
