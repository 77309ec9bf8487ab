// RUN: ember-opt %s --split-input-file -p convert-te-to-loop | filecheck %s

// A custom combiner is cloned where each value is folded in, on the accumulated
// value loaded from the buffer; its identity initializes the buffer.
// CHECK-LABEL: func.func @prod(
// CHECK-SAME:      %[[X:[^:]*]]: memref<3x4xf32> {{.*}}, %[[R:[^:]*]]: memref<3xf32>
// CHECK:         %[[INIT:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         loop.for %[[I:.*]] = 
// CHECK:           memref.store %[[INIT]], %[[R]][%[[I]]]
// CHECK:           loop.for %[[K:.*]] = 
// CHECK:             %[[V:.*]] = memref.load %[[X]][%[[I]], %[[K]]]
// CHECK:             %[[ACC:.*]] = memref.load %[[R]][%[[I]]]
// CHECK:             %[[P:.*]] = arith.mulf %[[ACC]], %[[V]] : f32
// CHECK:             memref.store %[[P]], %[[R]][%[[I]]]
// CHECK-NOT:     te.
func.func @prod(%X: tensor<3x4xf32>) -> tensor<3xf32> {
  %R = te.compute "R" (%i) reduce prod (%k : 4) -> tensor<3xf32> {
    %x = te.read %X[%i, %k] : tensor<3x4xf32>
    te.yield %x : f32
  } combine (%acc, %v) identity 1.0 : f32 {
    %p = arith.mulf %acc, %v : f32
    te.yield %p : f32
  }
  func.return %R : tensor<3xf32>
}

// -----

// A combiner of several ops, on i1: parity (xor) from false.
// CHECK-LABEL: func.func @parity(
// CHECK:         arith.constant false
// CHECK:         loop.for
// CHECK:           loop.for
// CHECK:             %[[ACC:.*]] = memref.load %{{.*}} : memref<3xi1>
// CHECK:             %[[T:.*]] = arith.constant true
// CHECK:             %[[N:.*]] = arith.xori %[[ACC]], %[[T]] : i1
// CHECK:             %[[S:.*]] = arith.select %{{.*}}, %[[N]], %[[ACC]] : i1
// CHECK:             memref.store %[[S]]
func.func @parity(%X: tensor<3x4xi1>) -> tensor<3xi1> {
  %R = te.compute "R" (%i) reduce parity (%k : 4) -> tensor<3xi1> {
    %x = te.read %X[%i, %k] : tensor<3x4xi1>
    te.yield %x : i1
  } combine (%acc, %v) identity false {
    %t = arith.constant true
    %n = arith.xori %acc, %t : i1
    %s = arith.select %v, %n, %acc : i1
    te.yield %s : i1
  }
  func.return %R : tensor<3xi1>
}

// -----

// A guarded read (padding) inside a reduction: the load stays in its branch.
// CHECK-LABEL: func.func @box(
// CHECK:         loop.for
// CHECK:           loop.for
// CHECK:             %[[IN:.*]] = arith.andi
// CHECK:             %[[V:.*]] = scf.if %[[IN]] -> (f32) {
// CHECK:               memref.load
// CHECK:               scf.yield
// CHECK:             } else {
// CHECK-NOT:           memref.load
// CHECK:             }
// CHECK:             arith.addf %{{.*}}, %[[V]] : f32
func.func @box(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) reduce sum (%k : 3) -> tensor<8xf32> {
    %c1 = arith.constant 1 : index
    %c9 = arith.constant 9 : index
    %j = arith.addi %i, %k : index
    %lo = arith.cmpi sge, %j, %c1 : index
    %hi = arith.cmpi slt, %j, %c9 : index
    %in = arith.andi %lo, %hi : i1
    %v = scf.if %in -> (f32) {
      %m = arith.subi %j, %c1 : index
      %a = te.read %A[%m] : tensor<8xf32>
      scf.yield %a : f32
    } else {
      %z = arith.constant 0.0 : f32
      scf.yield %z : f32
    }
    te.yield %v : f32
  }
  func.return %B : tensor<8xf32>
}
