// RUN: ember-opt %s -p convert-dot-to-llvm --split-input-file | filecheck %s

// With AVX512-VNNI, 16 lanes are one vpdpbusd and 32 are two (split and
// joined by shuffles); 8 lanes take the 256-bit form with AVX512-VL.

// CHECK-LABEL: func.func @vnni(
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK:         llvm.shufflevector
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=icelake-server"} {
  func.func @vnni(%v: vector<16xi32>, %w: vector<8xi32>, %x: vector<32xi32>) -> vector<32xi32> {
    %s = dot.u8i8 %v, %v, %v : vector<16xi32>
    %t = dot.u8i8 %w, %w, %w : vector<8xi32>
    %u = dot.u8i8 %x, %x, %x : vector<32xi32>
    func.return %u : vector<32xi32>
  }
}

// -----

// Without VNNI (AVX2), and on a scalar: the bytes widened, multiplied, and each
// lane's four products added.

// CHECK-LABEL: func.func @widened(
// CHECK-NOT:     vpdpbusd
// CHECK:         llvm.bitcast %{{.*}} : vector<8xi32> to vector<32xi8>
// CHECK:         llvm.zext %{{.*}} : vector<32xi8> to vector<32xi32>
// CHECK:         llvm.sext %{{.*}} : vector<32xi8> to vector<32xi32>
// CHECK:         llvm.mul
// CHECK-COUNT-4: llvm.add
// CHECK:         llvm.bitcast %{{.*}} : i32 to vector<4xi8>
// CHECK:         llvm.call_intrinsic "llvm.vector.reduce.add.v4i32"
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell"} {
  func.func @widened(%w: vector<8xi32>, %a: i32) -> i32 {
    %t = dot.u8i8 %w, %w, %w : vector<8xi32>
    %s = dot.u8i8 %a, %a, %a : i32
    func.return %s : i32
  }
}

// -----

// aarch64 with i8mm: usdot on the lanes' bytes.

// CHECK-LABEL: func.func @usdot(
// CHECK:         llvm.bitcast %{{.*}} : vector<4xi32> to vector<16xi8>
// CHECK:         llvm.call_intrinsic "llvm.aarch64.neon.usdot.v4i32.v16i8"
builtin.module attributes {ember.target = "llvm -mtriple=aarch64-linux-gnu -mattr=+i8mm"} {
  func.func @usdot(%v: vector<4xi32>) -> vector<4xi32> {
    %s = dot.u8i8 %v, %v, %v : vector<4xi32>
    func.return %s : vector<4xi32>
  }
}

// -----

// 48 lanes are three vpdpbusd, joined in order.

// CHECK-LABEL: func.func @three(
// CHECK-COUNT-3: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK:         %{{.*}} = llvm.shufflevector %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47] : vector<32xi32>
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=icelake-server"} {
  func.func @three(%v: vector<48xi32>) -> vector<48xi32> {
    %s = dot.u8i8 %v, %v, %v : vector<48xi32>
    func.return %s : vector<48xi32>
  }
}

// -----

// aarch64 with the dot product extension but no i8mm: sdot of the unsigned
// bytes less 128 (sign bits flipped), plus 128 times sdot(ones, b).

// CHECK-LABEL: func.func @sdot(
// CHECK:         llvm.xor
// CHECK:         llvm.call_intrinsic "llvm.aarch64.neon.sdot.v4i32.v16i8"
// CHECK:         llvm.call_intrinsic "llvm.aarch64.neon.sdot.v4i32.v16i8"
// CHECK:         llvm.shl
// CHECK:         llvm.add
builtin.module attributes {ember.target = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76"} {
  func.func @sdot(%v: vector<4xi32>) -> vector<4xi32> {
    %s = dot.u8i8 %v, %v, %v : vector<4xi32>
    func.return %s : vector<4xi32>
  }
}

// -----

