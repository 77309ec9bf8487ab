// RUN: ember-opt %s -p convert-te-to-loop --split-input-file --verify-diagnostics | filecheck %s

// Reads that bound inference proves out of range are refused in any mode.

func.func @shift(%A: tensor<1024xf32> {ember.name = "A"}) -> tensor<1024xf32> {
  %C = te.compute "C" (%i) -> tensor<1024xf32> {
    %c1 = arith.constant 1 : index
    %j = arith.addi %i, %c1 : index
    %x = te.read %A[%j] : tensor<1024xf32>
    te.yield %x : f32
  }
  func.return %C : tensor<1024xf32>
}

// CHECK: convert-te-to-loop: @shift: te.read of 'A' index 0 ranges over [1, 1024], outside [0, 1023] (in compute 'C')

// -----

func.func @reduction(%A: tensor<8x16xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 16) -> tensor<8xf32> {
    %c2 = arith.constant 2 : index
    %kk = arith.muli %k, %c2 : index
    %x = te.read %A[%i, %kk] : tensor<8x16xf32>
    te.yield %x : f32
  }
  func.return %C : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @reduction: te.read of 'A' index 1 ranges over [0, 30], outside [0, 15] (in compute 'C')
