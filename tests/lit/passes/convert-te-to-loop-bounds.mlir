// RUN: ember-opt %s -p 'convert-te-to-loop{bounds-check=true}' | filecheck %s

// The bounds-checked mode: a read bound inference cannot bound (its index
// comes from data) is checked; a failed check loads element 0, records its
// site (only failures write the cell, so under a parallel loop no passing
// iteration hides one), and the function returns the site's message (null
// when none failed).

// CHECK-LABEL: func.func @gather(
// CHECK-SAME:      -> !llvm.ptr attributes {ember.fallible}
// CHECK:         %[[CELL:.*]] = loop.alloc local : memref<1xi32>
// CHECK:         memref.store %{{.*}}, %[[CELL]][%[[C0:.*]]] : memref<1xi32>
// CHECK:         loop.for %[[I:.*]] = 
// CHECK:           %[[J:.*]] = arith.index_cast
// CHECK-NEXT:      %[[OK:.*]] = arith.cmpi ult, %[[J]], %{{.*}} : index
// CHECK-NEXT:      %[[SAFE:.*]] = arith.select %[[OK]], %[[J]], %[[C0]] : index
// CHECK-NEXT:      %[[FAILED:.*]] = arith.xori %[[OK]], %{{.*}} : i1
// CHECK-NEXT:      scf.if %[[FAILED]] {
// CHECK-NEXT:        memref.store %{{.*}}, %[[CELL]][%[[C0]]] : memref<1xi32>
// CHECK-NEXT:      }
// CHECK-NEXT:      memref.load %{{.*}}[%[[SAFE]]] : memref<16xf32>
// CHECK:         %[[SITE:.*]] = memref.load %[[CELL]][%[[C0]]]
// CHECK:         %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         %[[MSG:.*]] = llvm.mlir.addressof @__ember_bounds.gather.1
// CHECK:         %[[HIT:.*]] = arith.cmpi eq, %[[SITE]]
// CHECK:         %[[R:.*]] = llvm.select %[[HIT]], %[[MSG]], %[[NULL]]
// CHECK:         func.return %[[R]] : !llvm.ptr
func.func @gather(%A: tensor<16xf32> {ember.name = "A"}, %I: tensor<8xi32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %k = te.read %I[%i] : tensor<8xi32>
    %j = arith.index_cast %k : i32 to index
    %x = te.read %A[%j] : tensor<16xf32>
    te.yield %x : f32
  }
  func.return %C : tensor<8xf32>
}

// Reads proven in range are not checked, and the function keeps its signature.

// CHECK-LABEL: func.func @diff(
// CHECK-SAME:      {ember.name = "C", ember.output}) {
// CHECK-NOT:     bounds_error
// CHECK:         func.return{{$}}

// The messages are module globals, after the functions.

// CHECK:       llvm.mlir.global internal constant @__ember_bounds.gather.1("gather: te.read of 'A' index 0 in stage 'C' is outside [0, 15]\00")
func.func @diff(%A: tensor<64xf32>) -> tensor<63xf32> {
  %C = te.compute "C" (%i) -> tensor<63xf32> {
    %c1 = arith.constant 1 : index
    %i1 = arith.addi %i, %c1 : index
    %x = te.read %A[%i1] : tensor<64xf32>
    %y = te.read %A[%i] : tensor<64xf32>
    %d = arith.subf %x, %y : f32
    te.yield %d : f32
  }
  func.return %C : tensor<63xf32>
}
