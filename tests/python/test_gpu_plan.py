"""Planning functions for the GPU: which ops become which kernels, over which buffers and sizes."""

from __future__ import annotations

import sys

import pytest
from mlir import ir

from conftest import REPO
from prism.codegen.gpu import GpuLowering
from prism.codegen.gpu.spec import AttentionSpec, GemmSpec, GenericSpec, PointwiseSpec, RowSpec
from prism.infra.errors import UnsupportedOp
from prism.infra.ir import make_context
from prism.infra.passbase import PassContext

sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_workloads  # noqa: E402  (the workloads live with the benchmarks)

import prism.families  # noqa: E402,F401  (registers attention's GPU kernel)


def plan(text: str, chip: str = "sm_90a"):
    """The plans of ``text``'s functions and the remarks made."""
    with make_context():
        module = ir.Module.parse(text)
        ctx = PassContext()
        lowering = GpuLowering(chip, ctx)
        lowering.plan(module)
        return {p.name: p for p in lowering.plans}, list(ctx.remarks)


# DESIGN §9's kernel caps: GEMM 1, SwiGLU 3, RMSNorm+linear 2, attention 2 (the plan has one step; decode's
# combine kernel is the emitter's second).
CAPS = {"gemm": 1, "gemm-dynamic-m": 1, "swiglu": 3, "rmsnorm-linear": 2, "attention": 1, "causal-attention": 1}


@pytest.mark.parametrize("dtype", gpu_workloads.DTYPES)
def test_workloads_fit_the_kernel_caps(dtype):
    seen = set()
    for workload in gpu_workloads.workloads(dtype):
        if workload.family in seen:
            continue
        seen.add(workload.family)
        plans, _ = plan(workload.mlir)
        (only,) = plans.values()
        if workload.family in CAPS:
            assert len(only.steps) <= CAPS[workload.family], (workload.name, [s.kind for s in only.steps])
        assert all(s.kind != "loops" for s in only.steps), (workload.name, [s.kind for s in only.steps])
    assert {"gemm", "swiglu", "rmsnorm-linear", "attention", "qk-norm-attention", "lora"} <= seen


def test_fill_is_the_accumulators_start_and_the_epilogue_is_fused():
    plans, _ = plan("""
    func.func @f(%a: tensor<77x513xbf16>, %b: tensor<513x1000xbf16>, %bias: tensor<1000xf32>,
                 %res: tensor<77x1000xbf16>) -> tensor<77x1000xbf16> {
      %z = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<77x1000xf32>
      %f = linalg.fill ins(%z : f32) outs(%e : tensor<77x1000xf32>) -> tensor<77x1000xf32>
      %c = linalg.matmul ins(%a, %b : tensor<77x513xbf16>, tensor<513x1000xbf16>) outs(%f : tensor<77x1000xf32>)
             -> tensor<77x1000xf32>
      %o = tensor.empty() : tensor<77x1000xbf16>
      %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                            affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                           iterator_types = ["parallel", "parallel"]}
          ins(%c, %bias, %res : tensor<77x1000xf32>, tensor<1000xf32>, tensor<77x1000xbf16>)
          outs(%o : tensor<77x1000xbf16>) {
      ^bb0(%x: f32, %bb: f32, %r: bf16, %out: bf16):
        %s = arith.addf %x, %bb : f32
        %t = arith.truncf %s : f32 to bf16
        %u = arith.addf %t, %r : bf16
        linalg.yield %u : bf16
      } -> tensor<77x1000xbf16>
      return %y : tensor<77x1000xbf16>
    }""")
    (step,) = plans["f"].steps
    spec = step.spec
    assert isinstance(spec, GemmSpec) and step.kind == "gemm + epilogue"
    assert (spec.m, spec.n, spec.k, spec.init_value, spec.init) == (77, 1000, 513, 0.0, None)
    assert spec.c.name == "result_0" and spec.c.dtype == "bf16"
    reads = sorted((o.kind, o.tensor.name if o.tensor else None, o.dims) for o in spec.epilogue.operands)
    assert reads == [("acc", None, ()), ("tensor", "arg_2", (1,)), ("tensor", "arg_3", (0, 1))]
    assert plans["f"].temporaries == []


def test_two_products_of_one_a_are_a_dual_gemm():
    plans, _ = plan(gpu_workloads.workloads("f16")[[w.family for w in gpu_workloads.workloads("f16")]
                                                   .index("swiglu")].mlir)
    (only,) = plans.values()
    dual, down = only.steps
    assert dual.kind == "dual gemm + epilogue" and dual.spec.b2 is not None
    assert {o.kind for o in dual.spec.epilogue.operands} == {"acc", "acc2"}
    assert down.kind == "gemm" and down.spec.a.name == dual.spec.c.name


def test_rmsnorm_is_one_row_kernel_before_the_gemm():
    workload = next(w for w in gpu_workloads.workloads("bf16") if w.family == "rmsnorm-linear")
    plans, _ = plan(workload.mlir)
    rows, gemm = next(iter(plans.values())).steps
    assert isinstance(rows.spec, RowSpec) and isinstance(gemm.spec, GemmSpec)
    assert [r.combine for r in rows.spec.reductions] == ["add"]
    (output,) = rows.spec.outputs
    assert output.tensor.name == gemm.spec.a.name and not output.per_row


