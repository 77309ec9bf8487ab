// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every schedule op in its custom form survives printing and reparsing, from the
// custom and from the generic form.

// CHECK-LABEL: func.func @loops(
// CHECK:         te.compute "C"
// CHECK:         te.schedule {
// CHECK-NEXT:      te.split "C" "i" factor 32 -> "i.outer", "i.inner"
// CHECK-NEXT:      te.split "C" "j" nparts 4 -> "j.outer", "j.inner"
// CHECK-NEXT:      te.reorder "C" ["i.outer", "j.outer", "i.inner", "j.inner"]
// CHECK-NEXT:      te.fuse "C" ["i.outer", "j.outer"] -> "i.outer.j.outer.fused"
// CHECK-NEXT:      te.split "C" "k" factor 4 -> "k.o", "k.i"
// CHECK-NEXT:      te.unroll "C" "k.i"
// CHECK-NEXT:      te.vectorize "C" "j.inner"
// CHECK-NEXT:      te.parallel "C" "i.outer.j.outer.fused"
// CHECK-NEXT:      te.pragma "C" "i.inner" "auto_unroll_max_step" = 16 : i64
// CHECK-NEXT:      te.pragma "C" "k.o" "unroll_explicit" = "yes"
// CHECK-NEXT:      te.pragma "C" "k.o" "debug_skip_region"
// CHECK-NEXT:      te.bind "C" "i.inner" "threadIdx.x"
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// GENERIC-LABEL: "func.func"() <{sym_name = "loops"
// GENERIC:         "te.schedule"() ({
// GENERIC-NEXT:      "te.split"() <{stage = "C", axis = "i", factor = 32 : i64, outer = "i.outer", inner = "i.inner"}> : () -> ()
// GENERIC-NEXT:      "te.split"() <{stage = "C", axis = "j", nparts = 4 : i64, outer = "j.outer", inner = "j.inner"}> : () -> ()
// GENERIC-NEXT:      "te.reorder"() <{stage = "C", axes = ["i.outer", "j.outer", "i.inner", "j.inner"]}> : () -> ()
// GENERIC-NEXT:      "te.fuse"() <{stage = "C", axes = ["i.outer", "j.outer"], fused = "i.outer.j.outer.fused"}> : () -> ()
// GENERIC-NEXT:      "te.split"() <{stage = "C", axis = "k", factor = 4 : i64, outer = "k.o", inner = "k.i"}> : () -> ()
// GENERIC-NEXT:      "te.unroll"() <{stage = "C", axis = "k.i"}> : () -> ()
// GENERIC-NEXT:      "te.vectorize"() <{stage = "C", axis = "j.inner"}> : () -> ()
// GENERIC-NEXT:      "te.parallel"() <{stage = "C", axis = "i.outer.j.outer.fused"}> : () -> ()
// GENERIC-NEXT:      "te.pragma"() <{stage = "C", axis = "i.inner", key = "auto_unroll_max_step", value = 16 : i64}> : () -> ()
// GENERIC-NEXT:      "te.pragma"() <{stage = "C", axis = "k.o", key = "unroll_explicit", value = "yes"}> : () -> ()
// GENERIC-NEXT:      "te.pragma"() <{stage = "C", axis = "k.o", key = "debug_skip_region"}> : () -> ()
// GENERIC-NEXT:      "te.bind"() <{stage = "C", axis = "i.inner", thread = "threadIdx.x"}> : () -> ()
// GENERIC-NEXT:    }) : () -> ()
// GENERIC-NEXT:    "func.return"
func.func @loops(%A: tensor<64x16xf32>, %B: tensor<16x48xf32>) -> tensor<64x48xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 16) -> tensor<64x48xf32> {
    %a = te.read %A[%i, %k] : tensor<64x16xf32>
    %b = te.read %B[%k, %j] : tensor<16x48xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  te.schedule {
    te.split "C" "i" factor 32 -> "i.outer", "i.inner"
    te.split "C" "j" nparts 4 -> "j.outer", "j.inner"
    te.reorder "C" ["i.outer", "j.outer", "i.inner", "j.inner"]
    te.fuse "C" ["i.outer", "j.outer"] -> "i.outer.j.outer.fused"
    te.split "C" "k" factor 4 -> "k.o", "k.i"
    te.unroll "C" "k.i"
    te.vectorize "C" "j.inner"
    te.parallel "C" "i.outer.j.outer.fused"
    te.pragma "C" "i.inner" "auto_unroll_max_step" = 16
    te.pragma "C" "k.o" "unroll_explicit" = "yes"
    te.pragma "C" "k.o" "debug_skip_region"
    te.bind "C" "i.inner" "threadIdx.x"
  }
  func.return %C : tensor<64x48xf32>
}

// Stage primitives; names are any non-empty string, spaces and quotes included.
// CHECK-LABEL: func.func @stages(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.cache_read "A" "local" readers ["B", "D"] -> "A.local"
// CHECK-NEXT:      te.cache_write "D" "global" -> "D.global"
// CHECK-NEXT:      te.compute_at "B" at "D" "i"
// CHECK-NEXT:      te.compute_root "B"
// CHECK-NEXT:      te.compute_inline "B"
// CHECK-NEXT:      te.bind "D" "i" "blockIdx.y"
// CHECK-NEXT:      te.vectorize "my stage" "axis \220\22"
// CHECK-NEXT:    } {ember.tag = "s"}

// GENERIC-LABEL: "func.func"() <{sym_name = "stages"
// GENERIC:         "te.schedule"() ({
// GENERIC-NEXT:      "te.cache_read"() <{stage = "A", scope = "local", readers = ["B", "D"], result = "A.local"}> : () -> ()
// GENERIC-NEXT:      "te.cache_write"() <{stage = "D", scope = "global", result = "D.global"}> : () -> ()
// GENERIC-NEXT:      "te.compute_at"() <{stage = "B", target = "D", axis = "i"}> : () -> ()
// GENERIC-NEXT:      "te.compute_root"() <{stage = "B"}> : () -> ()
// GENERIC-NEXT:      "te.compute_inline"() <{stage = "B"}> : () -> ()
// GENERIC-NEXT:      "te.bind"() <{stage = "D", axis = "i", thread = "blockIdx.y"}> : () -> ()
// GENERIC-NEXT:      "te.vectorize"() <{stage = "my stage", axis = "axis \220\22"}> : () -> ()
// GENERIC-NEXT:    }) {ember.tag = "s"} : () -> ()
func.func @stages(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    %b = te.read %B[%i] : tensor<8xf32>
    %s = arith.addf %a, %b : f32
    te.yield %s : f32
  }
  te.schedule {
    te.cache_read "A" "local" readers ["B", "D"] -> "A.local"
    te.cache_write "D" "global" -> "D.global"
    te.compute_at "B" at "D" "i"
    te.compute_root "B"
    te.compute_inline "B"
    te.bind "D" "i" "blockIdx.y"
    te.vectorize "my stage" "axis \"0\""
  } {ember.tag = "s"}
  func.return %D : tensor<8xf32>
}

// An empty schedule is a schedule that changes nothing.
// CHECK-LABEL: func.func @empty(
// CHECK:         te.schedule {
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "empty"
// GENERIC:         "te.schedule"() ({
// GENERIC-NEXT:    ^bb0:
// GENERIC-NEXT:    }) : () -> ()
func.func @empty(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
  }
  func.return %B : tensor<8xf32>
}
