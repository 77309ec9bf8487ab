// RUN: rm -f %t.jsonl
// RUN: python %S/Inputs/make_record.py %s scale %t.jsonl 'te.schedule { te.split "B" "i" factor 4 -> "i.outer", "i.inner" }' 2e-3 'te.schedule { te.split "B" "i" factor -4 -> "i.outer", "i.inner" }' 1e-9
// RUN: ember-opt %s -p 'te-apply-records{records="%t.jsonl"}' 2>%t.err | filecheck %s
// RUN: filecheck %s --check-prefix=WARN < %t.err
// RUN: ember-opt %s -p 'te-apply-records{records=""}' | filecheck %s --check-prefix=NONE

// The fastest usable record of each te function on this machine replaces its
// schedule and marks it ember.tuned; a faster record that splits by a negative
// factor is skipped with a warning; a function without a record keeps its own.

// CHECK-LABEL: func.func @scale(
// CHECK-SAME:      attributes {ember.tuned}
// CHECK:         te.schedule {
// CHECK-NEXT:      te.split "B" "i" factor 4 -> "i.outer", "i.inner"
// CHECK-LABEL: func.func @other(
// CHECK-NOT:       ember.tuned
// CHECK:           te.split "B" "i" factor 2
// WARN: TuningRecordWarning: tuning record of workload {{[0-9a-f]+}} (1e-09 s) skipped: invalid schedule: {{.*}}expected a positive split, got -4
// NONE-NOT: ember.tuned
func.func @scale(%A: tensor<16xf32>) -> tensor<16xf32> {
  %B = te.compute "B" (%i) -> tensor<16xf32> {
    %a = te.read %A[%i] : tensor<16xf32>
    %b = arith.addf %a, %a : f32
    te.yield %b : f32
  }
  func.return %B : tensor<16xf32>
}
func.func @other(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    %b = arith.mulf %a, %a : f32
    te.yield %b : f32
  }
  te.schedule {
    te.split "B" "i" factor 2 -> "i.outer", "i.inner"
  }
  func.return %B : tensor<8xf32>
}
