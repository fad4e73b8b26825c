"""The MLIR text builder (prism.codegen.text): regions as with blocks, else branches, shares, aligned buffers."""

from __future__ import annotations

import textwrap

import pytest
from mlir import ir

from prism.codegen import text as text_module
from prism.codegen.text import ALIGNMENT, TextBuilder, aligned_alloc
from prism.infra.ir import make_context


def parse(text: str) -> ir.Module:
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        assert module.operation.verify()
        return module


def test_nested_regions_close_in_order_and_constants_follow_the_header() -> None:
    t = TextBuilder()
    with t.region("func.func @f(%m: memref<?x?xf32>, %n: index)"):
        zero = t.value("arith.constant 0.0 : f32", "z")
        with t.for_(t.const(0), "%n", t.const(1), "i") as i, t.for_(t.const(0), "%n", t.const(2), "j") as j:
            t.add(f"memref.store {zero}, %m[{i}, {j}] : memref<?x?xf32>")
        t.add("return")
    assert t.depth == 0
    assert t.function_text() == "\n".join([
        "func.func @f(%m: memref<?x?xf32>, %n: index) {",
        "  %c0 = arith.constant 0 : index",
        "  %c1 = arith.constant 1 : index",
        "  %c2 = arith.constant 2 : index",
        "  %z1 = arith.constant 0.0 : f32",
        "  scf.for %i2 = %c0 to %n step %c1 {",
        "    scf.for %j3 = %c0 to %n step %c2 {",
        "      memref.store %z1, %m[%i2, %j3] : memref<?x?xf32>",
        "    }",
        "  }",
        "  return",
        "}"])
    parse(t.function_text())


def test_if_with_results_and_else() -> None:
    t = TextBuilder()
    with t.region("func.func @f(%c: i1, %x: f32) -> (f32, f32)"):
        with t.if_("%c", ["f32", "f32"], "sel") as results:
            t.yield_(["%x", "%x"], ["f32", "f32"])
        with t.else_():
            zero = t.value("arith.constant 0.0 : f32", "z")
            t.yield_([zero, zero], ["f32", "f32"])
        t.add(f"return {', '.join(results)} : f32, f32")
    assert results == ["%sel1#0", "%sel1#1"]
    lines = t.function_text().splitlines()
    assert lines[1:7] == ["  %sel1:2 = scf.if %c -> (f32, f32) {",
                          "    scf.yield %x, %x : f32, f32",
                          "  } else {",
                          "    %z2 = arith.constant 0.0 : f32",
                          "    scf.yield %z2, %z2 : f32, f32",
                          "  }"]
    parse(t.function_text())


def test_else_must_follow_an_if_directly() -> None:
    t = TextBuilder()
    with pytest.raises(ValueError, match="else"), t.else_():
        pass
    with t.for_("%a", "%b", "%s"):
        pass
    with pytest.raises(ValueError, match="else"), t.else_():
        pass  # an scf.for has no else region
    with t.if_("%c"):
        pass
    t.add("%x = arith.constant 1 : index")
    with pytest.raises(ValueError, match="else"), t.else_():
        pass
    with t.if_("%c"):
        with t.if_("%d"):
            pass
        t.add("%y = arith.constant 2 : index")
    with t.else_():  # the outer if's: its closing line is the last one
        pass
    assert t.lines[-3:] == ["  %y = arith.constant 2 : index", "} else {", "}"]
    assert t.depth == 0


def test_an_exception_in_a_region_leaves_the_builder_at_its_depth() -> None:
    t = TextBuilder()
    with t.region("func.func @f(%c: i1)"):
        with pytest.raises(RuntimeError), t.for_(t.const(0), t.const(4), t.const(1)), t.if_("%c"):
            t.add("%a = arith.constant 1 : index")
            raise RuntimeError("inside")
        assert t.depth == 1
        with pytest.raises(ValueError, match="else"), t.else_():
            pass  # the if that raised cannot take an else
        with t.if_("%c"):
            pass
        t.add("return")
    assert t.depth == 0
    # Every region that was entered is closed, so the text still nests.
    assert t.function_text().splitlines()[4:] == [
        "  scf.for %i1 = %c0 to %c4 step %c1 {",
        "    scf.if %c {",
        "      %a = arith.constant 1 : index",
        "    }",
        "  }",
        "  scf.if %c {",
        "  }",
        "  return",
        "}"]
    parse(t.function_text())


