// Attention written as its six ops (prism.codegen.cpu.attention): cpu-tile replaces them with one kernel
// whose scores live in a per-worker block; @near_miss, which is not exactly attention (its row maximum
// starts from 0, not -inf), keeps its contractions; linalg.softmax is decomposed, and fused when it is attention's.
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM

// Prefill: K transposed once into [batch][key blocks][d][128] by one parallel loop; then the tasks, each a
// block of 54 query rows (100 rows in two blocks): a 54 x 128 block of scores per worker, its row maximum
// and sum across lanes by halving the vector (down to one lane), and no exp call (a polynomial). No buffer of
// 100 x 300 scores.
// CHECK-LABEL: func.func @prefill(
// CHECK-NOT:     linalg.generic
// CHECK:         memref.alloc() {{.*}} : memref<2x3x64x128xf32>
// CHECK:         scf.parallel
// CHECK-DAG:     memref.alloc() {{.*}} : memref<2x54x128xf32>
// CHECK-DAG:     memref.alloc() {{.*}} : memref<2x54x64xf32>
// CHECK:         scf.parallel
// CHECK:         vector.fma
// CHECK:         arith.cmpf ogt, %{{.*}} : vector<1xf32>
// CHECK:         arith.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
// CHECK:         arith.addf %{{.*}} : vector<1xf32>
// CHECK:         vector.fma
// CHECK-NOT:     math.exp
// CHECK-NOT:     100x300
// CHECK:         return
// LLVM-LABEL:  llvm.func @prefill(
// LLVM:          llvm.call @prism_parallel_for(
func.func @prefill(%q: tensor<1x2x100x64xf32>, %k: tensor<1x2x300x64xf32>, %v: tensor<1x2x300x64xf32>) -> (tensor<1x2x100x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninit = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.125 : f32
  %se = tensor.empty() : tensor<1x2x100x300xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<1x2x100x300xf32>) -> tensor<1x2x100x300xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b0, b1, i, j, c) -> (b0, b1, i, c)>, affine_map<(b0, b1, i, j, c) -> (b0, b1, j, c)>, affine_map<(b0, b1, i, j, c) -> (b0, b1, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x100x64xf32>, tensor<1x2x300x64xf32>) outs(%s0 : tensor<1x2x100x300xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x2x100x300xf32>
  %re = tensor.empty() : tensor<1x2x100xf32>
  %m0 = linalg.fill ins(%ninit : f32) outs(%re : tensor<1x2x100xf32>) -> tensor<1x2x100xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<1x2x100xf32>) -> tensor<1x2x100xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(b0, b1, i, j) -> (b0, b1, i, j)>, affine_map<(b0, b1, i, j) -> (b0, b1, i)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%s : tensor<1x2x100x300xf32>) outs(%m0 : tensor<1x2x100xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<1x2x100xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b0, b1, i, j) -> (b0, b1, i, j)>, affine_map<(b0, b1, i, j) -> (b0, b1, i)>, affine_map<(b0, b1, i, j) -> (b0, b1, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %m : tensor<1x2x100x300xf32>, tensor<1x2x100xf32>) outs(%se : tensor<1x2x100x300xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %x = arith.subf %a, %b : f32
    %y = arith.mulf %x, %scale : f32
    %z = math.exp %y : f32
    linalg.yield %z : f32
  } -> tensor<1x2x100x300xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(b0, b1, i, j) -> (b0, b1, i, j)>, affine_map<(b0, b1, i, j) -> (b0, b1, i)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p : tensor<1x2x100x300xf32>) outs(%l0 : tensor<1x2x100xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<1x2x100xf32>
  %oe = tensor.empty() : tensor<1x2x100x64xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x2x100x64xf32>) -> tensor<1x2x100x64xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b0, b1, i, e, j) -> (b0, b1, i, j)>, affine_map<(b0, b1, i, e, j) -> (b0, b1, j, e)>, affine_map<(b0, b1, i, e, j) -> (b0, b1, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<1x2x100x300xf32>, tensor<1x2x300x64xf32>) outs(%o0 : tensor<1x2x100x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x2x100x64xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(b0, b1, i, e) -> (b0, b1, i, e)>, affine_map<(b0, b1, i, e) -> (b0, b1, i)>, affine_map<(b0, b1, i, e) -> (b0, b1, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %l : tensor<1x2x100x64xf32>, tensor<1x2x100xf32>) outs(%oe : tensor<1x2x100x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<1x2x100x64xf32>
  return %out : tensor<1x2x100x64xf32>
}

// -----

// Decode (one query row): scores are dot products over K's rows, so K is not transposed: the first
// allocation is the result, and there is one parallel loop.
// CHECK-LABEL: func.func @decode(
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     x32x96xf32>
// CHECK:         memref.alloc() {{.*}} : memref<2x1x96xf32>
// CHECK:         scf.parallel
// CHECK-NOT:     scf.parallel
// CHECK:         arith.addf %{{.*}} : vector<1xf32>
// CHECK:         return

func.func @decode(%q: tensor<2x1x32xf32>, %k: tensor<2x77x32xf32>, %v: tensor<2x77x32xf32>) -> (tensor<2x1x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninit = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.17677669529663687 : f32
  %se = tensor.empty() : tensor<2x1x77xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x1x77xf32>) -> tensor<2x1x77xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b0, i, j, c) -> (b0, i, c)>, affine_map<(b0, i, j, c) -> (b0, j, c)>, affine_map<(b0, i, j, c) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x1x32xf32>, tensor<2x77x32xf32>) outs(%s0 : tensor<2x1x77xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x1x77xf32>
  %re = tensor.empty() : tensor<2x1xf32>
  %m0 = linalg.fill ins(%ninit : f32) outs(%re : tensor<2x1xf32>) -> tensor<2x1xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x1xf32>) -> tensor<2x1xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<2x1x77xf32>) outs(%m0 : tensor<2x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x1xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<2x1x77xf32>, tensor<2x1xf32>) outs(%se : tensor<2x1x77xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %x = arith.subf %a, %b : f32
    %y = arith.mulf %x, %scale : f32
    %z = math.exp %y : f32
    linalg.yield %z : f32
  } -> tensor<2x1x77xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p : tensor<2x1x77xf32>) outs(%l0 : tensor<2x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x1xf32>
  %oe = tensor.empty() : tensor<2x1x32xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x1x32xf32>) -> tensor<2x1x32xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b0, i, e, j) -> (b0, i, j)>, affine_map<(b0, i, e, j) -> (b0, j, e)>, affine_map<(b0, i, e, j) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x1x77xf32>, tensor<2x77x32xf32>) outs(%o0 : tensor<2x1x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x1x32xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(b0, i, e) -> (b0, i, e)>, affine_map<(b0, i, e) -> (b0, i)>, affine_map<(b0, i, e) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %l : tensor<2x1x32xf32>, tensor<2x1xf32>) outs(%oe : tensor<2x1x32xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x1x32xf32>
  return %out : tensor<2x1x32xf32>
}

