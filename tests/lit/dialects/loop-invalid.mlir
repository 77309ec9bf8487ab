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

// CHECK: Operation does not verify: expected a static shape, got memref<?x16xf32>

// -----

func.func @alloc_tensor() {
  %b = loop.alloc : tensor<16xf32>
  func.return
}

// CHECK: expected a memref type, got tensor<16xf32>
