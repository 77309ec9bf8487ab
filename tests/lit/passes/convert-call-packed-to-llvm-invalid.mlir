// RUN: ember-opt %s --split-input-file --verify-diagnostics -p convert-call-packed-to-llvm | filecheck %s

// The message takes the function's only result, so a function that calls the
// host must have none.

func.func @has_result(%A: memref<4xf32>) -> f32 {
  loop.call_packed "my.f"(%A) : memref<4xf32>
  %x = arith.constant 1.0 : f32
  func.return %x : f32
}

// CHECK: convert-call-packed-to-llvm: @has_result: expected a function without results to call the host, got results (f32)

// -----

// A call still in a region (here an scf.if) cannot return early: the CFG must
// come first.

func.func @in_region(%c: i1) {
  scf.if %c {
    loop.call_packed "my.f"()
  }
  func.return
}

// CHECK: convert-call-packed-to-llvm: @in_region: loop.call_packed "my.f" is inside 'scf.if'; expected it in the function's blocks (run convert-loop-to-scf and convert-scf-to-cf first)

// -----

func.func @wide(%x: i128) {
  loop.call_packed "my.f"(%x) : i128
  func.return
}

// CHECK: convert-call-packed-to-llvm: @wide: argument 0 of loop.call_packed "my.f": expected at most 64 bits, got i128

// -----

llvm.mlir.global external @__ember_call_packed(0 : i32) : i32

func.func @taken() {
  loop.call_packed "my.f"()
  func.return
}

// CHECK: convert-call-packed-to-llvm: @__ember_call_packed: expected a !llvm.ptr llvm.mlir.global, got 'llvm.mlir.global'