// -----

// Not attention: the two contractions stay generics, and take the generic path; the row maximum (from 0),
// exp (a polynomial: math.floor) and row sum around them are one row kernel, the division another
// (codegen/cpu/rows).
// CHECK-LABEL: func.func @near_miss(
// CHECK:         linalg.generic
// CHECK:         vector.reduction <maximumf>, %{{.*}}, %[[ZERO:.*]] : vector<8xf32> into f32
// CHECK:         math.floor %{{.*}} : vector<8xf32>
// CHECK:         vector.reduction <add>
// CHECK:         linalg.generic
// CHECK:         arith.divf %{{.*}} : vector<8xf32>
// CHECK-NOT:     linalg.generic
// CHECK:         return

func.func @near_miss(%q: tensor<2x9x16xf32>, %k: tensor<2x21x16xf32>, %v: tensor<2x21x16xf32>) -> (tensor<2x9x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninit = arith.constant 0.0 : f32
  %scale = arith.constant 0.25 : f32
  %se = tensor.empty() : tensor<2x9x21xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x9x21xf32>) -> tensor<2x9x21xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b0, i, j, c) -> (b0, i, c)>, affine_map<(b0, i, j, c) -> (b0, j, c)>, affine_map<(b0, i, j, c) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x9x16xf32>, tensor<2x21x16xf32>) outs(%s0 : tensor<2x9x21xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x9x21xf32>
  %re = tensor.empty() : tensor<2x9xf32>
  %m0 = linalg.fill ins(%ninit : f32) outs(%re : tensor<2x9xf32>) -> tensor<2x9xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x9xf32>) -> tensor<2x9xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<2x9x21xf32>) outs(%m0 : tensor<2x9xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x9xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<2x9x21xf32>, tensor<2x9xf32>) outs(%se : tensor<2x9x21xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %x = arith.subf %a, %b : f32
    %y = arith.mulf %x, %scale : f32
    %z = math.exp %y : f32
    linalg.yield %z : f32
  } -> tensor<2x9x21xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p : tensor<2x9x21xf32>) outs(%l0 : tensor<2x9xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x9xf32>
  %oe = tensor.empty() : tensor<2x9x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x9x16xf32>) -> tensor<2x9x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b0, i, e, j) -> (b0, i, j)>, affine_map<(b0, i, e, j) -> (b0, j, e)>, affine_map<(b0, i, e, j) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x9x21xf32>, tensor<2x21x16xf32>) outs(%o0 : tensor<2x9x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x9x16xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(b0, i, e) -> (b0, i, e)>, affine_map<(b0, i, e) -> (b0, i)>, affine_map<(b0, i, e) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %l : tensor<2x9x16xf32>, tensor<2x9xf32>) outs(%oe : tensor<2x9x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x9x16xf32>
  return %out : tensor<2x9x16xf32>
}

