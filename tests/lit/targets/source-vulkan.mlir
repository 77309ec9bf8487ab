// RUN: ember-opt %s -t vulkan | filecheck %s

// The kernels of the GPU plan as GLSL 4.50 compute shaders: one shared head,
// then each kernel's shader opened by its name; buffers are storage buffers
// bound in parameter order, the indices gl_WorkGroupID / gl_LocalInvocationID,
// the block the shader's local size, shared arrays globals of the shader.

// CHECK:      #version 450
// CHECK:      bool signbit(float x)
// CHECK:      float ember_maximumf_f32(float a, float b) {

// CHECK-LABEL: // kernel softmax_kernel0
// CHECK-NEXT: layout(local_size_x = 16, local_size_y = 1, local_size_z = 1) in;
// CHECK-NEXT: layout(std430, binding = 0) restrict readonly buffer ember_A { float A[]; };
// CHECK-NEXT: layout(std430, binding = 1) restrict buffer ember_M { float M[]; };
// CHECK-NEXT: void main() {
// CHECK-NEXT:   int i_outer = int(gl_WorkGroupID.x);  // blockIdx.x
// CHECK-NEXT:   int i_inner = int(gl_LocalInvocationID.x);  // threadIdx.x
// CHECK:        M[[[I:.*]]] = -uintBitsToFloat(0x7f800000u);
// CHECK:        ember_maximumf_f32(

// The copy to shared memory runs under a guard; the barrier follows it.
// CHECK-LABEL: // kernel softmax_kernel1
// CHECK:      layout(std430, binding = 2) restrict readonly buffer ember_M { float M[]; };
// CHECK-NEXT: shared float A_shared[48];
// CHECK-NEXT: void main() {
// CHECK:        if (ax1_outer < 24) {
// CHECK:        memoryBarrierShared(); barrier();
// CHECK:        exp(
// CHECK-NOT:  __kernel

func.func @softmax(%A: tensor<16x48xf32> {ember.name = "A"}) -> tensor<16x48xf32> {
  %M = te.compute "M" (%i) reduce max (%k : 48) -> tensor<16xf32> {
    %0 = te.read %A[%i, %k] : tensor<16x48xf32>
    te.yield %0 : f32
  }
  %E = te.compute "E" (%i, %j) -> tensor<16x48xf32> {
    %a = te.read %A[%i, %j] : tensor<16x48xf32>
    %m = te.read %M[%i] : tensor<16xf32>
    %d = arith.subf %a, %m : f32
    %e = math.exp %d : f32
    te.yield %e : f32
  }
  te.schedule {
    te.split "M" "i" factor 16 -> "i.outer", "i.inner"
    te.bind "M" "i.outer" "blockIdx.x"
    te.bind "M" "i.inner" "threadIdx.x"
    te.cache_read "A" "shared" readers ["E"] -> "A.shared"
    te.bind "E" "i" "blockIdx.x"
    te.bind "E" "j" "threadIdx.x"
    te.compute_at "A.shared" at "E" "i"
    te.split "A.shared" "ax1" factor 2 -> "ax1.outer", "ax1.inner"
    te.bind "A.shared" "ax1.outer" "threadIdx.x"
  }
  func.return %E : tensor<16x48xf32>
}
