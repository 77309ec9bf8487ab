// RUN: ember-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect -p llvm-verify-lowered | filecheck %s

// A module of llvm ops (nested modules too) passes unchanged.

// CHECK-LABEL: llvm.func @add(
// CHECK-NEXT:    %[[S:.*]] = llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    llvm.return %[[S]] : f32
// CHECK:       builtin.module {
// CHECK-NEXT:    llvm.mlir.global internal constant @text("ok\00")
llvm.func @add(%x: f32, %y: f32) -> f32 {
  %s = llvm.fadd %x, %y : f32
  llvm.return %s : f32
}
builtin.module {
  llvm.mlir.global internal constant @text("ok\00") {addr_space = 0 : i32} : !llvm.array<3 x i8>
}

// -----

// An op no conversion took is named, with its function.

llvm.func @splat(%x: f32) -> vector<4xf32> {
  %v = vector.broadcast %x : f32 to vector<4xf32>
  llvm.return %v : vector<4xf32>
}

// CHECK: llvm-verify-lowered: cannot lower 'vector.broadcast' in @splat: no pass converted it to the llvm dialect

// -----

// The first op outside the llvm dialect is the one reported: here the function.

func.func @not_lowered(%x: i64) -> i64 {
  %y = arith.addi %x, %x : i64
  func.return %y : i64
}

// CHECK: llvm-verify-lowered: cannot lower 'func.func' @not_lowered: no pass converted it to the llvm dialect

// -----

// A cast reconcile-unrealized-casts could not remove is a value between a converted
// and an unconverted op.

llvm.func @leftover(%p: !llvm.ptr) -> !llvm.ptr {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
  %q = builtin.unrealized_conversion_cast %m : memref<4xf32> to !llvm.ptr
  llvm.return %q : !llvm.ptr
}

// CHECK: llvm-verify-lowered: cannot lower 'builtin.unrealized_conversion_cast' in @leftover: a conversion left a cast from !llvm.ptr to memref<4xf32> that nothing removed

// -----

// Unregistered ops are named too, even with a name in the llvm namespace.

llvm.func @unknown() {
  "llvm.not_an_op"() : () -> ()
  llvm.return
}

// CHECK: llvm-verify-lowered: cannot lower 'llvm.not_an_op' in @unknown: no pass converted it to the llvm dialect
