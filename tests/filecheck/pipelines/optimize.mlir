// RUN: prism-opt %s --split-input-file --target=h200 -p prism-optimize | filecheck %s --check-prefix=GPU
// RUN: prism-opt %s --split-input-file --target=host -p 'prism-optimize,canonicalize' | filecheck %s --check-prefix=HOST

// The whole search in one named pipeline: plain linalg in, annotated linalg out.
// GPU-LABEL: func.func @gemm
// GPU:         linalg.matmul {prism.choice = {BK = {{[0-9]+}} : i64, BM = {{[0-9]+}} : i64, BN = {{[0-9]+}} : i64, GROUP_M = {{[1248]}} : i64, MMA = 0 : i64, PERSISTENT = 0 : i64, SPLITK = {{[0-9]+}} : i64, STAGES = {{[2-5]}} : i64, WM = {{[0-9]+}} : i64, WN = {{[0-9]+}} : i64}, prism.roles = ["m", "n", "k"]}
// GPU-NOT:     prism.family
// HOST-LABEL: func.func @gemm
// HOST:         linalg.matmul {prism.choice = {RM = {{[0-9]+}} : i64, RN = {{[0-9]+}} : i64, TK = {{[0-9]+}} : i64, TM = {{[0-9]+}} : i64, TN = {{[0-9]+}} : i64}, prism.roles = ["m", "n", "k"]}
// HOST-NOT:    call
func.func @gemm(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}

// -----

// In a mixed module only the matmul is lifted; the convolution and the pad
// come out exactly as they went in.
// GPU-LABEL: func.func @mixed
// GPU:         tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 1, 1, 0]
// GPU:         linalg.conv_2d_nhwc_hwcf ins(%{{.*}}, %{{.*}} : tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) outs(%{{.*}} : tensor<1x6x6x4xf32>)
// GPU:         linalg.matmul {prism.choice
func.func @mixed(%img: tensor<1x6x6x2xf32>, %filter: tensor<3x3x2x4xf32>, %out: tensor<1x6x6x4xf32>,
                 %a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>) -> (tensor<1x6x6x4xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %img low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x2xf32> to tensor<1x8x8x2xf32>
  %conv = linalg.conv_2d_nhwc_hwcf ins(%padded, %filter : tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>)
                                   outs(%out : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %conv, %mm : tensor<1x6x6x4xf32>, tensor<64x64xf32>
}
