// RUN: ember-opt %s -p 'te-pragma{stage=C axis=i key=auto_unroll_max_step value=16}' | filecheck %s
// RUN: ember-opt %s -p 'te-pragma{stage=C axis=i key=auto_unroll_max_step value=16},convert-te-to-loop' | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s -p 'te-pragma{stage=C axis=i key=auto_unroll_max_step value=24},convert-te-to-loop' | filecheck %s --check-prefix=LOOP24
// RUN: ember-opt %s -p 'te-pragma{stage=C axis=j key=debug_skip_region}' | filecheck %s --check-prefix=NOVALUE
// RUN: ember-opt %s -p 'te-pragma{stage=C axis=j key=debug_skip_region},convert-te-to-loop' | filecheck %s --check-prefix=NOVALUE-LOOP

// te-pragma attaches a key (and value) to a loop, which becomes its
// `ember.pragma.<key>` attribute. auto_unroll_max_step = n also unrolls every
// loop inside it whose nest (itself and the loops inside it) runs at most n
// iterations: here k (4), and with n = 24 also j (6 * 4).

// CHECK-LABEL: func.func @mm(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.pragma "C" "i" "auto_unroll_max_step" = 16 : i64
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @mm(
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP-DAG:     %[[C6:.*]] = arith.constant 6 : index
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP:         loop.for %{{.*}} = %{{.*}} to %[[C8]] step %{{.*}} {
// LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C6]] step %{{.*}} {
// LOOP-NEXT:        memref.store
// LOOP-NEXT:        loop.for %{{.*}} = %{{.*}} to %[[C4]] step %{{.*}} unrolled {
// LOOP:             }
// LOOP-NEXT:      }
// LOOP-NEXT:    } {ember.pragma.auto_unroll_max_step = 16 : i64}
// LOOP-NEXT:    func.return

// LOOP24-LABEL: func.func @mm(
// LOOP24:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP24-NEXT:      loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} unrolled {
// LOOP24-NEXT:        memref.store
// LOOP24-NEXT:        loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} unrolled {
// LOOP24:         } {ember.pragma.auto_unroll_max_step = 24 : i64}

// A pragma without a value is recorded as an empty string; it changes no kind.
// NOVALUE-LABEL: func.func @mm(
// NOVALUE:         te.pragma "C" "j" "debug_skip_region"
// NOVALUE-NEXT:    }

// NOVALUE-LOOP-LABEL: func.func @mm(
// NOVALUE-LOOP-NOT:     unrolled
// NOVALUE-LOOP:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// NOVALUE-LOOP-NOT:     unrolled
// NOVALUE-LOOP:         } {ember.pragma.debug_skip_region = ""}
// NOVALUE-LOOP-NEXT:  }
// NOVALUE-LOOP-NEXT:  func.return
func.func @mm(%A: tensor<8x4xf32>, %B: tensor<4x6xf32>) -> tensor<8x6xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 4) -> tensor<8x6xf32> {
    %a = te.read %A[%i, %k] : tensor<8x4xf32>
    %b = te.read %B[%k, %j] : tensor<4x6xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  func.return %C : tensor<8x6xf32>
}
