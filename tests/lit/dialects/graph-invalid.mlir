// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @case0() {
  %w = graph.param "" : tensor<4xf32>
  func.return
}

// CHECK: expected a non-empty param name, got ''

// -----

func.func @case1() {
  %c = "graph.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// CHECK: expected tensor<2xf32>, got tensor<3xf32>

// -----

func.func @case2() {
  %x = graph.param "x" : tensor<1x3x8x8xf32>
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %y = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return
}

// CHECK: expected tensor<1x16x8x8xf32>, got tensor<1x16x6x6xf32>

// -----

func.func @case3() {
  %x = graph.param "x" : tensor<1x6x8x8xf32>
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %y = graph.conv2d %x, %w {groups = 4} : (tensor<1x6x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return
}

// CHECK: expected input channels divisible by groups 4, got 6

// -----

func.func @case4() {
  %x = graph.param "x" : tensor<1x6x8x8xf32>
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %y = graph.conv2d %x, %w : (tensor<1x6x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return
}

// CHECK: expected weight input channels 6 (channels 6 / groups 1), got 3

// -----

func.func @case5() {
  %x = graph.param "x" : tensor<1x6x8x8xf32>
  %w = graph.param "w" : tensor<15x3x3x3xf32>
  %y = graph.conv2d %x, %w {groups = 2} : (tensor<1x6x8x8xf32>, tensor<15x3x3x3xf32>) -> tensor<1x15x6x6xf32>
  func.return
}

// CHECK: expected output channels divisible by groups 2, got 15

// -----

func.func @case6() {
  %x = graph.param "x" : tensor<1x3x8x8xf32>
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %b = graph.param "b" : tensor<8xf32>
  %y = graph.conv2d %x, %w, %b : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<8xf32>) -> tensor<1x16x6x6xf32>
  func.return
}

// CHECK: expected bias of shape 16, got 8

// -----

func.func @case7() {
  %x = graph.param "x" : tensor<1x3x8x8xf32>
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %y = graph.conv2d %x, %w {strides = [1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return
}

// CHECK: expected 2 values in 'strides', got 3

// -----

func.func @case8() {
  %x = graph.param "x" : tensor<1x3x8x8xf32>
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %y = graph.conv2d %x, %w {strides = [0, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return
}

// CHECK: expected positive 'strides', got [0, 1]

// -----

func.func @case9() {
  %x = graph.param "x" : tensor<1x3x8x8xf32>
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %y = graph.conv2d %x, %w {padding = [-1, 0, 0, 0]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return
}

// CHECK: expected non-negative 'padding', got [-1, 0, 0, 0]

// -----

func.func @case10() {
  %x = graph.param "x" : tensor<1x3x2x2xf32>
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %y = graph.conv2d %x, %w : (tensor<1x3x2x2xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x1x1xf32>
  func.return
}

// CHECK: expected a kernel 3x3 that fits the padded input 2x2, got an output of 0x0

// -----

func.func @case11() {
  %x = graph.param "x" : tensor<3x8x8xf32>
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %y = graph.conv2d %x, %w : (tensor<3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return
}

// CHECK: expected data (NCHW) of rank 4, got 3x8x8

// -----

func.func @case12() {
  %x = graph.param "x" : tensor<2x64xf32>
  %w = graph.param "w" : tensor<10x32xf32>
  %y = graph.dense %x, %w : (tensor<2x64xf32>, tensor<10x32xf32>) -> tensor<2x10xf32>
  func.return
}

// CHECK: expected weight with K = 64, got 10x32

// -----

func.func @case13() {
  %x = graph.param "x" : tensor<2x64xf32>
  %w = graph.param "w" : tensor<32x10xf32>
  %y = graph.matmul %x, %w : (tensor<2x64xf32>, tensor<32x10xf32>) -> tensor<2x10xf32>
  func.return
}

// CHECK: expected the contraction dims to match, got 2x64 and 32x10

// -----

func.func @case14() {
  %x = graph.param "x" : tensor<2x4x8xf32>
  %w = graph.param "w" : tensor<3x8x5xf32>
  %y = graph.batch_matmul %x, %w : (tensor<2x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x4x5xf32>
  func.return
}

// CHECK: expected equal batch sizes, got 2 and 3

// -----

func.func @case15() {
  %x = graph.param "x" : tensor<1x16x4x4xf32>
  %g = graph.param "g" : tensor<8xf32>
  %y = graph.batch_norm %x, %g, %g, %g, %g {epsilon = 1.0e-05} : (tensor<1x16x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x16x4x4xf32>
  func.return
}

// CHECK: expected gamma of shape 16, got 8

// -----

func.func @case16() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.param "y" : tensor<4x3xf32>
  %z = graph.add %x, %y : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return
}

// CHECK: expected broadcast-compatible shapes, got 2x3 and 4x3

// -----

func.func @case17() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.param "y" : tensor<3xf32>
  %z = graph.mul %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// CHECK: expected tensor<2x3xf32>, got tensor<3xf32>

// -----

func.func @case18() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.constant dense<1> : tensor<3xi64>
  %z = graph.sub %x, %y : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  func.return
}

// CHECK: expected operands of one element type, got f32, i64

// -----

func.func @case19() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf64>
  func.return
}

// CHECK: expected tensor<2x3xf32>, got tensor<2x3xf64>

// -----

func.func @case20() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.clip %x {min = 6.0, max = 0.0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// CHECK: expected min <= max, got min 6.0 and max 0.0

// -----

func.func @case21() {
  %x = graph.param "x" : tensor<1x8x4x4xf32>
  %y = graph.max_pool2d %x {kernel = [5, 5]} : (tensor<1x8x4x4xf32>) -> tensor<1x8x1x1xf32>
  func.return
}

// CHECK: expected a window 5x5 that fits the padded input 4x4, got an output of size 0 on axis 2

// -----

func.func @case22() {
  %x = graph.param "x" : tensor<1x8x4x4xf32>
  %y = "graph.max_pool2d"(%x) : (tensor<1x8x4x4xf32>) -> tensor<1x8x1x1xf32>
  func.return
}

// CHECK: property 'kernel' expected

// -----

func.func @case23() {
  %x = graph.param "x" : tensor<1x8x4x4xf32>
  %y = graph.avg_pool2d %x {kernel = [2, 2], strides = [2, 2]} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return
}

// CHECK: expected tensor<1x8x2x2xf32>, got tensor<1x8x4x4xf32>

// -----

func.func @case24() {
  %x = graph.param "x" : tensor<8x4x4xf32>
  %y = graph.global_avg_pool2d %x : (tensor<8x4x4xf32>) -> tensor<8x1x1xf32>
  func.return
}

// CHECK: expected data (NCHW) of rank 4, got 8x4x4

// -----

func.func @case25() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.softmax %x {axis = 2} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// CHECK: expected axis in [-2, 2), got 2

// -----

func.func @case26() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.reshape %x : (tensor<2x3xf32>) -> tensor<7xf32>
  func.return
}

// CHECK: expected a shape of 6 elements, got 7 (7)

// -----

func.func @case27() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.flatten %x {axis = 3} : (tensor<2x3xf32>) -> tensor<6x1xf32>
  func.return
}

// CHECK: expected axis in [-2, 2], got 3

// -----

func.func @case28() {
  %x = graph.param "x" : tensor<2x3x4xf32>
  %y = graph.transpose %x {perm = [0, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  func.return
}

// CHECK: expected a permutation of 0..2, got [0, 0, 1]

// -----

func.func @case29() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.param "y" : tensor<3x3xf32>
  %z = graph.concat %x, %y {axis = 1} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return
}

// CHECK: expected shapes equal except on axis 1, got 2x3 and 3x3

// -----

func.func @case30() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.pad %x {pads = [1, 1]} : (tensor<2x3xf32>) -> tensor<4x5xf32>
  func.return
}

// CHECK: expected 4 values in 'pads', got 2

// -----

func.func @case31() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.reduce_sum %x {axes = [1, -1]} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// CHECK: expected distinct axes, got [1, -1]

// -----

func.func @case32() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.reduce_mean %x {axes = [1]} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}

// CHECK: expected tensor<2xf32>, got tensor<2x1xf32>

// -----

func.func @case33() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = "graph.fused"(%x) <{name = "g"}> ({
  ^bb0(%a: tensor<3xf32>):
    "graph.yield"(%a) : (tensor<3xf32>) -> ()
  }) : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}

// CHECK: expected block arguments of types (tensor<2x3xf32>), got (tensor<3xf32>)

// -----

func.func @case34() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.fused "g" (%x) ({
  ^bb0(%a: tensor<2x3xf32>):
    %r = graph.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.yield %r : tensor<2x3xf32>
  }) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// CHECK: expected graph.yield of types (tensor<3x2xf32>), got (tensor<2x3xf32>)

// -----

func.func @case35() {
  %x = graph.param "x" : tensor<2x3xf32>
  %y = graph.fused "g" (%x) ({
  ^bb0(%a: tensor<2x3xf32>):
    %r = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.yield %r : tensor<2x3xf32>
  }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// CHECK: Operation using value defined out of its IsolatedFromAbove parent

// -----

func.func @case36() {
  %x = graph.param "x" : tensor<?x3xf32>
  func.return
}

// CHECK: expected a statically shaped tensor for the param, got tensor<?x3xf32>

// -----

func.func @case37(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.call_kernel @missing(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: expected @missing to be a func.func of the module, got nothing

// -----

llvm.func @not_a_function(!llvm.ptr)
func.func @case38(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.call_kernel @not_a_function(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: expected @not_a_function to be a func.func of the module, got llvm.func

// -----

func.func @case39(%x: tensor<1x16x8x8xf32>, %s: tensor<2x16x1x1xf32>) {
  %y = graph.prelu %x, %s : (tensor<1x16x8x8xf32>, tensor<2x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  func.return
}

// CHECK: expected a slope that broadcasts to 1x16x8x8, got 2x16x1x1

// -----

func.func @case40(%x: tensor<4xf32>) {
  %y = graph.leaky_relu %x {alpha = 1} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// CHECK: 1 : i64 should be of base attribute float


// -----

func.func @case41(%x: tensor<4xf32>) {
  %y = graph.selu %x : (tensor<4xf32>) -> tensor<8xf32>
  func.return
}

// CHECK: expected tensor<4xf32>, got tensor<8xf32>

// -----

func.func @case42(%x: tensor<2x10xf32>) {
  %y = graph.log_softmax %x {axis = 2} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  func.return
}

// CHECK: expected axis in [-2, 2), got 2

// -----

func.func private @k(%a: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
func.func @case43(%x: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]> {
  %y = graph.call_kernel @k(%x) {ember.variants = [{callee = @gone, size = "n", equals = 1 : i64}]} : (tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
  func.return %y : tensor<?xf32, ["n"]>
}

// CHECK: expected @gone to be a func.func of the module, got nothing

// -----

func.func private @k(%a: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
func.func @case44(%x: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]> {
  %y = graph.call_kernel @k(%x) {ember.variants = [{callee = @k, size = 1 : i64, equals = 1 : i64}]} : (tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
  func.return %y : tensor<?xf32, ["n"]>
}

// CHECK: expected ember.variants as [{callee = @f, size = "n", equals = 1}, ...], got {callee = @k, size = 1 : i64, equals = 1 : i64}

// -----

func.func private @k(%a: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
func.func @case45(%x: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]> {
  %y = graph.call_kernel @k(%x) {ember.variants = [{callee = @k, size = "n +", equals = 1 : i64}]} : (tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
  func.return %y : tensor<?xf32, ["n"]>
}

// CHECK: ember.variants: {{.*}}n +

// -----

func.func @case46(%x: tensor<1x64xf32>, %w: tensor<10x32xui8>, %s: tensor<10x2xf32>) {
  %y = graph.dense_dequant %x, %w, %s {bits = 3, group = 32} : (tensor<1x64xf32>, tensor<10x32xui8>, tensor<10x2xf32>) -> tensor<1x10xf32>
  func.return
}

// CHECK: expected bits 4 or 8, got 3

// -----

func.func @case47(%x: tensor<1x64xf32>, %w: tensor<10x32xui8>, %s: tensor<10x2xf32>) {
  %y = graph.dense_dequant %x, %w, %s {bits = 4, group = 24} : (tensor<1x64xf32>, tensor<10x32xui8>, tensor<10x2xf32>) -> tensor<1x10xf32>
  func.return
}

// CHECK: expected a group that divides K 64 (and is even for 4 bits), got 24

// -----

func.func @case48(%x: tensor<1x64xf32>, %w: tensor<10x64xui8>, %s: tensor<10x2xf32>) {
  %y = graph.dense_dequant %x, %w, %s {bits = 4, group = 32} : (tensor<1x64xf32>, tensor<10x64xui8>, tensor<10x2xf32>) -> tensor<1x10xf32>
  func.return
}

// CHECK: expected a weight (10, 32) for K 64 at 4 bits, got (10, 64)

// -----

func.func @case49(%x: tensor<1x64xf32>, %w: tensor<10x32xi8>, %s: tensor<10x2xf32>) {
  %y = graph.dense_dequant %x, %w, %s {bits = 4, group = 32} : (tensor<1x64xf32>, tensor<10x32xi8>, tensor<10x2xf32>) -> tensor<1x10xf32>
  func.return
}

// CHECK: expected a ui8 weight at 4 bits, got i8

// -----

func.func @case50(%x: tensor<1x64xf32>, %w: tensor<10x32xui8>, %s: tensor<10x4xf32>) {
  %y = graph.dense_dequant %x, %w, %s {bits = 4, group = 32} : (tensor<1x64xf32>, tensor<10x32xui8>, tensor<10x4xf32>) -> tensor<1x10xf32>
  func.return
}

// CHECK: expected a scale (10, 2), got (10, 4)

// -----

func.func @case51(%x: tensor<1x8x6x6xf32>, %w: tensor<16x8x3x3xi8>, %b: tensor<16xi32>, %s: tensor<16xf32>) {
  %y = graph.qconv2d %x, %w, %b, %s {x_zero = 0, y_zero = 0, clip = [0, 255]} : (tensor<1x8x6x6xf32>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x4x4xui8>
  func.return
}

// CHECK: expected ui8 or i8 data, an i8 weight, an i32 bias and an f32 scale, got f32, i8, i32, f32

// -----

func.func @case52(%x: tensor<1x8x6x6xui8>, %w: tensor<16x8x3x3xi8>, %b: tensor<16xi32>, %s: tensor<16xf32>) {
  %y = graph.qconv2d %x, %w, %b, %s {x_zero = 0, y_zero = 0, clip = [-1, 255]} : (tensor<1x8x6x6xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x4x4xui8>
  func.return
}

// CHECK: expected clip [lo, hi] within [0, 255], got [-1, 255]

// -----

func.func @case53(%x: tensor<1x8x6x6xui8>, %w: tensor<16x8x3x3xi8>, %b: tensor<16xi32>, %s: tensor<8xf32>) {
  %y = graph.qconv2d %x, %w, %b, %s {x_zero = 0, y_zero = 0, clip = [0, 255]} : (tensor<1x8x6x6xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<8xf32>) -> tensor<1x16x4x4xui8>
  func.return
}

// CHECK: expected a scale (16,), got (8,)

// -----

func.func @case54(%x: tensor<1x8x6x6xi8>, %w: tensor<16x8x3x3xi8>, %b: tensor<16xi32>, %s: tensor<16xf32>) {
  %y = graph.qconv2d %x, %w, %b, %s {x_zero = 200, y_zero = 0, clip = [0, 255]} : (tensor<1x8x6x6xi8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x4x4xui8>
  func.return
}

// CHECK: expected x_zero within [-128, 127], got 200

// -----

func.func @case55(%x: tensor<1x8x6x6xui8>, %w: tensor<16x8x3x3xi8>, %b: tensor<16xi32>, %s: tensor<16xf32>) {
  %y = graph.qconv2d %x, %w, %b, %s {x_zero = 0, y_zero = 0, clip = [0, 255]} : (tensor<1x8x6x6xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x4x4xi8>
  func.return
}

// CHECK: expected tensor<1x16x4x4xui8>, got tensor<1x16x4x4xi8>

// -----

func.func @case56(%x: tensor<4x64xui8>, %w: tensor<10x32xi8>, %b: tensor<10xi32>, %s: tensor<10xf32>) {
  %y = graph.qdense %x, %w, %b, %s {x_zero = 0, y_zero = 0, clip = [0, 255]} : (tensor<4x64xui8>, tensor<10x32xi8>, tensor<10xi32>, tensor<10xf32>) -> tensor<4x10xui8>
  func.return
}

// CHECK: expected weight with K = 64, got 10x32

// -----

func.func @case57(%x: tensor<4x64xui8>, %w: tensor<10x64xi8>, %b: tensor<10xf32>, %s: tensor<10xf32>) {
  %y = graph.qdense %x, %w, %b, %s {x_zero = 0, y_zero = 0, clip = [0, 255]} : (tensor<4x64xui8>, tensor<10x64xi8>, tensor<10xf32>, tensor<10xf32>) -> tensor<4x10xui8>
  func.return
}

// CHECK: expected ui8 or i8 data, an i8 weight, an i32 bias and an f32 scale, got ui8, i8, f32, f32

// -----

func.func @case58(%x: tensor<4x64xui8>, %w: tensor<10x64xi8>, %b: tensor<10xi32>, %s: tensor<10xf32>) {
  %y = graph.qdense %x, %w, %b, %s {x_zero = 0, y_zero = 300, clip = [0, 255]} : (tensor<4x64xui8>, tensor<10x64xi8>, tensor<10xi32>, tensor<10xf32>) -> tensor<4x10xui8>
  func.return
}

// CHECK: expected y_zero within [0, 255], got 300
