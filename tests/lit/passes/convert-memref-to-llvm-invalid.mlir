// RUN: ember-opt %s --split-input-file --verify-diagnostics -p convert-memref-to-llvm | filecheck %s

// What the bare-pointer convention cannot express is a diagnostic naming the op and
// its function.

func.func @dynamic(%A: memref<?xf32>, %i: index) {
  %x = memref.load %A[%i] : memref<?xf32>
  func.return
}

// CHECK: convert-memref-to-llvm: cannot lower 'memref.load' in @dynamic: expected a static shape, or ember.dims naming each dynamic dim of memref<?xf32> (as ["n"] for memref<?x8xf32>), got none

// -----

func.func @dynamic_alloca(%n: index) {
  %T = memref.alloca(%n) : memref<?xf32>
  func.return
}

// CHECK: convert-memref-to-llvm: cannot lower 'memref.alloca' in @dynamic_alloca: expected a static shape, got memref<?xf32>

// -----

func.func @strided(%A: memref<4xf32, strided<[2]>>, %i: index) {
  %x = memref.load %A[%i] : memref<4xf32, strided<[2]>>
  func.return
}

// CHECK: convert-memref-to-llvm: cannot lower 'memref.load' in @strided: expected the identity layout, got memref<4xf32, strided<[2]>>

// -----

func.func @memory_space(%A: memref<4xf32, 3 : i32>, %i: index, %x: f32) {
  memref.store %x, %A[%i] : memref<4xf32, 3 : i32>
  func.return
}

// CHECK: convert-memref-to-llvm: cannot lower 'memref.store' in @memory_space: expected the default memory space

// -----

func.func @complex_elements(%A: memref<4xcomplex<f32>>, %i: index) {
  %x = memref.load %A[%i] : memref<4xcomplex<f32>>
  func.return
}

// CHECK: convert-memref-to-llvm: cannot lower 'memref.load' in @complex_elements: unsupported element type in memref<4xcomplex<f32>>

// -----

// An op the pass has no lowering for is named by the final check.

func.func @subview(%A: memref<4x4xf32>) {
  %B = memref.subview %A[0, 0] [2, 2] [1, 1] : memref<4x4xf32> to memref<2x2xf32, strided<[4, 1]>>
  func.return
}

// CHECK: convert-memref-to-llvm: failed to convert 'memref.subview' to the llvm dialect

// -----

// A view at a constant offset must lie inside its source: a memory plan that
// overflows its workspace is refused at compile time.

func.func @view_past_end(%ws: memref<256xi8>) {
  %c192 = arith.constant 192 : index
  %t = memref.view %ws[%c192][] : memref<256xi8> to memref<4x8xf32>
  func.return
}

// CHECK: convert-memref-to-llvm: cannot lower 'memref.view' in @view_past_end: expected the view's bytes [192, 320) inside the 256-byte source, got memref<4x8xf32> at byte 192
