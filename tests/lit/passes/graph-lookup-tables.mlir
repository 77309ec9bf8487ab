// RUN: ember-opt %s -p graph-lookup-tables | filecheck %s

// A byte tensor dequantized, through an erf, quantized again: 256 inputs,
// one table of the 256 answers, gathered at the bytes.
// CHECK-LABEL: func.func @erf
// CHECK:         %[[T:.*]] = graph.constant dense<"0x{{[0-9A-F]+}}"> : tensor<256xui8>
// CHECK-NEXT:    %[[Y:.*]] = graph.gather %[[T]], %q {axis = 0} : (tensor<256xui8>, tensor<2x8xui8>) -> tensor<2x8xui8>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x8xui8>
func.func @erf(%q: tensor<2x8xui8>) -> tensor<2x8xui8> {
  %z = graph.constant dense<128> : tensor<i32>
  %s = graph.constant dense<0.05> : tensor<f32>
  %zf = graph.constant dense<128.0> : tensor<f32>
  %i = graph.cast %q : (tensor<2x8xui8>) -> tensor<2x8xi32>
  %c = graph.sub %i, %z : (tensor<2x8xi32>, tensor<i32>) -> tensor<2x8xi32>
  %f = graph.cast %c : (tensor<2x8xi32>) -> tensor<2x8xf32>
  %x = graph.mul %f, %s : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = graph.erf %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %d = graph.div %e, %s : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %r = graph.round %d : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %a = graph.add %r, %zf : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %k = graph.clip %a {min = 0.0 : f32, max = 255.0 : f32} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = graph.cast %k : (tensor<2x8xf32>) -> tensor<2x8xui8>
  func.return %y : tensor<2x8xui8>
}

// Two region values of one shape combine (x * sigmoid(x)); a reshape keeps the
// order, so the table is gathered at the bytes reshaped; an int8's negative
// values index from the table's end.
// CHECK-LABEL: func.func @silu
// CHECK:         %[[T:.*]] = graph.constant dense<{{.*}}> : tensor<256xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %q : (tensor<2x8xi8>) -> tensor<16xi8>
// CHECK-NEXT:    %[[Y:.*]] = graph.gather %[[T]], %[[R]] {axis = 0} : (tensor<256xf32>, tensor<16xi8>) -> tensor<16xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<16xf32>
func.func @silu(%q: tensor<2x8xi8>) -> tensor<16xf32> {
  %s = graph.constant dense<0.1> : tensor<1x1xf32>
  %f = graph.cast %q : (tensor<2x8xi8>) -> tensor<2x8xf32>
  %x = graph.mul %f, %s : (tensor<2x8xf32>, tensor<1x1xf32>) -> tensor<2x8xf32>
  %g = graph.sigmoid %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %m = graph.mul %x, %g : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = graph.reshape %m : (tensor<2x8xf32>) -> tensor<16xf32>
  func.return %y : tensor<16xf32>
}

// Divisions, casts and clips alone are cheaper computed than looked up; a
// second varying input, or a constant of more than one element, ends the
// chain.
// CHECK-LABEL: func.func @cheap
// CHECK-NOT:     graph.gather
// CHECK:         graph.div
// CHECK:         graph.exp
// CHECK:         graph.exp
// CHECK-NOT:     graph.gather
// CHECK:         func.return
func.func @cheap(%q: tensor<4xui8>, %p: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %s = graph.constant dense<3.0> : tensor<f32>
  %v = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %f = graph.cast %q : (tensor<4xui8>) -> tensor<4xf32>
  %d = graph.div %f, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %a = graph.add %f, %p : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = graph.exp %a : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.mul %f, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %x = graph.exp %b : (tensor<4xf32>) -> tensor<4xf32>
  func.return %d, %e, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
