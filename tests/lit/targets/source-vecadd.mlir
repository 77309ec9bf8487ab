// RUN: ember-opt %s -t "cuda -arch=sm_80" | filecheck %s --check-prefix=CUDA
// RUN: ember-opt %s -t opencl | filecheck %s --check-prefix=OPENCL
// RUN: not ember-opt %s -t c 2>&1 | filecheck %s --check-prefix=C

// A vector add split into blocks of 64 threads: the bound loops become the
// block and thread indices of one kernel.

// CUDA:      typedef long long int64_t;
// CUDA:      extern "C" __global__ void __launch_bounds__(64)
// CUDA-NEXT: vecadd_kernel0(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
// CUDA-NEXT:   int32_t i_outer = (int32_t)blockIdx.x;
// CUDA-NEXT:   int32_t i_inner = (int32_t)threadIdx.x;
// CUDA-NEXT:   int32_t [[I:.*]] = (i_outer * 64) + i_inner;
// CUDA-NEXT:   float [[A:.*]] = A[[[I]]];
// CUDA-NEXT:   float [[B:.*]] = B[[[I]]];
// CUDA-NEXT:   C[[[I]]] = [[A]] + [[B]];
// CUDA-NEXT: }

// OPENCL:      __kernel void __attribute__((reqd_work_group_size(64, 1, 1)))
// OPENCL-NEXT: vecadd_kernel0(__global const float* restrict A, __global const float* restrict B, __global float* restrict C) {
// OPENCL-NEXT:   volatile int i_outer = (int)get_group_id(0);  // blockIdx.x
// OPENCL-NEXT:   int i_inner = (int)get_local_id(0);  // threadIdx.x
// OPENCL:        C[[[I:.*]]] = {{.*}} + {{.*}};

// A bound loop has no meaning in C.
// C: loop 'i_outer' is bound to blockIdx.x; bind needs a GPU target: build with target='cuda' or 'opencl'

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
