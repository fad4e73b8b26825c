// The sGraph dialect: symbolic program families.
//
// prism.family: the symbolic contract of one program family.
//   A family is one fusible group of tensor ops whose execution parameters
//   (tile sizes, warp tiles, ...) are symbols. prism-lift outlines the group
//   into a private function (the payload: linalg, arith and math on tensors)
//   and replaces it by a plain func.call; prism.family is the first op of that
//   function and carries the family's contract:
//     kind     the op kind, e.g. "gemm" or "batch_gemm"
//     symbols  the parameter names, e.g. ["BM", "BN", "BK", "WM", "WN", "MMA"]
//     domain   the isl set of admissible parameter values, as text: over
//              the log2 of each symbol, then any 0/1 factor variable that
//              multiplies some of them (the host's m3 and t3: RM and TM times 3)
//     cost     the symbolic cost, as text
//     stats    the space size after each pruning stage
//   and, after prism-select, `choice`: a dictionary symbol -> value.
//   (IRDL binds one type to each constraint variable, so a variadic operand
//   list could only hold tensors of a single type; the outlined payload keeps
//   the data flow in standard, typed func.call ops that every tool reads.)
//
// Example:
//   %0 = call @mm_family0(%a, %b, %c) : (...) -> tensor<64x16xf32>
//   func.func private @mm_family0(%a: ..., %b: ..., %c: ...) -> tensor<64x16xf32>
//       attributes {prism.family_body} {
//     "prism.family"() {kind = "gemm", symbols = ["TM", ...],
//                       domain = "[LB, LM, LN, LK] -> { ... }", cost = "",
//                       stats = {space = 5880 : i64}} : () -> ()
//     %0 = linalg.matmul ins(%a, %b : ...) outs(%c : ...) -> tensor<64x16xf32>
//     return %0 : tensor<64x16xf32>
//   }
irdl.dialect @prism {
  irdl.operation @family {
    %kind = irdl.base "#builtin.string"
    %symbols = irdl.base "#builtin.array"
    %domain = irdl.base "#builtin.string"
    %cost = irdl.base "#builtin.string"
    %stats = irdl.base "#builtin.dictionary"
    irdl.attributes {
      "kind" = %kind,
      "symbols" = %symbols,
      "domain" = %domain,
      "cost" = %cost,
      "stats" = %stats
    }
  }
}
