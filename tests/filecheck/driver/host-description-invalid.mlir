// A host description that is not one stops the compiler before it reads the input, naming the file; nothing
// is written.
// RUN: env PRISM_HOST_DESCRIPTION=%S/Inputs/host-bad-width.json not prism-opt %s -p prism-lower-cpu -o %t.out 2>&1 | filecheck %s --check-prefix=WIDTH
// RUN: not test -e %t.out
// RUN: env PRISM_HOST_DESCRIPTION=%S/Inputs/host-missing-field.json not prism-opt %s -p prism-lower-cpu 2>&1 | filecheck %s --check-prefix=FIELDS
// RUN: env PRISM_HOST_DESCRIPTION=%S/Inputs/host-bad-bf16.json not prism-opt %s -p prism-lower-cpu 2>&1 | filecheck %s --check-prefix=BF16
// RUN: env PRISM_HOST_DESCRIPTION=%S/Inputs/host-bad-amx.json not prism-opt %s -p prism-lower-cpu 2>&1 | filecheck %s --check-prefix=AMX
// RUN: env PRISM_HOST_DESCRIPTION=%S/Inputs/host-bad-core.json not prism-opt %s -p prism-lower-cpu 2>&1 | filecheck %s --check-prefix=CORE
// RUN: env PRISM_HOST_DESCRIPTION=%S/Inputs/none.json not prism-opt %s --target=host -p prism-lift 2>&1 | filecheck %s --check-prefix=MISSING

// WIDTH: host-bad-width.json: error: the host description's vector_bits is 384, not 128, 256 or 512
// WIDTH-NOT: Traceback
// FIELDS: host-missing-field.json: error: not a version-1 host description: a JSON object of exactly 'version' (1), 'machine' (a string) and the integers 'cores', 'vector_bits', 'fma_bits', 'l1d_bytes', 'l1d_ways', 'l2_bytes', 'l3_bytes', and optionally 'bf16_dot', 'amx', 'core'
// BF16: host-bad-bf16.json: error: the host description's bf16_dot is 2, not 0 or 1
// AMX: host-bad-amx.json: error: the host description's amx is 2, not 0 or 1
// CORE: host-bad-core.json: error: the host description's core is 'zen9', not one of 'zen4', 'zen5', 'intel-avx512', 'avx2' (or '' for none)
// MISSING: none.json: error: cannot read the host description: [Errno 2] No such file or directory
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %c: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%c : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
