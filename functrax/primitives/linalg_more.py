"""More of ``jax.lax.linalg``'s primitives: Hessenberg and tridiagonal reductions, Householder
products, the Schur and eigen decompositions, tridiagonal solves.

Batch dimensions lead, matrices are the last two axes; LAPACK's dtypes only (float32/64,
complex64/128). A reflector is ``H = I - tau v v^H`` with ``v[0] = 1`` implicit (LAPACK).

- ``hessenberg(a) -> (a, taus)``: ``a = Q H Q^H``; ``H`` in the upper triangle and first
  subdiagonal, the reflectors below, ``taus`` ``[..., n - 1]`` (``?gehrd``).
- ``tridiagonal(a; lower) -> (a, d, e, taus)``: ``a = Q T Q^H`` for Hermitian ``a`` (only the
  ``lower`` or upper triangle read): the real diagonal ``d`` ``[..., n]`` and off-diagonal
  ``e`` ``[..., n - 1]``, the reflectors in that triangle of ``a`` (``?sytrd``/``?hetrd``).
- ``householder_product(a, taus) -> q``: the first ``n`` columns of ``H_1 ... H_k`` for
  reflectors stored in the columns of ``a`` ``[..., m, n]`` (``m >= n >= k``; ``?orgqr``).
- ``schur(a; compute_schur_vectors, ...) -> (t, q)``: ``a = q t q^H``; ``t`` quasi upper
  triangular for real ``a`` (2x2 blocks for complex pairs), triangular for complex ``a``.
- ``eig(a; compute_left/right_eigenvectors) -> (w, [vl], [vr])``: complex eigenvalues, right
  eigenvectors ``a vr = vr diag(w)``, left ones ``vl^H a = diag(w) vl^H``; unit-norm columns
  whose largest component is real (``?geev``).
- ``tridiagonal_solve(dl, d, du, b) -> x``: ``T x = b`` for the tridiagonal ``T`` with
  sub-/main/super-diagonals ``dl`` (``dl[0]`` unused), ``d``, ``du`` (``du[-1]`` unused),
  each ``[..., m]``; ``b`` ``[..., m, n]`` (``?gtsv``).
"""
from __future__ import annotations

import enum

from functrax import core
from functrax.primitives.define import Family, ShapedArray, new_primitive, np
from functrax.primitives.elementwise import add, conj, eq, mul, select, sign
from functrax.primitives.linalg import (
    adjoint, as_cols, batched_matmul, check_matrix, diagonal, full_like_matrix,
    matrix_operand, qr, real_dtype, transpose_last,
)
from functrax.primitives.shape import concatenate, expand_dims, full, pad, slice_in_dim

hessenberg_p = new_primitive("hessenberg", multiple_results=True, family=Family.LINALG)
tridiagonal_p = new_primitive("tridiagonal", multiple_results=True, family=Family.LINALG)
householder_product_p = new_primitive("householder_product", family=Family.LINALG)
schur_p = new_primitive("schur", multiple_results=True, family=Family.LINALG)
eig_p = new_primitive("eig", multiple_results=True, family=Family.LINALG)
tridiagonal_solve_p = new_primitive("tridiagonal_solve", family=Family.LINALG)


def complex_dtype(dtype) -> np.dtype:
    """complex64 for float32/complex64, complex128 for float64/complex128."""
    return np.result_type(dtype, np.complex64)


@hessenberg_p.def_abstract_eval
def _hessenberg_abstract(a):
    check_matrix("hessenberg", a, square=True)
    *batch, n, _ = a.shape
    return [a.strip_weak_type(), ShapedArray((*batch, max(n - 1, 0)), a.dtype)]


@tridiagonal_p.def_abstract_eval
def _tridiagonal_abstract(a, *, lower=True):
    check_matrix("tridiagonal", a, square=True)
    *batch, n, _ = a.shape
    real = real_dtype(a.dtype)
    k = max(n - 1, 0)
    return [a.strip_weak_type(), ShapedArray((*batch, n), real), ShapedArray((*batch, k), real),
            ShapedArray((*batch, k), a.dtype)]


