// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @batch(%q: tensor<2x4x8xf32>, %kt: tensor<3x8x4xf32>, %v: tensor<2x4x8xf32>) {
  %o = graph.attention %q, %kt, %v : (tensor<2x4x8xf32>, tensor<3x8x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return
}

// CHECK: expected the same batch dims, got query (2, 4, 8), keys (3, 8, 4), values (2, 4, 8)

// -----

func.func @depth(%q: tensor<4x8xf32>, %kt: tensor<7x4xf32>, %v: tensor<4x8xf32>) {
  %o = graph.attention %q, %kt, %v : (tensor<4x8xf32>, tensor<7x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// CHECK: expected keys (..., 8, T) and values (..., T, E), got keys (7, 4) and values (4, 8)

// -----

func.func @mask(%q: tensor<4x8xf32>, %kt: tensor<8x5xf32>, %v: tensor<5x8xf32>, %m: tensor<3x5xf32>) {
  %o = graph.attention %q, %kt, %v, %m : (tensor<4x8xf32>, tensor<8x5xf32>, tensor<5x8xf32>, tensor<3x5xf32>) -> tensor<4x8xf32>
  func.return
}

// CHECK: expected a mask that broadcasts to 4x5, got 3x5

// -----

func.func @rank(%q: tensor<8xf32>, %kt: tensor<8xf32>, %v: tensor<8xf32>) {
  %o = graph.attention %q, %kt, %v : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return
}

// CHECK: expected the query of rank 2 or more, got (8,)

// -----

func.func @result(%q: tensor<4x8xf32>, %kt: tensor<8x5xf32>, %v: tensor<5x6xf32>) {
  %o = graph.attention %q, %kt, %v : (tensor<4x8xf32>, tensor<8x5xf32>, tensor<5x6xf32>) -> tensor<4x8xf32>
  func.return
}

// CHECK: expected tensor<4x6xf32>, got tensor<4x8xf32>

// -----

func.func @mask_type(%q: tensor<4x8xf32>, %kt: tensor<8x5xf32>, %v: tensor<5x6xf32>, %m: tensor<4x5xi32>) {
  %o = graph.attention %q, %kt, %v, %m : (tensor<4x8xf32>, tensor<8x5xf32>, tensor<5x6xf32>, tensor<4x5xi32>) -> tensor<4x6xf32>
  func.return
}

// CHECK: expected a mask of f32 or i1, got i32

// -----

func.func @values_type(%q: tensor<4x8xf32>, %kt: tensor<8x5xf32>, %v: tensor<5x6xf16>) {
  %o = graph.attention %q, %kt, %v : (tensor<4x8xf32>, tensor<8x5xf32>, tensor<5x6xf16>) -> tensor<4x6xf32>
  func.return
}

// CHECK: expected operands of one element type, got f32, f32, f16
