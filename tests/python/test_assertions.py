"""A program's run-time checks (``cf.assert``) on the host: a failed one raises AssertionFailed in the caller,
with the check's message at its ``cf.assert``, instead of aborting the process; checks that hold change nothing.

Every call that fails a check runs first in a child process (this file run as a script), which prints one JSON
line per call, so that an abort fails the test and never kills pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from mlir import ir

import prism
from prism.codegen.cpu import assertions
from prism.infra.ir import SourceChunk, make_context, parse_chunk
from prism.infra.passbase import PassContext
from prism.passes.lower_cpu import LowerCpuPass

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
GATHER = CORPUS / "torch_mlir_gather.mlir"
GATHER_SMALLER = ("index must be smaller than dim size", f"{GATHER}:17:5")
GATHER_LARGER = ("index must be larger or equal to 0", f"{GATHER}:19:5")

# A check in the body of a parallel generic, on every element.
ROOTS = """func.func @roots(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<256x1024xf32>) outs(%e : tensor<256x1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ok = arith.cmpf oge, %a, %zero : f32
    cf.assert %ok, "a root of a negative number"
    %s = math.sqrt %a : f32
    linalg.yield %s : f32
  } -> tensor<256x1024xf32>
  return %r : tensor<256x1024xf32>
}
"""
ROOTS_CHECK = ("a root of a negative number", 9, 5)

# A check at function level, on a scalar argument.
REPEAT = """func.func @repeat(%x: tensor<8xf32>, %n: i64) -> tensor<8xf32> {
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
"""
REPEAT_CHECK = ("the count must be positive", 4, 3)

# A check inside a parallel loop of the program's own, whose iterations the thread pool shares out.
SCALE_ROWS = """func.func @scale_rows(%x: tensor<64x512xf32>, %s: tensor<64xf32>) -> tensor<64x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %r = scf.forall (%i) in (64) shared_outs(%o = %e) -> tensor<64x512xf32> {
    %v = tensor.extract %s[%i] : tensor<64xf32>
    %ok = arith.cmpf ogt, %v, %zero : f32
    cf.assert %ok, "every scale must be positive"
    %row = tensor.extract_slice %x[%i, 0] [1, 512] [1, 1] : tensor<64x512xf32> to tensor<512xf32>
    %init = tensor.empty() : tensor<512xf32>
    %scaled = linalg.generic {indexing_maps = [affine_map<(j) -> (j)>, affine_map<(j) -> (j)>],
                              iterator_types = ["parallel"]} ins(%row : tensor<512xf32>) outs(%init : tensor<512xf32>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %v : f32
      linalg.yield %m : f32
    } -> tensor<512xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %scaled into %o[%i, 0] [1, 512] [1, 1] : tensor<512xf32> into tensor<64x512xf32>
    }
  }
  return %r : tensor<64x512xf32>
}
"""
SCALE_ROWS_CHECK = ("every scale must be positive", 7, 5)


def child(source: Path, function: str, calls: list[list[Any]], folder: Path) -> list[dict[str, Any]]:
    """Call ``function`` of ``source``, compiled for the host, on each argument list in order, in one child
    process; per call, its error (type, message, location) or its results (under ``arrays``)."""
    for index, arguments in enumerate(calls):
        np.savez(folder / f"call{index}.in.npz", *arguments)
    done = subprocess.run([sys.executable, __file__, str(source), function, str(folder), str(len(calls))],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the child exited {done.returncode}:\n{done.stderr}"
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(reports) == len(calls), done.stdout
    for index, report in enumerate(reports):
        if "results" in report:
            with np.load(folder / f"call{index}.out.npz") as saved:
                report["arrays"] = [saved[f"arr_{i}"] for i in range(report["results"])]
    return reports


def run_calls(source: str, function: str, folder: str, count: str) -> None:
    """The child: compile once, then make each call, printing a JSON line for each."""
    run = prism.compile(Path(source), target="host").jit(function)
    for index in range(int(count)):
        with np.load(Path(folder) / f"call{index}.in.npz") as saved:
            arguments = [saved[f"arr_{i}"] for i in range(len(saved.files))]
        arguments = [a[()] if a.ndim == 0 else a for a in arguments]
        try:
            results = run(*arguments)
        except prism.PrismError as error:
            report = {"error": type(error).__name__, "message": error.message, "location": error.location}
        else:
            results = results if isinstance(results, tuple) else (results,)
            np.savez(Path(folder) / f"call{index}.out.npz", *results)
            report = {"results": len(results)}
        print(json.dumps(report), flush=True)


def written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def failed(report: dict[str, Any], check: tuple[str, str]) -> None:
    """``report`` is AssertionFailed with ``check``'s message at its location."""
    message, location = check
    assert report == {"error": "AssertionFailed", "message": message, "location": location}


def gather_inputs(rng: np.random.Generator, indices: np.ndarray) -> list[Any]:
    return [rng.standard_normal((3, 2)).astype(np.float32), np.int64(1), indices.astype(np.int64)]


def test_a_gather_past_its_dimension_raises_the_first_failed_check(rng: np.random.Generator,
                                                                   tmp_path: Path) -> None:
    good = np.array([[0, 1], [1, 1], [1, 0]])
    calls = [gather_inputs(rng, np.array([[0, 5], [1, -1], [1, 0]])),
             gather_inputs(rng, np.array([[0, -1], [5, 1], [1, 0]])),
             gather_inputs(rng, good)]
    reports = child(GATHER, "main", calls, tmp_path)
    failed(reports[0], GATHER_SMALLER)
    failed(reports[1], GATHER_LARGER)
    # A failed check is the call's alone: the next call, within bounds, runs as before.
    np.testing.assert_array_equal(reports[2]["arrays"][0], np.take_along_axis(calls[2][0], good, axis=1))


