// A classifier head as ONNX exporters write it: a flatten the reshape after it
// makes redundant, and a transpose pair around the dense layer that cancels.
func.func @main(%x: tensor<1x64x1x1xf32>, %w: tensor<10x64xf32>) -> tensor<1x10xf32> {
  %f = graph.flatten %x {axis = 1} : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
  %r = graph.reshape %f : (tensor<1x64xf32>) -> tensor<64x1xf32>
  %t = graph.transpose %r {perm = [1, 0]} : (tensor<64x1xf32>) -> tensor<1x64xf32>
  %wt = graph.transpose %w {perm = [1, 0]} : (tensor<10x64xf32>) -> tensor<64x10xf32>
  %wtt = graph.transpose %wt {perm = [1, 0]} : (tensor<64x10xf32>) -> tensor<10x64xf32>
  %y = graph.dense %t, %wtt : (tensor<1x64xf32>, tensor<10x64xf32>) -> tensor<1x10xf32>
  func.return %y : tensor<1x10xf32>
}
