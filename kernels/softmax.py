"""Row softmax: ``y[i, :] = exp(x[i, :] - max) / sum(exp(x[i, :] - max))``.

Each program normalizes ``BLOCK_M`` rows, each held whole in registers (``BLOCK_N`` is the
row length rounded up to a power of two; the tail is masked with ``-inf``). Math is in
float32; the output has the input's dtype.
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from functrax.lowering.fusion.types import GroupKind
from kernels import launcher as _launch

__all__ = ["softmax_kernel", "softmax", "build", "reference", "CONFIGS", "pick_config",
           "compile_sm90"]

# Rows per program and warps, by row length: short rows batch several rows per program.
CONFIGS = (
    {"max_n": 256, "BLOCK_M": 16, "num_warps": 4},
    {"max_n": 2048, "BLOCK_M": 4, "num_warps": 8},
    {"max_n": 16384, "BLOCK_M": 1, "num_warps": 16},
)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, N_ROWS: tl.constexpr, N_COLS: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < N_ROWS) & (cols[None, :] < N_COLS)
    offs = rows[:, None].to(tl.int64) * N_COLS + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=1)[:, None]
    e = tl.exp(x)
    y = e / tl.sum(e, axis=1)[:, None]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def pick_config(n_cols: int) -> dict:
    """The first of :data:`CONFIGS` whose ``max_n`` covers ``n_cols``."""
    for cfg in CONFIGS:
        if n_cols <= cfg["max_n"]:
            return cfg
    raise ValueError(f"softmax: rows of {n_cols} elements do not fit in registers (at most "
                     f"{CONFIGS[-1]['max_n']}); use a looped softmax instead")


def build(x: np.ndarray, block_m: int | None = None):
    """The runtime kernel for ``x`` (2-D, float16/float32); ``block_m`` overrides the
    config's rows per program."""
    _launch.check_float("softmax", "x", x, 2)
    n_rows, n_cols = x.shape
    cfg = pick_config(n_cols)
    block_m = block_m or cfg["BLOCK_M"]
    block_m = min(block_m, _launch.next_pow2(n_rows))
    constexprs = {"N_ROWS": n_rows, "N_COLS": n_cols, "BLOCK_M": block_m,
                  "BLOCK_N": _launch.next_pow2(n_cols)}
    grid = (triton.cdiv(n_rows, block_m),)
    return _launch.make_kernel(softmax_kernel, GroupKind.REDUCTION, [x], [(x.shape, x.dtype)],
                               constexprs, grid, cfg["num_warps"])


def softmax(x, block_m: int | None = None) -> np.ndarray:
    """Softmax over the last axis of a 2-D float16/float32 array.

    >>> softmax(np.zeros((2, 3), np.float32))  # doctest: +SKIP
    array([[0.333, 0.333, 0.333], [0.333, 0.333, 0.333]], dtype=float32)
    """
    x = np.ascontiguousarray(x)
    (y,) = build(x, block_m)(x)
    return y


def reference(x) -> np.ndarray:
    """numpy softmax over the last axis (float32 math, output in ``x``'s dtype)."""
    x = np.asarray(x)
    z = x.astype(np.float32)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def compile_sm90(shape=(128, 1000), dtype=np.float32):
    """PTX + cubin of the kernel for an input of ``shape``/``dtype`` (no GPU needed)."""
    return _launch.compile_kernel(build(np.empty(shape, dtype)))
