// RUN: ember-opt %s --split-input-file --verify-diagnostics -p convert-func-to-llvm | filecheck %s

func.func private @pair() -> (f32, f32)

// CHECK: convert-func-to-llvm: cannot lower 'func.func' @pair: expected at most one result, got 2

// -----

func.func @dynamic(%A: memref<?x4xf32>) {
  func.return
}

// CHECK: convert-func-to-llvm: cannot lower 'func.func' @dynamic: expected a static shape, or ember.dims naming each dynamic dim of memref<?x4xf32> (as ["n"] for memref<?x8xf32>), got none

// -----

func.func @strided(%A: memref<4xf32, strided<[2]>>) {
  func.return
}

// CHECK: convert-func-to-llvm: cannot lower 'func.func' @strided: expected the identity layout, got memref<4xf32, strided<[2]>>
