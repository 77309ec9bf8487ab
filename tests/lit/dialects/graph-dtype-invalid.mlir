// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @compare_result(%x: tensor<4xf32>) {
  %z = graph.less %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// CHECK: expected tensor<4xi1>, got tensor<4xf32>

// -----

func.func @compare_types(%x: tensor<4xf32>, %y: tensor<4xi64>) {
  %z = graph.equal %x, %y : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  func.return
}

// CHECK: expected operands of one element type, got f32, i64

// -----

func.func @logic_on_floats(%x: tensor<4xf32>) {
  %z = graph.logical_and %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// CHECK: expected i1 for operand 0 of graph.logical_and, got f32

// -----

func.func @where_condition(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  %z = graph.where %c, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// CHECK: expected an i1 condition for graph.where, got f32

// -----

func.func @where_branches(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf16>) {
  %z = graph.where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// CHECK: expected operands of one element type, got f32, f16

// -----

func.func @where_shapes(%c: tensor<3xi1>, %x: tensor<4xf32>) {
  %z = graph.where %c, %x, %x : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// CHECK: expected broadcast-compatible shapes, got 3 and 4

// -----

func.func @mod_on_bools(%x: tensor<4xi1>) {
  %z = graph.mod %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// CHECK: expected numbers for graph.mod, got i1

// -----

func.func @cast_shape(%x: tensor<4xf32>) {
  %z = graph.cast %x : (tensor<4xf32>) -> tensor<2x2xi64>
  func.return
}

// CHECK: expected tensor<4xi64>, got tensor<2x2xi64>

// -----

func.func @cast_to_bfloat16(%x: tensor<4xf32>) {
  %z = graph.cast %x : (tensor<4xf32>) -> tensor<4xbf16>
  func.return
}

// CHECK: expected a target among float32, float16, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool for graph.cast, got bf16