@householder_product_p.def_abstract_eval
def _householder_product_abstract(a, taus):
    check_matrix("householder_product", a)
    *batch, m, n = a.shape
    if taus.ndim < 1 or a.dtype != taus.dtype or tuple(batch) != taus.shape[:-1] or \
            taus.shape[-1] > n:
        raise ValueError(f"Type mismatch for Householder product: a {a.str_short()} needs taus "
                         f"of the same dtype and shape [..., k] with the batch dimensions "
                         f"{tuple(batch)} and k <= {n}; got taus {taus.str_short()}")
    if m < n:
        raise ValueError("Householder product inputs must have at least as many rows as "
                         f"columns, got shape {a.shape}")
    return a.strip_weak_type()


@schur_p.def_abstract_eval
def _schur_abstract(a, *, compute_schur_vectors=True, sort_eig_vals=False,
                    select_callable=None):
    check_matrix("schur", a, square=True)
    t = a.strip_weak_type()
    return [t, t] if compute_schur_vectors else [t]


@eig_p.def_abstract_eval
def _eig_abstract(a, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
                  enable_eigvec_derivs=False):
    check_matrix("eig", a, square=True)
    *batch, n, _ = a.shape
    dt = complex_dtype(a.dtype)
    outs = [ShapedArray((*batch, n), dt)]
    outs += [ShapedArray(a.shape, dt)] * (int(compute_left_eigenvectors)
                                          + int(compute_right_eigenvectors))
    return outs


@tridiagonal_solve_p.def_abstract_eval
def _tridiagonal_solve_abstract(dl, d, du, b, *, perturb_singular=False):
    check_matrix("tridiagonal_solve", b, what="right-hand side b")
    if any(x.dtype != b.dtype for x in (dl, d, du)):
        raise TypeError("tridiagonal_solve requires that all arguments have the same dtype, "
                        f"got dl {dl.dtype.name}, d {d.dtype.name}, du {du.dtype.name}, "
                        f"b {b.dtype.name}")
    if not (dl.shape == d.shape == du.shape == b.shape[:-1]):
        raise ValueError("tridiagonal_solve requires that all diagonal arguments have the "
                         "same shape and that this shape is the same as the leading shape of "
                         f"b. Got: dl: {dl.shape}, d: {d.shape}, du: {du.shape}, "
                         f"b: {b.shape}")
    return b.strip_weak_type()


# --- wrappers (re-exported by functrax.lax.linalg) ---


def _aval(x):
    return core.get_aval(x)


def hessenberg(a):
    """Reduce square matrices to upper Hessenberg form: ``(a, taus)`` in LAPACK's packed
    form (``H = triu(a, -1)``; ``Q = householder_product(a[..., 1:, :-1], taus)`` padded with
    a leading 1).

    >>> import functrax.numpy as fnp
    >>> h, taus = hessenberg(fnp.eye(3))
    >>> taus
    Array([0., 0.], dtype=float32)
    """
    a, taus = hessenberg_p.bind(matrix_operand("hessenberg", a))
    return a, taus


def tridiagonal(a, *, lower: bool = True):
    """Reduce Hermitian matrices to real symmetric tridiagonal form ``a = Q T Q^H``:
    ``(a, d, e, taus)`` (LAPACK's ``?sytrd``/``?hetrd``; only the ``lower`` or upper triangle
    of ``a`` is read)."""
    a, d, e, taus = tridiagonal_p.bind(matrix_operand("tridiagonal", a), lower=bool(lower))
    return a, d, e, taus


def householder_product(a, taus):
    """The product ``H_1 ... H_k`` of the Householder reflectors stored below the diagonal of
    the columns of ``a`` ``[..., m, n]`` (``taus`` ``[..., k]``), its first ``n`` columns."""
    return householder_product_p.bind(matrix_operand("householder_product", a),
                                      matrix_operand("householder_product", taus))


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """Schur decomposition ``x = q u q^H``: ``(u, q)``, or ``u`` alone if not
    ``compute_schur_vectors``. ``u`` is quasi upper triangular for real ``x``.
    ``sort_eig_vals`` and ``select_callable`` are accepted and unused, as in JAX."""
    outs = schur_p.bind(matrix_operand("schur", x),
                        compute_schur_vectors=bool(compute_schur_vectors),
                        sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable)
    return tuple(outs) if compute_schur_vectors else outs[0]


