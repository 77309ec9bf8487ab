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
