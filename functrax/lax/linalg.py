"""``functrax.lax.linalg``: the linear-algebra primitives' wrappers, as ``jax.lax.linalg``.

Every function takes (batches of) matrices with the batch dimensions leading. The private
helpers at the bottom (batched matmul, triangles, identity, diagonal) are shared with the
derivative rules (``functrax/transforms/linalg_rules.py``) and ``functrax.numpy.linalg``.

>>> import functrax.numpy as fnp
>>> from functrax.lax import linalg
>>> linalg.cholesky(fnp.array([[4.0, 2.0], [2.0, 5.0]]))
Array([[2., 0.],
       [1., 2.]], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from functrax import core, lax
from functrax.primitives.linalg import (
    cholesky_p, eigh_p, lu_p, qr_p, svd_p, triangular_solve_p,
)

__all__ = ["cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "symmetrize",
           "lu_pivots_to_permutation"]


def _aval(x):
    return core.get_aval(x)


def _operand(name, x):
    if not core.is_arraylike(x):
        raise TypeError(f"{name}: expected an array, got {type(x).__name__} (convert with "
                        "functrax.numpy.asarray)")
    return x


def symmetrize(x):
    """``(x + x^H) / 2``: the Hermitian part of a (batch of) square matrices."""
    return lax.div(lax.add(x, _H(x)), _full_like(x, 2))


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor ``L`` (``x = L @ L^H``) of Hermitian positive-definite
    matrices ``[..., n, n]``; NaNs where ``x`` is not positive definite.

    Args:
      x: a batch of square matrices.
      symmetrize_input: use ``(x + x^H) / 2``; if False only the lower triangle is read.
    """
    x = _operand("cholesky", x)
    if symmetrize_input:
        _square("cholesky", x)
        x = symmetrize(x)
    return cholesky_p.bind(x)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for triangular ``a``.

    ``op`` transposes ``a`` if ``transpose_a`` and conjugates it if ``conjugate_a``; only the
    ``lower`` (or upper) triangle of ``a`` is read, and its diagonal is taken as ones if
    ``unit_diagonal``. ``b`` may have one dimension fewer than ``a`` (a batch of vectors).

    >>> import functrax.numpy as fnp
    >>> triangular_solve(fnp.array([[2.0, 0.0], [1.0, 1.0]]), fnp.array([2.0, 3.0]),
    ...                  left_side=True, lower=True)
    Array([1., 2.], dtype=float32)
    """
    a, b = _operand("triangular_solve", a), _operand("triangular_solve", b)
    conjugate_a = bool(conjugate_a) and _aval(a).dtype.kind == "c"
    singleton = _aval(b).ndim == _aval(a).ndim - 1
    if singleton:
        b = lax.expand_dims(b, (_aval(b).ndim if left_side else _aval(b).ndim - 1,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        nd = _aval(out).ndim
        out = lax.squeeze(out, (nd - 1 if left_side else nd - 2,))
    return out


def lu(x):
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)`` with
    ``x[..., permutation, :] == L @ U``; ``L`` (unit diagonal, not stored) and ``U`` share
    ``lu``; ``pivots`` are the row swaps (int32)."""
    lu_, pivots, perm = lu_p.bind(_operand("lu", x))
    return lu_, pivots, perm


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation (int32 ``[..., permutation_size]``) that the row swaps ``pivots``
    perform, computed with static shapes from a loop of selects."""
    shape = _aval(pivots).shape
    if not shape or _aval(pivots).dtype.kind not in "iu":
        raise ValueError(f"lu_pivots_to_permutation: pivots must be an integer array of rank "
                         f">= 1, got {_aval(pivots).str_short()}")
    k = shape[-1]
    if permutation_size < k:
        raise ValueError(f"Output permutation size {permutation_size} has to exceed the "
                         f"trailing dimension of the pivots. Got pivots shape {shape}")
    out_shape = shape[:-1] + (permutation_size,)
    nd = len(out_shape)
    perm = lax.broadcasted_iota(np.int32, out_shape, nd - 1)
    pos = lax.broadcasted_iota(np.int32, out_shape, nd - 1)
    pivots = lax.convert_element_type(pivots, np.int32)
    for i in range(k):
        j = lax.broadcast_in_dim(lax.squeeze(lax.slice_in_dim(pivots, i, i + 1, axis=nd - 1),
                                             (nd - 1,)), out_shape, tuple(range(nd - 1)))
        pi = lax.broadcast_in_dim(lax.squeeze(lax.slice_in_dim(perm, i, i + 1, axis=nd - 1),
                                              (nd - 1,)), out_shape, tuple(range(nd - 1)))
        pj = _take_last(perm, j)
        at_i = lax.eq(pos, lax.full(out_shape, i, np.int32))
        perm = lax.select(at_i, pj, lax.select(lax.eq(pos, j), pi, perm))
    return perm


def _take_last(x, idx):
    """``x[..., idx]`` for an index broadcast along the last axis (a one-hot sum)."""
    nd = _aval(x).ndim
    hit = lax.eq(lax.broadcasted_iota(np.int32, _aval(x).shape, nd - 1), idx)
    picked = lax.reduce_sum(lax.select(hit, x, lax.full_like(x, 0)), (nd - 1,))
    return lax.broadcast_in_dim(picked, _aval(x).shape, tuple(range(nd - 1)))


def qr(x, *, full_matrices: bool = True):
    """QR decomposition ``x = q @ r``: ``q`` ``[..., m, m]`` and ``r`` ``[..., m, n]``
    (``full_matrices``), else ``[..., m, k]`` and ``[..., k, n]`` with ``k = min(m, n)``."""
    q, r = qr_p.bind(_operand("qr", x), full_matrices=bool(full_matrices))
    return q, r


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True):
    """Eigendecomposition of Hermitian matrices: ``(v, w)``, eigenvectors in the columns of
    ``v`` and the real eigenvalues ``w`` in ascending order.

    Args:
      x: a batch of square matrices ``[..., n, n]``.
      lower: without ``symmetrize_input``, which triangle is read.
      symmetrize_input: use ``(x + x^H) / 2``.
      sort_eigenvalues: eigenvalues ascending (they always are here).
    """
    x = _operand("eigh", x)
    if symmetrize_input:
        _square("eigh", x)
        x = symmetrize(x)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
    return v, w


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True):
    """Singular value decomposition: ``(u, s, vh)`` with ``x = u @ diag(s) @ vh``, or just
    the singular values ``s`` (descending) if not ``compute_uv``."""
    out = svd_p.bind(_operand("svd", x), full_matrices=bool(full_matrices),
                     compute_uv=bool(compute_uv))
    if compute_uv:
        s, u, vh = out
        return u, s, vh
    return out[0]


def _square(name, x):
    shape = _aval(x).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"The input to {name} must be a square matrix (shape [..., n, n]), "
                         f"got shape {shape}")


# --- helpers shared with the derivative rules and functrax.numpy.linalg ---


def _full_like(x, value, shape=None):
    aval = _aval(x)
    return lax.full(aval.shape if shape is None else shape, value, aval.dtype)


def _T(x):
    """Swap the last two axes."""
    nd = _aval(x).ndim
    return lax.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
    """Conjugate transpose of the last two axes."""
    x = _T(x)
    return lax.conj(x) if _aval(x).dtype.kind == "c" else x


def _conj(x):
    return lax.conj(x) if _aval(x).dtype.kind == "c" else x


def _matmul(x, y):
    """Batched matrix product over equal leading batch dimensions."""
    nd = _aval(x).ndim
    batch = tuple(range(nd - 2))
    return lax.dot_general(x, y, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _const_matrix(x, mat, shape=None):
    """The constant ``mat`` (``[m, n]``) broadcast to ``shape`` (default: ``x``'s)."""
    shape = _aval(x).shape if shape is None else shape
    nd = len(shape)
    return lax.broadcast_in_dim(np.asarray(mat), shape, (nd - 2, nd - 1))


def _tri(x, k, lower):
    """The lower (``lower``) or upper triangle of ``x`` from diagonal ``k`` on; zeros
    elsewhere."""
    m, n = _aval(x).shape[-2:]
    mask = np.tri(m, n, k, dtype=bool) if lower else ~np.tri(m, n, k - 1, dtype=bool)
    return lax.select(_const_matrix(x, mask), x, _full_like(x, 0))


def _tril(x, k=0):
    return _tri(x, k, True)


def _triu(x, k=0):
    return _tri(x, k, False)


def _eye_like(x, shape=None):
    """Identity matrices of ``x``'s dtype, broadcast to ``shape`` (default: ``x``'s)."""
    shape = _aval(x).shape if shape is None else shape
    return _const_matrix(x, np.eye(shape[-2], shape[-1], dtype=_aval(x).dtype), shape)


def _diagonal(x):
    """The main diagonal of the last two (square) axes."""
    nd = _aval(x).ndim
    return lax.reduce_sum(lax.select(_const_matrix(x, np.eye(*_aval(x).shape[-2:],
                                                             dtype=bool)),
                                     x, _full_like(x, 0)), (nd - 1,))


def _row(v, n_rows):
    """``v[..., None, :]`` broadcast to ``[..., n_rows, k]``."""
    shape = _aval(v).shape
    nd = len(shape)
    return lax.broadcast_in_dim(v, shape[:-1] + (n_rows, shape[-1]),
                                tuple(range(nd - 1)) + (nd,))


def _col(v, n_cols):
    """``v[..., :, None]`` broadcast to ``[..., k, n_cols]``."""
    shape = _aval(v).shape
    return lax.broadcast_in_dim(v, shape + (n_cols,), tuple(range(len(shape))))


def _permutation_matrix(perm, dtype):
    """``P`` with ``P @ x == x[..., perm, :]`` (one-hot rows; ``perm`` int ``[..., m]``)."""
    shape = _aval(perm).shape
    m = shape[-1]
    full = shape + (m,)
    nd = len(full)
    rows = lax.broadcast_in_dim(perm, full, tuple(range(nd - 1)))
    return lax.convert_element_type(
        lax.eq(rows, lax.broadcasted_iota(_aval(perm).dtype, full, nd - 1)), dtype)
