"""Flash-style attention forward: ``o = softmax(q @ k.T * scale [+ causal mask]) @ v``.

Each program owns ``BLOCK_M`` query rows of one batch-and-head slice (grid
``(cdiv(Lq, BLOCK_M), batch)``) and streams the keys and values in ``BLOCK_N`` blocks with an
*online softmax*: it keeps the running row maximum ``m``, the running normalizer ``l`` and an
unnormalized float32 output tile, rescaling both by ``exp(m_old - m_new)`` whenever the
maximum grows, so the ``Lq x Lk`` score matrix is never stored. With ``causal``, query ``i``
sees keys ``j <= i`` (JAX's ``dot_product_attention(is_causal=True)``: a lower-triangular
mask aligned at the top left), and key blocks entirely above the diagonal are skipped.

``q (..., Lq, D)``, ``k (..., Lk, D)`` and ``v (..., Lk, Dv)`` (equal leading dims,
flattened into the batch grid axis) are float16 or float32; ``tl.dot`` runs on the input
dtype with float32 accumulation (float32 inputs use ``precision``: ``"ieee"`` by default,
``"tf32"`` as JAX's default on a GPU) and the output has the inputs' dtype (or
``out_dtype``). With no keys (``Lk == 0``) every output row is NaN (0 / 0), as a softmax over
nothing.
"""
from __future__ import annotations

import math

import numpy as np
import triton
import triton.language as tl

from functrax.lowering.fusion.types import GroupKind
from kernels import launcher as _launch

__all__ = ["attention_kernel", "attention", "build", "reference", "CONFIGS", "pick_config",
           "compile_sm90"]

# By head dim: query rows and key rows per block, warps (tl.dot wants blocks >= 16).
CONFIGS = (
    {"max_d": 64, "BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4},
    {"max_d": 128, "BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4},
    {"max_d": 256, "BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 8},
)


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, LQ: tl.constexpr, LK: tl.constexpr,
                     D: tl.constexpr, DV: tl.constexpr, SCALE: tl.constexpr,
                     CAUSAL: tl.constexpr, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    dq = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_DV)
    row_mask = rows < LQ
    q = tl.load(q_ptr + bh * (LQ * D) + rows[:, None] * D + dq[None, :],
                mask=row_mask[:, None] & (dq[None, :] < D), other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    hi = LK
    if CAUSAL:  # keys after the block's last query row are masked for every row
        hi = tl.minimum(LK, (pid + 1) * BLOCK_M)
    for start in range(0, hi, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        col_mask = cols < LK
        kt = tl.load(k_ptr + bh * (LK * D) + cols[None, :] * D + dq[:, None],
                     mask=col_mask[None, :] & (dq[:, None] < D), other=0.0)
        s = tl.dot(q, kt, input_precision=PRECISION) * SCALE
        valid = col_mask[None, :]
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # no key seen yet
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + bh * (LK * DV) + cols[:, None] * DV + dv[None, :],
                    mask=col_mask[:, None] & (dv[None, :] < DV), other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + bh * (LQ * DV) + rows[:, None] * DV + dv[None, :],
             o.to(o_ptr.dtype.element_ty), mask=row_mask[:, None] & (dv[None, :] < DV))


def pick_config(d: int) -> dict:
    """The first of :data:`CONFIGS` whose ``max_d`` covers the head dim ``d``."""
    for cfg in CONFIGS:
        if max(d, 1) <= cfg["max_d"]:
            return cfg
    raise ValueError(f"attention: head dim {d} exceeds {CONFIGS[-1]['max_d']} (the q/k/v "
                     "tiles must fit in registers); split the heads")


def _check(q, k, v):
    for name, x in (("q", q), ("k", k), ("v", v)):
        if x.dtype not in (np.float16, np.float32):
            raise TypeError(f"attention: {name} must be float16 or float32, got {x.dtype}; "
                            f"convert it with {name}.astype(np.float32)")
        if x.ndim < 2:
            raise ValueError(f"attention: {name} must have shape (..., length, dim), got "
                             f"{x.shape}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"attention: q, k and v must have one dtype, got {q.dtype}, "
                        f"{k.dtype} and {v.dtype}")
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ValueError(f"attention: q, k and v must have equal leading (batch, head) dims, "
                         f"got shapes {q.shape}, {k.shape} and {v.shape}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"attention: q (..., Lq, D), k (..., Lk, D) and v (..., Lk, Dv) "
                         f"disagree: got shapes {q.shape}, {k.shape} and {v.shape}")


def build(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False,
          scale: float | None = None, block_m: int | None = None, block_n: int | None = None,
          precision: str = "ieee", out_dtype=None):
    """The runtime kernel for ``q``, ``k``, ``v`` of shapes ``(..., Lq, D)``, ``(..., Lk,
    D)``, ``(..., Lk, Dv)``; ``scale`` defaults to ``1 / sqrt(D)``; the output has
    ``out_dtype`` (float16 or float32; default: the inputs' dtype)."""
    _check(q, k, v)
    lq, d = q.shape[-2:]
    lk, dv = v.shape[-2:]
    batch = math.prod(q.shape[:-2])
    cfg = pick_config(max(d, dv))
    bm = block_m or min(cfg["BLOCK_M"], max(16, _launch.next_pow2(lq)))
    bn = block_n or min(cfg["BLOCK_N"], max(16, _launch.next_pow2(lk)))
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    constexprs = {"LQ": lq, "LK": lk, "D": d, "DV": dv, "SCALE": scale, "CAUSAL": bool(causal),
                  "PRECISION": precision, "BLOCK_M": bm, "BLOCK_N": bn,
                  "BLOCK_D": max(16, _launch.next_pow2(d)),
                  "BLOCK_DV": max(16, _launch.next_pow2(dv))}
    grid = (max(1, triton.cdiv(lq, bm)), max(1, batch))
    out_dtype = np.dtype(q.dtype if out_dtype is None else out_dtype)
    if out_dtype not in (np.float16, np.float32):
        raise TypeError(f"attention: out_dtype must be float16 or float32, got {out_dtype}")
    out = (q.shape[:-1] + (dv,), out_dtype)
    return _launch.make_kernel(attention_kernel, GroupKind.MATMUL, [q, k, v], [out],
                               constexprs, grid, cfg["num_warps"])


def attention(q, k, v, causal: bool = False, scale: float | None = None,
              block_m: int | None = None, block_n: int | None = None,
              precision: str = "ieee") -> np.ndarray:
    """Scaled dot-product attention of float16/float32 ``q``, ``k``, ``v``.

    >>> o = attention(q, k, v, causal=True)  # doctest: +SKIP
    """
    q, k, v = (np.ascontiguousarray(a) for a in (q, k, v))
    (o,) = build(q, k, v, causal, scale, block_m, block_n, precision)(q, k, v)
    return o


def reference(q, k, v, causal: bool = False, scale: float | None = None) -> np.ndarray:
    """numpy attention in float32 (the whole score matrix), output in ``q``'s dtype."""
    q = np.asarray(q)
    qf, kf, vf = (np.asarray(a, np.float32) for a in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (qf @ np.swapaxes(kf, -1, -2)) * np.float32(scale)
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.tril(np.ones((lq, lk), bool)), s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
    return (p @ vf).astype(q.dtype)


def compile_sm90(batch=4, length=256, d=64, dtype=np.float16, causal: bool = True):
    """PTX + cubin of the kernel for ``(batch, length, d)`` inputs of ``dtype`` (no GPU)."""
    q = np.empty((batch, length, d), dtype)
    return _launch.compile_kernel(build(q, q, q, causal))
