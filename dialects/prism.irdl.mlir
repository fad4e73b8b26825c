// The sGraph dialect: symbolic program families.
//
// prism.family: one fusible group of tensor ops whose execution parameters
// (tile sizes, warp tiles, ...) are symbols.
//   Operands are the group's input tensors and results its output tensors.
//   `body` names a private func.func that holds the payload (linalg, arith and
//   math on tensors); its arguments stand for the operands one for one, and its
//   return values are the family's results. (IRDL cannot declare a terminator
//   trait, so a region ending in a prism-defined yield would not verify; an
//   outlined payload keeps the IR standard and lets mlir-opt run on it.)
//   Attributes:
//     kind     the op kind, e.g. "gemm" or "batch_gemm"
//     symbols  the parameter names, e.g. ["BM", "BN", "BK", "WM", "WN"]
//     domain   the isl set of admissible parameter values, as text
//     cost     the symbolic cost, as text
//     stats    the space size after each pruning stage
//   and, after prism-select, `choice`: a dictionary symbol -> value.
//
// Example:
//   %0 = "prism.family"(%a, %b, %c) {body = @mm_family0, kind = "gemm",
//          symbols = ["BM", "BN", "BK"], domain = "[M, N, K] -> { ... }",
//          cost = "...", stats = {lifted = 1 : i64}}
//        : (tensor<64x32xf32>, tensor<32x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
irdl.dialect @prism {
  irdl.operation @family {
    %tensor_in = irdl.base "!builtin.tensor"
    %tensor_out = irdl.base "!builtin.tensor"
    %body = irdl.base "#builtin.symbol_ref"
    %kind = irdl.base "#builtin.string"
    %symbols = irdl.base "#builtin.array"
    %domain = irdl.base "#builtin.string"
    %cost = irdl.base "#builtin.string"
    %stats = irdl.base "#builtin.dictionary"
    irdl.operands(inputs: variadic %tensor_in)
    irdl.results(outputs: variadic %tensor_out)
    irdl.attributes {
      "body" = %body,
      "kind" = %kind,
      "symbols" = %symbols,
      "domain" = %domain,
      "cost" = %cost,
      "stats" = %stats
    }
  }
}
