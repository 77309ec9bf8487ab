// RUN: ember-opt %s --verify-diagnostics -p convert-cf-to-llvm | filecheck %s

// llvm.switch has no block operands, so neither may the cf.switch it replaces.

func.func @switch_with_operands(%k: i32, %x: f32) {
  cf.switch %k : i32, [
    default: ^done(%x : f32),
    1: ^done(%x : f32)
  ]
^done(%y: f32):
  func.return
}

// CHECK: convert-cf-to-llvm: cannot lower 'cf.switch' in @switch_with_operands: expected no block operands (llvm.switch has none)