// -----

// Attention through linalg.softmax, its scores scaled by an op of their own and the division before a named
// batch_matmul: the same kernel (6-row blocks over K^T).
// CHECK-LABEL: func.func @through_softmax(
// CHECK-NOT:     linalg.
// CHECK:         scf.parallel
// CHECK:         scf.parallel
// CHECK:         arith.cmpf ogt, %{{.*}} : vector<1xf32>
// CHECK-NOT:     linalg.
// CHECK:         return
#q = affine_map<(b, i, j, c) -> (b, i, c)>
#k = affine_map<(b, i, j, c) -> (b, j, c)>
#s = affine_map<(b, i, j, c) -> (b, i, j)>
#id = affine_map<(b, i, j) -> (b, i, j)>
func.func @through_softmax(%q: tensor<2x9x16xf32>, %k: tensor<2x21x16xf32>, %v: tensor<2x21x24xf32>)
    -> tensor<2x9x24xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.25 : f32
  %se = tensor.empty() : tensor<2x9x21xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x9x21xf32>) -> tensor<2x9x21xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x9x16xf32>, tensor<2x21x16xf32>) outs(%s0 : tensor<2x9x21xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x9x21xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x9x21xf32>) outs(%se : tensor<2x9x21xf32>) {
  ^bb0(%a: f32, %o: f32):
    %x = arith.mulf %a, %c : f32
    linalg.yield %x : f32
  } -> tensor<2x9x21xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<2x9x21xf32>) outs(%se : tensor<2x9x21xf32>)
      -> tensor<2x9x21xf32>
  %oe = tensor.empty() : tensor<2x9x24xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x9x24xf32>) -> tensor<2x9x24xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x9x21xf32>, tensor<2x21x24xf32>)
      outs(%o0 : tensor<2x9x24xf32>) -> tensor<2x9x24xf32>
  return %o : tensor<2x9x24xf32>
}

// -----

