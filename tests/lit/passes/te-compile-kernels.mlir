// RUN: ember-opt %s -p 'convert-graph-to-te,te-compile-kernels' | filecheck %s

// Each kernel is compiled apart to an object, named in ember.objects by its
// key in the kernel cache; the module keeps a declaration with the kernel's
// loop signature (operands, then its result), and the call.

// CHECK:       builtin.module attributes {ember.objects = {[[K:ember_relu_[0-9a-f]+]] = "{{[0-9a-f]+}}"}} {
// CHECK:         func.func private @[[K]](memref<4xf32>, memref<4xf32>) -> ()
// CHECK-LABEL:   func.func @main(
// CHECK:           graph.call_kernel @[[K]](
// CHECK-NOT:     te.compute
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
