// Options are checked when the pipeline is built, before anything runs; each error names the option and
// its valid values, and the pass name is prefixed once.
// RUN: not prism-opt %s -p 'prism-select{measure=-1}' 2>&1 | filecheck %s --check-prefix=MEASURE
// RUN: not prism-opt %s -p 'prism-select{measure=100000000000000000000}' 2>&1 | filecheck %s --check-prefix=HUGE
// RUN: not prism-opt %s -p 'prism-select{measure=1000}' 2>&1 | filecheck %s --check-prefix=MANY
// RUN: not prism-opt %s -p 'prism-select{assume=-5}' 2>&1 | filecheck %s --check-prefix=ASSUME
// RUN: not prism-opt %s -p 'prism-select{assume=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not prism-opt %s -p 'prism-verify{trials=-1 budget_ms=-1}' 2>&1 | filecheck %s --check-prefix=VERIFY
// RUN: not prism-opt %s -p 'prism-optimize{target=h200}{target=host}' 2>&1 | filecheck %s --check-prefix=BRACES
// RUN: not prism-opt %s -p 'prism-optimize{target=h200}' --target=host --emit=report 2>&1 | filecheck %s --check-prefix=CONFLICT
// RUN: not prism-opt %s --target=host --emit=ptx 2>&1 | filecheck %s --check-prefix=PTX
// RUN: not prism-opt %s --print-ir-after=cpu-tiling -p prism-lower-cpu 2>&1 | filecheck %s --check-prefix=PRINT

// MEASURE: error: prism-select: option 'measure' must be in [0, 64], got -1
// HUGE: error: option 'measure' of 'prism-select' expects int, got '100000000000000000000'
// MANY: error: prism-select: option 'measure' must be in [0, 64], got 1000
// ASSUME: error: prism-select: option 'assume' must be in [1, 1099511627776], got -5
// ZERO: error: prism-select: option 'assume' must be in [1, 1099511627776], got 0
// VERIFY: error: prism-verify: option 'budget_ms' must be in [1, 600000], got -1
// BRACES: error: malformed options of 'prism-optimize' in 'prism-optimize{target=h200}{target=host}'; expected prism-optimize{key=value ...}
// CONFLICT: error: prism-explore has target=h200 but the output is for --target=host; set --target=h200, or drop the pass option
// The refusal comes before the pipeline runs: prism-explore would remark on this function.
// PTX-NOT: remark
// PTX: error: --emit=ptx needs a target that lowers to PTX; target 'host' lowers to llvm
// PTX-NOT: remark
// PRINT: error: --print-ir-after=cpu-tiling: no pass or code-generator stage of that name; see prism-opt --help
func.func @gemm(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %t = linalg.transpose ins(%a : tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) permutation = [1, 0]
  %r = linalg.matmul ins(%t, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