// linalg.softmax alone: decomposed into a row max (maxnum from NaN), exp of the difference, a row sum and a
// division, which become one row kernel of three sweeps per row: the maximum; exp (a polynomial), kept in a
// scratch row, and its sum; the division.
// CHECK-LABEL: func.func @softmax(
// CHECK-NOT:     linalg.
// CHECK:         memref.alloc() {{.*}} : memref<1x77xf32>
// CHECK:         arith.maxnumf %{{.*}} : vector<8xf32>
// CHECK:         vector.reduction <maxnumf>
// CHECK:         math.floor %{{.*}} : vector<8xf32>
// CHECK:         vector.store
// CHECK-NEXT:    arith.addf
// CHECK:         vector.reduction <add>
// CHECK:         arith.divf %{{.*}} : vector<8xf32>
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @softmax(%x: tensor<4x77xf32>) -> tensor<4x77xf32> {
  %e = tensor.empty() : tensor<4x77xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<4x77xf32>) outs(%e : tensor<4x77xf32>) -> tensor<4x77xf32>
  return %r : tensor<4x77xf32>
}

// -----

// A causal mask (key j kept for query i when j <= i) between the scores and linalg.softmax joins the kernel,
// whose choice (from prism-select, here written by hand) splits the keys into 2 shares: each share's m, l
// and O go to buffers of 2 shares that a second parallel loop merges. No buffer of 40 x 40 scores.
// CHECK-LABEL: func.func @causal(
// CHECK-NOT:     linalg.index
// CHECK:         memref.alloc() {{.*}} : memref<2x2x40xf32>
// CHECK:         memref.alloc() {{.*}} : memref<2x2x40x16xf32>
// CHECK:         scf.parallel
// CHECK:         arith.cmpf oeq
// CHECK:         scf.parallel
// CHECK-NOT:     40x40
// CHECK:         return
#map = affine_map<(b, i, j) -> (b, i, j)>
func.func @causal(%q: tensor<2x40x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x16xf32>) -> tensor<2x40x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x40x40xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, c) -> (b, i, c)>, affine_map<(b, i, j, c) -> (b, j, c)>,
                                            affine_map<(b, i, j, c) -> (b, i, j)>]
      {prism.attention = {BQ = 48 : i64, BKV = 16 : i64, RM = 6 : i64, RN = 16 : i64, KVS = 2 : i64}}
      ins(%q, %k : tensor<2x40x16xf32>, tensor<2x40x16xf32>) outs(%s0 : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %masked = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x40x40xf32>) outs(%se : tensor<2x40x40xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %keep = arith.cmpi ule, %j, %i : index
    %r = arith.select %keep, %x, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x40x40xf32>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<2x40x40xf32>) outs(%se : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %oe = tensor.empty() : tensor<2x40x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x40x40xf32>, tensor<2x40x16xf32>)
      outs(%o0 : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  return %o : tensor<2x40x16xf32>
}

// -----

// Its near miss keeps the keys at or after the query (j >= i): not causal, so its ops stay (the mask among
// them), as GEMMs and loops.
// CHECK-LABEL: func.func @not_causal(
// CHECK:         linalg.index
#map = affine_map<(b, i, j) -> (b, i, j)>
func.func @not_causal(%q: tensor<2x40x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x16xf32>) -> tensor<2x40x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x40x40xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, c) -> (b, i, c)>, affine_map<(b, i, j, c) -> (b, j, c)>,
                                            affine_map<(b, i, j, c) -> (b, i, j)>]
      ins(%q, %k : tensor<2x40x16xf32>, tensor<2x40x16xf32>) outs(%s0 : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %masked = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x40x40xf32>) outs(%se : tensor<2x40x40xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %keep = arith.cmpi uge, %j, %i : index
    %r = arith.select %keep, %x, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x40x40xf32>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<2x40x40xf32>) outs(%se : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %oe = tensor.empty() : tensor<2x40x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x40x40xf32>, tensor<2x40x16xf32>)
      outs(%o0 : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  return %o : tensor<2x40x16xf32>
}
