// RUN: ember-opt %s -t cuda --split-input-file | filecheck %s --check-prefix=CUDA
// RUN: ember-opt %s -t opencl --split-input-file | filecheck %s --check-prefix=OPENCL

// A row sum, one thread per row: 100 rows in blocks of 32 leave a guard, the
// reduction runs serially in each thread.

// CUDA-LABEL: row_sum_kernel0(const float* __restrict__ A, float* __restrict__ S) {
// CUDA-NEXT:    int32_t i_outer = (int32_t)blockIdx.x;
// CUDA-NEXT:    int32_t i_inner = (int32_t)threadIdx.x;
// CUDA-NEXT:    int32_t [[I:.*]] = (i_outer * 32) + i_inner;
// CUDA-NEXT:    bool [[IN:.*]] = [[I]] < 100;
// CUDA-NEXT:    if ([[IN]]) {
// CUDA-NEXT:      S[[[I]]] = 0.0f;
// CUDA-NEXT:    }
// CUDA-NEXT:    for (int32_t k = 0; k < 37; ++k) {
// CUDA-NEXT:      if ([[IN]]) {
// CUDA-NEXT:        float [[X:.*]] = A[[[I]] * 37 + k];
// CUDA-NEXT:        float acc = S[[[I]]];
// CUDA-NEXT:        float sum = acc + [[X]];
// CUDA-NEXT:        S[[[I]]] = sum;

// OPENCL-LABEL: row_sum_kernel0(__global const float* restrict A, __global float* restrict S) {
// OPENCL:         for (int k = 0; k < 37; ++k) {

func.func @row_sum(%A: tensor<100x37xf32> {ember.name = "A"}) -> tensor<100xf32> {
  %S = te.compute "S" (%i) reduce sum (%k : 37) -> tensor<100xf32> {
    %0 = te.read %A[%i, %k] : tensor<100x37xf32>
    te.yield %0 : f32
  }
  te.schedule {
    te.split "S" "i" factor 32 -> "i.outer", "i.inner"
    te.bind "S" "i.outer" "blockIdx.x"
    te.bind "S" "i.inner" "threadIdx.x"
  }
  func.return %S : tensor<100xf32>
}

// -----

// Row maxima in one kernel, then the shifted exponentials in a second: the
// maxima are an intermediate device buffer. The second kernel's threads copy
// one row to shared memory with 32 threads while 48 run: the copy runs under a
// guard and a barrier follows it, outside the guard.

// CUDA-LABEL: softmax_kernel0(const float* __restrict__ A, float* __restrict__ M) {
// CUDA:         M[[[R:.*]]] = -__int_as_float(0x7f800000);
// CUDA:           float [[MAX:.*]] = ember_maximumf_f32(acc, {{.*}});
// CUDA-NEXT:      M[[[R]]] = [[MAX]];
// CUDA-LABEL: softmax_kernel1(const float* __restrict__ A, float* __restrict__ E, const float* __restrict__ M) {
// CUDA-NEXT:    __shared__ float A_shared[48];
// CUDA-NEXT:    int32_t i = (int32_t)blockIdx.x;
// CUDA-NEXT:    int32_t ax1_outer = (int32_t)threadIdx.x;
// CUDA-NEXT:    if (ax1_outer < 24) {
// CUDA-NEXT:      for (int32_t ax1_inner = 0; ax1_inner < 2; ++ax1_inner) {
// CUDA:             A_shared[{{.*}}] =
// CUDA-NEXT:      }
// CUDA-NEXT:    }
// CUDA-NEXT:    __syncthreads();
// CUDA-NEXT:    int32_t j = (int32_t)threadIdx.x;
// CUDA-NEXT:    float {{.*}} = A_shared[j];
// CUDA:         E[i * 48 + j] = e;

// OPENCL-LABEL: softmax_kernel1(
// OPENCL:         if (ax1_outer < 24) {
// OPENCL:         barrier(CLK_LOCAL_MEM_FENCE);
// OPENCL:         float e = exp(d);

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
