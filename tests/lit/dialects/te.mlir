// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @vecadd(
// CHECK-SAME:      %[[A:.*]]: tensor<16xf32>, %[[B:.*]]: tensor<16xf32>) -> tensor<16xf32>
// CHECK:         %[[C:.*]] = te.compute "C" (%[[I:.*]]) -> tensor<16xf32> {
// CHECK-NEXT:      %[[X:.*]] = te.read %[[A]][%[[I]]] : tensor<16xf32>
// CHECK-NEXT:      %[[Y:.*]] = te.read %[[B]][%[[I]]] : tensor<16xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      te.yield %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]] : tensor<16xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "vecadd"
// GENERIC:         "te.compute"() <{name = "C"}> ({
// GENERIC-NEXT:    ^bb0(%{{.*}}: index):
// GENERIC:           "te.read"(%{{.*}}, %{{.*}}) : (tensor<16xf32>, index) -> f32
// GENERIC:           "te.yield"(%{{.*}}) : (f32) -> ()
// GENERIC-NEXT:    }) : () -> tensor<16xf32>
func.func @vecadd(%A: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<16xf32> {
  %C = te.compute "C" (%i) -> tensor<16xf32> {
    %x = te.read %A[%i] : tensor<16xf32>
    %y = te.read %B[%i] : tensor<16xf32>
    %s = arith.addf %x, %y : f32
    te.yield %s : f32
  }
  func.return %C : tensor<16xf32>
}

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:      %[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x3xf32>
// CHECK:         te.compute "C" (%[[I:.*]], %[[J:.*]]) reduce sum (%[[K:.*]] : 8) -> tensor<4x3xf32> {
// CHECK-NEXT:      te.read %[[A]][%[[I]], %[[K]]] : tensor<4x8xf32>
// CHECK-NEXT:      te.read %[[B]][%[[K]], %[[J]]] : tensor<8x3xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "matmul"
// GENERIC:         "te.compute"() <{name = "C", reduce = "sum", reduce_extents = array<i64: 8>}> ({
// GENERIC-NEXT:    ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
func.func @matmul(%A: tensor<4x8xf32>, %B: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 8) -> tensor<4x3xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    %b = te.read %B[%k, %j] : tensor<8x3xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  func.return %C : tensor<4x3xf32>
}

// A reduction over two axes with max, a compute carrying a discardable attribute.
// CHECK-LABEL: func.func @pool(
// CHECK:         te.compute "P" (%[[C:.*]]) reduce max (%[[H:.*]] : 2, %[[W:.*]] : 3) -> tensor<5xi32> {
// CHECK:           te.read %{{.*}}[%[[C]], %[[H]], %[[W]]] : tensor<5x2x3xi32>
// CHECK:         } {ember.tag = "pool"}
// CHECK:         te.compute "N" (%{{.*}}) reduce min (%{{.*}} : 3) -> tensor<5xi32>
func.func @pool(%X: tensor<5x2x3xi32>) -> (tensor<5xi32>, tensor<5xi32>) {
  %P = te.compute "P" (%c) reduce max (%h : 2, %w : 3) -> tensor<5xi32> {
    %x = te.read %X[%c, %h, %w] : tensor<5x2x3xi32>
    te.yield %x : i32
  } {ember.tag = "pool"}
  %N = te.compute "N" (%c) reduce min (%w : 3) -> tensor<5xi32> {
    %z = arith.constant 0 : index
    %x = te.read %X[%c, %z, %w] : tensor<5x2x3xi32>
    te.yield %x : i32
  }
  func.return %P, %N : tensor<5xi32>, tensor<5xi32>
}

// A rank-0 compute: no indices at all.
// CHECK-LABEL: func.func @scalar(
// CHECK:         te.compute "S" () -> tensor<f64> {
// CHECK-NEXT:      %[[V:.*]] = te.read %{{.*}}[] : tensor<f64>
// CHECK-NEXT:      te.yield %[[V]] : f64
func.func @scalar(%A: tensor<f64>) -> tensor<f64> {
  %S = te.compute "S" () -> tensor<f64> {
    %v = te.read %A[] : tensor<f64>
    te.yield %v : f64
  }
  func.return %S : tensor<f64>
}

// A custom combiner: a product, its combine region after the body.
// CHECK-LABEL: func.func @prod(
// CHECK:         %{{.*}} = te.compute "P" (%[[I:.*]]) reduce prod (%[[K:.*]] : 8) -> tensor<4xf32> {
// CHECK-NEXT:      %[[A:.*]] = te.read %{{.*}}[%[[I]], %[[K]]] : tensor<4x8xf32>
// CHECK-NEXT:      te.yield %[[A]] : f32
// CHECK-NEXT:    } combine (%[[ACC:.*]], %[[X:.*]]) identity 1.000000e+00 : f32 {
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[ACC]], %[[X]] : f32
// CHECK-NEXT:      te.yield %[[P]] : f32
// CHECK-NEXT:    } {ember.tag = "prod"}

