"""Row layernorm forward: ``y = (x - mean) / sqrt(var + eps) * weight + bias`` per row.

Each program normalizes ``BLOCK_M`` rows held whole in registers (``BLOCK_N``: the row length
rounded up to a power of two, tail masked). Statistics are float32 (biased variance, as
``jax.nn``/``flax`` LayerNorm); the output has ``x``'s dtype.
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from functrax.lowering.fusion.types import GroupKind
from kernels import launcher as _launch

__all__ = ["layernorm_kernel", "layernorm", "build", "reference", "CONFIGS", "pick_config",
           "compile_sm90"]

CONFIGS = (
    {"max_n": 256, "BLOCK_M": 16, "num_warps": 4},
    {"max_n": 2048, "BLOCK_M": 4, "num_warps": 8},
    {"max_n": 16384, "BLOCK_M": 1, "num_warps": 16},
)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N_ROWS: tl.constexpr, N_COLS: tl.constexpr,
                     EPS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < N_COLS
    mask = (rows[:, None] < N_ROWS) & col_mask[None, :]
    offs = rows[:, None].to(tl.int64) * N_COLS + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / N_COLS
    xc = tl.where(mask, x - mean[:, None], 0.0)
    var = tl.sum(xc * xc, axis=1) / N_COLS
    rstd = 1.0 / tl.sqrt(var + EPS)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    y = xc * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def pick_config(n_cols: int) -> dict:
    """The first of :data:`CONFIGS` whose ``max_n`` covers ``n_cols``."""
    for cfg in CONFIGS:
        if n_cols <= cfg["max_n"]:
            return cfg
    raise ValueError(f"layernorm: rows of {n_cols} elements do not fit in registers (at "
                     f"most {CONFIGS[-1]['max_n']}); use a looped layernorm instead")


def build(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-5,
          block_m: int | None = None):
    """The runtime kernel for ``x`` (2-D) with ``weight``/``bias`` of shape ``(n_cols,)``."""
    _launch.check_float("layernorm", "x", x, 2)
    n_rows, n_cols = x.shape
    for name, v in (("weight", weight), ("bias", bias)):
        _launch.check_float("layernorm", name, v, 1)
        if v.shape != (n_cols,):
            raise ValueError(f"layernorm: {name} must have shape ({n_cols},) to match x of "
                             f"shape {x.shape}, got {v.shape}")
    cfg = pick_config(n_cols)
    block_m = min(block_m or cfg["BLOCK_M"], _launch.next_pow2(n_rows))
    constexprs = {"N_ROWS": n_rows, "N_COLS": n_cols, "EPS": float(eps), "BLOCK_M": block_m,
                  "BLOCK_N": _launch.next_pow2(n_cols)}
    grid = (triton.cdiv(n_rows, block_m),)
    return _launch.make_kernel(layernorm_kernel, GroupKind.REDUCTION, [x, weight, bias],
                               [(x.shape, x.dtype)], constexprs, grid, cfg["num_warps"])


def layernorm(x, weight, bias, eps: float = 1e-5, block_m: int | None = None) -> np.ndarray:
    """Layernorm over the last axis of a 2-D float16/float32 array.

    >>> layernorm(x, np.ones(5, np.float32), np.zeros(5, np.float32))  # doctest: +SKIP
    """
    x, weight, bias = (np.ascontiguousarray(a) for a in (x, weight, bias))
    (y,) = build(x, weight, bias, eps, block_m)(x, weight, bias)
    return y


def reference(x, weight, bias, eps: float = 1e-5) -> np.ndarray:
    """numpy layernorm over the last axis (float32 math, output in ``x``'s dtype)."""
    x = np.asarray(x)
    z = x.astype(np.float32)
    mean = z.mean(axis=-1, keepdims=True)
    var = ((z - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (z - mean) / np.sqrt(var + np.float32(eps))
    return (y * np.asarray(weight, np.float32) + np.asarray(bias, np.float32)).astype(x.dtype)


def compile_sm90(shape=(128, 1000), dtype=np.float32, eps: float = 1e-5):
    """PTX + cubin of the kernel for an input of ``shape``/``dtype`` (no GPU needed)."""
    x, wb = np.empty(shape, dtype), np.empty(shape[-1:], dtype)
    return _launch.compile_kernel(build(x, wb, wb, eps))
