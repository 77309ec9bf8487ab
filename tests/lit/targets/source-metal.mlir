// RUN: ember-opt %s -t metal --split-input-file | filecheck %s
// RUN: not ember-opt %s -t "metal -max_num_threads=32" --split-input-file 2>&1 | filecheck %s --check-prefix=TOO-MANY

// Metal Shading Language from the C-family printer: buffers are `device`
// pointers bound by {{\[\[}}buffer(i)]], the block and thread indices are uint3
// kernel parameters, the bound loops read them.

// CHECK:      #include <metal_stdlib>
// CHECK-NEXT: using namespace metal;
// CHECK:      kernel void
// CHECK-NEXT: vecadd_kernel0(device const float* A {{\[\[}}buffer(0)]], device const float* B {{\[\[}}buffer(1)]], device float* C {{\[\[}}buffer(2)]], uint3 blockIdx {{\[\[}}threadgroup_position_in_grid]], uint3 threadIdx {{\[\[}}thread_position_in_threadgroup]]) {
// CHECK-NEXT:   int i_outer = (int)blockIdx.x;
// CHECK-NEXT:   int i_inner = (int)threadIdx.x;
// CHECK-NEXT:   int [[I:.*]] = (i_outer * 64) + i_inner;
// CHECK-NEXT:   float [[A:.*]] = A[[[I]]];
// CHECK-NEXT:   float [[B:.*]] = B[[[I]]];
// CHECK-NEXT:   C[[[I]]] = [[A]] + [[B]];
// CHECK-NEXT: }

// 64 threads per block do not fit a target of 32.
// TOO-MANY: stage 'C': kernel vecadd_kernel0 has 64 threads per block (64 x 1 x 1), more than max_num_threads = 32 of target 'metal -max_num_threads=32'; split its threadIdx loops smaller

func.func @vecadd(%A: tensor<256xf32> {ember.name = "A"}, %B: tensor<256xf32> {ember.name = "B"}) -> tensor<256xf32> {
  %C = te.compute "C" (%i) -> tensor<256xf32> {
    %0 = te.read %A[%i] : tensor<256xf32>
    %1 = te.read %B[%i] : tensor<256xf32>
    %2 = arith.addf %0, %1 : f32
    te.yield %2 : f32
  }
  te.schedule {
    te.split "C" "i" factor 64 -> "i.outer", "i.inner"
    te.bind "C" "i.outer" "blockIdx.x"
    te.bind "C" "i.inner" "threadIdx.x"
  }
  func.return %C : tensor<256xf32>
}

// -----

// A row max reduced per thread, then a row copied to threadgroup memory by
// 24 of 48 threads under a guard: the barrier follows the guard, and exp is
// Metal's precise one (fast math is the driver's default).

// CHECK-LABEL: softmax_kernel0(device const float* A {{\[\[}}buffer(0)]], device float* M {{\[\[}}buffer(1)]],
// CHECK:         M[[[R:.*]]] = -INFINITY;
// CHECK:           float [[MAX:.*]] = ember_maximumf_f32(acc, {{.*}});
// CHECK-NEXT:      M[[[R]]] = [[MAX]];
// CHECK-LABEL: softmax_kernel1(device const float* A {{\[\[}}buffer(0)]], device float* E {{\[\[}}buffer(1)]], device const float* M {{\[\[}}buffer(2)]], uint3 blockIdx
// CHECK-NEXT:    threadgroup float A_shared[48];
// CHECK-NEXT:    int i = (int)blockIdx.x;
// CHECK-NEXT:    int ax1_outer = (int)threadIdx.x;
// CHECK-NEXT:    if (ax1_outer < 24) {
// CHECK-NEXT:      for (int ax1_inner = 0; ax1_inner < 2; ++ax1_inner) {
// CHECK:             A_shared[{{.*}}] =
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    threadgroup_barrier(mem_flags::mem_threadgroup);
// CHECK-NEXT:    int j = (int)threadIdx.x;
// CHECK-NEXT:    float {{.*}} = A_shared[j];
// CHECK:         float e = metal::precise::exp(d);
// CHECK-NEXT:    E[i * 48 + j] = e;

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

// -----

// float16 is Metal's `half`; erf, which MSL lacks, is a helper over float.

// CHECK:      static inline float ember_erf(float x) {
// CHECK:        float r = t * metal::precise::exp(
// CHECK-LABEL: gelu_kernel0(device const half* A {{\[\[}}buffer(0)]], device half* C {{\[\[}}buffer(1)]],
// CHECK:        half [[X:.*]] = A[[[I:.*]]];
// CHECK-NEXT:   C[[[I]]] = [[X]] * ((half)ember_erf((float)[[X]]));

func.func @gelu(%A: tensor<256xf16> {ember.name = "A"}) -> tensor<256xf16> {
  %C = te.compute "C" (%i) -> tensor<256xf16> {
    %0 = te.read %A[%i] : tensor<256xf16>
    %1 = math.erf %0 : f16
    %2 = arith.mulf %0, %1 : f16
    te.yield %2 : f16
  }
  te.schedule {
    te.split "C" "i" factor 64 -> "i.outer", "i.inner"
    te.bind "C" "i.outer" "blockIdx.x"
    te.bind "C" "i.inner" "threadIdx.x"
  }
  func.return %C : tensor<256xf16>
}