// GENERIC-LABEL: "func.func"() <{sym_name = "prod"
// GENERIC:         "te.compute"() <{name = "P", reduce = "prod", reduce_extents = array<i64: 8>, identity = 1.000000e+00 : f32}> ({
// GENERIC-NEXT:    ^bb0(%{{.*}}: index, %{{.*}}: index):
// GENERIC:         }, {
// GENERIC-NEXT:    ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// GENERIC:           "arith.mulf"
// GENERIC:           "te.yield"(%{{.*}}) : (f32) -> ()
// GENERIC-NEXT:    }) {ember.tag = "prod"} : () -> tensor<4xf32>
func.func @prod(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %P = te.compute "P" (%i) reduce prod (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  } combine (%acc, %x) identity 1.0 : f32 {
    %p = arith.mulf %acc, %x : f32
    te.yield %p : f32
  } {ember.tag = "prod"}
  func.return %P : tensor<4xf32>
}

// Identities of other types: -inf in f16 (hex), false in i1; names may hold dots.
// CHECK-LABEL: func.func @identities(
// CHECK:         te.compute "M" (%{{.*}}) reduce absmax (%{{.*}} : 4) -> tensor<3xf16> {
// CHECK:         } combine (%{{.*}}, %{{.*}}) identity 0xfc00 : f16 {
// CHECK:           math.absf
// CHECK:         te.compute "O" (%{{.*}}) reduce any.odd (%{{.*}} : 4) -> tensor<3xi1> {
// CHECK:         } combine (%{{.*}}, %{{.*}}) identity false {
// CHECK-NEXT:      arith.ori
func.func @identities(%X: tensor<3x4xf16>, %Y: tensor<3x4xi8>) -> (tensor<3xf16>, tensor<3xi1>) {
  %M = te.compute "M" (%i) reduce absmax (%k : 4) -> tensor<3xf16> {
    %x = te.read %X[%i, %k] : tensor<3x4xf16>
    te.yield %x : f16
  } combine (%acc, %x) identity 0xFC00 : f16 {
    %a = math.absf %x : f16
    %m = arith.maximumf %acc, %a : f16
    te.yield %m : f16
  }
  %O = te.compute "O" (%i) reduce any.odd (%k : 4) -> tensor<3xi1> {
    %y = te.read %Y[%i, %k] : tensor<3x4xi8>
    %t = arith.trunci %y : i8 to i1
    te.yield %t : i1
  } combine (%acc, %x) identity false {
    %o = arith.ori %acc, %x : i1
    te.yield %o : i1
  }
  func.return %M, %O : tensor<3xf16>, tensor<3xi1>
}

// Padding: the read sits in an scf.if branch, so it runs only in bounds.
// CHECK-LABEL: func.func @pad(
// CHECK:         te.compute "P" (%[[I:.*]]) -> tensor<10xf32> {
// CHECK:           %[[IN:.*]] = arith.andi
// CHECK:           %[[V:.*]] = scf.if %[[IN]] -> (f32) {
// CHECK:             te.read %{{.*}}[%{{.*}}] : tensor<8xf32>
// CHECK:           } else {
// CHECK:           te.yield %[[V]] : f32
func.func @pad(%A: tensor<8xf32>) -> tensor<10xf32> {
  %P = te.compute "P" (%i) -> tensor<10xf32> {
    %c1 = arith.constant 1 : index
    %c9 = arith.constant 9 : index
    %lo = arith.cmpi sge, %i, %c1 : index
    %hi = arith.cmpi slt, %i, %c9 : index
    %in = arith.andi %lo, %hi : i1
    %v = scf.if %in -> (f32) {
      %j = arith.subi %i, %c1 : index
      %a = te.read %A[%j] : tensor<8xf32>
      scf.yield %a : f32
    } else {
      %z = arith.constant 0.0 : f32
      scf.yield %z : f32
    }
    te.yield %v : f32
  }
  func.return %P : tensor<10xf32>
}
