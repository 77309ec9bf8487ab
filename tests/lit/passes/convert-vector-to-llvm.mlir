// RUN: ember-opt %s -p convert-vector-to-llvm --split-input-file | filecheck %s

// A broadcast is LLVM's splat idiom: insertelement into lane 0, shufflevector of
// lane 0 everywhere. Vectors of index become vectors of i64; a 1-lane vector is
// shuffled directly.

// CHECK-LABEL: func.func @broadcast(
// CHECK-SAME:      %[[X:.*]]: f32, %[[I:.*]]: index, %[[ONE:.*]]: vector<1xi8>)
// CHECK-NEXT:    %[[IL:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK-NEXT:    %[[U:.*]] = llvm.mlir.undef : vector<4xf32>
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[V0:.*]] = llvm.insertelement %[[X]], %[[U]][%[[Z]] : i64] : vector<4xf32>
// CHECK-NEXT:    %[[V:.*]] = llvm.shufflevector %[[V0]], %[[U]] [0, 0, 0, 0] : vector<4xf32>
// CHECK-NEXT:    %[[UI:.*]] = llvm.mlir.undef : vector<4xi64>
// CHECK-NEXT:    %[[ZI:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[W0:.*]] = llvm.insertelement %[[IL]], %[[UI]][%[[ZI]] : i64] : vector<4xi64>
// CHECK-NEXT:    %[[W:.*]] = llvm.shufflevector %[[W0]], %[[UI]] [0, 0, 0, 0] : vector<4xi64>
// CHECK-NEXT:    %[[WI:.*]] = builtin.unrealized_conversion_cast %[[W]] : vector<4xi64> to vector<4xindex>
// CHECK-NEXT:    %[[B:.*]] = llvm.shufflevector %[[ONE]], %[[ONE]] [0, 0, 0, 0, 0, 0, 0, 0] : vector<1xi8>
// CHECK-NEXT:    func.return %[[V]], %[[WI]], %[[B]] : vector<4xf32>, vector<4xindex>, vector<8xi8>
func.func @broadcast(%x: f32, %i: index, %one: vector<1xi8>) -> (vector<4xf32>, vector<4xindex>, vector<8xi8>) {
  %0 = vector.broadcast %x : f32 to vector<4xf32>
  %1 = vector.broadcast %i : index to vector<4xindex>
  %2 = vector.broadcast %one : vector<1xi8> to vector<8xi8>
  func.return %0, %1, %2 : vector<4xf32>, vector<4xindex>, vector<8xi8>
}

// -----

// Lanes named by a constant or by an index value.

// CHECK-LABEL: func.func @lanes(
// CHECK-SAME:      %[[V:.*]]: vector<4xf32>, %[[X:.*]]: f32, %[[I:.*]]: index)
// CHECK-NEXT:    %[[IL:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK-NEXT:    %[[C2:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[E0:.*]] = llvm.extractelement %[[V]][%[[C2]] : i64] : vector<4xf32>
// CHECK-NEXT:    %[[E1:.*]] = llvm.extractelement %[[V]][%[[IL]] : i64] : vector<4xf32>
// CHECK-NEXT:    %[[C0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[I0:.*]] = llvm.insertelement %[[X]], %[[V]][%[[C0]] : i64] : vector<4xf32>
// CHECK-NEXT:    %[[I1:.*]] = llvm.insertelement %[[X]], %[[V]][%[[IL]] : i64] : vector<4xf32>
// CHECK-NEXT:    func.return %[[E0]], %[[E1]], %[[I0]], %[[I1]]
func.func @lanes(%v: vector<4xf32>, %x: f32, %i: index) -> (f32, f32, vector<4xf32>, vector<4xf32>) {
  %0 = vector.extract %v[2] : f32 from vector<4xf32>
  %1 = vector.extract %v[%i] : f32 from vector<4xf32>
  %2 = vector.insert %x, %v [0] : f32 into vector<4xf32>
  %3 = vector.insert %x, %v [%i] : f32 into vector<4xf32>
  func.return %0, %1, %2, %3 : f32, f32, vector<4xf32>, vector<4xf32>
}

// -----

// CHECK-LABEL: func.func @shuffle_fma(
// CHECK-SAME:      %[[A:.*]]: vector<4xf32>, %[[B:.*]]: vector<4xf32>)
// CHECK-NEXT:    %[[S:.*]] = llvm.shufflevector %[[A]], %[[B]] [0, 4, 1, 5, 2, 6, 3, 7] : vector<4xf32>
// CHECK-NEXT:    %[[F:.*]] = llvm.call_intrinsic "llvm.fma.v4f32"(%[[A]], %[[B]], %[[A]]) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    func.return %[[S]], %[[F]] : vector<8xf32>, vector<4xf32>
func.func @shuffle_fma(%a: vector<4xf32>, %b: vector<4xf32>) -> (vector<8xf32>, vector<4xf32>) {
  %0 = vector.shuffle %a, %b [0, 4, 1, 5, 2, 6, 3, 7] : vector<4xf32>, vector<4xf32>
  %1 = vector.fma %a, %b, %a : vector<4xf32>
  func.return %0, %1 : vector<8xf32>, vector<4xf32>
}

