// Near misses of the bf16 attention of cpu-attention-bf16.mlir, which are not one attention and keep their ops:
// @normalized_rounded rounds P / l to bf16 before its product with V (the online kernel never holds the normalized
// weights, so it could not round them where the program does); @mixed_types has K in f16 and Q, V in bf16. The host
// lifts their products as products, and cpu-tile leaves the rounding op and the softmax's ops as they are.
// RUN: prism-opt %s --split-input-file -p 'prism-lift{target=host}' | filecheck %s
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE

// CHECK-LABEL: func.func @normalized_rounded(
// CHECK:         call @normalized_rounded_family0(
// CHECK:         arith.divf
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:         call @normalized_rounded_family1(
// CHECK:       func.func private @normalized_rounded_family0(
// CHECK-NEXT:    "prism.family"() {{{.*}}kind = "batch_gemm"
// CHECK:       func.func private @normalized_rounded_family1(
// CHECK-NEXT:    "prism.family"() {{{.*}}kind = "batch_gemm"
// TILE-LABEL:  func.func @normalized_rounded(
// TILE-NOT:      memref<2x{{[0-9]+}}x128xf32>
// TILE:          arith.divf
// TILE:          linalg.generic
// TILE:          arith.truncf %{{.*}} : f32 to bf16
func.func @normalized_rounded(%q: tensor<2x37x64xbf16>, %k: tensor<2x129x64xbf16>, %v: tensor<2x129x64xbf16>) -> tensor<2x37x64xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.125 : f32
  %se = tensor.empty() : tensor<2x37x129xf32>
  %sn = tensor.empty() : tensor<2x37x129xbf16>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x37x129xf32>) -> tensor<2x37x129xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b0, i, j, c) -> (b0, i, c)>, affine_map<(b0, i, j, c) -> (b0, j, c)>, affine_map<(b0, i, j, c) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x37x64xbf16>, tensor<2x129x64xbf16>) outs(%s0 : tensor<2x37x129xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %w0 = arith.extf %a : bf16 to f32
    %w1 = arith.extf %b : bf16 to f32
    %x = arith.mulf %w0, %w1 : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x37x129xf32>
  %re = tensor.empty() : tensor<2x37xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%re : tensor<2x37xf32>) -> tensor<2x37xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x37xf32>) -> tensor<2x37xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<2x37x129xf32>) outs(%m0 : tensor<2x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x37xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<2x37x129xf32>, tensor<2x37xf32>) outs(%se : tensor<2x37x129xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %x = arith.subf %a, %b : f32
    %y = arith.mulf %x, %scale : f32
    %z = math.exp %y : f32
    linalg.yield %z : f32
  } -> tensor<2x37x129xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p : tensor<2x37x129xf32>) outs(%l0 : tensor<2x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x37xf32>
  %oe = tensor.empty() : tensor<2x37x64xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x37x64xf32>) -> tensor<2x37x64xf32>
  %pn = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p, %l : tensor<2x37x129xf32>, tensor<2x37xf32>) outs(%se : tensor<2x37x129xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x37x129xf32>
  %pr = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%pn : tensor<2x37x129xf32>) outs(%sn : tensor<2x37x129xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x37x129xbf16>
  %out = linalg.generic {indexing_maps = [affine_map<(b0, i, e, j) -> (b0, i, j)>, affine_map<(b0, i, e, j) -> (b0, j, e)>, affine_map<(b0, i, e, j) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<2x37x129xbf16>, tensor<2x129x64xbf16>) outs(%o0 : tensor<2x37x64xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %w0 = arith.extf %a : bf16 to f32
    %w1 = arith.extf %b : bf16 to f32
    %x = arith.mulf %w0, %w1 : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x37x64xf32>
  return %out : tensor<2x37x64xf32>
}

// -----

// CHECK-LABEL: func.func @mixed_types(
// CHECK:         call @mixed_types_family0(
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:         call @mixed_types_family1(
// CHECK:       func.func private @mixed_types_family0(
// CHECK-NEXT:    "prism.family"() {{{.*}}kind = "batch_gemm"
// CHECK:         arith.extf %{{.*}} : f16 to f32
// CHECK:       func.func private @mixed_types_family1(
// CHECK-NEXT:    "prism.family"() {{{.*}}kind = "batch_gemm"
// TILE-LABEL:  func.func @mixed_types(
// TILE-NOT:      memref<2x{{[0-9]+}}x128xf32>
// TILE:          linalg.generic
// TILE:          arith.truncf %{{.*}} : f32 to bf16
func.func @mixed_types(%q: tensor<2x37x64xbf16>, %k: tensor<2x129x64xf16>, %v: tensor<2x129x64xbf16>) -> tensor<2x37x64xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.125 : f32
  %se = tensor.empty() : tensor<2x37x129xf32>
  %sn = tensor.empty() : tensor<2x37x129xbf16>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x37x129xf32>) -> tensor<2x37x129xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b0, i, j, c) -> (b0, i, c)>, affine_map<(b0, i, j, c) -> (b0, j, c)>, affine_map<(b0, i, j, c) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x37x64xbf16>, tensor<2x129x64xf16>) outs(%s0 : tensor<2x37x129xf32>) {
  ^bb0(%a: bf16, %b: f16, %acc: f32):
    %w0 = arith.extf %a : bf16 to f32
    %w1 = arith.extf %b : f16 to f32
    %x = arith.mulf %w0, %w1 : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x37x129xf32>
  %re = tensor.empty() : tensor<2x37xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%re : tensor<2x37xf32>) -> tensor<2x37xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x37xf32>) -> tensor<2x37xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<2x37x129xf32>) outs(%m0 : tensor<2x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x37xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<2x37x129xf32>, tensor<2x37xf32>) outs(%se : tensor<2x37x129xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %x = arith.subf %a, %b : f32
    %y = arith.mulf %x, %scale : f32
    %z = math.exp %y : f32
    linalg.yield %z : f32
  } -> tensor<2x37x129xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p : tensor<2x37x129xf32>) outs(%l0 : tensor<2x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x37xf32>
  %oe = tensor.empty() : tensor<2x37x64xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x37x64xf32>) -> tensor<2x37x64xf32>
  %pr = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p : tensor<2x37x129xf32>) outs(%sn : tensor<2x37x129xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x37x129xbf16>
  %o = linalg.generic {indexing_maps = [affine_map<(b0, i, e, j) -> (b0, i, j)>, affine_map<(b0, i, e, j) -> (b0, j, e)>, affine_map<(b0, i, e, j) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<2x37x129xbf16>, tensor<2x129x64xbf16>) outs(%o0 : tensor<2x37x64xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %w0 = arith.extf %a : bf16 to f32
    %w1 = arith.extf %b : bf16 to f32
    %x = arith.mulf %w0, %w1 : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x37x64xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(b0, i, e) -> (b0, i, e)>, affine_map<(b0, i, e) -> (b0, i)>, affine_map<(b0, i, e) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %l : tensor<2x37x64xf32>, tensor<2x37xf32>) outs(%oe : tensor<2x37x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x37x64xf32>
  return %out : tensor<2x37x64xf32>
}
