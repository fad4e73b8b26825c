// MLIR sources are UTF-8: other bytes are an error that names the file and the byte, wherever they come from.
// RUN: not prism-opt %S/Inputs/latin1.mlir 2>&1 | filecheck %s --check-prefix=FILE
// RUN: not prism-opt - < %S/Inputs/latin1.mlir 2>&1 | filecheck %s --check-prefix=STDIN
// RUN: not prism-opt %s --verify-against=%S/Inputs/latin1.mlir 2>&1 | filecheck %s --check-prefix=AGAINST

// FILE: latin1.mlir: error: not UTF-8 text: byte 0xe9 at offset 17 (MLIR sources are UTF-8)
// STDIN: <stdin>: error: not UTF-8 text: byte 0xe9 at offset 17 (MLIR sources are UTF-8)
// AGAINST: latin1.mlir: error: prism-verify: not UTF-8 text: byte 0xe9 at offset 17 (MLIR sources are UTF-8)
// CHECK-NOT: Traceback
func.func @f() {
  return
}
