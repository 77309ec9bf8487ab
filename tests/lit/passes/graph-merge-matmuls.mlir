// RUN: ember-opt %s -p graph-merge-matmuls | filecheck %s
// RUN: ember-opt %s -p graph-merge-matmuls,graph-fold-constants | filecheck %s --check-prefix=FOLD
// RUN: ember-opt %s -p graph-merge-matmuls | ember-opt | filecheck %s

// Attention's projections: three matmuls of one input by known weights (here
// literals; the value's declared after the first matmul, as importers place
// them) become one matmul by the weights joined along N and a slice of its
// columns each; the bias add now reads a slice. A matmul of another input,
// one by an activation, one whose K differs and those by params with no bound
// values (text, as here) stay as they are; matmuls marked with a precision
// merge only with those marked alike, and keep the mark.

// CHECK-LABEL: func.func @main(
// CHECK:         %[[W:.*]] = graph.concat %wq, %wk, %wv {axis = 1} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x2xf32>) -> tensor<8x10xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.matmul %x, %[[W]] : (tensor<1x8x8xf32>, tensor<8x10xf32>) -> tensor<1x8x10xf32>
// CHECK-NEXT:    %[[Q:.*]] = graph.slice %[[Y]] {starts = [0, 0, 0], ends = [1, 8, 4], steps = [1, 1, 1]} : (tensor<1x8x10xf32>) -> tensor<1x8x4xf32>
// CHECK-NEXT:    %[[K:.*]] = graph.slice %[[Y]] {starts = [0, 0, 4], ends = [1, 8, 8], steps = [1, 1, 1]} : (tensor<1x8x10xf32>) -> tensor<1x8x4xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.slice %[[Y]] {starts = [0, 0, 8], ends = [1, 8, 10], steps = [1, 1, 1]} : (tensor<1x8x10xf32>) -> tensor<1x8x2xf32>
// CHECK:         graph.add %[[Q]], %bq
// CHECK:         graph.concat %wq, %wk {axis = 1}
// CHECK-NEXT:    graph.matmul %z, %{{.*}} {ember.precision = "float32"} : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
// CHECK:         graph.matmul %z, %wv
// CHECK:         graph.matmul %x, %zt
// CHECK:         graph.matmul %x4, %w4
// CHECK:         graph.matmul %x, %p1
// CHECK:         graph.matmul %x, %p2
// CHECK-NOT:     graph.matmul

// The joined literal folds into one.
// FOLD:          %[[W:.*]] = graph.constant dense<{{.*}}> : tensor<8x10xf32>
// FOLD:          graph.matmul %x, %[[W]] : (tensor<1x8x8xf32>, tensor<8x10xf32>) -> tensor<1x8x10xf32>
func.func @main(%x: tensor<1x8x8xf32>, %z: tensor<1x8x8xf32>, %x4: tensor<1x8x4xf32>) -> (tensor<1x8x4xf32>, tensor<1x8x4xf32>, tensor<1x8x2xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>, tensor<1x8x4xf32>, tensor<1x8x2xf32>) {
  %wq = graph.constant dense<0.5> : tensor<8x4xf32>
  %bq = graph.param "bq" : tensor<4xf32>
  %q = graph.matmul %x, %wq : (tensor<1x8x8xf32>, tensor<8x4xf32>) -> tensor<1x8x4xf32>
  %qb = graph.add %q, %bq : (tensor<1x8x4xf32>, tensor<4xf32>) -> tensor<1x8x4xf32>
  %wk = graph.constant dense<0.25> : tensor<8x4xf32>
  %k = graph.matmul %x, %wk : (tensor<1x8x8xf32>, tensor<8x4xf32>) -> tensor<1x8x4xf32>
  %wv = graph.constant dense<-1.0> : tensor<8x2xf32>
  %v = graph.matmul %x, %wv : (tensor<1x8x8xf32>, tensor<8x2xf32>) -> tensor<1x8x2xf32>
  %o = graph.matmul %z, %wq {ember.precision = "float32"} : (tensor<1x8x8xf32>, tensor<8x4xf32>) -> tensor<1x8x4xf32>
  %o2 = graph.matmul %z, %wk {ember.precision = "float32"} : (tensor<1x8x8xf32>, tensor<8x4xf32>) -> tensor<1x8x4xf32>
  %o3 = graph.matmul %z, %wv : (tensor<1x8x8xf32>, tensor<8x2xf32>) -> tensor<1x8x2xf32>
  %zt = graph.reshape %z {shape = [8, 8]} : (tensor<1x8x8xf32>) -> tensor<8x8xf32>
  %a = graph.matmul %x, %zt : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
  %w4 = graph.constant dense<2.0> : tensor<4x2xf32>
  %s = graph.matmul %x4, %w4 : (tensor<1x8x4xf32>, tensor<4x2xf32>) -> tensor<1x8x2xf32>
  %p1 = graph.param "p1" : tensor<8x2xf32>
  %b1 = graph.matmul %x, %p1 : (tensor<1x8x8xf32>, tensor<8x2xf32>) -> tensor<1x8x2xf32>
  %p2 = graph.param "p2" : tensor<8x2xf32>
  %b2 = graph.matmul %x, %p2 : (tensor<1x8x8xf32>, tensor<8x2xf32>) -> tensor<1x8x2xf32>
  func.return %qb, %k, %v, %o, %a, %s, %b1, %b2, %o2, %o3 : tensor<1x8x4xf32>, tensor<1x8x4xf32>, tensor<1x8x2xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>, tensor<1x8x4xf32>, tensor<1x8x2xf32>
}

// A weight the importer placed after both groups' first matmuls, shared by
// them, moves once, ahead of both joins that read it.
// CHECK-LABEL: func.func @shared(
// CHECK:         %w = graph.constant
// CHECK:         graph.concat %wa, %w {axis = 1}
// CHECK:         graph.concat %wb, %w {axis = 1}
func.func @shared(%x: tensor<2x8xf32>, %z: tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %wa = graph.constant dense<0.5> : tensor<8x4xf32>
  %wb = graph.constant dense<0.25> : tensor<8x4xf32>
  %m1 = graph.matmul %x, %wa : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %m3 = graph.matmul %z, %wb : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %w = graph.constant dense<2.0> : tensor<8x4xf32>
  %m2 = graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %m4 = graph.matmul %z, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  func.return %m1, %m2, %m3, %m4 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
