// RUN: ember-opt %s -p convert-memref-to-llvm | filecheck %s

// A symbolic buffer argument (its dynamic dims named by ember.dims) is a bare
// pointer whose strides come from the function's symbol arguments: row 1 of
// a (b, s) buffer starts s elements in.

// CHECK-LABEL: func.func @copy(
// CHECK:         %[[S:.*]] = builtin.unrealized_conversion_cast %s : index to i64
// CHECK:         %[[A:.*]] = builtin.unrealized_conversion_cast %A : memref<?x?xf32> to !llvm.ptr
// CHECK:         %[[ROW:.*]] = llvm.mul %{{.*}}, %[[S]] overflow<nsw> : i64
// CHECK:         %[[AT:.*]] = llvm.add %[[ROW]], %{{.*}} overflow<nsw> : i64
// CHECK:         llvm.getelementptr inbounds %[[A]][%[[AT]]]
func.func @copy(%A: memref<?x?xf32> {ember.name = "A", ember.dims = ["b", "s"]}, %C: memref<?x?xf32> {ember.name = "C", ember.output, ember.dims = ["b", "s"]}, %b: index {ember.symbol = "b"}, %s: index {ember.symbol = "s"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.load %A[%c1, %c0] : memref<?x?xf32>
  memref.store %x, %C[%c1, %c0] : memref<?x?xf32>
  func.return
}