class EigImplementation(enum.Enum):
    """The eig backends of JAX (all run the numpy rule here)."""
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigendecomposition of general square matrices: the list ``[w, vl, vr]`` (``vl``/``vr``
    only when computed), complex. Derivatives: eigenvalues only (as JAX).

    >>> import functrax.numpy as fnp
    >>> eig(fnp.array([[2.0, 0.0], [0.0, 3.0]]), compute_left_eigenvectors=False,
    ...     compute_right_eigenvectors=False)[0]
    Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    del implementation, use_magma
    return list(eig_p.bind(matrix_operand("eig", x),
                           compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs)))


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve ``T x = b`` for tridiagonal ``T`` given by its diagonals ``dl`` (below; ``dl[0]``
    ignored), ``d`` and ``du`` (above; ``du[-1]`` ignored), each ``[..., m]``; ``b``
    ``[..., m, n]``. Gaussian elimination with partial pivoting (LAPACK's ``?gtsv``)."""
    args = [matrix_operand("tridiagonal_solve", x) for x in (dl, d, du, b)]
    return tridiagonal_solve_p.bind(*args, perturb_singular=bool(perturb_singular))


# --- compositions of the primitives (jax.lax.linalg names without a primitive here) ---


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """Multiply ``c`` by the orthogonal/unitary ``Q = H_1 ... H_k`` whose reflectors are
    stored in ``a`` ``[..., m, n]`` (``taus`` ``[..., k]``), as LAPACK's ``?ormqr``:
    ``op(Q) @ c`` (``left``) or ``c @ op(Q)``, ``op(Q) = Q^H`` if ``transpose``."""
    a, taus, c = (matrix_operand("ormqr", x) for x in (a, taus, c))
    q = _full_q(a, taus)
    if transpose:
        q = adjoint(q)
    return batched_matmul(q, c) if left else batched_matmul(c, q)


def _full_q(a, taus):
    """The ``m x m`` product of the reflectors (zero reflectors pad ``a`` and ``taus``)."""
    m = _aval(a).shape[-2]
    k = _aval(taus).shape[-1]
    nd = _aval(a).ndim
    a = slice_in_dim(a, 0, k, axis=nd - 1)
    zero = np.zeros((), _aval(a).dtype)
    a = pad(a, zero, [(0, 0, 0)] * (nd - 1) + [(0, m - k, 0)])
    taus = pad(taus, zero, [(0, 0, 0)] * (nd - 2) + [(0, m - k, 0)])
    return householder_product(a, taus)


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
    """``alpha * a @ a^T + beta * c`` (``a`` ``[..., m, k]``, ``c`` ``[..., m, m]``). The
    whole matrix is computed, so ``symmetrize_output`` changes nothing."""
    del symmetrize_output
    a, c = matrix_operand("symmetric_product", a_matrix), matrix_operand("symmetric_product",
                                                                          c_matrix)
    aat = batched_matmul(a, transpose_last(a))
    return add(mul(full_like_matrix(c, alpha), aat), mul(full_like_matrix(c, beta), c))


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor ``R'`` of ``R^H R + w w^H`` from the upper factor ``R``
    ``[..., n, n]`` and ``w`` ``[..., n]``: the ``R`` of the QR decomposition of
    ``[R; w^H]``, rows signed to a positive diagonal."""
    r, w = matrix_operand("cholesky_update", r_matrix), matrix_operand("cholesky_update",
                                                                        w_vector)
    nd = _aval(r).ndim
    if nd < 2 or _aval(w).shape != _aval(r).shape[:-1] or \
            _aval(r).shape[-1] != _aval(r).shape[-2]:
        raise ValueError(f"cholesky_update: r_matrix must be [..., n, n] and w_vector "
                         f"[..., n], got {_aval(r).shape} and {_aval(w).shape}")
    stacked = concatenate([r, expand_dims(conj(w) if _aval(w).dtype.kind == "c" else w,
                                          (nd - 2,))], nd - 2)
    _, rr = qr(stacked, full_matrices=False)
    d = sign(diagonal(rr))
    d = select(eq(d, full(_aval(d).shape, 0, _aval(d).dtype)),
               full(_aval(d).shape, 1, _aval(d).dtype), d)
    return mul(as_cols(d, _aval(rr).shape[-1]), rr)


__all__ = [
    "hessenberg_p", "tridiagonal_p", "householder_product_p", "schur_p", "eig_p",
    "tridiagonal_solve_p", "complex_dtype", "hessenberg", "tridiagonal", "householder_product",
    "schur", "EigImplementation", "eig", "tridiagonal_solve", "ormqr", "symmetric_product",
    "cholesky_update",
]
