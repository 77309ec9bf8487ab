// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Every dynamic dim is named.
func.func @unnamed(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = graph.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// CHECK: expected a name for each dynamic dim of tensor<?x4xf32> (as in tensor<?x768xf32, ["seq"]>), got none

// -----

func.func @too_few_names(%x: tensor<?x?xf32, ["n"]>) -> tensor<?x?xf32, ["n"]> {
  %y = graph.relu %x : (tensor<?x?xf32, ["n"]>) -> tensor<?x?xf32, ["n"]>
  func.return %y : tensor<?x?xf32, ["n"]>
}

// CHECK: expected a name for each dynamic dim of tensor<?x?xf32, ["n"]>

// -----

func.func @bad_expression(%x: tensor<?xf32, ["n +"]>) -> tensor<?xf32, ["n +"]> {
  %y = graph.relu %x : (tensor<?xf32, ["n +"]>) -> tensor<?xf32, ["n +"]>
  func.return %y : tensor<?xf32, ["n +"]>
}

// CHECK: dimension expression 'n +': expected more, got the end

// -----

func.func @constant_named(%x: tensor<?xf32, ["2 + 2"]>) -> tensor<?xf32, ["2 + 2"]> {
  %y = graph.relu %x : (tensor<?xf32, ["2 + 2"]>) -> tensor<?xf32, ["2 + 2"]>
  func.return %y : tensor<?xf32, ["2 + 2"]>
}

// CHECK: expected a symbolic expression for dynamic dim 0 of tensor<?xf32, ["2 + 2"]>, got the constant 4: write it as a static dim

// -----

// The result's expression must be the one the rule derives.
func.func @wrong_result(%a: tensor<?x4xf32, ["n"]>, %b: tensor<?x4xf32, ["n"]>) -> tensor<?x4xf32, ["n + n"]> {
  %c = graph.concat %a, %b {axis = 0} : (tensor<?x4xf32, ["n"]>, tensor<?x4xf32, ["n"]>) -> tensor<?x4xf32, ["n + 1"]>
  func.return %c : tensor<?x4xf32, ["n + 1"]>
}

// CHECK: expected tensor<?x4xf32, ["2 * n"]>, got tensor<?x4xf32, ["n + 1"]>

// -----

// A reshape keeps the element count.
func.func @reshape_count(%x: tensor<?x768xf32, ["n"]>) -> tensor<?x12x32xf32, ["n"]> {
  %y = graph.reshape %x : (tensor<?x768xf32, ["n"]>) -> tensor<?x12x32xf32, ["n"]>
  func.return %y : tensor<?x12x32xf32, ["n"]>
}

// CHECK: expected a shape of 768 * n elements, got {n}x12x32 (384 * n)

// -----

// Two different symbols may or may not be equal: no broadcast between them.
func.func @broadcast(%a: tensor<?xf32, ["n"]>, %b: tensor<?xf32, ["m"]>) -> tensor<?xf32, ["n"]> {
  %c = graph.add %a, %b : (tensor<?xf32, ["n"]>, tensor<?xf32, ["m"]>) -> tensor<?xf32, ["n"]>
  func.return %c : tensor<?xf32, ["n"]>
}

// CHECK: expected broadcast-compatible shapes, got {n} and {m}

// -----

// Channels and kernel sizes of a convolution are static.
func.func @conv_channels(%x: tensor<1x?x8x8xf32, ["c"]>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = graph.conv2d %x, %w {padding = [0, 0, 0, 0]} : (tensor<1x?x8x8xf32, ["c"]>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}

// CHECK: expected static channels and kernel sizes, got data 1x{c}x8x8 and weight 4x4x3x3

// -----

// A slice of a symbolic axis, or to a symbolic end, runs forward from a
// known start: a backward one would need the extent's value to resolve.
func.func @slice_step(%x: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]> {
  %y = graph.slice %x {starts = [0], ends = ["n"], steps = [-1]} : (tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
  func.return %y : tensor<?xf32, ["n"]>
}

// CHECK: expected a known start in [0, n) and step > 0 on axis 0 sliced symbolically, got 0 and -1

// -----

func.func @slice_start(%x: tensor<8xf32>) -> tensor<?xf32, ["m - 8"]> {
  %y = graph.slice %x {starts = [8], ends = ["m"], steps = [1]} : (tensor<8xf32>) -> tensor<?xf32, ["m - 8"]>
  func.return %y : tensor<?xf32, ["m - 8"]>
}

// CHECK: expected a known start in [0, 8) and step > 0 on axis 0 sliced symbolically, got 8 and 1

// -----

func.func @slice_empty(%x: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]> {
  %y = graph.slice %x {starts = [2], ends = [2], steps = [1]} : (tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
  func.return %y : tensor<?xf32, ["n"]>
}

// CHECK: expected an end past the start 2 on axis 0 (n), got 2

// -----

// A symbolic count of repeats is a size too: the result's expression is its product.
func.func @tile(%x: tensor<1x4xf32>) -> tensor<?x4xf32, ["b + 1"]> {
  %y = graph.tile %x {repeats = ["b", 1]} : (tensor<1x4xf32>) -> tensor<?x4xf32, ["b + 1"]>
  func.return %y : tensor<?x4xf32, ["b + 1"]>
}

// CHECK: expected tensor<?x4xf32, ["b"]>, got tensor<?x4xf32, ["b + 1"]>

// -----

func.func @slice_attr(%x: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]> {
  %y = graph.slice %x {starts = [0], ends = ["n +"], steps = [1]} : (tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
  func.return %y : tensor<?xf32, ["n"]>
}

// CHECK: dimension expression 'n +': expected more, got the end
