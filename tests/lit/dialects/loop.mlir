// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @kinds(
// CHECK-SAME:      %[[A:.*]]: memref<64xf32>, %[[B:.*]]: memref<64xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C64:.*]] = arith.constant 64 : index
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK:         loop.for %[[I:.*]] = %[[C0]] to %[[C64]] step %[[C1]] {
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[A]][%[[I]]] : memref<64xf32>
// CHECK-NEXT:      memref.store %[[X]], %[[B]][%[[I]]] : memref<64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for %{{.*}} = %[[C0]] to %[[C64]] step %[[C1]] parallel {
// CHECK-NEXT:      loop.for %{{.*}} = %[[C0]] to %[[C64]] step %[[C1]] vectorized {
// CHECK-NEXT:        loop.for %{{.*}} = %[[C0]] to %[[C64]] step %[[C1]] unrolled {
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    } {ember.note = "outer"}
// CHECK-NEXT:    func.return

// GENERIC-LABEL: "func.func"() <{sym_name = "kinds"
// GENERIC:         "loop.for"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = "serial"}> ({
// GENERIC-NEXT:    ^bb0(%{{.*}}: index):
// GENERIC:           "loop.yield"() : () -> ()
// GENERIC-NEXT:    }) : (index, index, index) -> ()
// GENERIC:         "loop.for"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = "parallel"}> ({
// GENERIC:         "loop.for"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = "vectorized"}> ({
// GENERIC:         "loop.for"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = "unrolled"}> ({
// GENERIC:         }) {ember.note = "outer"} : (index, index, index) -> ()
func.func @kinds(%A: memref<64xf32>, %B: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %A[%i] : memref<64xf32>
    memref.store %x, %B[%i] : memref<64xf32>
  }
  loop.for %i = %c0 to %c64 step %c1 parallel {
    loop.for %j = %c0 to %c64 step %c1 vectorized {
      loop.for %k = %c0 to %c64 step %c1 unrolled {
      }
    }
  } {ember.note = "outer"}
  func.return
}

// An explicit `serial` keyword is accepted and printed as the default.
// CHECK-LABEL: func.func @explicit_serial(
// CHECK:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:    }
func.func @explicit_serial(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %n step %c1 serial {
    loop.yield
  }
  func.return
}

// CHECK-LABEL: func.func @alloc(
// CHECK:         %[[G:.*]] = loop.alloc : memref<64x64xf32>
// CHECK-NEXT:    %[[L:.*]] = loop.alloc local : memref<16xf32>
// CHECK-NEXT:    %{{.*}} = loop.alloc local {ember.note = "acc"} : memref<f64>
// CHECK-NEXT:    %{{.*}} = loop.alloc : memref<4xi8>
// CHECK-NEXT:    %{{.*}} = loop.alloc shared : memref<16x16xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "alloc"
// GENERIC:         "loop.alloc"() : () -> memref<64x64xf32>
// GENERIC-NEXT:    "loop.alloc"() <{scope = "local"}> : () -> memref<16xf32>
// GENERIC-NEXT:    "loop.alloc"() <{scope = "local"}> {ember.note = "acc"} : () -> memref<f64>
// GENERIC-NEXT:    "loop.alloc"() : () -> memref<4xi8>
// GENERIC-NEXT:    "loop.alloc"() <{scope = "shared"}> : () -> memref<16x16xf32>
func.func @alloc() {
  %g = loop.alloc : memref<64x64xf32>
  %l = loop.alloc local : memref<16xf32>
  %s = loop.alloc local {ember.note = "acc"} : memref<f64>
  %e = loop.alloc global : memref<4xi8>
  %t = loop.alloc shared : memref<16x16xf32>
  func.return
}

// A global buffer with dynamic dims takes one index size per `?`, in order.
// CHECK-LABEL: func.func @alloc_dynamic(
// CHECK-SAME:      %[[N:.*]]: index, %[[M:.*]]: index)
// CHECK:         %{{.*}} = loop.alloc(%[[N]]) : memref<?x64xf32>
// CHECK-NEXT:    %{{.*}} = loop.alloc(%[[N]], %[[M]]) {ember.dims = ["n", "m + 1"]} : memref<?x4x?xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "alloc_dynamic"
// GENERIC:         "loop.alloc"(%{{.*}}) : (index) -> memref<?x64xf32>
// GENERIC-NEXT:    "loop.alloc"(%{{.*}}, %{{.*}}) {ember.dims = ["n", "m + 1"]} : (index, index) -> memref<?x4x?xf32>
func.func @alloc_dynamic(%n: index, %m: index) {
  %a = loop.alloc(%n) : memref<?x64xf32>
  %b = loop.alloc global(%n, %m) {ember.dims = ["n", "m + 1"]} : memref<?x4x?xf32>
  func.return
}
