// RUN: ember-opt %s -p convert-te-to-loop --split-input-file | filecheck %s
// RUN: ember-opt %s -p ember-cpu --split-input-file | filecheck %s --check-prefix=CPU

// A symbolic tensor becomes a memref with a `?` for each dim its encoding
// names, the names kept as ember.dims; the size symbols (given, or added for
// those only the types name) come after every buffer, marked ember.symbol.
// A split of a symbolic loop by 8 runs (n + 7) // 8 outer steps, computed
// once at the entry, and guards the body (the last step may run past n).

// CHECK-LABEL: func.func @scale(
// CHECK-SAME:      %[[A:[^:]*]]: memref<?x64xf32> {ember.name = "A", ember.dims = ["n"]}, %[[B:[^:]*]]: memref<?x64xf32> {ember.name = "B", ember.output, ember.dims = ["n"]}, %[[N:[^:]*]]: index {ember.symbol = "n"})
// CHECK-DAG:     %[[C7:.*]] = arith.constant 7 : index
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK:         %[[N7:.*]] = arith.addi %[[N]], %[[C7]] : index
// CHECK-NEXT:    %[[STEPS:.*]] = arith.{{(floordivsi|divsi)}} %[[N7]], %[[C8]] : index
// CHECK-NEXT:    loop.for %[[O:.*]] = %{{.*}} to %[[STEPS]] step %{{.*}} {
// CHECK-NEXT:      loop.for %[[I:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
// CHECK-NEXT:        loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               %[[ROW:.*]] = arith.addi %{{.*}}, %[[I]] : index
// CHECK-NEXT:          %[[IN:.*]] = arith.cmpi slt, %[[ROW]], %[[N]] : index
// CHECK-NEXT:          scf.if %[[IN]] {
// CHECK:                 memref.load %[[A]][%{{.*}}, %[[J]]] : memref<?x64xf32>
// CHECK:                 memref.store %{{.*}}, %[[B]][%{{.*}}, %[[J]]] : memref<?x64xf32>
// CHECK-NOT:     te.

// CPU-LABEL: llvm.func internal @scale_impl(
// CPU-LABEL: llvm.func @scale(
func.func @scale(%A: tensor<?x64xf32, ["n"]>) -> tensor<?x64xf32, ["n"]> {
  %B = te.compute "B" (%i, %j) -> tensor<?x64xf32, ["n"]> {
    %a = te.read %A[%i, %j] : tensor<?x64xf32, ["n"]>
    %two = arith.constant 2.0 : f32
    %b = arith.mulf %a, %two : f32
    te.yield %b : f32
  }
  te.schedule {
    te.split "B" "i" factor 8 -> "i.outer", "i.inner"
  }
  func.return %B : tensor<?x64xf32, ["n"]>
}

// -----

// A reduction over a symbolic extent loops to the symbol itself.

// CHECK-LABEL: func.func @rowsum(
// CHECK-SAME:      %[[A:[^:]*]]: memref<4x?xf32> {ember.name = "A", ember.dims = ["n"]}, %[[S:[^:]*]]: memref<4xf32> {ember.name = "S", ember.output}, %[[N:[^:]*]]: index {ember.symbol = "n"})
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      memref.store %{{.*}}, %[[S]][%[[I]]] : memref<4xf32>
// CHECK-NEXT:      loop.for %[[K:.*]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT:        memref.load %[[A]][%[[I]], %[[K]]] : memref<4x?xf32>

// CPU-LABEL: llvm.func internal @rowsum_impl(
func.func @rowsum(%A: tensor<4x?xf32, ["n"]>, %n: index {ember.symbol = "n"}) -> tensor<4xf32> {
  %S = te.compute "S" (%i) reduce sum (%k : "n") -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x?xf32, ["n"]>
    te.yield %a : f32
  }
  func.return %S : tensor<4xf32>
}

// -----

// A symbolic intermediate at the root is a heap buffer of the sizes its dims
// make, computed from the symbols before it (`n + 1` rows here), marked with
// its ember.dims; its loops run to the same values.

// CHECK-LABEL: func.func @staged(
// CHECK-SAME:      %[[A:[^:]*]]: memref<?xf32> {{.*}}, %[[B:[^:]*]]: memref<?xf32> {{.*}}, %[[N:[^:]*]]: index {ember.symbol = "n"})
// CHECK:         %[[ROWS:.*]] = arith.addi %[[N]], %{{.*}} : index
// CHECK-NEXT:    %[[T:.*]] = loop.alloc(%[[ROWS]]) {ember.dims = ["n + 1"]} : memref<?x2xf32>
// CHECK-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %[[ROWS]] step %{{.*}} {
// CHECK-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             memref.store %{{.*}}, %[[T]][%[[I]], %[[J]]] : memref<?x2xf32>
// CHECK:         loop.for %[[I2:.*]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK:           memref.load %[[T]][%{{.*}}, %{{.*}}] : memref<?x2xf32>
// CHECK:           memref.store %{{.*}}, %[[B]][%[[I2]]] : memref<?xf32>

// CPU-LABEL: llvm.func internal @staged_impl(
// CPU:         llvm.call @__ember_scratch_take(
// CPU:         llvm.call @__ember_scratch_give(
func.func @staged(%A: tensor<?xf32, ["n"]>, %n: index {ember.symbol = "n"}) -> tensor<?xf32, ["n"]> {
  %T = te.compute "T" (%i, %j) -> tensor<?x2xf32, ["n + 1"]> {
    %one = arith.constant 1.0 : f32
    te.yield %one : f32
  }
  %B = te.compute "B" (%i) -> tensor<?xf32, ["n"]> {
    %c1 = arith.constant 1 : index
    %next = arith.addi %i, %c1 : index
    %a = te.read %A[%i] : tensor<?xf32, ["n"]>
    %t = te.read %T[%next, %c1] : tensor<?x2xf32, ["n + 1"]>
    %b = arith.addf %a, %t : f32
    te.yield %b : f32
  }
  func.return %B : tensor<?xf32, ["n"]>
}

// -----

// A stage attached inside a loop whose region spans a symbolic extent (a
// row of m columns) gets a local buffer of that size: one heap buffer per
// function, allocated once its size is known (convert-loop-to-scf).

// CHECK-LABEL: func.func @attach_row(
// CHECK:         loop.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:      %T = loop.alloc local(%m) {ember.dims = ["m"]} : memref<1x?xf32>
func.func @attach_row(%A: tensor<?x?xf32, ["n", "m"]>) -> tensor<?x?xf32, ["n", "m"]> {
  %T = te.compute "T" (%i, %j) -> tensor<?x?xf32, ["n", "m"]> {
    %a = te.read %A[%i, %j] : tensor<?x?xf32, ["n", "m"]>
    te.yield %a : f32
  }
  %B = te.compute "B" (%i, %j) -> tensor<?x?xf32, ["n", "m"]> {
    %t = te.read %T[%i, %j] : tensor<?x?xf32, ["n", "m"]>
    te.yield %t : f32
  }
  te.schedule {
    te.compute_at "T" at "B" "i"
  }
  func.return %B : tensor<?x?xf32, ["n", "m"]>
}
