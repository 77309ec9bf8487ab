// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @empty_callee(%A: memref<4xf32>) {
  loop.call_packed ""(%A) : memref<4xf32>
  func.return
}

// CHECK: Operation does not verify: expected a non-empty callee name, got ''

// -----

func.func @dynamic_buffer(%A: memref<?xf32>) {
  loop.call_packed "f"(%A) : memref<?xf32>
  func.return
}

// CHECK: Operation does not verify: expected a static shape for operand 0, got memref<?xf32>

// -----

func.func @vector_operand(%v: vector<4xf32>) {
  loop.call_packed "f"(%v) : vector<4xf32>
  func.return
}

// CHECK: Operation does not verify: expected a memref, integer, index or float for operand 0, got vector<4xf32>

// -----

func.func @missing_types(%n: i64) {
  loop.call_packed "f"(%n, %n) : i64
  func.return
}

// CHECK: expected 2 operand types, got 1

// -----

func.func @bad_slot(%n: i64) {
  "loop.call_packed"(%n) <{callee = "f", args = [1 : i64]}> : (i64) -> ()
  func.return
}

// CHECK: Operation does not verify: expected 'args' to hold strings and unit, got 1 : i64

// -----

func.func @slot_count(%n: i64) {
  "loop.call_packed"(%n) <{callee = "f", args = ["s", unit, unit]}> : (i64) -> ()
  func.return
}

// CHECK: Operation does not verify: expected 2 operands for the unit slots of 'args', got 1
