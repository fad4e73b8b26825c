// Attention, (b*h, q, kv, d) = (16, 128, 1024, 128), K given transposed:
//   out = softmax(q @ kt * d^-1/2) @ v, the softmax shifted by its row maximum.
#s3 = affine_map<(b, i, j) -> (b, i, j)>
#r3 = affine_map<(b, i, j) -> (b, i)>
func.func @attention(%q: tensor<16x128x128xf32>, %kt: tensor<16x128x1024xf32>, %v: tensor<16x1024x128xf32>) -> tensor<16x128x128xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.08838834764831845 : f32
  %raw_empty = tensor.empty() : tensor<16x128x1024xf32>
  %raw_zero = linalg.fill ins(%zero : f32) outs(%raw_empty : tensor<16x128x1024xf32>) -> tensor<16x128x1024xf32>
  %raw = linalg.batch_matmul ins(%q, %kt : tensor<16x128x128xf32>, tensor<16x128x1024xf32>)
      outs(%raw_zero : tensor<16x128x1024xf32>) -> tensor<16x128x1024xf32>
  %s_empty = tensor.empty() : tensor<16x128x1024xf32>
  %s = linalg.generic {indexing_maps = [#s3, #s3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%raw : tensor<16x128x1024xf32>) outs(%s_empty : tensor<16x128x1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %scale : f32
    linalg.yield %y : f32
  } -> tensor<16x128x1024xf32>
  %row_empty = tensor.empty() : tensor<16x128xf32>
  %row_ninf = linalg.fill ins(%ninf : f32) outs(%row_empty : tensor<16x128xf32>) -> tensor<16x128xf32>
  %row_zero = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<16x128xf32>) -> tensor<16x128xf32>
  %m = linalg.generic {indexing_maps = [#s3, #r3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<16x128x1024xf32>) outs(%row_ninf : tensor<16x128xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<16x128xf32>
  %e = linalg.generic {indexing_maps = [#s3, #r3, #s3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<16x128x1024xf32>, tensor<16x128xf32>) outs(%s_empty : tensor<16x128x1024xf32>) {
  ^bb0(%x: f32, %mx: f32, %o: f32):
    %d = arith.subf %x, %mx : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<16x128x1024xf32>
  %l = linalg.generic {indexing_maps = [#s3, #r3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<16x128x1024xf32>) outs(%row_zero : tensor<16x128xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<16x128xf32>
  %en_empty = tensor.empty() : tensor<16x128x1024xf32>
  %en = linalg.generic {indexing_maps = [#s3, #r3, #s3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %l : tensor<16x128x1024xf32>, tensor<16x128xf32>) outs(%en_empty : tensor<16x128x1024xf32>) {
  ^bb0(%x: f32, %sum: f32, %o: f32):
    %y = arith.divf %x, %sum : f32
    linalg.yield %y : f32
  } -> tensor<16x128x1024xf32>
  %out_empty = tensor.empty() : tensor<16x128x128xf32>
  %out_zero = linalg.fill ins(%zero : f32) outs(%out_empty : tensor<16x128x128xf32>) -> tensor<16x128x128xf32>
  %out = linalg.batch_matmul ins(%en, %v : tensor<16x128x1024xf32>, tensor<16x1024x128xf32>)
      outs(%out_zero : tensor<16x128x128xf32>) -> tensor<16x128x128xf32>
  return %out : tensor<16x128x128xf32>
}
