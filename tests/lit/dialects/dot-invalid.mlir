// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Lanes of four bytes are i32: no other integer type.

func.func @i64(%a: i64) -> i64 {
  %s = "dot.u8i8"(%a, %a, %a) : (i64, i64, i64) -> i64
  func.return %s : i64
}

// CHECK: Operation does not verify: operand 'acc' at position 0 does not verify:
// CHECK-NEXT: Expected attribute i32 but got i64

// -----

// The accumulator, the operands and the result are of one type.

func.func @mixed(%a: i32, %v: vector<4xi32>) -> i32 {
  %s = "dot.u8i8"(%a, %v, %v) : (i32, vector<4xi32>, vector<4xi32>) -> i32
  func.return %s : i32
}

// CHECK: Operation does not verify: operand 'lhs' at position 1 does not verify:
// CHECK-NEXT: attribute i32 expected from variable 'T', but got vector<4xi32>

// -----

// Only 1-D vectors.

func.func @two_d(%v: vector<2x4xi32>) -> vector<2x4xi32> {
  %s = "dot.u8i8"(%v, %v, %v) : (vector<2x4xi32>, vector<2x4xi32>, vector<2x4xi32>) -> vector<2x4xi32>
  func.return %s : vector<2x4xi32>
}

// CHECK: Operation does not verify: operand 'acc' at position 0 does not verify:

// -----

// dot.bf16 takes one i32 word (two bfloat16 numbers) per f32 lane.

func.func @bf16_lanes(%acc: vector<8xf32>, %v: vector<16xi32>) -> vector<8xf32> {
  %s = "dot.bf16"(%acc, %v, %v) : (vector<8xf32>, vector<16xi32>, vector<16xi32>) -> vector<8xf32>
  func.return %s : vector<8xf32>
}

// CHECK: Operation does not verify: expected one lane of words per f32 lane, got 8 f32 and 16 i32 lanes

// -----

// dot.bf16 accumulates in f32 only.

func.func @bf16_f64(%acc: f64, %a: i32) -> f64 {
  %s = "dot.bf16"(%acc, %a, %a) : (f64, i32, i32) -> f64
  func.return %s : f64
}

// CHECK: Operation does not verify: operand 'acc' at position 0 does not verify:
// CHECK-NEXT: Unexpected attribute f64

// -----

// dot.bf16's words are i32: two bfloat16 numbers, no more.

func.func @bf16_i64(%acc: f32, %a: i64) -> f32 {
  %s = "dot.bf16"(%acc, %a, %a) : (f32, i64, i64) -> f32
  func.return %s : f32
}

// CHECK: Operation does not verify: operand 'lhs' at position 1 does not verify:
// CHECK-NEXT: Expected attribute i32 but got i64

// -----

// dot.bf16's result is its accumulator's type.

func.func @bf16_result(%acc: f32, %a: i32) -> f64 {
  %s = "dot.bf16"(%acc, %a, %a) : (f32, i32, i32) -> f64
  func.return %s : f64
}

// CHECK: Operation does not verify: result 'result' at position 0 does not verify:
// CHECK-NEXT: attribute f32 expected from variable 'T', but got f64
