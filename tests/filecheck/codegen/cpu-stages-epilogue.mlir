// An elementwise consumer of a GEMM that takes the kernel (prism.codegen.cpu.epilogue) runs on each C tile
// as the last K slice stores it; @reads_output's consumer reads its output (the init), so it stays a loop.
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --emit=report 2>&1 | filecheck %s --check-prefix=REPORT

// The row scale: after the K loop, on the last slice, each accumulator times the broadcast scale of its row is
// stored; on the others, the accumulator itself.
// CHECK-LABEL: func.func @row_scale(
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     linalg.matmul
// CHECK:         arith.cmpi eq
// CHECK:         scf.for {{.*}} iter_args
// CHECK:         scf.if %{{.*}} {
// CHECK:           %[[S:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %{{.*}}, %[[S]] : vector<8xf32>
// CHECK-NEXT:      vector.store %[[Y]]
// CHECK:         } else {
// CHECK:           vector.store
// CHECK:         return
// REPORT:        "kind": "gemm + epilogue",
// REPORT-NEXT:   "ops": [
// REPORT-NEXT:     "linalg.matmul at
// REPORT-NEXT:     "linalg.generic at
func.func @row_scale(%a: tensor<37x300xf32>, %b: tensor<300x45xf32>, %rs: tensor<37xf32>) -> (tensor<37x45xf32>) {
  %i0 = arith.constant 0 : index
  %d = tensor.dim %a, %i0 : tensor<37x300xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37x45xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e : tensor<37x45xf32>) -> tensor<37x45xf32>
  %mm = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 64, RM = 4, RN = 16, PACK = 1}} ins(%a, %b : tensor<37x300xf32>, tensor<300x45xf32>) outs(%c0 : tensor<37x45xf32>) -> tensor<37x45xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %rs : tensor<37x45xf32>, tensor<37xf32>) outs(%e : tensor<37x45xf32>) {
  ^bb0(%x: f32, %rs_v: f32, %o: f32):
    %r = arith.mulf %x, %rs_v : f32
    linalg.yield %r : f32
  } -> tensor<37x45xf32>
  return %y : tensor<37x45xf32>
}

// -----

// CHECK-LABEL: func.func @reads_output(
// CHECK:         linalg.generic
// CHECK:         return

func.func @reads_output(%a: tensor<37x300xf32>, %b: tensor<300x45xf32>, %rs: tensor<37xf32>) -> (tensor<37x45xf32>) {
  %i0 = arith.constant 0 : index
  %d = tensor.dim %a, %i0 : tensor<37x300xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37x45xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e : tensor<37x45xf32>) -> tensor<37x45xf32>
  %mm = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 64, RM = 4, RN = 16, PACK = 1}} ins(%a, %b : tensor<37x300xf32>, tensor<300x45xf32>) outs(%c0 : tensor<37x45xf32>) -> tensor<37x45xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %rs : tensor<37x45xf32>, tensor<37xf32>) outs(%e : tensor<37x45xf32>) {
  ^bb0(%x: f32, %rs_v: f32, %o: f32):
    %r = arith.mulf %x, %rs_v : f32
    %r2 = arith.addf %r, %o : f32
    linalg.yield %r2 : f32
  } -> tensor<37x45xf32>
  return %y : tensor<37x45xf32>
}

// -----

// SwiGLU's gate and up read one A: one dual kernel computes both, RN/2 = 8 columns of each per micro-tile,
// its panels holding both products (TN halved to 16: 2 panels, kept for the 5 K slices); the second product's partial sums live in
// a buffer of their own; the last K slice stores silu(gate) * up, exp by a polynomial (math.floor).
// CHECK-LABEL: func.func @dual(
// CHECK-NOT:     linalg.
// CHECK:         %[[C:.*]] = memref.alloc() {alignment = 64 : i64} : memref<37x45xf32>
// CHECK:         %[[C2:.*]] = memref.alloc() {alignment = 64 : i64} : memref<37x45xf32>
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<2x5x2x64x16xf32>
// CHECK:         scf.if %{{.*}} {
// CHECK:           math.floor %{{.*}} : vector<8xf32>
// CHECK:           arith.divf
// CHECK:           arith.mulf
// CHECK:           vector.store %{{.*}}, %[[C]]
// CHECK:         } else {
// CHECK:           vector.store %{{.*}}, %[[C]]
// CHECK:           vector.store %{{.*}}, %[[C2]]
// CHECK:         return
// REPORT:        "kind": "dual gemm + epilogue",
// REPORT-NEXT:   "ops": [
// REPORT-NEXT:     "linalg.matmul at
// REPORT-NEXT:     "linalg.matmul at
// REPORT-NEXT:     "linalg.generic at
func.func @dual(%a: tensor<37x300xf32>, %wg: tensor<300x45xf32>, %wu: tensor<300x45xf32>) -> tensor<37x45xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<37x45xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e : tensor<37x45xf32>) -> tensor<37x45xf32>
  %g = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 64, RM = 4, RN = 16, PACK = 1}} ins(%a, %wg : tensor<37x300xf32>, tensor<300x45xf32>) outs(%c0 : tensor<37x45xf32>) -> tensor<37x45xf32>
  %u = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 64, RM = 4, RN = 16, PACK = 1}} ins(%a, %wu : tensor<37x300xf32>, tensor<300x45xf32>) outs(%c0 : tensor<37x45xf32>) -> tensor<37x45xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%g, %u : tensor<37x45xf32>, tensor<37x45xf32>) outs(%e : tensor<37x45xf32>) {
  ^bb0(%x: f32, %up: f32, %o: f32):
    %n = arith.negf %x : f32
    %ex = math.exp %n : f32
    %den = arith.addf %one, %ex : f32
    %s = arith.divf %x, %den : f32
    %r = arith.mulf %s, %up : f32
    linalg.yield %r : f32
  } -> tensor<37x45xf32>
  return %y : tensor<37x45xf32>
}

// -----

// Two GEMMs of different A are not a dual GEMM: the first takes the op as its epilogue, reading the
// second's result per element.
// CHECK-LABEL: func.func @not_dual(
// CHECK-NOT:     linalg.
// CHECK-COUNT-2: memref.alloc() {alignment = 64 : i64} : memref<2x5x2x64x16xf32>
// CHECK-NOT:     linalg.
// CHECK:         return
// REPORT:        "kind": "gemm + epilogue",
// REPORT:        "kind": "gemm",
func.func @not_dual(%a: tensor<37x300xf32>, %a2: tensor<37x300xf32>, %wg: tensor<300x45xf32>, %wu: tensor<300x45xf32>) -> tensor<37x45xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37x45xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e : tensor<37x45xf32>) -> tensor<37x45xf32>
  %g = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 64, RM = 4, RN = 16, PACK = 1}} ins(%a, %wg : tensor<37x300xf32>, tensor<300x45xf32>) outs(%c0 : tensor<37x45xf32>) -> tensor<37x45xf32>
  %u = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 64, RM = 4, RN = 16, PACK = 1}} ins(%a2, %wu : tensor<37x300xf32>, tensor<300x45xf32>) outs(%c0 : tensor<37x45xf32>) -> tensor<37x45xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%g, %u : tensor<37x45xf32>, tensor<37x45xf32>) outs(%e : tensor<37x45xf32>) {
  ^bb0(%x: f32, %up: f32, %o: f32):
    %r = arith.mulf %x, %up : f32
    linalg.yield %r : f32
  } -> tensor<37x45xf32>
  return %y : tensor<37x45xf32>
}
