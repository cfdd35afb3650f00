"""Linear-algebra decompositions, as ``jax.lax.linalg``'s primitives.

Every operand is a (batch of) matrices: batch dimensions lead, the matrix is in the last two
axes. Only float32/float64/complex64/complex128 are accepted (LAPACK's types).

- ``cholesky(a)``: the lower Cholesky factor of the Hermitian positive-definite ``a``
  (``[..., n, n]``); only the lower triangle of ``a`` is read; NaNs where it fails.
- ``triangular_solve(a, b; left_side, lower, transpose_a, conjugate_a, unit_diagonal)``:
  ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b``; ``a`` is ``[..., m, m]``, ``b``
  ``[..., m, n]`` (left) or ``[..., n, m]``; equal batch dimensions.
- ``lu(a) -> (lu, pivots, permutation)``: partial pivoting, ``P @ a = L @ U``; ``pivots``
  int32 ``[..., min(m, n)]`` (row swaps), ``permutation`` int32 ``[..., m]``.
- ``qr(a; full_matrices) -> (q, r)``.
- ``eigh(a; lower, sort_eigenvalues) -> (v, w)``: eigenvectors (columns) and the real
  eigenvalues (ascending) of a Hermitian matrix; only the ``lower`` (or upper) triangle is
  read.
- ``svd(a; full_matrices, compute_uv) -> (s, u, vh)`` or ``(s,)``.
"""
from __future__ import annotations

from functrax.primitives.define import ShapedArray, new_primitive, np

__all__ = ["cholesky_p", "triangular_solve_p", "lu_p", "qr_p", "eigh_p", "svd_p"]

_LAPACK_TYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                            np.complex128))

cholesky_p = new_primitive("cholesky")
triangular_solve_p = new_primitive("triangular_solve")
lu_p = new_primitive("lu", multiple_results=True)
qr_p = new_primitive("qr", multiple_results=True)
eigh_p = new_primitive("eigh", multiple_results=True)
svd_p = new_primitive("svd", multiple_results=True)


def real_dtype(dtype) -> np.dtype:
    """float32 for complex64, float64 for complex128; real dtypes unchanged."""
    return np.empty((), dtype).real.dtype


def check_matrix(name: str, x: ShapedArray, square: bool = False, what: str = "input"):
    """Raise (as JAX) unless ``x`` is a batch of (square) matrices of a LAPACK dtype."""
    if x.dtype not in _LAPACK_TYPES:
        raise TypeError(f"{name} does not accept dtype {x.dtype.name}: the {what} must be "
                        "float32, float64, complex64 or complex128 (convert with .astype)")
    if x.ndim < 2:
        raise ValueError(f"The {what} to {name} must have rank >= 2 (a matrix or a batch of "
                         f"matrices, shape [..., m, n]), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The {what} to {name} must be a square matrix (shape [..., n, n]), "
                         f"got shape {x.shape}")


@cholesky_p.def_abstract_eval
def _cholesky_abstract(a):
    check_matrix("cholesky", a, square=True)
    return a.strip_weak_type()


@triangular_solve_p.def_abstract_eval
def _triangular_solve_abstract(a, b, *, left_side=False, lower=False, transpose_a=False,
                               conjugate_a=False, unit_diagonal=False):
    if a.ndim < 2:
        raise TypeError(f"triangular_solve requires a.ndim to be at least 2, got {a.ndim}.")
    if b.ndim < 2:
        raise TypeError(f"triangular_solve requires b.ndim to be at least 2, got {b.ndim}.")
    check_matrix("triangular_solve", a, what="matrix a")
    if a.dtype != b.dtype:
        raise TypeError(f"triangular_solve requires arguments of the same dtype, got "
                        f"{a.dtype.name} and {b.dtype.name}")
    if a.shape[-1] != a.shape[-2]:
        raise TypeError(f"triangular_solve requires the last two dimensions of a to be equal "
                        f"in size, got a.shape of {a.shape}.")
    if a.shape[:-2] != b.shape[:-2]:
        raise TypeError(f"triangular_solve requires both arguments to have the same number "
                        f"of dimensions and equal batch dimensions, got {a.shape} and "
                        f"{b.shape}.")
    common = -2 if left_side else -1
    if a.shape[-1] != b.shape[common]:
        raise TypeError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} and "
                        f"{b.shape} (left_side={left_side}).")
    return b.strip_weak_type()


@lu_p.def_abstract_eval
def _lu_abstract(a):
    check_matrix("lu", a)
    *batch, m, n = a.shape
    return [a.strip_weak_type(), ShapedArray((*batch, min(m, n)), np.int32),
            ShapedArray((*batch, m), np.int32)]


@qr_p.def_abstract_eval
def _qr_abstract(a, *, full_matrices=True):
    check_matrix("qr", a)
    *batch, m, n = a.shape
    k = m if full_matrices else min(m, n)
    return [ShapedArray((*batch, m, k), a.dtype), ShapedArray((*batch, k, n), a.dtype)]


@eigh_p.def_abstract_eval
def _eigh_abstract(a, *, lower=True, sort_eigenvalues=True):
    check_matrix("eigh", a, square=True)
    *batch, n, _ = a.shape
    return [a.strip_weak_type(), ShapedArray((*batch, n), real_dtype(a.dtype))]


@svd_p.def_abstract_eval
def _svd_abstract(a, *, full_matrices=True, compute_uv=True):
    check_matrix("svd", a)
    *batch, m, n = a.shape
    k = min(m, n)
    s = ShapedArray((*batch, k), real_dtype(a.dtype))
    if not compute_uv:
        return [s]
    u = ShapedArray((*batch, m, m if full_matrices else k), a.dtype)
    vh = ShapedArray((*batch, n if full_matrices else k, n), a.dtype)
    return [s, u, vh]