def test_attention_is_one_kernel_with_its_layout():
    workload = next(w for w in gpu_workloads.workloads("f16") if w.family == "attention")
    plans, _ = plan(workload.mlir)
    (step,) = next(iter(plans.values())).steps
    spec = step.spec
    assert isinstance(spec, AttentionSpec)
    assert spec.d == spec.dv == 128 and spec.scale == pytest.approx(128 ** -0.5, rel=1e-3)  # the constant is f16


def test_dynamic_sizes_are_symbols_read_from_the_arguments():
    workload = next(w for w in gpu_workloads.workloads("f16") if w.family == "gemm-dynamic-m")
    plans, _ = plan(workload.mlir)
    only = next(iter(plans.values()))
    assert only.sizes == {"size_0": {"input": "arg_0", "dim": 0}}
    (step,) = only.steps
    assert step.spec.m == "size_0" and only.outputs[0].shape == ("size_0", 4096)


def test_one_dynamic_size_written_two_ways_is_one_symbol():
    """Two dynamic rows joined: the collapse's size is the product of its group, and the init rebuilt at the
    joined shape gets the same product from arith.muli, in the other order. Both are one symbol, so the row
    kernel's output is as long as its rows."""
    text = """func.func @f(%x: tensor<?x?x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x32xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x32xf32>
  %rows = arith.muli %s, %b : index
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x?x32xf32> into tensor<?x32xf32>
  %e = tensor.empty(%rows) : tensor<?x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%flat : tensor<?x32xf32>) outs(%e : tensor<?x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}"""
    plans, _ = plan(text)
    only = plans["f"]
    assert only.sizes == {"size_0": {"input": "arg_0", "dim": 0}, "size_1": {"input": "arg_0", "dim": 1},
                          "size_2": {"expr": "size_0 * size_1"}}, only.sizes
    assert only.outputs[0].shape == ("size_2", 32)


def test_other_ops_take_the_generic_kernel():
    plans, _ = plan("""
    func.func @f(%a: tensor<8x5x33xf32>) -> tensor<8x33xf32> {
      %z = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<8x33xf32>
      %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x33xf32>) -> tensor<8x33xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k, j)>, affine_map<(i, k, j) -> (i, j)>],
                           iterator_types = ["parallel", "reduction", "parallel"]}
          ins(%a : tensor<8x5x33xf32>) outs(%f : tensor<8x33xf32>) {
      ^bb0(%x: f32, %o: f32):
        %s = arith.addf %x, %o : f32
        linalg.yield %s : f32
      } -> tensor<8x33xf32>
      return %r : tensor<8x33xf32>
    }""")
    (step,) = plans["f"].steps
    assert isinstance(step.spec, GenericSpec) and step.spec.inits == (0.0,)
    assert step.spec.iterators == ("parallel", "reduction", "parallel")


def test_views_share_buffers_and_returned_arguments_are_copied():
    plans, _ = plan("""
    func.func @f(%a: tensor<4x6xf32>) -> (tensor<24xf32>, tensor<4x6xf32>) {
      %e = tensor.empty() : tensor<4x6xf32>
      %n = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                           iterator_types = ["parallel", "parallel"]}
          ins(%a : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
      ^bb0(%x: f32, %o: f32):
        %y = arith.negf %x : f32
        linalg.yield %y : f32
      } -> tensor<4x6xf32>
      %v = tensor.collapse_shape %n [[0, 1]] : tensor<4x6xf32> into tensor<24xf32>
      return %v, %a : tensor<24xf32>, tensor<4x6xf32>
    }""")
    neg, copy = plans["f"].steps
    assert isinstance(neg.spec, PointwiseSpec) and neg.spec.out.name == "result_0"
    assert copy.kind == "copy" and copy.spec.out.name == "result_1"
    assert plans["f"].temporaries == []


def test_a_function_that_cannot_run_leaves_the_others():
    plans, remarks = plan("""
    func.func @good(%a: tensor<4xf32>) -> tensor<4xf32> {
      %e = tensor.empty() : tensor<4xf32>
      %n = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                           iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
      ^bb0(%x: f32, %o: f32):
        %y = math.exp %x : f32
        linalg.yield %y : f32
      } -> tensor<4xf32>
      return %n : tensor<4xf32>
    }
    func.func @bad(%a: tensor<4xf32>) -> tensor<4xf32> {
      %p = arith.constant 0.0 : f32
      %c = tensor.pad %a low[1] high[1] { ^bb0(%i: index): tensor.yield %p : f32 } : tensor<4xf32> to tensor<6xf32>
      %s = tensor.extract_slice %c[0] [4] [1] : tensor<6xf32> to tensor<4xf32>
      return %s : tensor<4xf32>
    }""")
    assert list(plans) == ["good"]
    assert any("@bad stays off the GPU" in str(r) and "tensor.pad" in str(r) for r in remarks)


def test_a_module_with_no_function_for_the_gpu_is_an_error_at_the_op():
    with pytest.raises(UnsupportedOp, match="tensor.pad") as error:
        plan("""
        func.func @bad(%a: tensor<4xf32>) -> tensor<6xf32> {
          %p = arith.constant 0.0 : f32
          %c = tensor.pad %a low[1] high[1] { ^bb0(%i: index): tensor.yield %p : f32 } : tensor<4xf32> to tensor<6xf32>
          return %c : tensor<6xf32>
        }""")
    assert error.value.location