// dot.bf16 with AVX512-BF16 (Zen 4): 32 lanes are two vdpbf16ps on 16, split
// and joined by shuffles; 8 lanes take the 256-bit form (AVX512-VL).

// CHECK-LABEL: func.func @dpbf16ps(
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xf32>, vector<16xi32>, vector<16xi32>) -> vector<16xf32>
// CHECK:         %[[S:.*]] = llvm.shufflevector %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] : vector<16xf32>
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.256"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<8xf32>, vector<8xi32>, vector<8xi32>) -> vector<8xf32>
// CHECK-NOT:     llvm.fma
// CHECK:         func.return %[[S]] : vector<32xf32>
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4"} {
  func.func @dpbf16ps(%acc: vector<32xf32>, %v: vector<32xi32>, %wacc: vector<8xf32>, %w: vector<8xi32>) -> vector<32xf32> {
    %s = dot.bf16 %acc, %v, %v : vector<32xf32>, vector<32xi32>
    %t = dot.bf16 %wacc, %w, %w : vector<8xf32>, vector<8xi32>
    func.return %s : vector<32xf32>
  }
}

// -----

// The bfloat16 product is symmetric, so a broadcast operand goes last, where
// vdpbf16ps may read memory: the broadcast folds into it (m32bcst). dot.u8i8
// is not (unsigned by signed bytes) and keeps its order.

// CHECK-LABEL: func.func @broadcast_last(
// CHECK-SAME:      %[[ACC:[^:]*]]: vector<16xf32>, %[[X:[^:]*]]: i32, %[[W:[^:]*]]: vector<16xi32>, %[[IACC:[^:]*]]: vector<16xi32>)
// CHECK:         %[[B:.*]] = vector.broadcast %[[X]] : i32 to vector<16xi32>
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%[[ACC]], %[[W]], %[[B]])
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[IACC]], %[[B]], %[[W]])
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4"} {
  func.func @broadcast_last(%acc: vector<16xf32>, %x: i32, %w: vector<16xi32>, %iacc: vector<16xi32>) -> (vector<16xf32>, vector<16xi32>) {
    %b = vector.broadcast %x : i32 to vector<16xi32>
    %s = dot.bf16 %acc, %b, %w : vector<16xf32>, vector<16xi32>
    %t = dot.u8i8 %iacc, %b, %w : vector<16xi32>
    func.return %s, %t : vector<16xf32>, vector<16xi32>
  }
}

// -----

// Without AVX512-BF16 (Ice Lake has VNNI, not BF16): each word's high half
// masked and its low half shifted up are float32 bits; two fused
// multiply-adds, the high (odd) pair's first.

// CHECK-LABEL: func.func @fused(
// CHECK-NOT:     dpbf16ps
// CHECK:         %[[MASK:.*]] = llvm.mlir.constant(dense<-65536> : vector<16xi32>) : vector<16xi32>
// CHECK:         %[[SIXTEEN:.*]] = llvm.mlir.constant(dense<16> : vector<16xi32>) : vector<16xi32>
// CHECK:         %[[AH:.*]] = llvm.and %a, %[[MASK]] : vector<16xi32>
// CHECK:         %[[AHF:.*]] = llvm.bitcast %[[AH]] : vector<16xi32> to vector<16xf32>
// CHECK:         %[[BH:.*]] = llvm.and %b, %[[MASK]] : vector<16xi32>
// CHECK:         %[[BHF:.*]] = llvm.bitcast %[[BH]] : vector<16xi32> to vector<16xf32>
// CHECK:         %[[ODD:.*]] = llvm.call_intrinsic "llvm.fma.v16f32"(%[[AHF]], %[[BHF]], %acc)
// CHECK:         %[[AL:.*]] = llvm.shl %a, %[[SIXTEEN]] : vector<16xi32>
// CHECK:         %[[ALF:.*]] = llvm.bitcast %[[AL]] : vector<16xi32> to vector<16xf32>
// CHECK:         %[[BL:.*]] = llvm.shl %b, %[[SIXTEEN]] : vector<16xi32>
// CHECK:         %[[BLF:.*]] = llvm.bitcast %[[BL]] : vector<16xi32> to vector<16xf32>
// CHECK:         %[[S:.*]] = llvm.call_intrinsic "llvm.fma.v16f32"(%[[ALF]], %[[BLF]], %[[ODD]])
// CHECK:         func.return %[[S]]
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=icelake-server"} {
  func.func @fused(%acc: vector<16xf32>, %a: vector<16xi32>, %b: vector<16xi32>) -> vector<16xf32> {
    %s = dot.bf16 %acc, %a, %b : vector<16xf32>, vector<16xi32>
    func.return %s : vector<16xf32>
  }
}

