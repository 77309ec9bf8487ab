// RUN: ember-opt %s -p convert-arith-to-llvm --split-input-file | filecheck %s

// float32 to bfloat16 is one llvm.fptrunc on a target that converts in one
// instruction (AVX512-BF16's vcvtneps2bf16), scalar or vector.

// CHECK-LABEL: func.func @native(
// CHECK:         %{{.*}} = llvm.fptrunc %{{.*}} : f32 to bf16
// CHECK:         %{{.*}} = llvm.fptrunc %{{.*}} : vector<16xf32> to vector<16xbf16>
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4"} {
  func.func @native(%x: f32, %v: vector<16xf32>) -> (bf16, vector<16xbf16>) {
    %h = arith.truncf %x : f32 to bf16
    %w = arith.truncf %v : vector<16xf32> to vector<16xbf16>
    func.return %h, %w : bf16, vector<16xbf16>
  }
}

// -----

// Without the instruction (Haswell) the rounding is integer ops: the bits
// plus 0x7FFF and the kept part's lowest bit (to nearest, ties to even), a
// NaN made quiet (bit 22 set), the high half kept; no call to compiler-rt's
// __truncsfbf2. A float32 to float16 stays an fptrunc.

// CHECK-LABEL: func.func @expanded(
// CHECK:         %[[B:.*]] = llvm.bitcast %{{.*}} : vector<8xf32> to vector<8xi32>
// CHECK:         %[[S:.*]] = llvm.lshr %[[B]], %{{.*}} : vector<8xi32>
// CHECK:         %[[O:.*]] = llvm.and %[[S]], %{{.*}} : vector<8xi32>
// CHECK:         %[[A:.*]] = llvm.add %[[O]], %{{.*}} : vector<8xi32>
// CHECK:         %[[R:.*]] = llvm.add %[[B]], %[[A]] : vector<8xi32>
// CHECK:         %[[Q:.*]] = llvm.or %[[B]], %{{.*}} : vector<8xi32>
// CHECK:         %[[N:.*]] = llvm.fcmp "uno" %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:         %[[C:.*]] = llvm.select %[[N]], %[[Q]], %[[R]] : vector<8xi1>, vector<8xi32>
// CHECK:         %[[H:.*]] = llvm.lshr %[[C]], %{{.*}} : vector<8xi32>
// CHECK:         %[[T:.*]] = llvm.trunc %[[H]] : vector<8xi32> to vector<8xi16>
// CHECK:         %{{.*}} = llvm.bitcast %[[T]] : vector<8xi16> to vector<8xbf16>
// CHECK:         %{{.*}} = llvm.fptrunc %{{.*}} : f32 to f16
// CHECK-NOT:     __truncsfbf2
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell"} {
  func.func @expanded(%v: vector<8xf32>, %x: f32) -> (vector<8xbf16>, f16) {
    %w = arith.truncf %v : vector<8xf32> to vector<8xbf16>
    %h = arith.truncf %x : f32 to f16
    func.return %w, %h : vector<8xbf16>, f16
  }
}
