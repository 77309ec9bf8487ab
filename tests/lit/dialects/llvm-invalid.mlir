// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

llvm.func @switch_case_count(%x: i32) {
  "llvm.switch"(%x) [^bb1, ^bb1] <{case_values = array<i64: 1, 2>}> : (i32) -> ()
^bb1:
  llvm.return
}

// CHECK: Operation does not verify: expected 2 case destinations, got 1

// -----

llvm.func @switch_on_float(%x: f32) {
  "llvm.switch"(%x) [^bb1] <{case_values = array<i64>}> : (f32) -> ()
^bb1:
  llvm.return
}

// CHECK: operand 'value' at position 0 does not verify:
// CHECK: f32 should be of base attribute integer_type

// -----

llvm.func @extract_from_scalar(%x: f32, %i: i64) -> f32 {
  %e = "llvm.extractelement"(%x, %i) : (f32, i64) -> f32
  llvm.return %e : f32
}

// CHECK: operand 'vector' at position 0 does not verify:
// CHECK: f32 should be of base attribute vector

// -----

func.func @extract_from_matrix(%v: vector<2x4xf32>, %i: i64) -> f32 {
  %e = "llvm.extractelement"(%v, %i) : (vector<2x4xf32>, i64) -> f32
  func.return %e : f32
}

// CHECK: operand 'vector' at position 0 does not verify:
// CHECK: incorrect length for range variable

// -----

llvm.func @extract_wrong_result(%v: vector<4xf32>, %i: i64) -> f64 {
  %e = "llvm.extractelement"(%v, %i) : (vector<4xf32>, i64) -> f64
  llvm.return %e : f64
}

// CHECK: result 'res' at position 0 does not verify:
// CHECK: expected from variable 'ELEMENT', but got f64

// -----

llvm.func @extract_float_index(%v: vector<4xf32>, %i: f32) -> f32 {
  %e = "llvm.extractelement"(%v, %i) : (vector<4xf32>, f32) -> f32
  llvm.return %e : f32
}

// CHECK: operand 'index' at position 1 does not verify:
// CHECK: f32 should be of base attribute integer_type

// -----

llvm.func @select_lanes(%m: vector<4xi1>, %v: vector<8xf32>) -> vector<8xf32> {
  %0 = "llvm.select"(%m, %v, %v) : (vector<4xi1>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
  llvm.return %0 : vector<8xf32>
}

// CHECK: Operation does not verify: expected a vector of 4 lanes to select from with vector<4xi1>, got vector<8xf32>

// -----

llvm.func @select_vector_of_scalars(%m: vector<4xi1>, %x: f32) -> f32 {
  %0 = "llvm.select"(%m, %x, %x) : (vector<4xi1>, f32, f32) -> f32
  llvm.return %0 : f32
}

// CHECK: Operation does not verify: expected a vector of 4 lanes to select from with vector<4xi1>, got f32

// -----

llvm.func @select_on_i8(%c: i8, %x: f32) -> f32 {
  %0 = "llvm.select"(%c, %x, %x) : (i8, f32, f32) -> f32
  llvm.return %0 : f32
}

// CHECK: operand 'cond' at position 0 does not verify:

// -----

llvm.func @fcmp_result(%v: vector<4xf32>) -> i1 {
  %0 = "llvm.fcmp"(%v, %v) <{predicate = 4 : i64}> : (vector<4xf32>, vector<4xf32>) -> i1
  llvm.return %0 : i1
}

// CHECK: Operation does not verify: expected result vector<4xi1>, got i1

// -----

llvm.func @fcmp_integers(%a: i32) -> i1 {
  %0 = "llvm.fcmp"(%a, %a) <{predicate = 4 : i64}> : (i32, i32) -> i1
  llvm.return %0 : i1
}

// CHECK: operand 'lhs' at position 0 does not verify:

// -----

llvm.func @fcmp_predicate(%x: f32) -> i1 {
  %0 = "llvm.fcmp"(%x, %x) <{predicate = 16 : i64}> : (f32, f32) -> i1
  llvm.return %0 : i1
}

// CHECK: Operation does not verify: expected a predicate in [0, 16), got 16

// -----

llvm.func @fcmp_unknown_predicate(%x: f32) -> i1 {
  %0 = llvm.fcmp "less" %x, %x : f32
  llvm.return %0 : i1
}

// CHECK: expected an fcmp predicate (_false, oeq, ogt, oge, olt, ole, one, ord, ueq, ugt, uge, ult, ule, une, uno, _true), got 'less'
