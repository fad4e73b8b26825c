// A run-time check (cf.assert) lowers to a branch that, when the check fails, calls prism_assert_failed with
// the check's index; the declaration carries each check's message and location, which the runtime raises as
// AssertionFailed (python/prism/codegen/cpu/assertions.py). Nothing calls abort().
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2}' | filecheck %s

// CHECK-LABEL: llvm.func @repeat(
// CHECK-NOT:     @abort
// CHECK:         %[[INDEX:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK:         %[[FAILED:.*]] = llvm.icmp "sle" %{{.*}}, %{{.*}} : i64
// CHECK:         llvm.cond_br %[[FAILED]], ^[[FAIL:bb[0-9]+]], ^{{bb[0-9]+}}
// CHECK:       ^[[FAIL]]:
// CHECK-NEXT:    llvm.call @prism_assert_failed(%[[INDEX]]) : (i64) -> ()
// CHECK-NOT:     @abort
// CHECK:       llvm.func @prism_assert_failed(i64) attributes {prism.assertions = [{location = "{{.*}}cpu-assertions.mlir:[[# @LINE + 4]]:3", message = "the count must be positive"}]
func.func @repeat(%x: tensor<8xf32>, %n: i64) -> tensor<8xf32> {
  %c0 = arith.constant 0 : i64
  %positive = arith.cmpi sgt, %n, %c0 : i64
  cf.assert %positive, "the count must be positive"
  %f = arith.sitofp %n : i64 to f32
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %f : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