def test_a_loop_carrying_values() -> None:
    t = TextBuilder()
    with t.region("func.func @sum(%m: memref<?xf32>, %n: index) -> f32"):
        zero = t.value("arith.constant 0.0 : f32", "z")
        with t.for_carried(t.const(0), "%n", t.const(1), [zero], "f32", ("k", "acc", "out")) as loop:
            x = t.value(f"memref.load %m[{loop.iv}] : memref<?xf32>", "x")
            t.yield_([t.value(f"arith.addf {loop.args[0]}, {x} : f32", "s")], ["f32"])
        t.add(f"return {loop.results[0]} : f32")
    assert "%out4:1 = scf.for %k2 = %c0 to %n step %c1 iter_args(%acc3 = %z1) -> (f32) {" in t.function_text()
    parse(t.function_text())


def test_aligned_allocation() -> None:
    assert aligned_alloc("memref<4x?xf32>", ["%n"]) == "memref.alloc(%n) {alignment = 64 : i64} : memref<4x?xf32>"
    t = TextBuilder()
    with t.region("func.func @f(%n: index)"):
        buffer = t.alloc("memref<4x?xf32>", ["%n"], "buf")
        scratch = t.alloc("memref<8xf32>")
        t.add(f"memref.dealloc {buffer} : memref<4x?xf32>")
        t.add(f"memref.dealloc {scratch} : memref<8xf32>")
        t.add("return")
    module = parse(t.function_text())
    allocs = [op for op in module.body.operations[0].regions[0].blocks[0].operations if op.name == "memref.alloc"]
    assert [ir.IntegerAttr(op.attributes["alignment"]).value for op in allocs] == [ALIGNMENT, ALIGNMENT]
    assert buffer == "%buf1"


def test_a_worker_share_is_a_parallel_loop_over_the_workers() -> None:
    t = TextBuilder()
    with t.region("func.func @f(%m: memref<?xindex>, %n: index)"):
        with t.share("%n", 3) as (worker, begin, end), t.for_(begin, end, t.const(1), "i") as i:
            t.add(f"memref.store {worker}, %m[{i}] : memref<?xindex>")
        t.add("return")
    lines = t.function_text().splitlines()
    assert "  %share1 = arith.ceildivui %n, %c3 : index" in lines
    assert "  scf.parallel (%w2) = (%c0) to (%c3) step (%c1) {" in lines
    assert "    %end5 = arith.minui %v4, %n : index" in lines
    assert t.depth == 0
    parse(t.function_text())


def test_the_end_of_whole_steps() -> None:
    t = TextBuilder()
    assert t.whole_end("%n", "%c8", hint="w") == "%w2"
    assert t.whole_end("%n", "%c8", lo="%j", hint="e") == "%e6"
    assert t.lines == ["%v1 = arith.divui %n, %c8 : index", "%w2 = arith.muli %v1, %c8 : index",
                       "%v3 = arith.subi %n, %j : index", "%v4 = arith.divui %v3, %c8 : index",
                       "%v5 = arith.muli %v4, %c8 : index", "%e6 = arith.addi %j, %v5 : index"]


def test_the_docstring_example_writes_a_valid_function(capsys: pytest.CaptureFixture[str]) -> None:
    doc = text_module.__doc__
    example = doc[doc.index("Example::") + len("Example::"):doc.index("writes ``")]
    exec(textwrap.dedent(example), {"TextBuilder": TextBuilder})
    module = parse(capsys.readouterr().out)
    assert [op.operation.name for op in module.body.operations] == ["func.func"]


def test_a_region_with_a_tail_and_the_plain_text() -> None:
    t = TextBuilder()
    with t.region("module"), t.region("func.func @f()", ' loc("here")'):
        t.add("return")
    assert t.text() == '\n'.join(["module {", "  func.func @f() {", "    return", '  } loc("here")', "}"])
    parse(t.text())


def test_names_from_hints_ending_in_digits_never_collide() -> None:
    """``r2`` at count 83 and ``r`` at count 283 would both be ``%r283`` without a separator."""
    builder = TextBuilder()
    names = [builder.fresh(hint) for _ in range(300) for hint in ("r", "r2", "r28")]
    assert len(set(names)) == len(names)
