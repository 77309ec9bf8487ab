// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @layer_norm_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  %y = graph.layer_norm %x, %g {axis = 2} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return
}

// CHECK: expected axis in [-2, 2), got 2

// -----

func.func @layer_norm_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  %y = graph.layer_norm %x, %g : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  func.return
}

// CHECK: expected a scale that broadcasts to 2x8, got 4

// -----

func.func @slice_empty(%x: tensor<8xf32>) {
  %y = graph.slice %x {starts = [3], ends = [1], steps = [1]} : (tensor<8xf32>) -> tensor<1xf32>
  func.return
}

// CHECK: expected a non-empty slice on axis 0, got range(3, 1)

// -----

func.func @slice_bounds(%x: tensor<8xf32>) {
  %y = graph.slice %x {starts = [8], ends = [9], steps = [1]} : (tensor<8xf32>) -> tensor<1xf32>
  func.return
}

// CHECK: expected a start in [0, 8) and an end in [-1, 8] on axis 0, got 8 and 9

// -----

func.func @slice_rank(%x: tensor<2x8xf32>) {
  %y = graph.slice %x {starts = [0], ends = [1], steps = [1]} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  func.return
}

// CHECK: expected 2 'starts' (one per axis), got 1

// -----

func.func @slice_result(%x: tensor<8xf32>) {
  %y = graph.slice %x {starts = [0], ends = [8], steps = [2]} : (tensor<8xf32>) -> tensor<3xf32>
  func.return
}

// CHECK: expected tensor<4xf32>, got tensor<3xf32>

// -----

func.func @broadcast_to(%x: tensor<3xf32>) {
  %y = graph.broadcast_to %x {shape = [2, 4]} : (tensor<3xf32>) -> tensor<2x4xf32>
  func.return
}

// CHECK: expected broadcast-compatible shapes, got 3 and 2x4

// -----

func.func @tile(%x: tensor<3xf32>) {
  %y = graph.tile %x {repeats = [0]} : (tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// CHECK: expected positive repeats, got [0]

// -----

func.func @trilu(%x: tensor<3xf32>) {
  %y = graph.trilu %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// CHECK: expected a rank of at least 2, got 1

// -----

func.func @cumsum(%x: tensor<3xf32>) {
  %y = graph.cumsum %x {axis = 1} : (tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// CHECK: expected axis in [-1, 1), got 1

// -----

func.func @depth_to_space(%x: tensor<1x6x2x2xf32>) {
  %y = graph.depth_to_space %x {blocksize = 2} : (tensor<1x6x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// CHECK: expected channels divisible by 4, got 6

// -----

func.func @space_to_depth(%x: tensor<1x1x3x4xf32>) {
  %y = graph.space_to_depth %x {blocksize = 2} : (tensor<1x1x3x4xf32>) -> tensor<1x4x1x2xf32>
  func.return
}

// CHECK: expected H and W divisible by 2, got 3 and 4

// -----

func.func @conv2d_transpose_channels(%x: tensor<1x3x4x4xf32>, %w: tensor<4x2x3x3xf32>) {
  %y = graph.conv2d_transpose %x, %w : (tensor<1x3x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  func.return
}

// CHECK: expected data channels 4 divisible by 1 groups, got 3

// -----

func.func @conv2d_transpose_bias(%x: tensor<1x4x4x4xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>) {
  %y = graph.conv2d_transpose %x, %w, %b : (tensor<1x4x4x4xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x2x6x6xf32>
  func.return
}

// CHECK: expected a bias of shape (2,), got (4,)

// -----

func.func @resize_linear_3d(%x: tensor<2x4x4xf32>) {
  %y = graph.resize %x {shape = [4, 8, 8], scale_num = [2, 2, 2], scale_den = [1, 1, 1], linear = true} : (tensor<2x4x4xf32>) -> tensor<4x8x8xf32>
  func.return
}

// CHECK: expected linear resizing of 2 axes, got [0, 1, 2]

// -----

func.func @resize_mode(%x: tensor<4x4xf32>) {
  %y = graph.resize %x {shape = [8, 8], scale_num = [2, 2], scale_den = [1, 1], coord = 7} : (tensor<4x4xf32>) -> tensor<8x8xf32>
  func.return
}

// CHECK: expected a coord in [0, 4), got 7