// -----

// aarch64 with the bf16 extension: bfdot on the words' bytes, 4 lanes on a
// q register, 2 on a d register; 8 lanes are two of 4. The intrinsic is
// called unmangled: LLVM names it for the i8 operands, then upgrades it to
// bfloat ones.

// CHECK-LABEL: func.func @bfdot(
// CHECK:         llvm.bitcast %{{.*}} : vector<4xi32> to vector<16xi8>
// CHECK:         llvm.call_intrinsic "llvm.aarch64.neon.bfdot.v{{[0-9]+}}f32.v{{[0-9]+}}i8"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<4xf32>, vector<16xi8>, vector<16xi8>) -> vector<4xf32>
// CHECK:         llvm.bitcast %{{.*}} : vector<2xi32> to vector<8xi8>
// CHECK:         llvm.call_intrinsic "llvm.aarch64.neon.bfdot.v{{[0-9]+}}f32.v{{[0-9]+}}i8"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<2xf32>, vector<8xi8>, vector<8xi8>) -> vector<2xf32>
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.aarch64.neon.bfdot.v{{[0-9]+}}f32.v{{[0-9]+}}i8"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<4xf32>, vector<16xi8>, vector<16xi8>) -> vector<4xf32>
// CHECK-NOT:     llvm.fma
builtin.module attributes {ember.target = "llvm -mtriple=aarch64-linux-gnu -mattr=+bf16"} {
  func.func @bfdot(%acc: vector<4xf32>, %v: vector<4xi32>, %wacc: vector<2xf32>, %w: vector<2xi32>, %xacc: vector<8xf32>, %x: vector<8xi32>) -> vector<8xf32> {
    %s = dot.bf16 %acc, %v, %v : vector<4xf32>, vector<4xi32>
    %t = dot.bf16 %wacc, %w, %w : vector<2xf32>, vector<2xi32>
    %u = dot.bf16 %xacc, %x, %x : vector<8xf32>, vector<8xi32>
    func.return %u : vector<8xf32>
  }
}

// -----

// A scalar takes no instruction, even where the target has one: the halves
// widened and two scalar fused multiply-adds.

// CHECK-LABEL: func.func @scalar_bf16(
// CHECK-NOT:     dpbf16ps
// CHECK:         llvm.and %a, %{{.*}} : i32
// CHECK:         llvm.bitcast %{{.*}} : i32 to f32
// CHECK:         %[[ODD:.*]] = llvm.call_intrinsic "llvm.fma.f32"(%{{.*}}, %{{.*}}, %acc) : (f32, f32, f32) -> f32
// CHECK:         llvm.shl %a, %{{.*}} : i32
// CHECK:         llvm.call_intrinsic "llvm.fma.f32"(%{{.*}}, %{{.*}}, %[[ODD]]) : (f32, f32, f32) -> f32
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4"} {
  func.func @scalar_bf16(%acc: f32, %a: i32, %b: i32) -> f32 {
    %s = dot.bf16 %acc, %a, %b : f32, i32
    func.return %s : f32
  }
}