// -----

// Reductions are llvm.vector.reduce.*, mangled for the vector type. Float add and
// mul start from the accumulator (-0.0 or 1.0 without one) and keep fastmath
// flags (reassoc: a tree); others are joined with their accumulator afterwards.

// CHECK-LABEL: func.func @reductions(
// CHECK-SAME:      %[[V:.*]]: vector<8xf32>, %[[W:.*]]: vector<8xi32>, %[[ACC:.*]]: f32, %[[IACC:.*]]: i32)
// CHECK-NEXT:    %[[M0:.*]] = llvm.mlir.constant(-0.000000e+00 : f32) : f32
// CHECK-NEXT:    %[[R0:.*]] = llvm.call_intrinsic "llvm.vector.reduce.fadd.v8f32"(%[[M0]], %[[V]]) {fastmathFlags = #llvm.fastmath<reassoc>} : (f32, vector<8xf32>) -> f32
// CHECK-NEXT:    %[[R1:.*]] = llvm.call_intrinsic "llvm.vector.reduce.fmul.v8f32"(%[[ACC]], %[[V]]) : (f32, vector<8xf32>) -> f32
// CHECK-NEXT:    %[[S2:.*]] = llvm.call_intrinsic "llvm.vector.reduce.add.v8i32"(%[[W]]) : (vector<8xi32>) -> i32
// CHECK-NEXT:    %[[R2:.*]] = llvm.add %[[S2]], %[[IACC]] : i32
// CHECK-NEXT:    %[[R3:.*]] = llvm.call_intrinsic "llvm.vector.reduce.smax.v8i32"(%[[W]]) : (vector<8xi32>) -> i32
// CHECK-NEXT:    %[[S4:.*]] = llvm.call_intrinsic "llvm.vector.reduce.fmaximum.v8f32"(%[[V]]) : (vector<8xf32>) -> f32
// CHECK-NEXT:    %[[R4:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[S4]], %[[ACC]]) : (f32, f32) -> f32
// CHECK-NEXT:    func.return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]]
func.func @reductions(%v: vector<8xf32>, %w: vector<8xi32>, %acc: f32, %iacc: i32) -> (f32, f32, i32, i32, f32) {
  %0 = vector.reduction <add>, %v fastmath<reassoc> : vector<8xf32> into f32
  %1 = vector.reduction <mul>, %v, %acc : vector<8xf32> into f32
  %2 = vector.reduction <add>, %w, %iacc : vector<8xi32> into i32
  %3 = vector.reduction <maxsi>, %w : vector<8xi32> into i32
  %4 = vector.reduction <maximumf>, %v, %acc : vector<8xf32> into f32
  func.return %0, %1, %2, %3, %4 : f32, f32, i32, i32, f32
}

// -----

// create_mask compares the lane numbers with its bound.

// CHECK-LABEL: func.func @mask_bitcast(
// CHECK-SAME:      %[[N:.*]]: index, %[[V:.*]]: vector<4xf32>)
// CHECK-NEXT:    %[[NL:.*]] = builtin.unrealized_conversion_cast %[[N]] : index to i64
// CHECK-NEXT:    %[[IOTA:.*]] = llvm.mlir.constant(dense<[0, 1, 2, 3]> : vector<4xi64>) : vector<4xi64>
// CHECK:         %[[SPLAT:.*]] = llvm.shufflevector %{{.*}}, %{{.*}} [0, 0, 0, 0] : vector<4xi64>
// CHECK-NEXT:    %[[M:.*]] = llvm.icmp "slt" %[[IOTA]], %[[SPLAT]] : vector<4xi64>
// CHECK-NEXT:    %[[B:.*]] = llvm.bitcast %[[V]] : vector<4xf32> to vector<4xi32>
// CHECK-NEXT:    func.return %[[M]], %[[B]] : vector<4xi1>, vector<4xi32>
func.func @mask_bitcast(%n: index, %v: vector<4xf32>) -> (vector<4xi1>, vector<4xi32>) {
  %0 = vector.create_mask %n : vector<4xi1>
  %1 = vector.bitcast %v : vector<4xf32> to vector<4xi32>
  func.return %0, %1 : vector<4xi1>, vector<4xi32>
}

// -----

// vector.load and vector.store are buffer accesses: convert-memref-to-llvm lowers
// them with ember's addressing of memrefs.

// CHECK-LABEL: func.func @accesses(
// CHECK:         vector.load
// CHECK:         vector.store
func.func @accesses(%A: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %v = vector.load %A[%c0] : memref<8xf32>, vector<8xf32>
  vector.store %v, %A[%c0] : memref<8xf32>, vector<8xf32>
  func.return
}
