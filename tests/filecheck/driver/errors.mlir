// RUN: not prism-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: not prism-opt %s -p prism-bogus 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not prism-opt %S/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=FILE

// Every failing chunk is reported with its own line, as mlir-opt does.
// CHECK: errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: custom op 'func.func' expected valid '@'-identifier for symbol name
func.func bad() {
  return
}

// -----

// CHECK: errors.mlir:[[# @LINE + 2]]:3: error: 'func.return' op has 0 operands, but enclosing function (@f) returns 1
func.func @f() -> i32 {
  return
}

// PASS: error: unknown pass 'prism-bogus'; run 'prism-opt --help' for the list of passes
// FILE: does-not-exist.mlir: error: cannot read input file '{{.*}}does-not-exist.mlir': No such file or directory