def test_a_gather_within_bounds_matches_numpy(rng: np.random.Generator) -> None:
    run = prism.compile(GATHER, target="host").jit("main")
    x, n, indices = gather_inputs(rng, rng.integers(0, 2, (3, 2)))
    np.testing.assert_array_equal(run(x, n, indices), np.take_along_axis(x, indices, axis=1))


def test_a_check_in_a_generic_body_raises_at_it(rng: np.random.Generator, tmp_path: Path) -> None:
    source = written(tmp_path, "roots.mlir", ROOTS)
    x = rng.uniform(0, 4, (256, 1024)).astype(np.float32)
    bad = x.copy()
    bad[200, 7] = -1.0
    reports = child(source, "roots", [[bad], [x]], tmp_path)
    message, line, column = ROOTS_CHECK
    failed(reports[0], (message, f"{source}:{line}:{column}"))
    np.testing.assert_allclose(reports[1]["arrays"][0], np.sqrt(x), rtol=1e-6)


def test_a_check_at_function_level_raises_at_it(rng: np.random.Generator, tmp_path: Path) -> None:
    source = written(tmp_path, "repeat.mlir", REPEAT)
    x = rng.standard_normal(8).astype(np.float32)
    reports = child(source, "repeat", [[x, np.int64(0)], [x, np.int64(-3)], [x, np.int64(3)]], tmp_path)
    message, line, column = REPEAT_CHECK
    for report in reports[:2]:
        failed(report, (message, f"{source}:{line}:{column}"))
    np.testing.assert_array_equal(reports[2]["arrays"][0], x * np.float32(3))


def test_a_check_on_the_thread_pool_raises_at_it(rng: np.random.Generator, tmp_path: Path) -> None:
    source = written(tmp_path, "scale_rows.mlir", SCALE_ROWS)
    x = rng.standard_normal((64, 512)).astype(np.float32)
    s = rng.uniform(0.5, 2, 64).astype(np.float32)
    bad = s.copy()
    bad[[3, 40, 63]] = -1.0
    reports = child(source, "scale_rows", [[x, bad], [x, s]], tmp_path)
    message, line, column = SCALE_ROWS_CHECK
    failed(reports[0], (message, f"{source}:{line}:{column}"))
    np.testing.assert_array_equal(reports[1]["arrays"][0], x * s[:, None])


def test_checks_that_hold_change_no_result(rng: np.random.Generator, tmp_path: Path) -> None:
    run = prism.compile(written(tmp_path, "repeat.mlir", REPEAT), target="host").jit("repeat")
    x = rng.standard_normal(8).astype(np.float32)
    for n in (1, 2, 7):
        np.testing.assert_array_equal(run(x, np.int64(n)), x * np.float32(n))


LEAK = """
import os, sys
import numpy as np
import prism

run = prism.compile(sys.argv[1], target="host").jit("roots")
x = np.ones((256, 1024), np.float32)
x[100, 100] = -1.0
pages = lambda: int(open("/proc/self/statm").read().split()[1])
for _ in range(8):
    try:
        run(x)
    except prism.AssertionFailed:
        pass
before = pages()
for _ in range(200):
    try:
        run(x)
    except prism.AssertionFailed:
        pass
print((pages() - before) * os.sysconf("SC_PAGE_SIZE"))
"""


def test_a_failed_call_frees_its_results(tmp_path: Path) -> None:
    # 200 failed calls of a function with a 1 MiB result: 200 MiB held if their results leaked.
    source = written(tmp_path, "roots.mlir", ROOTS)
    done = subprocess.run([sys.executable, "-c", LEAK, str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < 32 << 20


def lowered(text: str, filename: str) -> ir.Module:
    module = parse_chunk(SourceChunk(text, filename), make_context())
    with module.context, ir.Location.unknown():
        LowerCpuPass(threads=2).run(module, PassContext())
    return module


# A function of the program under the entry's name: the entry takes the next free one.
TAKEN = "func.func @prism_assert_failed() {\n  return\n}\n"


def test_the_lowered_module_declares_the_entry_with_its_table() -> None:
    module = lowered(TAKEN + ROOTS, "roots.mlir")
    with module.context:
        entries = [op.operation for op in module.body.operations if assertions.is_entry(op.operation)]
        assert len(entries) == 1
        assert ir.StringAttr(entries[0].attributes["sym_name"]).value == "prism_assert_failed_1"
        message, line, column = ROOTS_CHECK
        assert assertions.table(entries[0]) == [(message, f"roots.mlir:{line + 3}:{column}")]
        assert "cf.assert" not in str(module) and "abort" not in str(module)


def test_the_entry_is_linked_under_a_name_the_program_leaves_free(rng: np.random.Generator,
                                                                   tmp_path: Path) -> None:
    source = written(tmp_path, "roots.mlir", TAKEN + ROOTS)
    x = -np.ones((256, 1024), np.float32)
    message, line, column = ROOTS_CHECK
    failed(child(source, "roots", [[x]], tmp_path)[0], (message, f"{source}:{line + 3}:{column}"))


def test_a_module_without_checks_declares_no_entry() -> None:
    module = lowered(REPEAT.replace('cf.assert %positive, "the count must be positive"', ""), "repeat.mlir")
    with module.context:
        assert not [op for op in module.body.operations if assertions.is_entry(op.operation)]
        assert "prism_assert_failed" not in str(module)


if __name__ == "__main__":
    run_calls(*sys.argv[1:])
