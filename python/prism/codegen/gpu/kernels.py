"""Which emitter writes each planned kernel, by spec and chip."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from prism.codegen.gpu import generic
from prism.codegen.gpu.plan import Step
from prism.codegen.gpu.spec import (
    AttentionSpec,
    GemmSpec,
    GemmTile,
    GenericSpec,
    Kernel,
    PointwiseSpec,
    RowSpec,
)
from prism.infra.errors import UnsupportedOp
from prism.targets.nvidia import MAX_GRID


def emit_step(step: Step, chip: str, remark: Callable[[str], None] = lambda message: None) -> list[Kernel]:
    """The kernels of one planned step for ``chip``; ``remark`` says where a chosen tile was replaced. A launch
    whose static grid exceeds CUDA's is refused."""
    kernels = _kernels(step, chip, remark)
    for kernel in kernels:
        for axis, (extent, limit) in enumerate(zip(kernel.launch.grid, MAX_GRID, strict=True)):
            blocks = _static(extent)
            if blocks is not None and blocks > limit:
                raise UnsupportedOp(f"kernel {kernel.name} needs {blocks} blocks along grid axis {'xyz'[axis]}, "
                                    f"where CUDA allows {limit}")
    return kernels


def _static(expression: str) -> int | None:
    """The value of a grid expression without size symbols; None where it has some."""
    from prism.codegen.gpu.manifest import evaluate
    try:
        return evaluate(expression, {})
    except KeyError:
        return None


def _kernels(step: Step, chip: str, remark: Callable[[str], None]) -> list[Kernel]:
    spec = step.spec
    if isinstance(spec, GemmSpec) and step.classes:
        return [k for index, (condition, tile) in enumerate(step.classes)
                for k in _in_class(_gemm(_with_tile(spec, tile), chip, remark), condition, index,
                                   len(step.classes))]
    if isinstance(spec, GemmSpec):
        return _gemm(spec, chip, remark)
    if isinstance(spec, RowSpec):
        from prism.codegen.gpu.rows import emit_rows
        return emit_rows(spec, chip)
    if isinstance(spec, AttentionSpec):
        return _attention(spec, chip)
    if isinstance(spec, PointwiseSpec):
        from prism.codegen.gpu.rows import emit_pointwise
        return emit_pointwise(spec.name, spec.out, spec.value, chip)
    if isinstance(spec, GenericSpec):
        return generic.emit_generic(spec)
    raise TypeError(f"no emitter for {type(spec).__name__}")


def _attention(spec: AttentionSpec, chip: str) -> list[Kernel]:
    """On sm_90a, a prefill that TMA can read takes the TMA/wgmma kernel with the spec's tile (the search's
    choice, else the kernel's default); where its rows' alignment is known only at launch, the mma.sync kernel
    takes the sizes it cannot, with the same tile (without one, its own default). A decode that TMA can read
    takes the wgmma kernel's split mode and the split-KV combine kernel, with their temporaries; where its rows'
    alignment is known only at launch, the split-KV kernel of as many shares takes the other sizes, writing the
    same temporaries for the same combine kernel. Everything else (other chips and shapes, a tile chosen for
    the mma.sync kernel) takes the mma.sync and split-KV kernels."""
    from prism.codegen.gpu.attention import attention_temporaries, emit_attention
    from prism.codegen.gpu.attention_sm90 import emit_sm90_attention, kernels_problem, plan_sm90_attention, takes_sm90
    problem = kernels_problem(spec, chip)
    if problem:
        raise UnsupportedOp(f"attention {spec.name}: {problem}")
    if takes_sm90(spec, chip):
        kernels = emit_sm90_attention(spec)
        when = kernels[0].launch.when
        if when is None:
            return kernels
        if len(kernels) == 2:  # a decode: the split-KV split kernel of as many shares, then the one combine
            shares = replace(spec, splits=plan_sm90_attention(spec).splits)
            split = _renamed(emit_attention(shares, chip)[0], "_unaligned", f"not ({when})")
            return [kernels[0], replace(split, temporaries=kernels[0].temporaries), kernels[1]]
        return kernels + [_renamed(k, "_unaligned", f"not ({when})") for k in emit_attention(spec, chip)]
    temporaries = tuple(attention_temporaries(spec, chip))
    return [replace(k, temporaries=temporaries) for k in emit_attention(spec, chip)]


