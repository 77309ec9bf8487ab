// RUN: ember-opt %s -p func-packed-abi | filecheck %s

// The packed entry of a function over symbolic buffers binds each symbol
// from the first buffer it is a dim of (b and s from A's shape, as long as
// they are not negative), checks every other dim against the bound values
// (C's), the strides against the compact ones computed from them, and passes
// the symbols to the function after its buffers.

// CHECK:       func.func private @copy_impl(
// CHECK-SAME:      {ember.name = "A", ember.dims = ["b", "s"], llvm.noalias}
// CHECK-SAME:      %b: index {ember.symbol = "b"}, %s: index {ember.symbol = "s"})
// CHECK:       @__ember_err.copy.0.tensor("copy: argument 0 (A): expected float32 tensor of shape (b, s)\00")
// CHECK:       @__ember_err.copy.1.tensor("copy: argument 1 (C): expected float32 tensor of shape (b, s)\00")
// CHECK-LABEL: llvm.func @copy(
// CHECK:       ^arg0_shape:
// CHECK:         %[[B:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK:         llvm.icmp "sge" %[[B]], %{{.*}} : i64
// CHECK:         %[[S:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK:         llvm.icmp "sge" %[[S]], %{{.*}} : i64
// CHECK:       ^arg1_shape:
// CHECK:         llvm.icmp "eq" %{{.*}}, %[[B]] : i64
// CHECK:         llvm.icmp "eq" %{{.*}}, %[[S]] : i64
// CHECK:       ^call:
// CHECK:         %[[BI:.*]] = builtin.unrealized_conversion_cast %[[B]] : i64 to index
// CHECK:         %[[SI:.*]] = builtin.unrealized_conversion_cast %[[S]] : i64 to index
// CHECK:         func.call @copy_impl(%{{.*}}, %{{.*}}, %[[BI]], %[[SI]])
func.func @copy(%A: memref<?x?xf32> {ember.name = "A", ember.dims = ["b", "s"]}, %C: memref<?x?xf32> {ember.name = "C", ember.output, ember.dims = ["b", "s"]}, %b: index {ember.symbol = "b"}, %s: index {ember.symbol = "s"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.load %A[%c1, %c0] : memref<?x?xf32>
  memref.store %x, %C[%c1, %c0] : memref<?x?xf32>
  func.return
}
