// SwiGLU with the gate and up projections fused into one GEMM over the
// concatenated weights [Wg | Wu], sliced apart before the gate; same
// signature and results as ../swiglu.mlir.
#id = affine_map<(i, j) -> (i, j)>
func.func @swiglu(%x: tensor<16x1024xf32>, %wg: tensor<1024x2816xf32>, %wu: tensor<1024x2816xf32>,
                  %wd: tensor<2816x1024xf32>) -> tensor<16x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %w = tensor.concat dim(1) %wg, %wu : (tensor<1024x2816xf32>, tensor<1024x2816xf32>) -> tensor<1024x5632xf32>
  %both_empty = tensor.empty() : tensor<16x5632xf32>
  %both_zero = linalg.fill ins(%zero : f32) outs(%both_empty : tensor<16x5632xf32>) -> tensor<16x5632xf32>
  %both = linalg.matmul ins(%x, %w : tensor<16x1024xf32>, tensor<1024x5632xf32>)
                        outs(%both_zero : tensor<16x5632xf32>) -> tensor<16x5632xf32>
  %gate = tensor.extract_slice %both[0, 0] [16, 2816] [1, 1] : tensor<16x5632xf32> to tensor<16x2816xf32>
  %up = tensor.extract_slice %both[0, 2816] [16, 2816] [1, 1] : tensor<16x5632xf32> to tensor<16x2816xf32>
  %hidden_empty = tensor.empty() : tensor<16x2816xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%gate, %up : tensor<16x2816xf32>, tensor<16x2816xf32>) outs(%hidden_empty : tensor<16x2816xf32>) {
  ^bb0(%g: f32, %u: f32, %out: f32):
    %neg = arith.negf %g : f32
    %e = math.exp %neg : f32
    %den = arith.addf %one, %e : f32
    %silu = arith.divf %g, %den : f32
    %prod = arith.mulf %silu, %u : f32
    linalg.yield %prod : f32
  } -> tensor<16x2816xf32>
  %out_empty = tensor.empty() : tensor<16x1024xf32>
  %out_zero = linalg.fill ins(%zero : f32) outs(%out_empty : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %out = linalg.matmul ins(%h, %wd : tensor<16x2816xf32>, tensor<2816x1024xf32>)
                       outs(%out_zero : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  return %out : tensor<16x1024xf32>
}
