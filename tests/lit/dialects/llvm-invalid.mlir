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
