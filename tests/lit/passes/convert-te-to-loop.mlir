// RUN: ember-opt %s -p convert-te-to-loop --split-input-file | filecheck %s

// An elementwise compute writes its out-parameter; every argument gets ember.name,
// and every out-parameter ember.output.

// CHECK-LABEL: func.func @vecadd(
// CHECK-SAME:      %[[A:[^:]*]]: memref<16xf32> {ember.name = "A"},
// CHECK-SAME:      %[[B:[^:]*]]: memref<16xf32> {ember.name = "B"},
// CHECK-SAME:      %[[C:[^:]*]]: memref<16xf32> {ember.name = "C", ember.output}) {
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %[[C0]] to %[[C16]] step %[[C1]] {
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[A]][%[[I]]] : memref<16xf32>
// CHECK-NEXT:      %[[Y:.*]] = memref.load %[[B]][%[[I]]] : memref<16xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      memref.store %[[S]], %[[C]][%[[I]]] : memref<16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NOT:   te.
func.func @vecadd(%A: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<16xf32> {
  %C = te.compute "C" (%i) -> tensor<16xf32> {
    %x = te.read %A[%i] : tensor<16xf32>
    %y = te.read %B[%i] : tensor<16xf32>
    %s = arith.addf %x, %y : f32
    te.yield %s : f32
  }
  func.return %C : tensor<16xf32>
}

// -----

// A sum reduction: the identity at each output point, then the reduction loop
// folds into the buffer.

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:      %[[A:[^:]*]]: memref<4x8xf32> {ember.name = "A"}, %[[B:[^:]*]]: memref<8x3xf32> {ember.name = "B"},
// CHECK-SAME:      %[[C:[^:]*]]: memref<4x3xf32> {ember.name = "C", ember.output}) {
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// CHECK-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %[[C3]] step %{{.*}} {
// CHECK-NEXT:        memref.store %[[ZERO]], %[[C]][%[[I]], %[[J]]] : memref<4x3xf32>
// CHECK-NEXT:        loop.for %[[K:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
// CHECK-NEXT:          %[[X:.*]] = memref.load %[[A]][%[[I]], %[[K]]] : memref<4x8xf32>
// CHECK-NEXT:          %[[Y:.*]] = memref.load %[[B]][%[[K]], %[[J]]] : memref<8x3xf32>
// CHECK-NEXT:          %[[M:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT:          %[[ACC:.*]] = memref.load %[[C]][%[[I]], %[[J]]] : memref<4x3xf32>
// CHECK-NEXT:          %[[R:.*]] = arith.addf %[[ACC]], %[[M]] : f32
// CHECK-NEXT:          memref.store %[[R]], %[[C]][%[[I]], %[[J]]] : memref<4x3xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @matmul(%A: tensor<4x8xf32>, %B: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 8) -> tensor<4x3xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    %b = te.read %B[%k, %j] : tensor<8x3xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  func.return %C : tensor<4x3xf32>
}

// -----

// max and min: -inf / +inf on floats, the extreme integers on integers.

// CHECK-LABEL: func.func @rowmax(
// CHECK:         %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK:         memref.store %[[NINF]], %[[M:.*]][%{{.*}}] : memref<4xf32>
// CHECK:         %[[ACC:.*]] = memref.load %[[M]]
// CHECK-NEXT:    arith.maximumf %[[ACC]], %{{.*}} : f32
func.func @rowmax(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  %M = te.compute "M" (%i) reduce max (%k : 8) -> tensor<4xf32> {
    %x = te.read %X[%i, %k] : tensor<4x8xf32>
    te.yield %x : f32
  }
  func.return %M : tensor<4xf32>
}

// CHECK-LABEL: func.func @rowmin_f64(
// CHECK:         arith.constant 0x7ff0000000000000 : f64
// CHECK:         arith.minimumf %{{.*}}, %{{.*}} : f64
func.func @rowmin_f64(%X: tensor<4x8xf64>) -> tensor<4xf64> {
  %M = te.compute "M" (%i) reduce min (%k : 8) -> tensor<4xf64> {
    %x = te.read %X[%i, %k] : tensor<4x8xf64>
    te.yield %x : f64
  }
  func.return %M : tensor<4xf64>
}

