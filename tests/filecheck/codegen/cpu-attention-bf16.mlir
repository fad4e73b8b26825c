// Attention of bf16 Q, K and V computed in f32 (prism.codegen.cpu.attention): the products extend their bf16
// operands (arith.extf in their bodies), the softmax is f32, and @rounded rounds the unnormalized weights P to bf16
// before P V (arith.truncf), as the bf16 benchmark's attention does. cpu-tile replaces the seven ops with one
// kernel that reads Q, K and V as bf16 and extends each value as it loads it (K into its f32 transposed copy, V by
// vectors), and rounds each weight to bf16 and back (truncf, extf) before P V, while l sums the unrounded weights.
// @unrounded, whose P V reads P in f32, rounds nothing. The machine is pinned to AVX-512 (vectors of 16 f32).
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512-bf16.json prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512-bf16.json prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: prism-opt %s --split-input-file -p 'prism-lift{target=host}' | filecheck %s --check-prefix=LIFT

// K transposed once into an f32 copy [batch][key blocks][d][128], 16 keys' rows at a time read as bf16 vectors,
// extended and transposed in registers (two-vector shuffles); then per task its
// block of Q extended into the worker's f32 block (42 rows: 37 and repeats of the last), the scores from the two
// f32 blocks, the exp polynomial, each weight rounded to bf16 and back before it is stored for P V, and P V on
// vectors of V loaded as bf16 and extended.
// CHECK-LABEL: func.func @rounded(
// CHECK-NOT:     linalg.generic
// CHECK:         memref.alloc() {{.*}} : memref<2x2x64x128xf32>
// CHECK:         scf.parallel
// CHECK:         vector.maskedload %{{.*}} : memref<2x129x64xbf16>, vector<16xi1>, vector<16xbf16> into vector<16xbf16>
// CHECK-NEXT:    arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK:         vector.shuffle
// CHECK:         vector.store %{{.*}} : memref<2x2x64x128xf32>, vector<16xf32>
// CHECK:         scf.parallel
// CHECK:         vector.load %{{.*}} : memref<2x37x64xbf16>, vector<16xbf16>
// CHECK-NEXT:    arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK-NEXT:    vector.store %{{.*}} : memref<2x42x64xf32>, vector<16xf32>
// CHECK:         memref.load %{{.*}} : memref<2x42x64xf32>
// CHECK:         vector.fma
// CHECK:         arith.cmpf ogt, %{{.*}} : vector<1xf32>
// CHECK:         [[R:%[0-9]+]] = arith.truncf %{{[0-9]+}} : vector<16xf32> to vector<16xbf16>
// CHECK-NEXT:    [[E:%[0-9]+]] = arith.extf [[R]] : vector<16xbf16> to vector<16xf32>
// CHECK-NEXT:    vector.store [[E]], %{{.*}} : memref<2x42x128xf32>, vector<16xf32>
// CHECK:         arith.addf %{{.*}} : vector<1xf32>
// CHECK:         vector.load %{{.*}} : memref<2x129x64xbf16>, vector<16xbf16>
// CHECK-NEXT:    arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK:         vector.fma
// CHECK-NOT:     math.exp
// CHECK:         return %{{.*}} : tensor<2x37x64xf32>
// Down to the LLVM dialect, the parallel loops are tasks: the first extends vectors of K (fpext) and transposes
// them (shufflevector), the second extends Q's block, rounds the weights (fptrunc) and extends them back, and
// extends vectors of V.
// LLVM-LABEL:  llvm.func @__prism_task_rounded_0(
// LLVM:          llvm.fpext %{{.*}} : vector<16xbf16> to vector<16xf32>
// LLVM:          llvm.shufflevector
// LLVM-LABEL:  llvm.func @__prism_task_rounded_1(
// LLVM:          llvm.fpext %{{.*}} : vector<16xbf16> to vector<16xf32>
// LLVM:          llvm.fptrunc %{{.*}} : vector<16xf32> to vector<16xbf16>
// LLVM-NEXT:     llvm.fpext %{{.*}} : vector<16xbf16> to vector<16xf32>
// LLVM:          llvm.fpext %{{.*}} : vector<16xbf16> to vector<16xf32>
// LLVM-LABEL:  llvm.func @rounded(
// LLVM:          llvm.call @prism_parallel_for(
// The host lifts the chain as one attention family.
// LIFT-LABEL:  func.func @rounded(
// LIFT-NEXT:     call @{{.*}}_family0(
// LIFT:          "prism.family"() {{{.*}}kind = "attention"
// LIFT:          arith.truncf %{{.*}} : f32 to bf16
func.func @rounded(%q: tensor<2x37x64xbf16>, %k: tensor<2x129x64xbf16>, %v: tensor<2x129x64xbf16>) -> tensor<2x37x64xf32> {
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

// -----

// P V reads P in f32: the kernel extends Q, K and V and rounds no weight.
// CHECK-LABEL: func.func @unrounded(
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     arith.truncf
// CHECK:         vector.load %{{.*}} : memref<2x129x64xbf16>, vector<16xbf16>
// CHECK-NEXT:    arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK-NOT:     arith.truncf
// CHECK:         return %{{.*}} : tensor<2x37x64xf32>
// LLVM-LABEL:  llvm.func @__prism_task_unrounded_1(
// LLVM-NOT:      llvm.fptrunc
// LLVM:          llvm.fpext %{{.*}} : vector<16xbf16> to vector<16xf32>
// LLVM-NOT:      llvm.fptrunc
// LLVM-LABEL:  llvm.func @unrounded(
// LIFT-LABEL:  func.func @unrounded(
// LIFT-NEXT:     call @{{.*}}_family0(
// LIFT:          "prism.family"() {{{.*}}kind = "attention"
func.func @unrounded(%q: tensor<2x37x64xbf16>, %k: tensor<2x129x64xbf16>, %v: tensor<2x129x64xbf16>) -> tensor<2x37x64xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.125 : f32
  %se = tensor.empty() : tensor<2x37x129xf32>
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
  %o = linalg.generic {indexing_maps = [affine_map<(b0, i, e, j) -> (b0, i, j)>, affine_map<(b0, i, e, j) -> (b0, j, e)>, affine_map<(b0, i, e, j) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x37x129xf32>, tensor<2x129x64xbf16>) outs(%o0 : tensor<2x37x64xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %w1 = arith.extf %b : bf16 to f32
    %x = arith.mulf %a, %w1 : f32
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
