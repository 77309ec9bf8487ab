// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// CHECK-LABEL: func.func @math(
// CHECK-SAME:      %[[X:.*]]: tensor<3x4xf32>)
// CHECK:         %[[S:.*]] = graph.sin %[[X]] : (tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.asinh %[[S]] : (tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.round %[[A]] : (tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.thresholded_relu %[[R]] {alpha = 2.000000e+00 : f32} : (tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[K:.*]] = graph.shrink %[[T]] {bias = 1.000000e+00 : f32, lambd = 1.500000e+00 : f32} : (tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.celu %[[K]] : (tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %{{.*}} = graph.is_inf %[[C]] {detect_negative = false} : (tensor<3x4xf32>) -> tensor<3x4xi1>
// CHECK-NEXT:    %{{.*}} = graph.is_nan %[[C]] : (tensor<3x4xf32>) -> tensor<3x4xi1>
func.func @math(%x: tensor<3x4xf32>) -> (tensor<3x4xi1>, tensor<3x4xi1>) {
  %0 = graph.sin %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = graph.asinh %0 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %2 = graph.round %1 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %3 = graph.thresholded_relu %2 {alpha = 2.0 : f32} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %4 = graph.shrink %3 {bias = 1.0 : f32, lambd = 1.5 : f32} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %5 = graph.celu %4 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %6 = graph.is_inf %5 {detect_negative = false} : (tensor<3x4xf32>) -> tensor<3x4xi1>
  %7 = graph.is_nan %5 : (tensor<3x4xf32>) -> tensor<3x4xi1>
  func.return %6, %7 : tensor<3x4xi1>, tensor<3x4xi1>
}

// CHECK-LABEL: func.func @unary(
// CHECK-SAME:      %[[X:.*]]: tensor<2xf64>)
// CHECK:         %[[V0:.*]] = graph.cos %[[X]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V1:.*]] = graph.tan %[[V0]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V2:.*]] = graph.asin %[[V1]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V3:.*]] = graph.acos %[[V2]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V4:.*]] = graph.atan %[[V3]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V5:.*]] = graph.sinh %[[V4]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V6:.*]] = graph.cosh %[[V5]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V7:.*]] = graph.acosh %[[V6]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V8:.*]] = graph.atanh %[[V7]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V9:.*]] = graph.floor %[[V8]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V10:.*]] = graph.ceil %[[V9]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V11:.*]] = graph.reciprocal %[[V10]] : (tensor<2xf64>) -> tensor<2xf64>
// CHECK-NEXT:    %[[V12:.*]] = graph.softsign %[[V11]] : (tensor<2xf64>) -> tensor<2xf64>
func.func @unary(%x: tensor<2xf64>) -> tensor<2xf64> {
  %0 = graph.cos %x : (tensor<2xf64>) -> tensor<2xf64>
  %1 = graph.tan %0 : (tensor<2xf64>) -> tensor<2xf64>
  %2 = graph.asin %1 : (tensor<2xf64>) -> tensor<2xf64>
  %3 = graph.acos %2 : (tensor<2xf64>) -> tensor<2xf64>
  %4 = graph.atan %3 : (tensor<2xf64>) -> tensor<2xf64>
  %5 = graph.sinh %4 : (tensor<2xf64>) -> tensor<2xf64>
  %6 = graph.cosh %5 : (tensor<2xf64>) -> tensor<2xf64>
  %7 = graph.acosh %6 : (tensor<2xf64>) -> tensor<2xf64>
  %8 = graph.atanh %7 : (tensor<2xf64>) -> tensor<2xf64>
  %9 = graph.floor %8 : (tensor<2xf64>) -> tensor<2xf64>
  %10 = graph.ceil %9 : (tensor<2xf64>) -> tensor<2xf64>
  %11 = graph.reciprocal %10 : (tensor<2xf64>) -> tensor<2xf64>
  %12 = graph.softsign %11 : (tensor<2xf64>) -> tensor<2xf64>
  func.return %12 : tensor<2xf64>
}
