// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// ember's additions to xDSL's llvm dialect.

// CHECK-LABEL: llvm.func @casts(
// CHECK-SAME:      %[[F:.*]]: f32, %[[D:.*]]: f64)
// CHECK:         %[[S:.*]] = llvm.fptosi %[[F]] : f32 to i32
// CHECK-NEXT:    %[[U:.*]] = llvm.fptoui %[[D]] : f64 to i64
// CHECK-NEXT:    %{{.*}} = llvm.uitofp %[[S]] : i32 to f32
// CHECK-NEXT:    %{{.*}} = llvm.uitofp %[[U]] : i64 to f64

// GENERIC-LABEL: "llvm.func"()
// GENERIC:         "llvm.fptosi"(%{{.*}}) : (f32) -> i32
// GENERIC-NEXT:    "llvm.fptoui"(%{{.*}}) : (f64) -> i64
// GENERIC-NEXT:    "llvm.uitofp"(%{{.*}}) : (i32) -> f32
llvm.func @casts(%f: f32, %d: f64) -> f32 {
  %s = llvm.fptosi %f : f32 to i32
  %u = llvm.fptoui %d : f64 to i64
  %r = llvm.uitofp %s : i32 to f32
  %q = llvm.uitofp %u : i64 to f64
  llvm.return %r : f32
}

// CHECK-LABEL: llvm.func @lanes(
// CHECK-SAME:      %[[V:.*]]: vector<8xf32>, %[[W:.*]]: vector<4xi64>, %[[I:.*]]: i64, %[[J:.*]]: i32)
// CHECK:         %{{.*}} = llvm.extractelement %[[V]][%[[I]] : i64] : vector<8xf32>
// CHECK-NEXT:    %{{.*}} = llvm.extractelement %[[W]][%[[J]] : i32] : vector<4xi64>

// GENERIC:         "llvm.extractelement"(%{{.*}}, %{{.*}}) : (vector<8xf32>, i64) -> f32
// GENERIC-NEXT:    "llvm.extractelement"(%{{.*}}, %{{.*}}) : (vector<4xi64>, i32) -> i64
llvm.func @lanes(%v: vector<8xf32>, %w: vector<4xi64>, %i: i64, %j: i32) -> f32 {
  %x = llvm.extractelement %v[%i : i64] : vector<8xf32>
  %y = llvm.extractelement %w[%j : i32] : vector<4xi64>
  llvm.return %x : f32
}

// CHECK-LABEL: llvm.func @switch(
// CHECK-SAME:      %[[X:.*]]: i32)
// CHECK:         llvm.switch %[[X]] : i32, ^[[DEFAULT:[a-z0-9_]+]] [-1: ^[[NEG:[a-z0-9_]+]], 0: ^[[DEFAULT]], 7: ^[[SEVEN:[a-z0-9_]+]]]
// CHECK-NEXT:  ^[[DEFAULT]]:
// CHECK:       ^[[NEG]]:
// CHECK:       ^[[SEVEN]]:

// GENERIC:         "llvm.switch"(%{{.*}}) [^{{.*}}, ^{{.*}}, ^{{.*}}, ^{{.*}}] <{case_values = array<i64: -1, 0, 7>}> : (i32) -> ()
llvm.func @switch(%x: i32) -> i32 {
  llvm.switch %x : i32, ^bb1 [-1: ^bb2, 0: ^bb1, 7: ^bb3]
^bb1:
  %a = llvm.mlir.constant(0 : i32) : i32
  llvm.return %a : i32
^bb2:
  %b = llvm.mlir.constant(1 : i32) : i32
  llvm.return %b : i32
^bb3:
  %c = llvm.mlir.constant(2 : i32) : i32
  llvm.return %c : i32
}

// A switch with no cases branches to its default.
// CHECK-LABEL: llvm.func @switch_default_only(
// CHECK:         llvm.switch %{{.*}} : i64, ^{{.*}} []
llvm.func @switch_default_only(%x: i64) {
  llvm.switch %x : i64, ^bb1 []
^bb1:
  llvm.return
}

// ember's llvm.select and llvm.fcmp replace xDSL's: the same syntax, and they also
// take vectors (a condition per lane, a comparison per lane).

// CHECK-LABEL: llvm.func @lanewise(
// CHECK-SAME:      %[[M:.*]]: vector<8xi1>, %[[V:.*]]: vector<8xf32>, %[[C:.*]]: i1, %[[X:.*]]: f64)
// CHECK:         %{{.*}} = llvm.select %[[M]], %[[V]], %[[V]] : vector<8xi1>, vector<8xf32>
// CHECK-NEXT:    %{{.*}} = llvm.select %[[C]], %[[V]], %[[V]] : i1, vector<8xf32>
// CHECK-NEXT:    %{{.*}} = llvm.select %[[C]], %[[X]], %[[X]] {fastmathFlags = #llvm.fastmath<nnan>} : i1, f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "olt" %[[V]], %[[V]] {fastmathFlags = #llvm.fastmath<nnan,ninf>} : vector<8xf32>
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "uno" %[[X]], %[[X]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "_true" %[[X]], %[[X]] : f64

// GENERIC:         "llvm.select"(%{{.*}}, %{{.*}}, %{{.*}}) <{fastmathFlags = #llvm.fastmath<none>}> : (vector<8xi1>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// GENERIC:         "llvm.fcmp"(%{{.*}}, %{{.*}}) <{predicate = 4 : i64, fastmathFlags = #llvm.fastmath<nnan,ninf>}> : (vector<8xf32>, vector<8xf32>) -> vector<8xi1>
// GENERIC-NEXT:    "llvm.fcmp"(%{{.*}}, %{{.*}}) <{predicate = 14 : i64, fastmathFlags = #llvm.fastmath<none>}> : (f64, f64) -> i1
llvm.func @lanewise(%m: vector<8xi1>, %v: vector<8xf32>, %c: i1, %x: f64) -> vector<8xf32> {
  %0 = llvm.select %m, %v, %v : vector<8xi1>, vector<8xf32>
  %1 = llvm.select %c, %v, %v : i1, vector<8xf32>
  %2 = llvm.select %c, %x, %x {fastmathFlags = #llvm.fastmath<nnan>} : i1, f64
  %3 = llvm.fcmp "olt" %v, %v {fastmathFlags = #llvm.fastmath<nnan, ninf>} : vector<8xf32>
  %4 = llvm.fcmp "uno" %x, %x : f64
  %5 = llvm.fcmp "_true" %x, %x : f64
  llvm.return %0 : vector<8xf32>
}