def _renamed(kernel: Kernel, suffix: str, when: str) -> Kernel:
    """``kernel`` named with ``suffix``, launched only where ``when`` holds."""
    name = kernel.name + suffix
    return replace(kernel, name=name, text=kernel.text.replace(f"@{kernel.name}(", f"@{name}(", 1),
                   launch=replace(kernel.launch, when=when))


# The tiles each GEMM kernel takes when the search chose none it can use: the warp-specialized wgmma kernel's
# 128 x 128 x 64 block of two consumer warpgroups, four stages deep; and the mma.sync kernel's.
WGMMA_TILE = GemmTile(BM=128, BN=128, BK=64, WM=64, WN=128, STAGES=4)
# 8 warps of 64 x 32: 64 accumulators a thread leave room for the element loads of rows TMA cannot read.
MMA_SYNC_TILE = GemmTile(BM=128, BN=128, BK=32, WM=64, WN=32, STAGES=3)
# A dual GEMM holds two accumulators: half the warp tile.
MMA_SYNC_DUAL_TILE = GemmTile(BM=128, BN=64, BK=32, WM=64, WN=32, STAGES=3)


def _gemm(spec: GemmSpec, chip: str, remark: Callable[[str], None]) -> list[Kernel]:
    """TMA + wgmma on sm_90a where TMA can read the operands, else the cp.async + mma.sync kernel; a tile the
    kernel cannot take falls back to its default tile."""
    from prism.codegen.gpu.gemm import emit_gemm, gemm_tile_problem
    if chip == "sm_90a" and spec.a.dtype in ("f16", "bf16"):  # the search chose a wgmma tile
        from prism.codegen.gpu.gemm_sm90 import emit_gemm_sm90, tma_problem
        if tma_problem(spec) is None:
            return emit_gemm_sm90(spec)
        fallback = _with_tile(spec, WGMMA_TILE)
        if tma_problem(fallback) is None:
            remark(f"the tile {_knobs(spec.tile)} does not fit the wgmma kernel ({tma_problem(spec)}); "
                   f"it takes {_knobs(WGMMA_TILE)}")
            return emit_gemm_sm90(fallback)
        # the search chose the tile for wgmma: the mma.sync kernel takes its own
    elif gemm_tile_problem(spec, chip) is None:
        return emit_gemm(spec, chip)
    else:
        default = MMA_SYNC_DUAL_TILE if spec.b2 is not None else MMA_SYNC_TILE
        remark(f"the tile {_knobs(spec.tile)} does not fit the GEMM kernel ({gemm_tile_problem(spec, chip)}); "
               f"it takes {_knobs(default)}")
    fallback = _with_tile(spec, MMA_SYNC_DUAL_TILE if spec.b2 is not None else MMA_SYNC_TILE)
    problem = gemm_tile_problem(fallback, chip)
    if problem:
        raise UnsupportedOp(f"GEMM {spec.name}: {problem}")
    return emit_gemm(fallback, chip)


def _knobs(tile: GemmTile) -> str:
    return ", ".join(f"{k}={v}" for k, v in vars(tile).items() if k != "SPLITK" or v != 1)


def _in_class(kernels: list[Kernel], condition: str, index: int, count: int) -> list[Kernel]:
    """``kernels`` of size class ``index`` (of ``count``): launched only where ``condition`` holds (and their
    own conditions), named after their class."""
    if count == 1:
        return kernels
    suffix = f"_class{index}"
    out = []
    for k in kernels:
        name = k.name + suffix
        when = f"({condition}) and ({k.launch.when})" if k.launch.when else condition
        out.append(replace(k, name=name, text=k.text.replace(f"@{k.name}(", f"@{name}(", 1),
                           launch=replace(k.launch, when=when)))
    return out


def _with_tile(spec: GemmSpec, tile: GemmTile) -> GemmSpec:
    return replace(spec, tile=tile)
