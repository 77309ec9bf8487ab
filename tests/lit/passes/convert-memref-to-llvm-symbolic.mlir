// RUN: ember-opt %s --split-input-file -p convert-memref-to-llvm | filecheck %s

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

// -----

// A dynamic allocation takes the bytes its sizes make (n * 4 * m elements of
// 4 bytes), rounded up to a multiple of the 64-byte alignment and at least
// 64; accesses stride by the same sizes (row i starts 4 * m elements in, and
// column j m in), and it is freed as a static one is.

// CHECK-LABEL: func.func @dynamic_alloc(
// CHECK:         %[[J:.*]] = builtin.unrealized_conversion_cast %j : index to i64
// CHECK:         %[[I:.*]] = builtin.unrealized_conversion_cast %i : index to i64
// CHECK:         %[[M:.*]] = builtin.unrealized_conversion_cast %m : index to i64
// CHECK:         %[[N:.*]] = builtin.unrealized_conversion_cast %n : index to i64
// CHECK:         %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK:         %[[ROW:.*]] = llvm.mul %[[M]], %[[C4]] overflow<nsw> : i64
// CHECK:         %[[C16:.*]] = llvm.mlir.constant(16) : i64
// CHECK:         %[[B0:.*]] = llvm.mul %[[C16]], %[[N]] overflow<nsw> : i64
// CHECK:         %[[B1:.*]] = llvm.mul %[[B0]], %[[M]] overflow<nsw> : i64
// CHECK:         %[[C63:.*]] = llvm.mlir.constant(63) : i64
// CHECK:         %[[B2:.*]] = llvm.add %[[B1]], %[[C63]] : i64
// CHECK:         %[[MASK:.*]] = llvm.mlir.constant(-64) : i64
// CHECK:         %[[B3:.*]] = llvm.and %[[B2]], %[[MASK]] : i64
// CHECK:         %[[C64:.*]] = llvm.mlir.constant(64) : i64
// CHECK:         %[[SMALL:.*]] = llvm.icmp "ult" %[[B3]], %[[C64]] : i64
// CHECK:         %[[BYTES:.*]] = llvm.select %[[SMALL]], %[[C64]], %[[B3]] : i1, i64
// CHECK:         %[[SLOT:.*]] = llvm.mlir.addressof @__ember_scratch.0 : !llvm.ptr
// CHECK:         %[[T:.*]] = llvm.call @__ember_scratch_take(%[[SLOT]], %[[BYTES]], %[[C64]]) : (!llvm.ptr, i64, i64) -> !llvm.ptr
// CHECK:         %[[X0:.*]] = llvm.mul %[[I]], %[[ROW]] overflow<nsw> : i64
// CHECK:         %[[X1:.*]] = llvm.mul %[[J]], %[[M]] overflow<nsw> : i64
// CHECK:         %[[X2:.*]] = llvm.add %[[X0]], %[[X1]] overflow<nsw> : i64
// CHECK:         %[[X3:.*]] = llvm.add %[[X2]], %[[I]] overflow<nsw> : i64
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %[[T]][%[[X3]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.store %{{.*}}, %[[P]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:         llvm.call @__ember_scratch_give(%[[T]]) : (!llvm.ptr) -> ()
// CHECK-NOT:     memref.
func.func @dynamic_alloc(%n: index, %m: index, %i: index, %j: index, %x: f32) {
  %T = memref.alloc(%n, %m) {alignment = 64 : i64} : memref<?x4x?xf32>
  memref.store %x, %T[%i, %j, %i] : memref<?x4x?xf32>
  memref.dealloc %T : memref<?x4x?xf32>
  func.return
}
