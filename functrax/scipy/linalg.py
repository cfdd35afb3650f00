"""``functrax.scipy.linalg``: ``jax.scipy.linalg`` on functrax's linear-algebra primitives.

Decompositions and solvers are here; the special matrices (toeplitz, hilbert, ...) are in
``linalg_special.py``, the matrix functions (expm, sqrtm, funm, solve_sylvester, ...) in
``linalg_matfuncs.py``. As in JAX, ``overwrite_*`` and ``check_finite`` are accepted and
ignored, inputs are promoted to an inexact dtype, leading axes batch, and a decomposition
that fails gives NaNs instead of raising.

>>> import functrax.numpy as fnp
>>> from functrax.scipy import linalg
>>> linalg.solve(fnp.array([[3.0, 1.0], [1.0, 2.0]]), fnp.array([9.0, 8.0]))
Array([2., 3.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

import functrax.numpy as fnp
from functrax import lax
from functrax.lax import linalg as _la
from functrax.lax.qdwh import qdwh
from functrax.numpy.promotion import asarray_operand
from functrax.primitives.linalg import (
    adjoint, batched_matmul, permutation_matrix, transpose_last,
)
from functrax.scipy.linalg_matfuncs import (  # noqa: F401
    expm, expm_frechet, funm, rsf2csf, solve_sylvester, sqrtm,
)
from functrax.scipy.linalg_special import (  # noqa: F401
    block_diag, circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion,
    hadamard, hankel, helmert, hilbert, invhilbert, invpascal, leslie, pascal, toeplitz,
)
from functrax.scipy.linalg_util import check_matrix as _matrix, check_square as _square
from functrax.scipy.linalg_util import dtype as _dtype, inexact as _inexact, shape as _shape
from functrax.scipy.linalg_solve import (  # noqa: F401
    cho_factor, cho_solve, cholesky, lu_factor, lu_solve, solve, solve_triangular,
)

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
    "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet",
    "fiedler", "fiedler_companion", "funm", "hadamard", "hankel", "helmert", "hessenberg",
    "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve",
    "pascal", "polar", "qr", "qr_multiply", "rsf2csf", "schur", "solve", "solve_sylvester",
    "solve_triangular", "sqrtm", "svd", "toeplitz",
]


# --- determinant, inverse, SVD, eigh ---


def det(a, overwrite_a=False, check_finite=True):
    """The determinant of square matrices ``[..., n, n]``.

    >>> import functrax.numpy as fnp
    >>> det(fnp.array([[2.0, 1.0], [1.0, 3.0]]))
    Array(5., dtype=float32)
    """
    del overwrite_a, check_finite
    return fnp.linalg.det(a)


def inv(a, overwrite_a=False, check_finite=True):
    """The inverse of square matrices ``[..., n, n]`` (inf/nan where singular)."""
    del overwrite_a, check_finite
    return fnp.linalg.inv(a)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """Singular value decomposition ``a = u @ diag(s) @ vh``: ``(u, s, vh)``, or ``s``
    (descending) if not ``compute_uv``. ``lapack_driver`` is accepted and ignored."""
    del overwrite_a, check_finite, lapack_driver
    a = _inexact(a)
    _matrix("svd", a)
    return _la.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
    """Eigenvalues (ascending) and eigenvectors (columns) of Hermitian matrices: ``(w, v)``,
    or ``w`` if ``eigvals_only``. Only the ``lower`` (or upper) triangle of ``a`` is read.

    Raises:
      NotImplementedError: for the generalized problem (``b``), ``type != 1`` or
        ``eigvals`` (as JAX).
    """
    del overwrite_a, overwrite_b, turbo, check_finite
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    a = _inexact(a)
    _square("eigh", a)
    v, w = _la.eigh(a, lower=bool(lower), symmetrize_input=False)
    return w if eigvals_only else (w, v)


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None):
    """Eigenvalues (ascending) of the Hermitian tridiagonal matrix with diagonal ``d``
    ``[n]`` and off-diagonal ``e`` ``[n - 1]``. ``select='i'`` with ``select_range=(lo, hi)``
    keeps the eigenvalues ``lo..hi`` (inclusive). ``tol`` is accepted and unused (the
    eigenvalues are computed to full precision, by ``eigh`` of the tridiagonal matrix).

    Raises:
      NotImplementedError: for eigenvectors (``eigvals_only=False``) or ``select='v'``, as
        JAX.
    """
    del tol
    if not eigvals_only:
        raise NotImplementedError("Calculation of eigenvectors is not implemented")
    d, e = asarray_operand(d), asarray_operand(e)
    if _dtype(d) != _dtype(e):
        raise TypeError(f"diagonal and off-diagonal values must have same dtype, got "
                        f"{_dtype(d)} and {_dtype(e)}")
    if _dtype(d).kind not in "fc" or _dtype(d).itemsize < 4:
        raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                        f"functrax.scipy.linalg.eigh_tridiagonal, got {_dtype(d)} and "
                        f"{_dtype(e)}")
    if len(_shape(d)) != 1 or _shape(e) != (max(_shape(d)[0] - 1, 0),):
        raise ValueError(f"eigh_tridiagonal: d must have shape [n] and e [n - 1], got "
                         f"{_shape(d)} and {_shape(e)}")
    n = _shape(d)[0]
    lo, hi = _eigh_tridiagonal_range(select, select_range, n)
    alpha = fnp.real(d)
    if n <= 1:
        return alpha[lo:hi]
    beta = fnp.abs(e) if _dtype(e).kind == "c" else e
    t = _tridiagonal_matrix(beta, alpha, beta)
    w = _la.eigh(t, symmetrize_input=False)[1]
    return w[lo:hi]


def _eigh_tridiagonal_range(select, select_range, n):
    if select == "a":
        return 0, n
    if select == "i":
        lo, hi = (int(i) for i in select_range)
        if lo > hi:
            raise ValueError("Got empty index range in select_range.")
        return lo, hi + 1
    if select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    raise ValueError("'select must be either 'a', 'i', or 'v'.")


def _tridiagonal_matrix(dl, d, du):
    """The dense ``n x n`` matrix with ``dl`` below, ``d`` on and ``du`` above the diagonal
    (``dl`` and ``du`` of length ``n - 1``)."""
    zero = np.zeros((), _dtype(d))
    sub = lax.pad(_diag(dl), zero, ((1, 0, 0), (0, 1, 0)))
    sup = lax.pad(_diag(du), zero, ((0, 1, 0), (1, 0, 0)))
    return sub + sup + _diag(d)


def _diag(v):
    """``v`` ``[..., k]`` on the diagonal of ``[..., k, k]``."""
    k = _shape(v)[-1]
    shape = _shape(v) + (k,)
    eye = np.eye(k, dtype=bool)
    return fnp.where(eye, lax.broadcast_in_dim(v, shape, tuple(range(len(shape) - 1))),
                     np.zeros((), _dtype(v)))


# --- LU and QR ---


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """LU decomposition with partial pivoting ``a = p @ l @ u``: ``(p, l, u)``, or
    ``(p @ l, u)`` if ``permute_l``. ``l`` ``[..., m, k]`` has a unit diagonal, ``u``
    ``[..., k, n]`` (``k = min(m, n)``), ``p`` is a permutation matrix of ``a``'s dtype.

    >>> import functrax.numpy as fnp
    >>> p, l, u = lu(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> p
    Array([[0., 1.],
           [1., 0.]], dtype=float32)
    """
    del overwrite_a, check_finite
    a = _inexact(a)
    _matrix("lu", a)
    lu_, _, perm = _la.lu(a)
    m, n = _shape(a)[-2:]
    k = min(m, n)
    dt = _dtype(a)
    p = transpose_last(permutation_matrix(perm, dt))
    lower = fnp.tril(lu_, -1)[..., :, :k] + fnp.eye(m, k, dtype=dt)
    u = fnp.triu(lu_)[..., :k, :]
    if permute_l:
        return batched_matmul(p, lower), u
    return p, lower, u


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """QR decomposition ``a = q @ r`` (``a[:, p] = q @ r`` with ``pivoting``).

    Args:
      a: ``[..., m, n]``.
      mode: 'full' (``q`` ``[..., m, m]``), 'economic' (``q`` ``[..., m, k]``, ``r``
        ``[..., k, n]``, ``k = min(m, n)``) or 'r' (only ``r``, returned as ``(r,)``).
      pivoting: also return the column permutation ``p`` (int32 ``[..., n]``).

    Returns:
      ``(q, r)``, ``(q, r, p)``, ``(r,)`` or ``(r, p)``.
    """
    del overwrite_a, lwork, check_finite
    if mode in ("full", "r"):
        full_matrices = True
    elif mode == "economic":
        full_matrices = False
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}': use 'full', 'r' or "
                         "'economic'")
    a = _inexact(a)
    _matrix("qr", a)
    out = _la.qr(a, pivoting=bool(pivoting), full_matrices=full_matrices)
    if mode == "r":
        return out[1:]
    return tuple(out)


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
    """``(c @ q, r)`` (mode 'right') or ``(q @ c, r)`` (mode 'left') for the economic QR
    decomposition of ``a`` ``[m, n]`` (``q`` ``[m, k]``, ``k = min(m, n)``), and the column
    permutation with ``pivoting``; ``q`` is conjugated if ``conjugate``. A 1-d ``c`` is a
    row (mode 'right') or a column (mode 'left') vector and the product is 1-d."""
    del overwrite_a, overwrite_c
    if mode not in ("left", "right"):
        raise ValueError(f"qr_multiply: mode must be 'left' or 'right', got {mode!r}")
    a, c = _inexact(a, c)
    if len(_shape(a)) != 2:
        raise ValueError(f"qr_multiply: a must be a matrix [m, n], got shape {_shape(a)}")
    vec = len(_shape(c)) == 1
    if vec:
        c = c[None, :] if mode == "right" else c[:, None]
    out = qr(a, mode="economic", pivoting=pivoting)
    q, rest = out[0], out[1:]
    if conjugate:
        q = fnp.conj(q)
    m, k = _shape(q)
    if mode == "right" and _shape(c)[-1] != m or mode == "left" and _shape(c)[0] != k:
        raise ValueError(f"qr_multiply: c of shape {_shape(c)} does not match the Q factor of "
                         f"shape {(m, k)} for mode {mode!r}")
    prod = fnp.matmul(c, q) if mode == "right" else fnp.matmul(q, c)
    if vec:
        prod = prod.ravel()
    return (prod,) + tuple(rest)


# --- Hessenberg, Schur, polar ---


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
    """The Hessenberg form ``h`` of square matrices (``a = q @ h @ q^H``, zero below the first
    subdiagonal): ``h``, or ``(h, q)`` if ``calc_q``."""
    del overwrite_a, check_finite
    a = _inexact(a)
    _square("hessenberg", a)
    n = _shape(a)[-1]
    packed, taus = _la.hessenberg(a)
    h = fnp.triu(packed, -1)
    if not calc_q:
        return h
    if n <= 1:
        return h, fnp.ones(_shape(a), _dtype(a))
    q = _la.householder_product(packed[..., 1:, :-1], taus)
    zero = np.zeros((), _dtype(a))
    nd = len(_shape(a))
    q = lax.pad(q, zero, [(0, 0, 0)] * (nd - 2) + [(1, 0, 0), (1, 0, 0)])
    corner = np.zeros((n, n), bool)
    corner[0, 0] = True
    return h, fnp.where(corner, np.ones((), _dtype(a)), q)


def schur(a, output="real"):
    """Schur decomposition ``a = z @ t @ z^H``: ``(t, z)``. ``t`` is quasi upper triangular
    (2x2 blocks for complex eigenvalue pairs) for ``output='real'`` and real ``a``, upper
    triangular for ``output='complex'`` (``a`` converted to complex) or complex ``a``."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                         f"output={output!r}.")
    a = _inexact(a)
    _square("schur", a)
    if output == "complex":
        a = a.astype(np.result_type(_dtype(a), np.complex64))
    return _la.schur(a)


def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
    """Polar decomposition ``a = u @ p`` (``side='right'``) or ``a = p @ u`` (``'left'``):
    ``(u, p)``, ``u`` with orthonormal columns (rows), ``p`` Hermitian positive semidefinite.

    Args:
      a: a matrix ``[m, n]``.
      side: 'right' or 'left'.
      method: 'qdwh' (QR-based dynamically weighted Halley iteration; needs ``m >= n`` for
        'right', ``m <= n`` for 'left'; differentiable in forward mode only) or 'svd'.
      eps, max_iterations: passed to ``qdwh``.
    """
    a = _inexact(a)
    if len(_shape(a)) != 2:
        raise ValueError("The input `a` must be a 2-D array.")
    if side not in ("right", "left"):
        raise ValueError(f"The argument `side` must be either 'right' or 'left', got "
                         f"{side!r}.")
    m, n = _shape(a)
    if method == "qdwh":
        if side == "right" and m >= n:
            u, p, _, _ = qdwh(a, eps=eps, max_iterations=max_iterations)
            return u, p
        if side == "left" and m <= n:
            u, p, _, _ = qdwh(adjoint(a), eps=eps, max_iterations=max_iterations)
            return adjoint(u), adjoint(p)
        raise NotImplementedError(
            "method='qdwh' only supports m x n matrices with m >= n for side='right' and "
            f"m <= n for side='left', got {(m, n)} with side={side!r}; use method='svd'")
    if method == "svd":
        w, s, vh = _la.svd(a, full_matrices=False)
        u = batched_matmul(w, vh)
        s = s.astype(_dtype(a))
        if side == "right":
            p = batched_matmul(adjoint(vh) * s[None, :], vh)
        else:
            p = batched_matmul(w * s[None, :], adjoint(w))
        return u, p
    raise ValueError(f"Unknown polar decomposition method {method}: use 'qdwh' or 'svd'.")

