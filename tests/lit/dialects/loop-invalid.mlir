// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @bad_kind(%n: index) {
  "loop.for"(%n, %n, %n) <{kind = "threaded"}> ({
  ^bb0(%i: index):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  func.return
}

// CHECK: Operation does not verify: expected loop kind serial, parallel, vectorized or unrolled, got 'threaded'

// -----

func.func @float_induction_var(%n: index) {
  "loop.for"(%n, %n, %n) <{kind = "serial"}> ({
  ^bb0(%i: f32):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  func.return
}

// CHECK: Operation does not verify: expected one index induction variable, got (f32)

// -----

func.func @two_induction_vars(%n: index) {
  "loop.for"(%n, %n, %n) <{kind = "serial"}> ({
  ^bb0(%i: index, %j: index):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  func.return
}

// CHECK: Operation does not verify: expected one index induction variable, got (index, index)

// -----

func.func @no_induction_var(%n: index) {
  "loop.for"(%n, %n, %n) <{kind = "serial"}> ({
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  func.return
}

// CHECK: Operation does not verify: expected one index induction variable, got (none)

// -----

func.func @non_index_bounds(%n: i32) {
  "loop.for"(%n, %n, %n) <{kind = "serial"}> ({
  ^bb0(%i: index):
    "loop.yield"() : () -> ()
  }) : (i32, i32, i32) -> ()
  func.return
}

// CHECK: operand 'lower' at position 0 does not verify:
// CHECK: index

// -----

func.func @yield_outside_loop() {
  loop.yield
}

// CHECK: Operation does not verify: 'loop.yield' expects parent op 'loop.for'

// -----

func.func @bad_scope() {
  %b = "loop.alloc"() <{scope = "texture"}> : () -> memref<16xf32>
  func.return
}

// CHECK: Operation does not verify: expected scope global, shared or local, got 'texture'

// -----

func.func @dynamic_alloc() {
  %b = loop.alloc : memref<?x16xf32>
  func.return
}

// CHECK: Operation does not verify: expected 1 size operands (one per dynamic dim of memref<?x16xf32>), got 0

// -----

func.func @extra_size(%n: index) {
  %b = loop.alloc(%n, %n) : memref<?x16xf32>
  func.return
}

// CHECK: Operation does not verify: expected 1 size operands (one per dynamic dim of memref<?x16xf32>), got 2

// -----

func.func @size_of_static(%n: index) {
  %b = "loop.alloc"(%n) : (index) -> memref<4x16xf32>
  func.return
}

// CHECK: Operation does not verify: expected 0 size operands (one per dynamic dim of memref<4x16xf32>), got 1

// -----

func.func @dynamic_shared(%n: index) {
  %b = "loop.alloc"(%n) <{scope = "shared"}> : (index) -> memref<?xf32>
  func.return
}

// CHECK: Operation does not verify: expected a static shape for a shared buffer, got memref<?xf32>

// -----

func.func @dynamic_shared(%n: index) {
  %b = loop.alloc shared(%n) : memref<?xf32>
  func.return
}

// CHECK: Operation does not verify: expected a static shape for a shared buffer, got memref<?xf32>

// -----

func.func @size_not_index(%n: i64) {
  %b = "loop.alloc"(%n) : (i64) -> memref<?xf32>
  func.return
}

// CHECK: Operation does not verify: operand 'sizes' at position 0 does not verify

// -----

func.func @alloc_tensor() {
  %b = loop.alloc : tensor<16xf32>
  func.return
}

// CHECK: expected a memref type, got tensor<16xf32>
