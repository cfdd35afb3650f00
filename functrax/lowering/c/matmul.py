"""``dot_general`` as calls of the prelude's ``ft_gemm_f32``/``ft_gemm_f64`` (BLAS).

A ``dot_general`` is one matrix product per batch index when each operand, after its leading
batch dims, holds its free dims and its contracting dims as two contiguous blocks (in either
order: the block order is BLAS's transpose flag) and the contracting dims pair up in the
same order on both sides. Then ``M`` is the product of the lhs free dims, ``N`` of the rhs
free dims and ``K`` of the contracting dims; a vector operand is a matrix with one row or
column, no contracting dim is ``K = 1`` (an outer product). An operand produced by a
``transpose`` in the same group is read in place: the product is mapped on the transpose's
input with the permutation folded into the dims.

>>> gemm_layout((32, 128), (128, 64), (((1,), (0,)), ((), ())))[:6]
(1, 32, 64, 128, False, False)
"""
from __future__ import annotations

import math

import numpy as np

from functrax.lowering.c.rules import UnsupportedError

__all__ = ["gemm_layout", "gemm_call"]

_GEMM = {"float32": ("ft_gemm_f32", "float"), "float64": ("ft_gemm_f64", "double")}


def _blocks(shape, batch, contract, free, side):
    """(contracting block first, free size, contracting size) of an operand whose batch dims lead and whose
    free and contracting dims are contiguous blocks; raises UnsupportedError otherwise."""
    nb = len(batch)
    if tuple(batch) != tuple(range(nb)):
        raise UnsupportedError(f"dot_general: {side} batch dims {tuple(batch)} do not lead")
    rest = list(range(nb, len(shape)))
    f, c = list(free), list(contract)
    fsize = math.prod(shape[d] for d in f)
    csize = math.prod(shape[d] for d in c)
    if rest == f + c:
        return False, fsize, csize
    if rest == c + f:
        return True, fsize, csize
    raise UnsupportedError(f"dot_general: the {side} operand's free dims {tuple(f)} and "
                           f"contracting dims {tuple(c)} are not two contiguous blocks")


def gemm_layout(lhs_shape, rhs_shape, dimension_numbers, lhs_perm=None, rhs_perm=None):
    """The BLAS call of a ``dot_general``: ``(batch, M, N, K, trans_a, trans_b, lda, ldb,
    ldc)``; operands given by a permutation (``x = transpose(y, perm)``) are described on
    ``y``. Raises UnsupportedError when it is not a (batched) matrix product."""
    (lc, rc), (lb, rb) = dimension_numbers
    pairs = sorted(zip(lc, rc))
    lc, rc = [p[0] for p in pairs], [p[1] for p in pairs]
    if rc != sorted(rc):
        raise UnsupportedError("dot_general: contracting dims pair up in different orders")
    lfree = [d for d in range(len(lhs_shape)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(rhs_shape)) if d not in rc and d not in rb]

    def on_source(shape, perm, batch, contract, free):
        if perm is None:
            return shape, batch, contract, free
        src = [0] * len(shape)
        for i, p in enumerate(perm):
            src[p] = shape[i]
        return (tuple(src), [perm[d] for d in batch], [perm[d] for d in contract],
                [perm[d] for d in free])

    ls, lb2, lc2, lf2 = on_source(lhs_shape, lhs_perm, lb, lc, lfree)
    rs, rb2, rc2, rf2 = on_source(rhs_shape, rhs_perm, rb, rc, rfree)
    ta, m, k = _blocks(ls, lb2, lc2, lf2, "lhs")
    # the rhs stored as [contract, free] is B (K x N); as [free, contract] it is B^T
    contract_first, n, _ = _blocks(rs, rb2, rc2, rf2, "rhs")
    tb = not contract_first
    batch = math.prod(lhs_shape[d] for d in lb)
    lda = max(1, m if ta else k)
    ldb = max(1, k if tb else n)
    return batch, m, n, k, ta, tb, lda, ldb, max(1, n)


def gemm_call(eqn, a: str, b: str, c: str, lhs_perm=None, rhs_perm=None) -> str:
    """C statements computing ``eqn`` (a ``dot_general``) from the byte pointers ``a``,
    ``b`` into ``c`` (C expressions); ``*_perm``: the operand is ``transpose(ptr, perm)``.
    Raises UnsupportedError for dtypes other than float32/float64 or other layouts."""
    lhs, rhs = (v.aval for v in eqn.invars)
    out = eqn.outvars[0].aval
    names = {np.dtype(x.dtype).name for x in (lhs, rhs, out)}
    if len(names) != 1 or next(iter(names)) not in _GEMM:
        raise UnsupportedError("dot_general: BLAS products take float32 or float64 operands "
                               f"and result, got {lhs.dtype}, {rhs.dtype} -> {out.dtype}")
    fn, t = _GEMM[next(iter(names))]
    batch, m, n, k, ta, tb, lda, ldb, ldc = gemm_layout(
        lhs.shape, rhs.shape, eqn.params["dimension_numbers"], lhs_perm, rhs_perm)
    args = (f"{int(ta)}, {int(tb)}, {m}, {n}, {k}, (const {t} *)({a}){{A}}, {lda}, "
            f"(const {t} *)({b}){{B}}, {ldb}, ({t} *)({c}){{C}}, {ldc}")
    if batch == 1:
        return f"{fn}({args.format(A='', B='', C='')});"
    return (f"for (int64_t bi = 0; bi < {batch}; ++bi) "
            f"{fn}({args.format(A=f' + bi * {m * k}', B=f' + bi * {k * n}', C=f' + bi * {m * n}')});")
