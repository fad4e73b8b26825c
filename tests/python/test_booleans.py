"""Tensors of booleans on the host: held in bytes, passed and returned as numpy bool arrays."""

from __future__ import annotations

import numpy as np
import pytest

import prism

MASKS = """
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @masks(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>, %keep: tensor<8x16xi1>)
    -> (tensor<8x16xf32>, tensor<8x16xi1>) {
  %e1 = tensor.empty() : tensor<8x16xi1>
  %gt = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e1 : tensor<8x16xi1>) {
  ^bb0(%x: f32, %y: f32, %o: i1):
    %c = arith.cmpf ogt, %x, %y : f32
    linalg.yield %c : i1
  } -> tensor<8x16xi1>
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%gt, %keep, %a, %b : tensor<8x16xi1>, tensor<8x16xi1>, tensor<8x16xf32>, tensor<8x16xf32>)
      outs(%e : tensor<8x16xf32>) {
  ^bb0(%c: i1, %k: i1, %x: f32, %y: f32, %o: f32):
    %both = arith.andi %c, %k : i1
    %s = arith.select %both, %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r, %gt : tensor<8x16xf32>, tensor<8x16xi1>
}
"""

IN_A_LOOP = """
func.func @loop(%m: tensor<4xi1>) -> tensor<4xi1> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %m) -> (tensor<4xi1>) {
    %e = tensor.empty() : tensor<4xi1>
    %n = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]} ins(%acc : tensor<4xi1>) outs(%e : tensor<4xi1>) {
    ^bb0(%x: i1, %o: i1):
      %t = arith.constant true
      %y = arith.xori %x, %t : i1
      linalg.yield %y : i1
    } -> tensor<4xi1>
    scf.yield %n : tensor<4xi1>
  }
  return %r : tensor<4xi1>
}
"""


def test_masks_are_computed_passed_and_returned_as_bools(rng: np.random.Generator) -> None:
    a, b = rng.standard_normal((2, 8, 16), np.float32)
    keep = rng.integers(0, 2, (8, 16)).astype(bool)
    selected, greater = prism.compile(MASKS, target="host").jit("masks")(a, b, keep)
    assert greater.dtype == np.bool_ and selected.dtype == np.float32
    np.testing.assert_array_equal(greater, a > b)
    np.testing.assert_array_equal(selected, np.where((a > b) & keep, a, b))


def test_booleans_carried_by_a_loop_are_left_alone_and_refused_with_a_location() -> None:
    """A function whose i1 tensors are not all on generics, fills and shape ops keeps them (no partial
    rewrite), and the host refuses it with a located error, as it does any tensor a loop carries."""
    with pytest.raises(prism.PrismError) as raised:
        prism.compile(IN_A_LOOP, target="host").jit("loop")
    assert raised.value.location is not None and "xi1" in str(raised.value.notes) + str(raised.value)


GATHERED_MASK = """
func.func @gathered(%mask: tensor<4x3xi1>, %rows: tensor<5xi64>, %x: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %e = tensor.empty() : tensor<5x3xf32>
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%rows, %x : tensor<5xi64>, tensor<5x3xf32>) outs(%e : tensor<5x3xf32>) {
  ^bb0(%row: i64, %v: f32, %o: f32):
    %i = arith.index_cast %row : i64 to index
    %j = linalg.index 1 : index
    %m = tensor.extract %mask[%i, %j] : tensor<4x3xi1>
    %s = arith.select %m, %v, %zero : f32
    linalg.yield %s : f32
  } -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}
"""


def test_a_generic_reads_a_boolean_tensor_it_captures(rng: np.random.Generator) -> None:
    mask = rng.integers(0, 2, (4, 3)).astype(bool)
    rows = rng.integers(0, 4, 5).astype(np.int64)
    x = rng.standard_normal((5, 3), np.float32)
    have = prism.compile(GATHERED_MASK, target="host").jit("gathered")(mask, rows, x)
    np.testing.assert_array_equal(have, np.where(mask[rows], x, 0))
