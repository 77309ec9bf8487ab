// Plugin files that cannot be loaded, and bad options of a plugin's pass: one
// diagnostic line, exit status 1, never a traceback.

// RUN: not ember-opt %s --load-pass-plugin %S/no-such-plugin.py -p cse 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: ember-opt: error: cannot load pass plugin '{{.*}}no-such-plugin.py': no such file
// MISSING-NOT: Traceback

// RUN: printf 'def broken(:\n' > %t.syntax.py
// RUN: not ember-opt %s --load-pass-plugin %t.syntax.py -p cse 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX: ember-opt: error: {{.*}}.syntax.py:1:{{[0-9]+}}: syntax error:
// SYNTAX-NOT: Traceback

// RUN: printf 'import ember.passes\n\nraise RuntimeError("no GPU here")\n' > %t.raises.py
// RUN: not ember-opt %s --load-pass-plugin %t.raises.py -p cse 2>&1 | filecheck %s --check-prefix=RAISES
// RAISES: ember-opt: error: {{.*}}.raises.py:3: pass plugin failed while loading: RuntimeError: no GPU here
// RAISES-NOT: Traceback

// RUN: printf 'X = 1\n' > %t.empty.py
// RUN: not ember-opt %s --load-pass-plugin %t.empty.py -p cse 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY: ember-opt: error: pass plugin '{{.*}}.empty.py' registered no passes: call ember.passes.register_pass in it

// RUN: not ember-opt %s --load-pass-plugin %S/../../../examples/custom_pass/simplify_layout.py -p 'graph-simplify-layout{transposes=3}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: ember-opt: error:
// OPTION-SAME: bool

// RUN: not ember-opt %s -p graph-simplify-layout 2>&1 | filecheck %s --check-prefix=UNLOADED
// UNLOADED: ember-opt: error:
// UNLOADED-SAME: graph-simplify-layout

func.func @f() {
  func.return
}
