// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @factor_and_nparts(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "i" factor 4 nparts 2 -> "i.outer", "i.inner"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "factor_and_nparts"
// CHECK: Operation does not verify: expected exactly one of factor and nparts

// -----

func.func @neither_factor_nor_nparts(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "i" -> "i.outer", "i.inner"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "neither_factor_nor_nparts"
// CHECK: Operation does not verify: expected exactly one of factor and nparts

// -----

func.func @zero_factor(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "i" factor 0 -> "i.outer", "i.inner"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "zero_factor"
// CHECK: Operation does not verify: expected a positive split, got 0

// -----

func.func @negative_nparts(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "i" nparts -2 -> "i.outer", "i.inner"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "negative_nparts"
// CHECK: Operation does not verify: expected a positive split, got -2

// -----

func.func @same_split_names(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "i" factor 2 -> "x", "x"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "same_split_names"
// CHECK: Operation does not verify: expected distinct names for the outer and inner loops, got 'x' twice

// -----

func.func @fuse_one_loop(%A: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<8x4xf32> {
    %a = te.read %A[%i, %j] : tensor<8x4xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.fuse "C" ["i"] -> "i.fused"
  }
  func.return %C : tensor<8x4xf32>
}

// CHECK-LABEL: sym_name = "fuse_one_loop"
// CHECK: Operation does not verify: expected at least two loops to fuse, got 1

// -----

func.func @reorder_duplicates(%A: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<8x4xf32> {
    %a = te.read %A[%i, %j] : tensor<8x4xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.reorder "C" ["j", "i", "j"]
  }
  func.return %C : tensor<8x4xf32>
}

// CHECK-LABEL: sym_name = "reorder_duplicates"
// CHECK: Operation does not verify: expected distinct loops, got ['j', 'i', 'j']

// -----

func.func @pragma_float_value(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.pragma "C" "i" "auto_unroll_max_step" = 1.5 : f32
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "pragma_float_value"
// CHECK: Operation does not verify: expected an integer or string pragma value, got 1.500000e+00 : f32

// -----

func.func @pragma_array_value(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.pragma "C" "i" "unroll" = [1, 2]
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "pragma_array_value"
// CHECK: Operation does not verify: expected an integer or string pragma value, got [1 : i64, 2 : i64]

// -----

func.func @unknown_thread_tag(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.bind "C" "i" "threadIdx.w"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "unknown_thread_tag"
// CHECK: Operation does not verify: expected a thread axis (blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, vthread), got 'threadIdx.w'

// -----

func.func @cache_read_scope(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.cache_read "A" "texture" readers ["C"] -> "A.shared"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "cache_read_scope"
// CHECK: Operation does not verify: expected scope global, shared or local, got 'texture'

// -----

func.func @cache_write_scope(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.cache_write "C" "register" -> "C.register"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "cache_write_scope"
// CHECK: Operation does not verify: expected scope global, shared or local, got 'register'

// -----

func.func @cache_read_without_readers(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.cache_read "A" "local" readers [] -> "A.local"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "cache_read_without_readers"
// CHECK: Operation does not verify: expected at least one reader

// -----

func.func @primitive_outside_schedule(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.vectorize "C" "i"
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "primitive_outside_schedule"
// CHECK: Operation does not verify: 'te.vectorize' expects parent op 'te.schedule'

// -----

func.func @empty_stage(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.compute_inline ""
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "empty_stage"
// CHECK: Operation does not verify: expected non-empty stage and loop names

// -----

func.func @empty_loop(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "i" factor 2 -> "", "i.inner"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "empty_loop"
// CHECK: Operation does not verify: expected non-empty stage and loop names

// -----

func.func @empty_fused_name(%A: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<8x4xf32> {
    %a = te.read %A[%i, %j] : tensor<8x4xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.fuse "C" ["i", "j"] -> ""
  }
  func.return %C : tensor<8x4xf32>
}

// CHECK-LABEL: sym_name = "empty_fused_name"
// CHECK: Operation does not verify: expected non-empty stage and loop names

// -----

func.func @empty_reader(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.cache_read "A" "local" readers [""] -> "A.local"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "empty_reader"
// CHECK: Operation does not verify: expected non-empty stage and loop names

// -----

func.func @empty_target(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  te.schedule {
    te.compute_at "B" at "" "i"
  }
  func.return %C : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "empty_target"
// CHECK: Operation does not verify: expected non-empty stage and loop names

// -----

func.func @schedule_with_compute(%A: tensor<8xf32>) -> tensor<8xf32> {
  te.schedule {
    %C = te.compute "C" (%i) -> tensor<8xf32> {
      %a = te.read %A[%i] : tensor<8xf32>
      te.yield %a : f32
    }
  }
  func.return %A : tensor<8xf32>
}

// CHECK-LABEL: sym_name = "schedule_with_compute"
// CHECK: expected only schedule primitives in te.schedule, got te.compute
