// RUN: ember-opt %s --split-input-file -p graph-fuse-attention | filecheck %s

// BERT's form: the scores divided by sqrt(d), the padding mask added (here on
// the left), the softmax along the keys, the values: one graph.attention.

// CHECK-LABEL: func.func @masked(
// CHECK-SAME:      %[[Q:.*]]: tensor<1x2x8x16xf32>, %[[K:.*]]: tensor<1x2x16x8xf32>, %[[V:.*]]: tensor<1x2x8x4xf32>, %[[M:.*]]: tensor<1x1x1x8xf32>)
// CHECK-NEXT:    graph.constant
// CHECK-NEXT:    %[[O:.*]] = graph.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 2.500000e-01 : f32} : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>, tensor<1x2x8x4xf32>, tensor<1x1x1x8xf32>) -> tensor<1x2x8x4xf32>
// CHECK-NEXT:    func.return %[[O]]
func.func @masked(%q: tensor<1x2x8x16xf32>, %kt: tensor<1x2x16x8xf32>, %v: tensor<1x2x8x4xf32>, %m: tensor<1x1x1x8xf32>) -> tensor<1x2x8x4xf32> {
  %c = graph.constant dense<4.0> : tensor<f32>
  %s = graph.matmul %q, %kt : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  %d = graph.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %a = graph.add %m, %d : (tensor<1x1x1x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = graph.softmax %a {axis = 3} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  func.return %o : tensor<1x2x8x4xf32>
}

// -----

// ViT's form: a scale by multiplication, no mask, a batch_matmul.

// CHECK-LABEL: func.func @scaled(
// CHECK-NEXT:    graph.constant
// CHECK-NEXT:    %[[O:.*]] = graph.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32} : (tensor<3x5x8xf32>, tensor<3x8x6xf32>, tensor<3x6x8xf32>) -> tensor<3x5x8xf32>
// CHECK-NEXT:    func.return %[[O]]
func.func @scaled(%q: tensor<3x5x8xf32>, %kt: tensor<3x8x6xf32>, %v: tensor<3x6x8xf32>) -> tensor<3x5x8xf32> {
  %c = graph.constant dense<0.125> : tensor<1xf32>
  %s = graph.batch_matmul %q, %kt : (tensor<3x5x8xf32>, tensor<3x8x6xf32>) -> tensor<3x5x6xf32>
  %d = graph.mul %c, %s : (tensor<1xf32>, tensor<3x5x6xf32>) -> tensor<3x5x6xf32>
  %p = graph.softmax %d {axis = -1} : (tensor<3x5x6xf32>) -> tensor<3x5x6xf32>
  %o = graph.batch_matmul %p, %v : (tensor<3x5x6xf32>, tensor<3x6x8xf32>) -> tensor<3x5x8xf32>
  func.return %o : tensor<3x5x8xf32>
}

// -----

// A GPT block's causal mask: a select by a boolean mask with a finite fill
// becomes the boolean mask and the fill; with -inf the fill is the default.

// CHECK-LABEL: func.func @causal(
// CHECK-SAME:      %[[Q:.*]]: tensor<2x6x8xf32>, %[[K:.*]]: tensor<2x8x6xf32>, %[[V:.*]]: tensor<2x6x8xf32>, %[[C:.*]]: tensor<1x6x6xi1>)
// CHECK:         graph.attention %[[Q]], %[[K]], %[[V]], %[[C]] {scale = 1.250000e-01 : f32, fill = -3.40282347e+38 : f32} : (tensor<2x6x8xf32>, tensor<2x8x6xf32>, tensor<2x6x8xf32>, tensor<1x6x6xi1>) -> tensor<2x6x8xf32>
// CHECK-NOT:     graph.where
func.func @causal(%q: tensor<2x6x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %c: tensor<1x6x6xi1>) -> tensor<2x6x8xf32> {
  %eight = graph.constant dense<8.0> : tensor<f32>
  %low = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %s = graph.matmul %q, %kt : (tensor<2x6x8xf32>, tensor<2x8x6xf32>) -> tensor<2x6x6xf32>
  %d = graph.div %s, %eight : (tensor<2x6x6xf32>, tensor<f32>) -> tensor<2x6x6xf32>
  %w = graph.where %c, %d, %low : (tensor<1x6x6xi1>, tensor<2x6x6xf32>, tensor<f32>) -> tensor<2x6x6xf32>
  %p = graph.softmax %w {axis = -1} : (tensor<2x6x6xf32>) -> tensor<2x6x6xf32>
  %o = graph.matmul %p, %v : (tensor<2x6x6xf32>, tensor<2x6x8xf32>) -> tensor<2x6x8xf32>
  func.return %o : tensor<2x6x8xf32>
}

// CHECK-LABEL: func.func @causal_inf(
// CHECK:         graph.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f32} : (tensor<6x8xf32>, tensor<8x6xf32>, tensor<6x8xf32>, tensor<6x6xi1>) -> tensor<6x8xf32>
func.func @causal_inf(%q: tensor<6x8xf32>, %kt: tensor<8x6xf32>, %v: tensor<6x8xf32>, %c: tensor<6x6xi1>) -> tensor<6x8xf32> {
  %inf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %s = graph.matmul %q, %kt : (tensor<6x8xf32>, tensor<8x6xf32>) -> tensor<6x6xf32>
  %w = graph.where %c, %s, %inf : (tensor<6x6xi1>, tensor<6x6xf32>, tensor<f32>) -> tensor<6x6xf32>
  %p = graph.softmax %w {axis = -1} : (tensor<6x6xf32>) -> tensor<6x6xf32>
  %o = graph.matmul %p, %v : (tensor<6x6xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  func.return %o : tensor<6x8xf32>
}

// -----

// torch's exported scaled_dot_product_attention: the probabilities' NaNs (a
// row masked whole) made 0 before the values' matmul.

// CHECK-LABEL: func.func @sdpa(
// CHECK:         graph.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f32, nan_to_zero = true} : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NOT:     graph.is_nan
func.func @sdpa(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %zero = graph.constant dense<0.0> : tensor<1xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %a = graph.add %s, %m : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %a {axis = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %n = graph.is_nan %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %z = graph.where %n, %zero, %p : (tensor<1x2x4x4xi1>, tensor<1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.matmul %z, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// Left alone: the probabilities are also a result; the softmax along another
// axis; keys broadcast over the query's batch; a scale that is a tensor.

// CHECK-LABEL: func.func @kept(
// CHECK-NOT:     graph.attention
// CHECK:         func.return
func.func @kept(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %s = graph.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = graph.softmax %s {axis = -1} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o, %p : tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// CHECK-LABEL: func.func @axis(
// CHECK-NOT:     graph.attention
// CHECK:         func.return
func.func @axis(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %p = graph.softmax %s {axis = 0} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %o = graph.matmul %p, %v : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %o : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @broadcast_keys(
// CHECK-NOT:     graph.attention
// CHECK:         func.return
func.func @broadcast_keys(%q: tensor<2x4x8xf32>, %kt: tensor<1x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<1x8x4xf32>) -> tensor<2x4x4xf32>
  %p = graph.softmax %s {axis = -1} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @tensor_scale(
// CHECK-NOT:     graph.attention
// CHECK:         func.return
func.func @tensor_scale(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x8xf32>, %c: tensor<4xf32>) -> tensor<4x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %d = graph.mul %s, %c : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %p = graph.softmax %d {axis = -1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %o = graph.matmul %p, %v : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %o : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @doubled(
// CHECK-NOT:     graph.attention
// CHECK:         func.return
func.func @doubled(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %a = graph.add %s, %s : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = graph.softmax %a {axis = -1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %o = graph.matmul %p, %v : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %o : tensor<4x8xf32>
}
