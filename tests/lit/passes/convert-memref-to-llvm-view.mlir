// RUN: ember-opt %s --split-input-file -p convert-arith-to-llvm,convert-memref-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s

// memref.view of an i8 buffer at a byte offset is the buffer's pointer plus the
// offset (a GEP of i8); accesses through the view use that pointer directly.

func.func @views(%ws: memref<1024xi8>, %i: index) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %a = memref.view %ws[%c0][] : memref<1024xi8> to memref<4x8xf32>
  %b = memref.view %ws[%c128][] : memref<1024xi8> to memref<2x2xf64>
  %x = memref.load %a[%i, %i] : memref<4x8xf32>
  %y = arith.extf %x : f32 to f64
  memref.store %y, %b[%i, %i] : memref<2x2xf64>
  func.return
}

// CHECK-LABEL: llvm.func @views(
// CHECK-SAME:      %[[WS:[^:]*]]: !llvm.ptr
// CHECK-DAG:     %[[C0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-DAG:     %[[C128:.*]] = llvm.mlir.constant(128) : i64
// CHECK:         %[[A:.*]] = llvm.getelementptr inbounds %[[WS]][%[[C0]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         %[[B:.*]] = llvm.getelementptr inbounds %[[WS]][%[[C128]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %[[A]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         %[[Q:.*]] = llvm.getelementptr inbounds %[[B]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK-NEXT:    llvm.store %{{.*}}, %[[Q]] {alignment = 8 : i64} : f64, !llvm.ptr
// CHECK-NOT:     memref.
// CHECK-NOT:     unrealized_conversion_cast

// -----

// Views passed to calls (an ahead-of-time model's entry calling its kernels):
// the callee gets the offset pointer; a view at a runtime offset is lowered too.

func.func private @kernel(memref<16xf32>, memref<4x4xf32>) -> ()

func.func @entry(%x: memref<16xf32>, %ws: memref<256xi8>, %off: index) {
  %c64 = arith.constant 64 : index
  %t = memref.view %ws[%c64][] : memref<256xi8> to memref<4x4xf32>
  func.call @kernel(%x, %t) : (memref<16xf32>, memref<4x4xf32>) -> ()
  %u = memref.view %ws[%off][] : memref<256xi8> to memref<4x4xf32>
  func.call @kernel(%x, %u) : (memref<16xf32>, memref<4x4xf32>) -> ()
  func.return
}

// CHECK-LABEL: llvm.func @entry(
// CHECK-SAME:      %[[X:[^:]*]]: !llvm.ptr, %[[WS:[^:]*]]: !llvm.ptr, %[[OFF:[^:]*]]: i64
// CHECK:         %[[C64:.*]] = llvm.mlir.constant(64) : i64
// CHECK:         %[[T:.*]] = llvm.getelementptr inbounds %[[WS]][%[[C64]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         llvm.call @kernel(%[[X]], %[[T]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK:         %[[U:.*]] = llvm.getelementptr inbounds %[[WS]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         llvm.call @kernel(%[[X]], %[[U]]) : (!llvm.ptr, !llvm.ptr) -> ()
