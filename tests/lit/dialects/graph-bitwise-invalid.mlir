// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @and_on_floats(%x: tensor<4xf32>) {
  %z = graph.bitwise_and %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// CHECK: expected integers for graph.bitwise_and, got f32

// -----

func.func @or_on_bools(%x: tensor<4xi1>) {
  %z = graph.bitwise_or %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// CHECK: expected integers for graph.bitwise_or, got i1

// -----

func.func @xor_of_two_types(%x: tensor<4xui8>, %y: tensor<4xi8>) {
  %z = graph.bitwise_xor %x, %y : (tensor<4xui8>, tensor<4xi8>) -> tensor<4xui8>
  func.return
}

// CHECK: expected operands of one element type, got ui8, i8

// -----

func.func @not_on_floats(%x: tensor<4xf16>) {
  %z = graph.bitwise_not %x : (tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// CHECK: expected integers for graph.bitwise_not, got f16

// -----

func.func @shift_result(%x: tensor<4xui16>, %y: tensor<4xui16>) {
  %z = graph.left_shift %x, %y : (tensor<4xui16>, tensor<4xui16>) -> tensor<4xi16>
  func.return
}

// CHECK: expected tensor<4xui16>, got tensor<4xi16>

// -----

func.func @shift_shapes(%x: tensor<3xi64>, %y: tensor<4xi64>) {
  %z = graph.right_shift %x, %y : (tensor<3xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return
}

// CHECK: expected broadcast-compatible shapes, got 3 and 4

// -----

func.func @bitcast_width(%x: tensor<4xf32>) {
  %z = graph.bitcast %x : (tensor<4xf32>) -> tensor<4xi16>
  func.return
}

// CHECK: expected a target of 32 bits for graph.bitcast, got i16 of 16

// -----

func.func @bitcast_shape(%x: tensor<4xi8>) {
  %z = graph.bitcast %x : (tensor<4xi8>) -> tensor<2x2xui8>
  func.return
}

// CHECK: expected tensor<4xui8>, got tensor<2x2xui8>
