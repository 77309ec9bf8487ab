// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: ember-opt %s -p canonicalize,cse,dce | filecheck %s --check-prefix=KEPT

// CHECK-LABEL: func.func @buffers(
// CHECK-SAME:      %[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<4x4xi32>)
// CHECK-NEXT:    loop.call_packed "my.sort"(%[[A]], %[[B]]) : memref<16xf32>, memref<4x4xi32>
// CHECK-NEXT:    func.return

// GENERIC-LABEL: "func.func"() <{sym_name = "buffers"
// GENERIC:         "loop.call_packed"(%{{.*}}, %{{.*}}) <{callee = "my.sort"}> : (memref<16xf32>, memref<4x4xi32>) -> ()
func.func @buffers(%A: memref<16xf32>, %B: memref<4x4xi32>) {
  loop.call_packed "my.sort"(%A, %B) : memref<16xf32>, memref<4x4xi32>
  func.return
}

// CHECK-LABEL: func.func @scalars_and_strings(
// CHECK-SAME:      %[[B:.*]]: memref<16xf32>, %[[N:.*]]: i64, %[[I:.*]]: index)
// CHECK-NEXT:    %[[X:.*]] = arith.constant 2.500000e+00 : f64
// CHECK-NEXT:    loop.call_packed "my.fill"(%[[B]], "ones", %[[N]], %[[X]], %[[I]], "") {ember.note = "kept"} : memref<16xf32>, i64, f64, index
// CHECK-NEXT:    loop.call_packed "my.ping"()
// CHECK-NEXT:    loop.call_packed "my.say"("hello \22world\22")

// GENERIC-LABEL: "func.func"() <{sym_name = "scalars_and_strings"
// GENERIC:         "loop.call_packed"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{callee = "my.fill", args = [unit, "ones", unit, unit, unit, ""]}> {ember.note = "kept"} : (memref<16xf32>, i64, f64, index) -> ()
// GENERIC:         "loop.call_packed"() <{callee = "my.ping"}> : () -> ()
func.func @scalars_and_strings(%B: memref<16xf32>, %n: i64, %i: index) {
  %x = arith.constant 2.5 : f64
  loop.call_packed "my.fill"(%B, "ones", %n, %x, %i, "") {ember.note = "kept"} : memref<16xf32>, i64, f64, index
  loop.call_packed "my.ping"()
  loop.call_packed "my.say"("hello \"world\"")
  func.return
}

// A call inside a loop stays there: it has effects, so nothing may move or drop it.
// CHECK-LABEL: func.func @in_loop(
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      loop.call_packed "my.step"(%[[I]]) : index
// CHECK-NEXT:    }

// KEPT-LABEL: func.func @in_loop(
// KEPT:         loop.for
// KEPT-NEXT:      loop.call_packed "my.step"
// KEPT-NEXT:    }
func.func @in_loop() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.call_packed "my.step"(%i) : index
  }
  func.return
}
