// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @wrong_buffers(%A: tensor<16xf32>) -> tensor<16xf32> {
  %B = te.extern "B" (%A) : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%b: memref<16xf32>):
    loop.call_packed "f"(%b) : memref<16xf32>
  }
  func.return %B : tensor<16xf32>
}

// CHECK: Operation does not verify: expected the body to take the buffers of the inputs and the result (memref<16xf32>, memref<16xf32>), got (memref<16xf32>)

// -----

func.func @wrong_element(%A: tensor<16xf32>) -> tensor<16xi32> {
  %B = te.extern "B" (%A) : (tensor<16xf32>) -> tensor<16xi32> {
  ^bb0(%a: memref<16xf32>, %b: memref<16xf32>):
    loop.call_packed "f"(%a, %b) : memref<16xf32>, memref<16xf32>
  }
  func.return %B : tensor<16xi32>
}

// CHECK: Operation does not verify: expected the body to take the buffers of the inputs and the result (memref<16xf32>, memref<16xi32>), got (memref<16xf32>, memref<16xf32>)

// -----

func.func @dynamic(%A: tensor<?xf32>) -> tensor<?xf32> {
  %B = te.extern "B" (%A) : (tensor<?xf32>) -> tensor<?xf32> {
  ^bb0(%a: memref<?xf32>, %b: memref<?xf32>):
  }
  func.return %B : tensor<?xf32>
}

// CHECK: Operation does not verify: expected static shapes, got tensor<?xf32>

// -----

func.func @captures(%A: tensor<16xf32>, %n: i64) -> tensor<16xf32> {
  %B = te.extern "B" (%A) : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%a: memref<16xf32>, %b: memref<16xf32>):
    loop.call_packed "f"(%a, %b, %n) : memref<16xf32>, memref<16xf32>, i64
  }
  func.return %B : tensor<16xf32>
}

// CHECK: Operation does not verify: Operation using value defined out of its IsolatedFromAbove parent: CallPackedOp(loop.call_packed "f"(%a, %b, %n)

// -----

func.func @types_count(%A: tensor<16xf32>) -> tensor<16xf32> {
  %B = te.extern "B" (%A, %A) : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%a: memref<16xf32>, %b: memref<16xf32>):
  }
  func.return %B : tensor<16xf32>
}

// CHECK: expected 2 input types, got 1
