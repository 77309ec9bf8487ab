// RUN: ember-opt %s -p ember-cpu -t llvm | filecheck %s

// A te function written in text lowers to LLVM IR with a packed-ABI entry that
// checks its arguments and calls the kernel.

func.func @rowsum(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  %S = te.compute "S" (%i) reduce sum (%k : 8) -> tensor<4xf32> {
    %x = te.read %X[%i, %k] : tensor<4x8xf32>
    te.yield %x : f32
  }
  func.return %S : tensor<4xf32>
}

// CHECK-DAG: define i32 @rowsum(ptr {{.*}}, ptr {{.*}}, i32 {{.*}}, ptr {{.*}}, ptr {{.*}})
// CHECK-DAG: define {{.*}}@rowsum_impl(ptr
// CHECK-DAG: fadd
// CHECK-DAG: define i32 @__ember_metadata(
