"""Tiled matmul ``c = epilogue(a @ b)`` with ``tl.dot`` and a float32 accumulator.

Each program computes one ``BLOCK_M x BLOCK_N`` tile of ``c``, stepping over ``K`` in
``BLOCK_K`` chunks; loads are masked, so any ``M, N, K`` works. Before the store an epilogue
from :data:`EPILOGUES` (a ``tl.constexpr`` choice) is applied to the float32 tile:

- ``"none"``: the product itself;
- ``"relu"``: ``max(acc, 0)``;
- ``"bias"``: ``acc + bias[None, :]``;
- ``"bias_relu"``: ``max(acc + bias[None, :], 0)``.

The output has the inputs' dtype (as ``jnp.matmul``); float32 inputs use IEEE float32 dots
unless ``precision="tf32"``.
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from functrax.lowering.fusion.types import GroupKind
from kernels import launcher as _launch

__all__ = ["matmul_kernel", "matmul", "build", "reference", "EPILOGUES", "CONFIGS",
           "pick_config", "compile_sm90"]

EPILOGUES = ("none", "relu", "bias", "bias_relu")
_USES_BIAS = ("bias", "bias_relu")

# Tile configs, smallest first (``tl.dot`` wants every block dim >= 16).
CONFIGS = (
    {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 1},
    {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4},
    {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8},
)


@triton.jit
def _epilogue(acc, bias_ptr, cols, col_mask, EPILOGUE: tl.constexpr):
    """The float32 tile after the ``EPILOGUE`` of :data:`EPILOGUES`."""
    if EPILOGUE == "bias" or EPILOGUE == "bias_relu":
        bias = tl.load(bias_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        acc = acc + bias[None, :]
    if EPILOGUE == "relu" or EPILOGUE == "bias_relu":
        acc = tl.maximum(acc, 0.0)
    return acc


@triton.jit
def matmul_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr,
                  K: tl.constexpr, EPILOGUE: tl.constexpr, PRECISION: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_mask = rows < M
    col_mask = cols < N
    a_ptrs = a_ptr + rows[:, None].to(tl.int64) * K + ks[None, :]
    b_ptrs = b_ptr + ks[:, None].to(tl.int64) * N + cols[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + ks) < K
        a = tl.load(a_ptrs, mask=row_mask[:, None] & k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None] & col_mask[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    acc = _epilogue(acc, bias_ptr, cols, col_mask, EPILOGUE)
    c_ptrs = c_ptr + rows[:, None].to(tl.int64) * N + cols[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=row_mask[:, None] & col_mask[None, :])


def pick_config(m: int, n: int, k: int) -> dict:
    """The smallest of :data:`CONFIGS` whose tile covers ``(m, n)`` (the largest if none)."""
    for cfg in CONFIGS:
        if cfg["BLOCK_M"] >= m and cfg["BLOCK_N"] >= n:
            return cfg
    return CONFIGS[-1]


def _check(a, b, bias, epilogue):
    _launch.check_float("matmul", "a", a, 2)
    _launch.check_float("matmul", "b", b, 2)
    if a.dtype != b.dtype:
        raise TypeError(f"matmul: a and b must have one dtype, got {a.dtype} and {b.dtype}; "
                        "cast one with .astype")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: contracting dimensions differ: a has shape {a.shape} and "
                         f"b has shape {b.shape} (a.shape[1] must equal b.shape[0])")
    if epilogue not in EPILOGUES:
        raise ValueError(f"matmul: unknown epilogue {epilogue!r}; choose one of {EPILOGUES}")
    if (bias is not None) != (epilogue in _USES_BIAS):
        raise ValueError(f"matmul: epilogue {epilogue!r} "
                         + ("needs a bias" if bias is None else "takes no bias")
                         + f"; the bias epilogues are {_USES_BIAS}")
    if bias is not None:
        _launch.check_float("matmul", "bias", bias, 1)
        if bias.shape != (b.shape[1],):
            raise ValueError(f"matmul: bias must have shape ({b.shape[1]},) to match the "
                             f"output columns, got {bias.shape}")


def build(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None,
          epilogue: str = "none", config: dict | None = None, precision: str = "ieee"):
    """The runtime kernel for ``a (M, K) @ b (K, N)``; returns ``(kernel, bias buffer)``
    (a one-element dummy when the epilogue takes no bias)."""
    _check(a, b, bias, epilogue)
    (m, k), n = a.shape, b.shape[1]
    cfg = config or pick_config(m, n, k)
    if bias is None:
        bias = np.zeros(1, a.dtype)
    constexprs = {"M": m, "N": n, "K": k, "EPILOGUE": epilogue, "PRECISION": precision,
                  **{d: cfg[d] for d in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}}
    grid = (triton.cdiv(m, cfg["BLOCK_M"]), triton.cdiv(n, cfg["BLOCK_N"]))
    kernel = _launch.make_kernel(matmul_kernel, GroupKind.MATMUL, [a, b, bias],
                                 [((m, n), a.dtype)], constexprs, grid, cfg["num_warps"])
    return kernel, bias


def matmul(a, b, bias=None, epilogue: str = "none", config: dict | None = None,
           precision: str = "ieee") -> np.ndarray:
    """``epilogue(a @ b)`` of 2-D float16/float32 arrays (float32 accumulation).

    >>> matmul(a, b, bias, epilogue="bias_relu")  # doctest: +SKIP
    """
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    bias = None if bias is None else np.ascontiguousarray(bias)
    kernel, bias = build(a, b, bias, epilogue, config, precision)
    (c,) = kernel(a, b, bias)
    return c


def reference(a, b, bias=None, epilogue: str = "none") -> np.ndarray:
    """numpy ``epilogue(a @ b)`` in float32, output in ``a``'s dtype."""
    a = np.asarray(a)
    acc = a.astype(np.float32) @ np.asarray(b, np.float32)
    if epilogue in _USES_BIAS:
        acc = acc + np.asarray(bias, np.float32)
    if epilogue in ("relu", "bias_relu"):
        acc = np.maximum(acc, 0.0)
    return acc.astype(a.dtype)


def compile_sm90(m=256, n=256, k=128, dtype=np.float16, epilogue: str = "bias_relu",
                 config: dict | None = None):
    """PTX + cubin of the kernel for ``(m, k) @ (k, n)`` of ``dtype`` (no GPU needed)."""
    a, b = np.empty((m, k), dtype), np.empty((k, n), dtype)
    bias = np.empty(n, dtype) if epilogue in _USES_BIAS else None
    kernel, _ = build(a, b, bias, epilogue, config or CONFIGS[2])
    return _launch.compile_kernel(kernel)
