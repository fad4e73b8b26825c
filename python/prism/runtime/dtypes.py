"""MLIR element types as numpy dtypes, shared by the runtimes.

bf16 is ``ml_dtypes.bfloat16``, imported on first use: importing ml_dtypes
takes about 0.4 s, more than the rest of prism-opt's start, and most runs
never meet a bf16 array.
"""

from __future__ import annotations

import functools

import numpy as np

_NUMPY = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16,
          "i32": np.int32, "i64": np.int64, "i1": np.bool_, "index": np.int64}


@functools.cache
def bfloat16() -> np.dtype:
    """numpy's dtype of bf16 (``ml_dtypes.bfloat16``)."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def numpy_dtype(name: str) -> np.dtype | None:
    """The numpy dtype of the MLIR element type ``name`` (``f32``, ``bf16``, ``i1``, ``index``...); None for
    one without."""
    if name == "bf16":
        return bfloat16()
    found = _NUMPY.get(name)
    return None if found is None else np.dtype(found)


def is_bfloat16(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is bf16, without importing ml_dtypes where no bf16 array was made."""
    return np.dtype(dtype).name == "bfloat16"
