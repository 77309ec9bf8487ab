// RUN: ember-opt %s -p loop-vectorize --split-input-file | filecheck %s

// loop-vectorize's native vector is the module's target's (`ember.target`): the
// same exp over 70 floats is strip-mined into 16, 8, 4 or 2 lanes, the rest one
// narrower vector; over 40 floats it is one vector<40xf32> only where four native
// vectors hold 40 lanes.

// AVX-512 (avx512f): 64-byte vectors, 16 f32 lanes; a loop of up to four vectors
// (64 lanes) is straight-line code of its width.

// CHECK-LABEL: func.func @avx512_70(
// CHECK:         %[[REST:rest[_0-9]*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 16 : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %[[REST]] step %[[STEP]] {
// CHECK-NEXT:      vector.load %{{.*}}[%[[I]]] : memref<70xf32>, vector<16xf32>
// CHECK:         vector.load %{{.*}}[%[[REST]]] : memref<70xf32>, vector<6xf32>
// CHECK-LABEL: func.func @avx512_40(
// CHECK-NOT:     loop.for
// CHECK:         vector.load %{{.*}}[%{{.*}}] : memref<40xf32>, vector<40xf32>
// CHECK-NOT:     loop.for
// CHECK:         func.return
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=skylake-avx512"} {
  func.func @avx512_70(%A: memref<70xf32>, %C: memref<70xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 70 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<70xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<70xf32>
    }
    func.return
  }
  func.func @avx512_40(%A: memref<40xf32>, %C: memref<40xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 40 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<40xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<40xf32>
    }
    func.return
  }
}

// -----

// AVX2 (haswell: avx, no avx512f): 32-byte vectors, 8 lanes; 40 lanes are more than
// four vectors, so they are strip-mined too.

// CHECK-LABEL: func.func @avx2_70(
// CHECK:         %[[REST:rest[_0-9]*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 8 : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %[[REST]] step %[[STEP]] {
// CHECK-NEXT:      vector.load %{{.*}}[%[[I]]] : memref<70xf32>, vector<8xf32>
// CHECK:         vector.load %{{.*}}[%[[REST]]] : memref<70xf32>, vector<6xf32>
// CHECK-LABEL: func.func @avx2_40(
// CHECK:         loop.for
// CHECK-NEXT:      vector.load %{{.*}}[%{{.*}}] : memref<40xf32>, vector<8xf32>
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell"} {
  func.func @avx2_70(%A: memref<70xf32>, %C: memref<70xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 70 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<70xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<70xf32>
    }
    func.return
  }
  func.func @avx2_40(%A: memref<40xf32>, %C: memref<40xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 40 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<40xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<40xf32>
    }
    func.return
  }
}

// -----

// x86-64's baseline, SSE2: 16-byte vectors, 4 lanes.

// CHECK-LABEL: func.func @sse2_70(
// CHECK:         %[[REST:rest[_0-9]*]] = arith.constant 68 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 4 : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %[[REST]] step %[[STEP]] {
// CHECK-NEXT:      vector.load %{{.*}}[%[[I]]] : memref<70xf32>, vector<4xf32>
// CHECK:         vector.load %{{.*}}[%[[REST]]] : memref<70xf32>, vector<2xf32>
// CHECK-LABEL: func.func @sse2_40(
// CHECK:         loop.for
// CHECK-NEXT:      vector.load %{{.*}}[%{{.*}}] : memref<40xf32>, vector<4xf32>
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64"} {
  func.func @sse2_70(%A: memref<70xf32>, %C: memref<70xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 70 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<70xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<70xf32>
    }
    func.return
  }
  func.func @sse2_40(%A: memref<40xf32>, %C: memref<40xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 40 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<40xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<40xf32>
    }
    func.return
  }
}

// -----

// AArch64 NEON: 16-byte vectors, 4 lanes.

// CHECK-LABEL: func.func @neon_70(
// CHECK:         %[[REST:rest[_0-9]*]] = arith.constant 68 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 4 : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %[[REST]] step %[[STEP]] {
// CHECK-NEXT:      vector.load %{{.*}}[%[[I]]] : memref<70xf32>, vector<4xf32>
// CHECK:         vector.load %{{.*}}[%[[REST]]] : memref<70xf32>, vector<2xf32>
// CHECK-LABEL: func.func @neon_40(
// CHECK:         loop.for
// CHECK-NEXT:      vector.load %{{.*}}[%{{.*}}] : memref<40xf32>, vector<4xf32>
builtin.module attributes {ember.target = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"} {
  func.func @neon_70(%A: memref<70xf32>, %C: memref<70xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 70 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<70xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<70xf32>
    }
    func.return
  }
  func.func @neon_40(%A: memref<40xf32>, %C: memref<40xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 40 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<40xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<40xf32>
    }
    func.return
  }
}

// -----

// RISC-V without v has no vectors: pairs of lanes, which LLVM makes scalar code.

// CHECK-LABEL: func.func @scalar_70(
// CHECK:         %[[REST:rest[_0-9]*]] = arith.constant 70 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 2 : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %[[REST]] step %[[STEP]] {
// CHECK-NEXT:      vector.load %{{.*}}[%[[I]]] : memref<70xf32>, vector<2xf32>
// CHECK-LABEL: func.func @scalar_40(
// CHECK:         loop.for
// CHECK-NEXT:      vector.load %{{.*}}[%{{.*}}] : memref<40xf32>, vector<2xf32>
builtin.module attributes {ember.target = "llvm -mtriple=riscv64-linux-gnu"} {
  func.func @scalar_70(%A: memref<70xf32>, %C: memref<70xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 70 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<70xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<70xf32>
    }
    func.return
  }
  func.func @scalar_40(%A: memref<40xf32>, %C: memref<40xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 40 : index
    loop.for %i = %c0 to %n step %c1 vectorized {
      %a = memref.load %A[%i] : memref<40xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<40xf32>
    }
    func.return
  }
}
