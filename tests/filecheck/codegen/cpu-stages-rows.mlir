// Row kernels (prism.codegen.cpu.rows): elementwise ops and reductions over the last axis, over the same rows,
// become one kernel whose workers take shares of the rows, each row computed in sweeps along its columns,
// one vector at a time. Ops outside that form keep the generic path.
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --emit=report 2>&1 | filecheck %s --check-prefix=REPORT

// RMSNorm over 64 rows of 1000: the sum of squares in four vector accumulators over 992 columns, then in
// one over the last vector (1000 = 125 vectors), reduced once per row; rsqrt of the row's scalar, with 1/d
// passed from outside the op; the normalized row stored in a second sweep. Two workers, 32 rows each.
// CHECK-LABEL: func.func @rmsnorm(
// CHECK-NOT:     linalg.
// CHECK:         scf.parallel
// CHECK:         scf.for
// CHECK:         %[[SUM:.*]]:4 = scf.for {{.*}} iter_args
// CHECK:           arith.mulf %{{.*}} : vector<8xf32>
// CHECK:           arith.addf %{{.*}} : vector<8xf32>
// CHECK:         vector.reduction <add>
// CHECK:         math.rsqrt %{{.*}} : f32
// CHECK:         vector.broadcast
// CHECK:         scf.for
// CHECK:           vector.store
// CHECK-NOT:     linalg.
// CHECK:         return
// REPORT:        "count": 1,
// REPORT-NEXT:   "function": "@rmsnorm",
// REPORT-NEXT:   "kernels": [
// REPORT-NEXT:     {
// REPORT-NEXT:       "kind": "rows",
// REPORT-NEXT:       "ops": [
// REPORT-NEXT:         "linalg.generic at {{.*}}cpu-stages-rows.mlir:38:
// REPORT-NEXT:         "linalg.generic at {{.*}}cpu-stages-rows.mlir:44:
// REPORT-NEXT:         "linalg.generic at {{.*}}cpu-stages-rows.mlir:52:
func.func @rmsnorm(%x: tensor<64x1000xf32>, %g: tensor<1000xf32>, %inv_d: f32) -> tensor<64x1000xf32> {
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %re = tensor.empty() : tensor<64xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%re : tensor<64xf32>) -> tensor<64xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x1000xf32>) outs(%rz : tensor<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%ss : tensor<64xf32>) outs(%re : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %inv_d : f32
    %t = arith.addf %m, %eps : f32
    %r = math.rsqrt %t : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e = tensor.empty() : tensor<64x1000xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %s, %g : tensor<64x1000xf32>, tensor<64xf32>, tensor<1000xf32>) outs(%e : tensor<64x1000xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %t = arith.mulf %a, %b : f32
    %r = arith.mulf %t, %c : f32
    linalg.yield %r : f32
  } -> tensor<64x1000xf32>
  return %y : tensor<64x1000xf32>
}

// -----

// A reduction over the first axis (column sums, with its fill), an op that reads its output, and f16: none
// is a row op.
// CHECK-LABEL: func.func @not_rows(
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT:     vector.reduction
// CHECK:         return
// REPORT:        "count": 4,
// REPORT-NEXT:   "function": "@not_rows",
// REPORT:        "kind": "loops",
// REPORT:        "kind": "loops",
// REPORT:        "kind": "loops",
// REPORT:        "kind": "loops",
func.func @not_rows(%x: tensor<64x100xf32>, %y: tensor<64x100xf32>, %h: tensor<64x100xf16>) -> (tensor<100xf32>, tensor<64x100xf32>, tensor<64x100xf16>) {
  %zero = arith.constant 0.0 : f32
  %ce = tensor.empty() : tensor<100xf32>
  %cz = linalg.fill ins(%zero : f32) outs(%ce : tensor<100xf32>) -> tensor<100xf32>
  %cols = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<64x100xf32>) outs(%cz : tensor<100xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<100xf32>
  %acc = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x100xf32>) outs(%y : tensor<64x100xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<64x100xf32>
  %he = tensor.empty() : tensor<64x100xf16>
  %hh = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<64x100xf16>) outs(%he : tensor<64x100xf16>) {
  ^bb0(%a: f16, %o: f16):
    %r = arith.addf %a, %a : f16
    linalg.yield %r : f16
  } -> tensor<64x100xf16>
  return %cols, %acc, %hh : tensor<100xf32>, tensor<64x100xf32>, tensor<64x100xf16>
}
