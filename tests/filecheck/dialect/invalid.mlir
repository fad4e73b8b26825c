// RUN: not prism-opt %s --split-input-file 2>&1 | filecheck %s

// The dialect's verifier checks attribute kinds.
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: expected base attribute 'builtin.string' but got 'builtin.integer'
  "prism.family"() {kind = 3, symbols = [], domain = "", cost = "", stats = {}} : () -> ()

// -----

// And required attributes.
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'prism.family' op attribute "domain" is expected but not provided
  "prism.family"() {kind = "gemm", symbols = [], cost = "", stats = {}} : () -> ()
