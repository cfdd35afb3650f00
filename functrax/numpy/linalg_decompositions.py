"""Decompositions and what they make possible, for ``functrax.numpy.linalg``.

cholesky, eigh, eigvalsh, svd, svdvals, qr (the ``functrax.lax.linalg`` primitives);
solve, inv, det, slogdet (via LU with partial pivoting and triangular solves); pinv,
matrix_rank, lstsq (via the SVD). Matrices are the last two axes; leading axes batch.
Derivatives follow from the primitives' JVP rules (distinct eigenvalues / singular values,
nonsingular matrices), as JAX's.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from functrax import core, dtypes, lax
from functrax.lax import linalg as _la
from functrax.primitives.linalg import (
    adjoint, as_rows, batched_matmul, diagonal, eye_like, permutation_matrix, transpose_last,
)
from functrax.numpy import reductions, selection, ufuncs
from functrax.numpy.promotion import (
    asarray_operand, broadcast_to_shape, check_arraylike, promote_dtypes_inexact,
)

__all__ = ["cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr", "solve", "inv", "det",
           "slogdet", "pinv", "matrix_rank", "lstsq", "EighResult", "QRResult",
           "SlogdetResult", "SVDResult"]


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


def _shape(x):
    return core.get_aval(x).shape


def _inexact(name, *xs):
    check_arraylike(name, *xs)
    out = [asarray_operand(x) for x in promote_dtypes_inexact(*[asarray_operand(x)
                                                                for x in xs])]
    return out if len(out) > 1 else out[0]


def _check_square(name, a):
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to {name} must have shape [..., n, n] (a batch of square "
                         f"matrices), got {shape}.")


def _check_matrix(name, a):
    if len(_shape(a)) < 2:
        raise ValueError(f"Argument to {name} must have at least two dimensions (shape "
                         f"[..., m, n]), got {_shape(a)}.")


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor of Hermitian positive-definite matrices (NaNs where ``a`` is not
    positive definite): lower ``L`` with ``a = L @ L^H``, or ``L^H`` if ``upper``.

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.cholesky(fnp.array([[4.0, 2.0], [2.0, 2.0]]))
    Array([[2., 0.],
           [1., 1.]], dtype=float32)
    """
    a = _inexact("cholesky", a)
    _check_square("cholesky", a)
    L = _la.cholesky(a, symmetrize_input=symmetrize_input)
    return adjoint(L) if upper else L


def _uplo(uplo):
    if uplo is None:
        return True
    if uplo not in ("L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {uplo!r}")
    return uplo == "L"


