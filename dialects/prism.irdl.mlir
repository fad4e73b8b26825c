// The sGraph dialect: symbolic program families.
//
// prism.family  One fusible group of tensor ops whose execution parameters
//               (tile sizes, loop order, ...) are symbols. Operands are the
//               group's input tensors, results its output tensors. The single
//               region holds the payload (linalg/arith/math on tensors); its
//               block arguments stand for the operands, one for one, and it
//               ends in prism.yield. Attributes:
//                 kind     op kind, e.g. "gemm"
//                 symbols  parameter names, e.g. ["TM", "TN", "TK"]
//                 domain   the isl set of admissible parameter values (text)
//                 cost     the symbolic cost (text)
//                 stats    space size after each pruning stage
//               and, after prism-select, `choice`: a dictionary symbol -> value.
// prism.yield   Terminates a family body; its operands become the results.
irdl.dialect @prism {
  irdl.operation @family {
    %tensor_in = irdl.base "!builtin.tensor"
    %tensor_out = irdl.base "!builtin.tensor"
    %kind = irdl.base "#builtin.string"
    %symbols = irdl.base "#builtin.array"
    %domain = irdl.base "#builtin.string"
    %cost = irdl.base "#builtin.string"
    %stats = irdl.base "#builtin.dictionary"
    irdl.operands(inputs: variadic %tensor_in)
    irdl.results(outputs: variadic %tensor_out)
    irdl.attributes {
      "kind" = %kind,
      "symbols" = %symbols,
      "domain" = %domain,
      "cost" = %cost,
      "stats" = %stats
    }
    %body = irdl.region
    irdl.regions(body: %body)
  }
  irdl.operation @yield {
    %value = irdl.any
    irdl.operands(values: variadic %value)
  }
}
