// RUN: ember-opt %s -p convert-te-to-loop --split-input-file --verify-diagnostics | filecheck %s

// An extern stage is opaque: no loop primitive, compute_at, compute_inline or
// cache stage applies to it, and what it reads stays whole, at the root.

func.func @split_extern() -> tensor<8xf32> {
  %B = te.extern "B" () : () -> tensor<8xf32> {
  ^bb0(%out: memref<8xf32>):
    loop.call_packed "my.fill"(%out) : memref<8xf32>
  }
  te.schedule {
    te.split "B" "i" factor 4 -> "i.outer", "i.inner"
  }
  func.return %B : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @split_extern: te.split: stage 'B' is an extern stage (te.extern): its loops are opaque to the schedule; it runs whole, at the root

// -----

func.func @inline_extern() -> tensor<8xf32> {
  %B = te.extern "B" () : () -> tensor<8xf32> {
  ^bb0(%out: memref<8xf32>):
    loop.call_packed "my.fill"(%out) : memref<8xf32>
  }
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %x = te.read %B[%i] : tensor<8xf32>
    te.yield %x : f32
  }
  te.schedule {
    te.compute_inline "B"
  }
  func.return %C : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @inline_extern: te.compute_inline: stage 'B' is an extern stage (te.extern): its loops are opaque to the schedule; it runs whole, at the root

// -----

func.func @producer_at_consumer(%A: tensor<8xf32>) -> tensor<8xf32> {
  %A1 = te.compute "A1" (%i) -> tensor<8xf32> {
    %x = te.read %A[%i] : tensor<8xf32>
    te.yield %x : f32
  }
  %B = te.extern "B" (%A1) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%in: memref<8xf32>, %out: memref<8xf32>):
    loop.call_packed "my.copy"(%in, %out) : memref<8xf32>, memref<8xf32>
  }
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %x = te.read %B[%i] : tensor<8xf32>
    %y = te.read %A1[%i] : tensor<8xf32>
    %z = arith.addf %x, %y : f32
    te.yield %z : f32
  }
  te.schedule {
    te.compute_at "A1" at "C" "i"
  }
  func.return %C : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @producer_at_consumer: te.compute_at: stage 'A1' is read by extern stage 'B', which needs it whole, at the root

// -----

func.func @cache_read_by_extern(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.extern "B" (%A) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%in: memref<8xf32>, %out: memref<8xf32>):
    loop.call_packed "my.copy"(%in, %out) : memref<8xf32>, memref<8xf32>
  }
  te.schedule {
    te.cache_read "A" "local" readers ["B"] -> "A.local"
  }
  func.return %B : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @cache_read_by_extern: te.cache_read: stage 'B' is an extern stage (te.extern); it reads its inputs whole and cannot read a cache instead