// CHECK-LABEL: func.func @int_reductions(
// CHECK-DAG:     %[[LOWEST:.*]] = arith.constant -2147483648 : i32
// CHECK-DAG:     %[[HIGHEST:.*]] = arith.constant 127 : i8
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK:         memref.store %[[LOWEST]]
// CHECK:         arith.maxsi %{{.*}}, %{{.*}} : i32
// CHECK:         memref.store %[[HIGHEST]]
// CHECK:         arith.minsi %{{.*}}, %{{.*}} : i8
// CHECK:         memref.store %[[ZERO]]
// CHECK:         arith.addi %{{.*}}, %{{.*}} : i64
func.func @int_reductions(%X: tensor<4x8xi32>, %Y: tensor<4x8xi8>, %Z: tensor<4x8xi64>)
    -> (tensor<4xi32>, tensor<4xi8>, tensor<4xi64>) {
  %M = te.compute "M" (%i) reduce max (%k : 8) -> tensor<4xi32> {
    %x = te.read %X[%i, %k] : tensor<4x8xi32>
    te.yield %x : i32
  }
  %N = te.compute "N" (%i) reduce min (%k : 8) -> tensor<4xi8> {
    %y = te.read %Y[%i, %k] : tensor<4x8xi8>
    te.yield %y : i8
  }
  %S = te.compute "S" (%i) reduce sum (%k : 8) -> tensor<4xi64> {
    %z = te.read %Z[%i, %k] : tensor<4x8xi64>
    te.yield %z : i64
  }
  func.return %M, %N, %S : tensor<4xi32>, tensor<4xi8>, tensor<4xi64>
}

// Booleans combine unsigned (i1's true is -1 as a signed integer): max is "any",
// from false, and min is "all", from true.

// CHECK-LABEL: func.func @any_all(
// CHECK-DAG:     %[[FALSE:.*]] = arith.constant false
// CHECK-DAG:     %[[TRUE:.*]] = arith.constant true
// CHECK:         memref.store %[[FALSE]]
// CHECK:         arith.maxui %{{.*}}, %{{.*}} : i1
// CHECK:         memref.store %[[TRUE]]
// CHECK:         arith.minui %{{.*}}, %{{.*}} : i1
// CHECK-NOT:     arith.maxsi
// CHECK-NOT:     arith.minsi
func.func @any_all(%X: tensor<4x8xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  %A = te.compute "A" (%i) reduce max (%k : 8) -> tensor<4xi1> {
    %x = te.read %X[%i, %k] : tensor<4x8xi1>
    te.yield %x : i1
  }
  %L = te.compute "L" (%i) reduce min (%k : 8) -> tensor<4xi1> {
    %x = te.read %X[%i, %k] : tensor<4x8xi1>
    te.yield %x : i1
  }
  func.return %A, %L : tensor<4xi1>, tensor<4xi1>
}

// -----

// A compute that is not a result gets a buffer at the top of the function; the
// next compute reads it.

// CHECK-LABEL: func.func @chain(
// CHECK-SAME:      %[[A:[^:]*]]: memref<8xf32> {ember.name = "A"}, %[[U:[^:]*]]: memref<8xf32> {ember.name = "U", ember.output}) {
// CHECK-NEXT:    %[[T:.*]] = loop.alloc : memref<8xf32>
// CHECK:         loop.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[A]][%[[I]]]
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT:      memref.store %[[E]], %[[T]][%[[I]]]
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for %[[J:.*]] = {{.*}} {
// CHECK-NEXT:      %[[Y:.*]] = memref.load %[[T]][%[[J]]]
// CHECK-NEXT:      %[[Z:.*]] = arith.mulf %[[Y]], %[[Y]] : f32
// CHECK-NEXT:      memref.store %[[Z]], %[[U]][%[[J]]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @chain(%A: tensor<8xf32>) -> tensor<8xf32> {
  %T = te.compute "T" (%i) -> tensor<8xf32> {
    %x = te.read %A[%i] : tensor<8xf32>
    %e = math.exp %x : f32
    te.yield %e : f32
  }
  %U = te.compute "U" (%i) -> tensor<8xf32> {
    %y = te.read %T[%i] : tensor<8xf32>
    %z = arith.mulf %y, %y : f32
    te.yield %z : f32
  }
  func.return %U : tensor<8xf32>
}

// -----

// Returning an input, or one tensor twice, copies it into the out-parameter.

// CHECK-LABEL: func.func @copies(
// CHECK-SAME:      %[[A:[^:]*]]: memref<2x3xi32> {ember.name = "A"}, %[[C:[^:]*]]: memref<2x3xi32> {ember.name = "C", ember.output},
// CHECK-SAME:      %[[A2:[^:]*]]: memref<2x3xi32> {ember.name = "A", ember.output}, %[[C2:[^:]*]]: memref<2x3xi32> {ember.name = "C", ember.output}) {
// CHECK:         loop.for
// CHECK:           memref.store %{{.*}}, %[[C]]
// CHECK:         loop.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:      loop.for %[[J:.*]] = {{.*}} {
// CHECK-NEXT:        %[[X:.*]] = memref.load %[[A]][%[[I]], %[[J]]] : memref<2x3xi32>
// CHECK-NEXT:        memref.store %[[X]], %[[A2]][%[[I]], %[[J]]] : memref<2x3xi32>
// CHECK:         loop.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:      loop.for %[[J:.*]] = {{.*}} {
// CHECK-NEXT:        %[[Y:.*]] = memref.load %[[C]][%[[I]], %[[J]]] : memref<2x3xi32>
// CHECK-NEXT:        memref.store %[[Y]], %[[C2]][%[[I]], %[[J]]] : memref<2x3xi32>
// CHECK:         func.return
func.func @copies(%A: tensor<2x3xi32>) -> (tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>) {
  %C = te.compute "C" (%i, %j) -> tensor<2x3xi32> {
    %x = te.read %A[%i, %j] : tensor<2x3xi32>
    %y = arith.addi %x, %x : i32
    te.yield %y : i32
  }
  func.return %C, %A, %C : tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>
}

