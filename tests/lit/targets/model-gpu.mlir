// RUN: ember-opt %s -p ember-model -t opencl | filecheck %s
// RUN: ember-opt %s -p ember-model -t metal | filecheck %s --check-prefix=METAL

// A GPU model through the same ember-model as a CPU's, up to the backend's
// segments: each kernel compiled apart to a piece of a launch plan, joined into
// one translation unit (the helpers once), and default_run made of
// graph-plan-memory{memory=buffers}'s call plan: the packed weight by name,
// intermediates and the conv's scratch in slots reused by liveness, the
// flatten a view of the sigmoid's output, written straight into the output.

// CHECK:       static inline int ember_floordiv_i32(
// CHECK-NOT:   static inline int ember_floordiv_i32(
// CHECK:       __kernel void __attribute__((reqd_work_group_size(256, 1, 1)))
// CHECK-NEXT:  ember_conv2d_relu_[[CONV:[0-9a-f]+]]_kernel0(
// CHECK:       // default_run: 2 arguments, 4 buffers, 6 launches
// CHECK-NEXT:  //   ember_conv2d_relu_[[CONV]]_kernel0<<<[3, 1, 1], [256, 1, 1]>>>(arg0, paramw.packed.{{[0-9a-f]+}}, buffer0)
// CHECK-NEXT:  //   ember_conv2d_relu_[[CONV]]_kernel1<<<{{.*}}>>>(buffer1, buffer0)
// CHECK-NEXT:  //   ember_max_pool2d_[[POOL:[0-9a-f]+]]_kernel0<<<{{.*}}>>>(buffer1, buffer0)
// CHECK-NEXT:  //   ember_max_pool2d_[[POOL]]_kernel1<<<{{.*}}>>>(buffer0, buffer2)
// CHECK-NEXT:  //   ember_max_pool2d_[[POOL]]_kernel2<<<{{.*}}>>>(buffer3, buffer2)
// CHECK-NEXT:  //   ember_sigmoid_flatten_{{[0-9a-f]+}}_kernel0<<<{{.*}}>>>(buffer3, arg1)

// METAL:       #include <metal_stdlib>
// METAL:       kernel void
// METAL-NEXT:  ember_conv2d_relu_{{[0-9a-f]+}}_kernel0(device const float* data0 {{\[\[}}buffer(0){{\]\]}}
// METAL:       // default_run: 2 arguments, 4 buffers, 6 launches
func.func @main(%x: tensor<1x4x6x6xf32> {ember.name = "data"}) -> (tensor<1x36xf32> {ember.name = "prob"}) {
  %w = graph.param "w" : tensor<4x4x3x3xf32>
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %r = graph.relu %c : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %p = graph.max_pool2d %r {kernel = [2, 2], strides = [2, 2], padding = [0, 0, 0, 0]} : (tensor<1x4x6x6xf32>) -> tensor<1x4x3x3xf32>
  %s = graph.sigmoid %p : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %f = graph.flatten %s {axis = 1} : (tensor<1x4x3x3xf32>) -> tensor<1x36xf32>
  func.return %f : tensor<1x36xf32>
}
