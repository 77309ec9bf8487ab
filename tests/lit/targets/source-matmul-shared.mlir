// RUN: ember-opt %s -t cuda | filecheck %s --check-prefix=CUDA
// RUN: ember-opt %s -t opencl | filecheck %s --check-prefix=OPENCL
// RUN: not ember-opt %s -t "cuda -max_shared_memory_per_block=1024" 2>&1 | filecheck %s --check-prefix=TOO-MUCH

// TVM's tiled matmul: 16x16 tiles of A and B copied to shared memory by all the
// threads of a block (their threadIdx loops nest in the consumer's), each thread
// accumulating one element of C in a local. Barriers open the k.outer body (the
// last step's reads before this step's copies) and follow the copies.

// CUDA:      extern "C" __global__ void __launch_bounds__(256)
// CUDA-NEXT: matmul_kernel0(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
// CUDA-NEXT:   __shared__ float B_shared[256];
// CUDA-NEXT:   __shared__ float A_shared[256];
// CUDA-NEXT:   int32_t i_outer = (int32_t)blockIdx.y;
// CUDA-NEXT:   int32_t j_outer = (int32_t)blockIdx.x;
// CUDA-NEXT:   int32_t i_inner = (int32_t)threadIdx.y;
// CUDA-NEXT:   int32_t j_inner = (int32_t)threadIdx.x;
// CUDA-NEXT:   float C_local[1];
// CUDA-NEXT:   C_local[0] = 0.0f;
// CUDA-NEXT:   for (int32_t k_outer = 0; k_outer < 4; ++k_outer) {
// CUDA-NEXT:     __syncthreads();
// CUDA-NEXT:     int32_t ax0 = (int32_t)threadIdx.y;
// CUDA-NEXT:     int32_t ax1 = (int32_t)threadIdx.x;
// CUDA-NEXT:     float [[BV:.*]] = B[((k_outer * 16) + ax0) * 64 + ((j_outer * 16) + ax1)];
// CUDA-NEXT:     B_shared[ax0 * 16 + ax1] = [[BV]];
// CUDA-NEXT:     int32_t ax0_1 = (int32_t)threadIdx.y;
// CUDA-NEXT:     int32_t ax1_1 = (int32_t)threadIdx.x;
// CUDA-NEXT:     float [[AV:.*]] = A[((i_outer * 16) + ax0_1) * 64 + ((k_outer * 16) + ax1_1)];
// CUDA-NEXT:     A_shared[ax0_1 * 16 + ax1_1] = [[AV]];
// CUDA-NEXT:     __syncthreads();
// CUDA-NEXT:     for (int32_t k_inner = 0; k_inner < 16; ++k_inner) {
// CUDA-NEXT:       float {{.*}} = A_shared[i_inner * 16 + k_inner];
// CUDA-NEXT:       float {{.*}} = B_shared[k_inner * 16 + j_inner];
// CUDA:          }
// CUDA-NEXT:   }
// CUDA:        C[((i_outer * 16) + i_inner) * 64 + ((j_outer * 16) + j_inner)] =
// CUDA-NOT:    __syncthreads

// OPENCL:      __kernel void __attribute__((reqd_work_group_size(16, 16, 1)))
// OPENCL-NEXT: matmul_kernel0(__global const float* restrict A, __global const float* restrict B, __global float* restrict C) {
// OPENCL-NEXT:   __local float B_shared[256];
// OPENCL-NEXT:   __local float A_shared[256];
// OPENCL:        for (int k_outer = 0; k_outer < 4; ++k_outer) {
// OPENCL-NEXT:     barrier(CLK_LOCAL_MEM_FENCE);
// OPENCL:          A_shared[ax0_1 * 16 + ax1_1] =
// OPENCL-NEXT:     barrier(CLK_LOCAL_MEM_FENCE);

// TOO-MUCH: stage 'C': kernel matmul_kernel0 uses 2048 bytes of shared memory (B.shared, A.shared), more than max_shared_memory_per_block = 1024 of target 'cuda -max_shared_memory_per_block=1024'; make the shared tiles smaller

func.func @matmul(%A: tensor<64x64xf32> {ember.name = "A"}, %B: tensor<64x64xf32> {ember.name = "B"}) -> tensor<64x64xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 64) -> tensor<64x64xf32> {
    %0 = te.read %A[%i, %k] : tensor<64x64xf32>
    %1 = te.read %B[%k, %j] : tensor<64x64xf32>
    %2 = arith.mulf %0, %1 : f32
    te.yield %2 : f32
  }
  te.schedule {
    te.cache_read "A" "shared" readers ["C"] -> "A.shared"
    te.cache_read "B" "shared" readers ["C"] -> "B.shared"
    te.cache_write "C" "local" -> "C.local"
    te.split "C" "i" factor 16 -> "i.outer", "i.inner"
    te.split "C" "j" factor 16 -> "j.outer", "j.inner"
    te.reorder "C" ["i.outer", "j.outer", "i.inner", "j.inner"]
    te.bind "C" "i.outer" "blockIdx.y"
    te.bind "C" "j.outer" "blockIdx.x"
    te.bind "C" "i.inner" "threadIdx.y"
    te.bind "C" "j.inner" "threadIdx.x"
    te.compute_at "C.local" at "C" "j.inner"
    te.split "C.local" "k" factor 16 -> "k.outer", "k.inner"
    te.compute_at "A.shared" at "C.local" "k.outer"
    te.bind "A.shared" "ax0" "threadIdx.y"
    te.bind "A.shared" "ax1" "threadIdx.x"
    te.compute_at "B.shared" at "C.local" "k.outer"
    te.bind "B.shared" "ax0" "threadIdx.y"
    te.bind "B.shared" "ax1" "threadIdx.x"
  }
  func.return %C : tensor<64x64xf32>
}