// -----

// Argument attributes survive; an existing ember.name wins over the SSA name,
// `arg<i>` stands in for a missing name; result attributes move to the
// out-parameters. Scalar arguments stay as they are.

// CHECK-LABEL: func.func @names(
// CHECK-SAME:      %{{.*}}: memref<4xf32> {ember.name = "input", llvm.noalias},
// CHECK-SAME:      %{{.*}}: memref<4xf32> {ember.name = "arg1"},
// CHECK-SAME:      %[[S:[^:]*]]: f32 {ember.name = "s"},
// CHECK-SAME:      %{{.*}}: memref<4xf32> {ember.note = "result", ember.name = "Out", ember.output}) {
// CHECK:           arith.mulf %{{.*}}, %[[S]] : f32
func.func @names(%A: tensor<4xf32> {ember.name = "input", llvm.noalias}, %0: tensor<4xf32>, %s: f32)
    -> (tensor<4xf32> {ember.note = "result"}) {
  %C = te.compute "Out" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    %b = te.read %0[%i] : tensor<4xf32>
    %c = arith.addf %a, %b : f32
    %d = arith.mulf %c, %s : f32
    te.yield %d : f32
  }
  func.return %C : tensor<4xf32>
}

// -----

// Rank 0: no loops at all (a reduction still loops over its axis).

// CHECK-LABEL: func.func @scalar(
// CHECK-SAME:      %[[A:[^:]*]]: memref<f32> {ember.name = "A"}, %[[S:[^:]*]]: memref<f32> {ember.name = "S", ember.output}) {
// CHECK:         memref.store %{{.*}}, %[[S]][] : memref<f32>
// CHECK-NEXT:    loop.for %{{.*}} = {{.*}} {
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[A]][] : memref<f32>
// CHECK-NEXT:      %[[ACC:.*]] = memref.load %[[S]][] : memref<f32>
// CHECK-NEXT:      %[[R:.*]] = arith.addf %[[ACC]], %[[X]] : f32
// CHECK-NEXT:      memref.store %[[R]], %[[S]][] : memref<f32>
// CHECK-NEXT:    }
func.func @scalar(%A: tensor<f32>) -> tensor<f32> {
  %S = te.compute "S" () reduce sum (%k : 3) -> tensor<f32> {
    %x = te.read %A[] : tensor<f32>
    te.yield %x : f32
  }
  func.return %S : tensor<f32>
}

// -----

// Reads nested in a region of the body are lowered in place; a value defined
// before the compute is used as it is.

// CHECK-LABEL: func.func @relu_nested(
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         loop.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:      %[[POS:.*]] = arith.cmpi
// CHECK-NEXT:      %[[V:.*]] = scf.if %[[POS]] -> (f32) {
// CHECK-NEXT:        %[[X:.*]] = memref.load %{{.*}}[%[[I]]] : memref<4xf32>
// CHECK-NEXT:        %[[R:.*]] = arith.maximumf %[[X]], %[[ZERO]] : f32
// CHECK-NEXT:        scf.yield %[[R]] : f32
// CHECK-NEXT:      } else {
// CHECK-NEXT:        scf.yield %[[ZERO]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      memref.store %[[V]], %{{.*}}[%[[I]]] : memref<4xf32>
func.func @relu_nested(%A: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2 : index
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %lt = arith.cmpi ult, %i, %two : index
    %v = scf.if %lt -> (f32) {
      %x = te.read %A[%i] : tensor<4xf32>
      %r = arith.maximumf %x, %zero : f32
      scf.yield %r : f32
    } else {
      scf.yield %zero : f32
    }
    te.yield %v : f32
  }
  func.return %C : tensor<4xf32>
}

// -----

// Functions without te ops or tensors are left as they are.

// CHECK-LABEL: func.func private @external(memref<4xf32>) -> f32
// CHECK-LABEL: func.func @caller(
// CHECK-SAME:      %[[B:.*]]: memref<4xf32>) -> f32 {
// CHECK-NEXT:    %[[R:.*]] = func.call @external(%[[B]]) : (memref<4xf32>) -> f32
// CHECK-NEXT:    func.return %[[R]] : f32
func.func private @external(memref<4xf32>) -> f32
func.func @caller(%b: memref<4xf32>) -> f32 {
  %r = func.call @external(%b) : (memref<4xf32>) -> f32
  func.return %r : f32
}
