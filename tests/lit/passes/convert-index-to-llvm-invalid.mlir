// RUN: ember-opt %s --allow-unregistered-dialect --split-input-file --verify-diagnostics -p convert-index-to-llvm | filecheck %s

// An op of the index dialect the pass does not know is named.

func.func @unknown(%a: index) -> index {
  %0 = "index.frobnicate"(%a) : (index) -> index
  func.return %0 : index
}

// CHECK: convert-index-to-llvm: cannot lower 'index.frobnicate' in @unknown: unknown op of the index dialect

// -----

func.func @bad_predicate(%a: index) -> i1 {
  %0 = "index.cmp"(%a, %a) <{pred = #index<cmp_predicate lt>}> : (index, index) -> i1
  func.return %0 : i1
}

// CHECK: convert-index-to-llvm: cannot lower 'index.cmp' in @bad_predicate: expected a predicate among ['eq', 'ne', 'sge', 'sgt', 'sle', 'slt', 'uge', 'ugt', 'ule', 'ult'], got #index<cmp_predicate lt>

// -----

func.func @no_value() -> index {
  %0 = "index.constant"() : () -> index
  func.return %0 : index
}

// CHECK: convert-index-to-llvm: cannot lower 'index.constant' in @no_value: expected a 'value' property
