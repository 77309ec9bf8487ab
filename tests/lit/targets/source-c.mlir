// RUN: ember-opt %s -t c --split-input-file | filecheck %s

// The c target's functions: one `static int32_t ember_<name>_impl` per
// function, parameters the buffers in order (inputs const), returning 0.

// CHECK:       #include <stdint.h>
// CHECK-LABEL: static int32_t ember_vecadd_impl(const float* restrict A, const float* restrict B, float* restrict C) {
// CHECK-NEXT:    for (int64_t i_outer = 0; i_outer < 4; ++i_outer) {
// CHECK-NEXT:      for (int64_t i_inner = 0; i_inner < 64; ++i_inner) {
// CHECK-NEXT:        int64_t [[I:.*]] = (i_outer * 64) + i_inner;
// CHECK:             C[[[I]]] = {{.*}} + {{.*}};
// CHECK:         return 0;
// CHECK-NEXT:  }
func.func @vecadd(%A: tensor<256xf32> {ember.name = "A"}, %B: tensor<256xf32> {ember.name = "B"}) -> tensor<256xf32> {
  %C = te.compute "C" (%i) -> tensor<256xf32> {
    %0 = te.read %A[%i] : tensor<256xf32>
    %1 = te.read %B[%i] : tensor<256xf32>
    %2 = arith.addf %0, %1 : f32
    te.yield %2 : f32
  }
  te.schedule {
    te.split "C" "i" factor 64 -> "i.outer", "i.inner"
  }
  func.return %C : tensor<256xf32>
}

// -----

// A tiled matmul accumulating a 4x4 block of C in a local array.

// CHECK-LABEL: static int32_t ember_matmul_impl(const float* restrict A, const float* restrict B, float* restrict C) {
// CHECK:             float C_local[16];
// CHECK:             for (int64_t k = 0; k < 64; ++k) {
// CHECK:                 C_local[i_c_1 * 4 + j_c_1] = sum;
// CHECK:         return 0;
func.func @matmul(%A: tensor<64x64xf32> {ember.name = "A"}, %B: tensor<64x64xf32> {ember.name = "B"}) -> tensor<64x64xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 64) -> tensor<64x64xf32> {
    %0 = te.read %A[%i, %k] : tensor<64x64xf32>
    %1 = te.read %B[%k, %j] : tensor<64x64xf32>
    %2 = arith.mulf %0, %1 : f32
    te.yield %2 : f32
  }
  te.schedule {
    te.cache_write "C" "local" -> "C.local"
    te.split "C" "i" factor 4 -> "i.outer", "i.inner"
    te.split "C" "j" factor 4 -> "j.outer", "j.inner"
    te.reorder "C" ["i.outer", "j.outer", "i.inner", "j.inner"]
    te.compute_at "C.local" at "C" "j.outer"
    te.reorder "C.local" ["k", "i.c", "j.c"]
  }
  func.return %C : tensor<64x64xf32>
}

// -----

// Row maxima then shifted exponentials: the maxima are an intermediate buffer
// the C face allocates (malloc, freed before the return); float max is
// arith.maximumf's, NaN-propagating.

// CHECK-LABEL: static int32_t ember_softmax_impl(const float* restrict A, float* restrict E) {
// CHECK-NEXT:    float* M = (float*)malloc(sizeof(float) * 16);
// CHECK-NEXT:    if (M == NULL) { return -101; }
// CHECK:         M[i] = -INFINITY;
// CHECK:         ember_maximumf_f32(acc, {{.*}});
// CHECK:         E[{{.*}} * 48 + j] = e;
// CHECK:         free(M);
// CHECK-NEXT:    return 0;
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
  func.return %E : tensor<16x48xf32>
}
