// RUN: ember-opt %s -p ember-model -t llvm | filecheck %s
// RUN: ember-opt %s -p 'ember-model{opt-level=0}' -t llvm | filecheck %s --check-prefix=O0
// RUN: ember-opt %s -p ember-model --print-ir-after=graph-plan-memory -o /dev/null 2>&1 | filecheck %s --check-prefix=PLAN

// A whole model from graph IR to LLVM IR through the one pipeline, as
// compile_model runs it: the kernels (conv2d+bias+relu fused, then a pooling)
// compiled apart by te-compile-kernels, declared here and listed as objects;
// default_run's checked packed entry calling them, the model's metadata. The
// convolution writes channel blocks, which the pooling reads (its sums, a
// stage at the root, take a scratch buffer: the third pointer).

// CHECK-DAG:   @__ember_num_threads = global i32 0
// CHECK-DAG:   @__ember_model_workspace_bytes = constant i64
// CHECK-DAG:   @__ember_metadata.json = internal constant
// CHECK-DAG:   declare void @ember_conv2d_add_relu_{{[0-9a-f]+}}(ptr, ptr, ptr, ptr, ptr)
// CHECK-DAG:   declare void @ember_global_avg_pool2d_{{[0-9a-f]+}}(ptr, ptr, ptr)
// CHECK-DAG:   ; kernel @ember_conv2d_add_relu_{{[0-9a-f]+}}: an object compiled apart (te-compile-kernels), cache key
// CHECK-DAG:   ; kernel @ember_global_avg_pool2d_{{[0-9a-f]+}}: an object
// CHECK-DAG:   define internal void @default_run_impl(
// CHECK-DAG:   define i32 @default_run(ptr %args, ptr %type_codes, i32 %num_args, ptr %ret, ptr %ret_code)
// CHECK-DAG:   define i32 @__ember_metadata(

// Without fusion every op is its own kernel.
// O0-DAG:      declare void @ember_conv2d_{{[0-9a-f]+}}(
// O0-DAG:      declare void @ember_add_{{[0-9a-f]+}}(
// O0-DAG:      declare void @ember_relu_{{[0-9a-f]+}}(
// O0-DAG:      define i32 @default_run(

// PLAN:        func.func @default_run(
// PLAN:          func.call @ember_conv2d_add_relu_
// PLAN:          func.call @ember_global_avg_pool2d_
func.func @main(%x: tensor<1x8x10x10xf32>) -> tensor<1x16x1x1xf32> {
  %w = graph.param "w" : tensor<16x8x3x3xf32>
  %b = graph.param "b" : tensor<16xf32>
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x10x10xf32>
  %bb = graph.reshape %b {shape = [1, 16, 1, 1]} : (tensor<16xf32>) -> tensor<1x16x1x1xf32>
  %a = graph.add %c, %bb : (tensor<1x16x10x10xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x10x10xf32>
  %r = graph.relu %a : (tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %p = graph.global_avg_pool2d %r : (tensor<1x16x10x10xf32>) -> tensor<1x16x1x1xf32>
  func.return %p : tensor<1x16x1x1xf32>
}
