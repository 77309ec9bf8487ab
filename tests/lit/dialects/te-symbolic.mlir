// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Symbolic extents: a dynamic dim is named by the tensor type's encoding, a
// reduction extent is an expression string over the size symbols (the
// function's trailing index arguments marked ember.symbol), and a body reads a
// symbol as an index value.

// CHECK-LABEL: func.func @rev(
// CHECK-SAME:      %[[A:.*]]: tensor<?x?xf32, ["n", "m"]> {ember.name = "A"}, %[[N:.*]]: index {ember.symbol = "n"}, %[[M:.*]]: index {ember.symbol = "m"}) -> tensor<?x?xf32, ["n", "m"]>
// CHECK:         %[[S:.*]] = te.compute "S" (%[[I:.*]]) reduce sum (%[[K:.*]] : "m") -> tensor<?xf32, ["n"]> {
// CHECK-NEXT:      %{{.*}} = te.read %[[A]][%[[I]], %[[K]]] : tensor<?x?xf32, ["n", "m"]>
// CHECK:         %[[R:.*]] = te.compute "R" (%[[I2:.*]], %[[J:.*]]) -> tensor<?x?xf32, ["n", "m"]> {
// CHECK:           %[[LAST:.*]] = arith.addi %[[N]], %{{.*}} : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.subi %[[LAST]], %[[I2]] : index
// CHECK-NEXT:      %{{.*}} = te.read %[[A]][%[[ROW]], %[[J]]] : tensor<?x?xf32, ["n", "m"]>
// CHECK-NEXT:      %{{.*}} = te.read %[[S]][%[[I2]]] : tensor<?xf32, ["n"]>
// CHECK:         func.return %[[R]] : tensor<?x?xf32, ["n", "m"]>

// GENERIC-LABEL: "func.func"() <{sym_name = "rev"
// GENERIC:         "te.compute"() <{name = "S", reduce = "sum", reduce_extents = array<i64: -1>, reduce_dims = ["m"]}> ({
// GENERIC:         "te.compute"() <{name = "R"}> ({
// GENERIC:         }) : () -> tensor<?x?xf32, ["n", "m"]>
func.func @rev(%A: tensor<?x?xf32, ["n", "m"]> {ember.name = "A"}, %n: index {ember.symbol = "n"}, %m: index {ember.symbol = "m"}) -> tensor<?x?xf32, ["n", "m"]> {
  %S = te.compute "S" (%i) reduce sum (%k : "m") -> tensor<?xf32, ["n"]> {
    %a = te.read %A[%i, %k] : tensor<?x?xf32, ["n", "m"]>
    te.yield %a : f32
  }
  %R = te.compute "R" (%i, %j) -> tensor<?x?xf32, ["n", "m"]> {
    %c-1 = arith.constant -1 : index
    %last = arith.addi %n, %c-1 : index
    %row = arith.subi %last, %i : index
    %a = te.read %A[%row, %j] : tensor<?x?xf32, ["n", "m"]>
    %s = te.read %S[%i] : tensor<?xf32, ["n"]>
    %r = arith.addf %a, %s : f32
    te.yield %r : f32
  }
  func.return %R : tensor<?x?xf32, ["n", "m"]>
}

// Static and symbolic extents mix, in the types and among the reduction axes;
// a dim or an extent may be an expression.

// CHECK-LABEL: func.func @mixed(
// CHECK:         te.compute "C" (%{{.*}}, %{{.*}}) reduce max (%{{.*}} : 4, %{{.*}} : "(n + 7) // 8") -> tensor<?x3xf32, ["2 * n + 1"]> {
// CHECK:         func.return %{{.*}} : tensor<?x3xf32, ["2 * n + 1"]>

// GENERIC-LABEL: "func.func"() <{sym_name = "mixed"
// GENERIC:         "te.compute"() <{name = "C", reduce = "max", reduce_extents = array<i64: 4, -1>, reduce_dims = ["(n + 7) // 8"]}> ({
func.func @mixed(%A: tensor<4x?xf32, ["n"]>, %n: index {ember.symbol = "n"}) -> tensor<?x3xf32, ["2 * n + 1"]> {
  %C = te.compute "C" (%i, %j) reduce max (%k : 4, %l : "(n + 7) // 8") -> tensor<?x3xf32, ["2 * n + 1"]> {
    %a = te.read %A[%k, %l] : tensor<4x?xf32, ["n"]>
    te.yield %a : f32
  }
  func.return %C : tensor<?x3xf32, ["2 * n + 1"]>
}