def eigh(a, UPLO=None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors (columns) of Hermitian matrices.

    Args:
      a: a batch of square matrices ``[..., n, n]``.
      UPLO: without ``symmetrize_input``, the triangle to read ('L', the default, or 'U').
      symmetrize_input: use ``(a + a^H) / 2``.

    Returns:
      ``EighResult(eigenvalues, eigenvectors)``.

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.eigh(fnp.array([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
    Array([1., 2.], dtype=float32)
    """
    a = _inexact("eigh", a)
    _check_square("eigh", a)
    v, w = _la.eigh(a, lower=_uplo(UPLO), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input: bool = True):
    """The eigenvalues (ascending) of Hermitian matrices."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` (``S`` descending).

    Returns ``SVDResult(U, S, Vh)``, or ``S`` if not ``compute_uv``. ``hermitian`` is
    accepted for compatibility (the general algorithm runs). Derivatives of ``U``/``Vh``
    need ``full_matrices=False``.

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.svd(fnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)
    Array([4., 3.], dtype=float32)
    """
    if subset_by_index is not None:
        raise NotImplementedError("functrax.numpy.linalg.svd: subset_by_index is not "
                                  "supported; slice the result instead")
    del hermitian
    a = _inexact("svd", a)
    _check_matrix("svd", a)
    if not compute_uv:
        return _la.svd(a, full_matrices=full_matrices, compute_uv=False)
    return SVDResult(*_la.svd(a, full_matrices=full_matrices))


def svdvals(x, /):
    """The singular values (descending) of a batch of matrices."""
    return svd(x, compute_uv=False)


def qr(a, mode: str = "reduced"):
    """QR decomposition: ``QRResult(Q, R)`` (mode 'reduced' or 'complete'), or ``R``
    (mode 'r'). Derivatives need ``m >= n`` (and mode 'reduced' unless square)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}': use 'reduced', "
                         "'complete' or 'r'")
    a = _inexact("qr", a)
    _check_matrix("qr", a)
    q, r = _la.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


# --- via LU ---


def _lu_solve(lu_, perm, b):
    """``a^-1 @ b`` from ``a``'s LU factors (``b`` ``[..., m, k]``, equal batch dims)."""
    x = batched_matmul(permutation_matrix(perm, core.get_aval(b).dtype), b)
    x = _la.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    return _la.triangular_solve(lu_, x, left_side=True, lower=False)


def solve(a, b):
    """Solve ``a @ x = b`` for square ``a`` ``[..., m, m]``.

    ``b`` is a vector ``[m]`` (1-d) or a batch of matrices ``[..., m, k]``; batch dimensions
    broadcast (numpy 2 semantics).

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.solve(fnp.array([[2.0, 0.0], [0.0, 4.0]]), fnp.array([2.0, 2.0]))
    Array([1. , 0.5], dtype=float32)
    """
    a, b = _inexact("solve", a, b)
    sa, sb = _shape(a), _shape(b)
    vector = len(sb) == 1
    if not (len(sa) >= 2 and sa[-1] == sa[-2] and len(sb) >= 1
            and sb[-1 if vector else -2] == sa[-1]):
        raise ValueError(f"The arguments to solve must have shapes a=[..., m, m] and "
                         f"b=[..., m, k] or b=[m]; got a={sa} and b={sb}")
    if vector:
        b = lax.expand_dims(b, (1,))
    batch = np.broadcast_shapes(sa[:-2], _shape(b)[:-2])
    a = broadcast_to_shape(a, batch + sa[-2:])
    b = broadcast_to_shape(b, batch + _shape(b)[-2:])
    lu_, _, perm = _la.lu(a)
    x = _lu_solve(lu_, perm, b)
    return lax.squeeze(x, (len(batch) + 1,)) if vector else x


def inv(a):
    """The inverse of square matrices ``[..., n, n]`` (inf/nan where singular).

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.inv(fnp.array([[2.0, 0.0], [0.0, 4.0]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """
    a = _inexact("inv", a)
    _check_square("inv", a)
    return solve(a, eye_like(a))


def _lu_parts(name, a):
    """The LU diagonal and the permutation's parity (True: odd) of square matrices."""
    a = _inexact(name, a)
    _check_square(name, a)
    lu_, pivots, _ = _la.lu(a)
    k = _shape(pivots)[-1]
    moved = ufuncs.not_equal(pivots, lax.broadcasted_iota(np.int32, _shape(pivots),
                                                          len(_shape(pivots)) - 1))
    swaps = reductions.sum(moved, axis=-1) if k else lax.full(_shape(pivots)[:-1], 0, np.int32)
    odd = ufuncs.equal(ufuncs.remainder(swaps, 2), 1)
    return diagonal(lu_), odd


def det(a):
    """The determinant of square matrices ``[..., n, n]`` (via LU with partial pivoting).

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.det(fnp.array([[2.0, 1.0], [1.0, 3.0]]))
    Array(5., dtype=float32)
    """
    diag, odd = _lu_parts("det", a)
    d = reductions.prod(diag, axis=-1)
    return selection.where(odd, ufuncs.negative(d), d)


def slogdet(a, *, method=None):
    """``SlogdetResult(sign, logabsdet)`` of square matrices: ``det = sign * exp(logabsdet)``
    (sign 0 and logabsdet -inf for singular matrices)."""
    if method not in (None, "lu"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         "(the default)")
    diag, odd = _lu_parts("slogdet", a)
    dt = core.get_aval(diag).dtype
    absd = ufuncs.abs(diag)
    logabs = reductions.sum(ufuncs.log(absd), axis=-1)
    if dt.kind == "c":
        unit = ufuncs.divide(diag, lax.convert_element_type(absd, dt))
        sign = reductions.prod(unit, axis=-1)
    else:
        sign = reductions.prod(ufuncs.sign(diag), axis=-1)
    sign = selection.where(odd, ufuncs.negative(sign), sign)
    singular = reductions.any(ufuncs.equal(diag, 0), axis=-1)
    sign = selection.where(singular, np.zeros((), dt), sign)
    logabs = selection.where(singular, np.asarray(-np.inf, logabs.dtype), logabs)
    return SlogdetResult(sign, logabs)


# --- via the SVD ---


def _default_rtol(a):
    m, n = _shape(a)[-2:]
    return 10.0 * max(m, n) * float(dtypes.finfo(np.empty((), core.get_aval(a).dtype)
                                                 .real.dtype).eps)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse ``[..., n, m]`` of matrices ``[..., m, n]``: singular
    values at most ``rtol * max(S)`` (default ``10 * max(m, n) * eps``) count as zero."""
    del hermitian
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: pass only one of rtol and rcond (rcond is its old name)")
        rtol = rcond
    a = _inexact("pinv", a)
    _check_matrix("pinv", a)
    *batch, m, n = _shape(a)
    if m == 0 or n == 0:
        return lax.full((*batch, n, m), 0, core.get_aval(a).dtype)
    rtol = _default_rtol(a) if rtol is None else rtol
    u, s, vh = _la.svd(a, full_matrices=False)
    cutoff = ufuncs.multiply(rtol, reductions.max(s, axis=-1, keepdims=True))
    s = selection.where(ufuncs.greater(s, cutoff), s, np.asarray(np.inf, core.get_aval(s).dtype))
    k = _shape(s)[-1]
    s_col = lax.convert_element_type(transpose_last(as_rows(s, m)),  # [..., k, m]
                                     core.get_aval(a).dtype)
    return batched_matmul(adjoint(vh), lax.div(adjoint(u), s_col)) if k else lax.full(
        (*batch, n, m), 0, core.get_aval(a).dtype)


def matrix_rank(M, rtol=None, *, tol=None):
    """The number of singular values above ``tol`` (default ``max(S) * max(m, n) * eps``,
    or ``rtol * max(S)``); for a 1-d array, 1 if any element is nonzero."""
    M = _inexact("matrix_rank", M)
    shape = _shape(M)
    if len(shape) < 2:
        return lax.convert_element_type(reductions.any(ufuncs.not_equal(M, 0)), np.int32)
    s = svd(M, full_matrices=False, compute_uv=False)
    if tol is None:
        if rtol is None:
            eps = float(dtypes.finfo(core.get_aval(s).dtype).eps)
            rtol = max(shape[-2:]) * eps
        tol = ufuncs.multiply(reductions.max(s, axis=-1, keepdims=True, initial=0), rtol)
    else:
        tol = asarray_operand(tol)
        if core.get_aval(tol).ndim:
            tol = lax.expand_dims(tol, (core.get_aval(tol).ndim,))
    return reductions.sum(ufuncs.greater(s, tol), axis=-1)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least-squares solution of ``a @ x = b`` (``a`` ``[m, n]``, ``b`` ``[m]`` or
    ``[m, k]``): ``(x, residuals, rank, s)`` as ``numpy.linalg.lstsq``.

    Residuals (the squared 2-norms of ``b - a @ x``, one per column of ``b``) are returned
    when ``m > n``, an empty array otherwise (static shapes; numpy also returns none when
    ``a`` is rank deficient, which ``numpy_resid=True`` checks on a concrete rank)."""
    a, b = _inexact("lstsq", a, b)
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 2:
        raise TypeError(f"lstsq only supports 2D arrays for a, got shape {sa}")
    if len(sb) not in (1, 2) or sb[0] != sa[0]:
        raise TypeError(f"lstsq: b must have shape [m] or [m, k] with m = a.shape[0] = "
                        f"{sa[0]}, got shape {sb}")
    m, n = sa
    u, s, vh = _la.svd(a, full_matrices=False)
    if rcond is None:
        rcond = float(dtypes.finfo(core.get_aval(s).dtype).eps) * max(m, n)
    cutoff = ufuncs.multiply(rcond, reductions.max(s, initial=0))
    keep = ufuncs.greater(s, cutoff)
    rank = reductions.sum(keep, axis=-1)
    s_safe = selection.where(keep, s, np.asarray(np.inf, core.get_aval(s).dtype))
    b2 = lax.expand_dims(b, (1,)) if len(sb) == 1 else b
    kk = _shape(s)[0]
    coef = lax.div(batched_matmul(adjoint(u), b2), lax.convert_element_type(
        lax.broadcast_in_dim(s_safe, (kk, _shape(b2)[1]), (0,)), core.get_aval(a).dtype))
    x = batched_matmul(adjoint(vh), coef)
    resid_vec = reductions.sum(ufuncs.square(ufuncs.abs(ufuncs.subtract(b2, batched_matmul(a, x)))),
                               axis=0)
    resid = resid_vec if len(sb) == 2 else lax.expand_dims(reductions.sum(resid_vec), (0,))
    if m <= n or (numpy_resid and int(rank) != n):
        resid = lax.full((0,), 0, core.get_aval(resid_vec).dtype)
    if len(sb) == 1:
        x = lax.squeeze(x, (1,))
    return x, resid, rank, s

