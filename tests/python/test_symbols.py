"""A program's own symbols never clash with the names Prism writes (tasks, the thread pool's entry, families,
prepared parts, kernels) nor with those of the runtime it links against: the names Prism writes are chosen
around the program's, and the few the runtime owns are refused at the user's function."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import prism
from conftest import EXAMPLES, run_cli
from prism.driver import Compilation, steps_for
from prism.infra.ir import SourceChunk, iter_ops, make_context, parse_chunk

# Names Prism writes for @f, or its runtime defines: a program may use every one of them.
GENERATED = ["prism_parallel_for", "prism_parallel_for_1", "prism_pool_start", "prism_pool_entry", "f_family0",
             "f_prepare", "f_apply", "__prism_task_f_0", "__prism_task_f_0_launch", "__prism_task_f_0_entry",
             "__prism_task_user_0", "__prism_gemm_0", "prism_candidate"]


def program(user: str) -> str:
    """@f: a product (a family, run as parallel tasks) of an invariant weight, then a call of @user (-x)."""
    return f"""
func.func @{user}(%x: tensor<64x48xf32>) -> tensor<64x48xf32> {{
  %e = tensor.empty() : tensor<64x48xf32>
  %r = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%x : tensor<64x48xf32>) outs(%e : tensor<64x48xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }} -> tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}}
func.func @f(%a: tensor<64x96xf32>, %b: tensor<96x48xf32> {{prism.invariant}}) -> tensor<64x48xf32> {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x96xf32>, tensor<96x48xf32>) outs(%c : tensor<64x48xf32>)
      -> tensor<64x48xf32>
  %u = func.call @{user}(%m) : (tensor<64x48xf32>) -> tensor<64x48xf32>
  return %u : tensor<64x48xf32>
}}
"""


@pytest.mark.parametrize("user", GENERATED)
def test_a_function_named_like_a_generated_one_compiles_and_runs(user: str, rng: np.random.Generator) -> None:
    compiled = prism.compile(program(user), target="host")
    a = rng.standard_normal((64, 96)).astype(np.float32)
    b = rng.standard_normal((96, 48)).astype(np.float32)
    want = -(a.astype(np.float64) @ b)
    np.testing.assert_allclose(compiled.jit("f")(a, b), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(compiled.bind("f", b=b)(a), want, rtol=1e-4, atol=1e-4)
    x = rng.standard_normal((64, 48)).astype(np.float32)
    np.testing.assert_array_equal(compiled.jit(user)(x), -x)


def test_the_pool_entry_is_renamed_around_the_program(tmp_path: Path) -> None:
    """The lowered module calls the pool under a name the program leaves free, marked as the pool's entry."""
    source = tmp_path / "pool.mlir"
    source.write_text(program("prism_parallel_for"))
    result = run_cli(str(source), "--target=host", "--emit=llvm")
    assert result.returncode == 0, result.stderr
    assert re.search(r"llvm\.func @prism_parallel_for_1\(!llvm\.ptr, !llvm\.ptr, i64, i64\) attributes "
                     r"\{prism\.pool_entry\}", result.stdout)
    assert "llvm.call @prism_parallel_for_1(" in result.stdout
    # Without the clash, the entry is declared as before, unmarked.
    source.write_text(program("user"))
    result = run_cli(str(source), "--target=host", "--emit=llvm")
    assert "llvm.func @prism_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64)\n" in result.stdout


def test_every_generated_name_through_the_cli(tmp_path: Path) -> None:
    source = tmp_path / "names.mlir"
    source.write_text("\n// -----\n".join(program(user) for user in GENERATED))
    result = run_cli(str(source), "--split-input-file", "--target=host", "--emit=llvm", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "error" not in result.stderr


@pytest.mark.parametrize("user, message", [
    ("malloc", "@malloc: the lowered program calls the C library's malloc, so no function of the program may be "
               "named so; rename it"),
    ("_mlir_ciface_f", "@_mlir_ciface_f is the name of @f's C interface, which the lowering writes; rename it"),
])
def test_names_the_runtime_owns_are_refused_at_the_function(user: str, message: str, tmp_path: Path) -> None:
    source = tmp_path / "reserved.mlir"
    source.write_text(program(user))
    result = run_cli(str(source), "--target=host", "--emit=llvm")
    assert result.returncode == 1
    assert re.search(rf"reserved\.mlir:2:1: error: .*{re.escape(message)}", result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    with pytest.raises(prism.PrismError, match=re.escape(message)):
        prism.compile(program(user), target="host").jit("f")


@pytest.mark.parametrize("example", ["gemm.mlir", "gemm_f16_transposed.mlir"])
def test_no_lowered_op_is_located_in_generated_text(example: str) -> None:
    """Kernels, tasks and prepared weights are written as text and parsed: their ops take the location of the
    user's op they implement, so no diagnostic can point into a generated buffer ("-")."""
    source = EXAMPLES / example
    compilation = Compilation(parse_chunk(SourceChunk(source.read_text(), str(source), 0), make_context()), "host")
    compilation.run(steps_for(None, "llvm"))
    compilation.lower()
    locations = {str(op.location) for op in iter_ops(compilation.module)}
    assert not [where for where in locations if '"-"' in where]
    assert any(example in where for where in locations)
