"""Cholesky and LU factorizations and the solves built on them, for
``functrax.scipy.linalg`` (as ``jax.scipy.linalg``'s).

A right-hand side ``b`` with one dimension fewer than the matrix is a (batch of) vectors;
batch dimensions of the matrix and ``b`` broadcast. ``solve(..., assume_a='pos')`` solves
by Cholesky with a custom JVP (``dx = A^-1 (db - dA x)``, as JAX's ``custom_linear_solve``)
so that its derivative is that of ``A^-1 b`` for the whole matrix ``A``.
"""
from __future__ import annotations

import functrax.numpy as fnp
from functrax.lax import linalg as _la
from functrax.numpy.promotion import broadcast_shapes_named, broadcast_to_shape
from functrax.primitives.linalg import adjoint, batched_matmul, permutation_matrix
from functrax.scipy.linalg_util import check_matrix, check_square, dtype, inexact, shape
from functrax.transforms import custom_jvp

__all__ = ["cholesky", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "solve",
           "solve_triangular"]


def _check_solve_shapes(name, a, b):
    sa, sb = shape(a), shape(b)
    if not (len(sa) >= 2 and len(sb) in (len(sa), len(sa) - 1) and sa[-1] == sa[-2]
            and len(sb) >= 1 and sb[len(sa) - 2 if len(sb) == len(sa) else -1] == sa[-1]):
        raise ValueError(f"{name}: the arguments to solve must have shapes a=[..., m, m] and "
                         f"b=[..., m, k] or b=[..., m]; got a={sa} and b={sb}")


def _as_matrix_rhs(name, a, b):
    """``(a, b, vector)`` with ``b`` ``[..., m, k]`` and the batch dimensions broadcast."""
    vector = len(shape(b)) == len(shape(a)) - 1
    if vector:
        b = b[..., None]
    batch = broadcast_shapes_named(name, shape(a)[:-2], shape(b)[:-2])
    return (broadcast_to_shape(a, batch + shape(a)[-2:]),
            broadcast_to_shape(b, batch + shape(b)[-2:]), vector)


def _vector_out(x, vector):
    return x[..., 0] if vector else x


# --- Cholesky ---


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of Hermitian positive-definite matrices: upper ``u`` with
    ``a = u^H u`` (default) or lower ``l`` with ``a = l l^H``; only that triangle of ``a`` is
    read. NaNs where ``a`` is not positive definite.

    >>> import functrax.numpy as fnp
    >>> cholesky(fnp.array([[4.0, 2.0], [2.0, 5.0]]))
    Array([[2., 1.],
           [0., 2.]], dtype=float32)
    """
    del overwrite_a, check_finite
    a = inexact(a)
    check_square("cholesky", a)
    factor = _la.cholesky(a if lower else adjoint(a), symmetrize_input=False)
    return factor if lower else adjoint(factor)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)`` for ``cho_solve``: ``c = cholesky(a, lower)`` (the other triangle is
    zero)."""
    del overwrite_a, check_finite
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` from ``cho_factor(a)``'s ``(c, lower)``.

    >>> import functrax.numpy as fnp
    >>> cho_solve(cho_factor(fnp.array([[4.0, 2.0], [2.0, 5.0]])), fnp.array([6.0, 7.0]))
    Array([1., 1.], dtype=float32)
    """
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c, b = inexact(c, b)
    _check_solve_shapes("cho_solve", c, b)
    c, b, vector = _as_matrix_rhs("cho_solve", c, b)
    b = _la.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                             conjugate_a=not lower)
    b = _la.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=lower,
                             conjugate_a=lower)
    return _vector_out(b, vector)


# --- LU ---


def lu_factor(a, overwrite_a=False, check_finite=True):
    """``(lu, piv)`` for ``lu_solve``: the packed LU factors of ``a`` (``l`` below the
    diagonal, unit diagonal implied, ``u`` on and above) and the int32 row swaps ``piv``
    (row ``i`` was interchanged with row ``piv[i]``)."""
    del overwrite_a, check_finite
    a = inexact(a)
    check_matrix("lu_factor", a)
    lu, piv, _ = _la.lu(a)
    return lu, piv


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b`` (2) from
    ``lu_factor(a)``'s ``(lu, piv)``; ``b`` ``[..., m]`` or ``[..., m, k]``."""
    del overwrite_b, check_finite
    lu, piv = lu_and_piv
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    lu, b = inexact(lu, b)
    if len(shape(lu)) < 2 or shape(lu)[-1] != shape(lu)[-2]:
        raise ValueError(f"last two dimensions of LU decomposition must be equal, got shape "
                         f"{shape(lu)}")
    if len(shape(b)) < 1:
        raise ValueError(f"b matrix must have rank >= 1, got shape {shape(b)}")
    m = shape(lu)[-1]
    vector = len(shape(b)) == len(shape(lu)) - 1
    if shape(b)[-1 if vector else -2] != m:
        raise ValueError(f"When LU decomposition matrix has shape {shape(lu)}, b must have "
                         f"shape [..., {m}] or [..., {m}, k]; got {shape(b)}")
    perm = _la.lu_pivots_to_permutation(piv, m)
    lu, b, vector = _as_matrix_rhs("lu_solve", lu, b)
    perm = broadcast_to_shape(perm, shape(lu)[:-2] + (m,))
    pmat = permutation_matrix(perm, dtype(b))
    if trans == 0:
        x = batched_matmul(pmat, b)
        x = _la.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
        x = _la.triangular_solve(lu, x, left_side=True, lower=False)
    else:
        conj = trans == 2
        x = _la.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True,
                                 conjugate_a=conj)
        x = _la.triangular_solve(lu, x, left_side=True, lower=True, transpose_a=True,
                                 conjugate_a=conj, unit_diagonal=True)
        x = batched_matmul(fnp.swapaxes(pmat, -1, -2), x)
    return _vector_out(x, vector)


# --- solve ---


def _pos_solve_impl(lower, a, b):
    return cho_solve(cho_factor(a, lower=lower), b)


_pos_solve = custom_jvp(_pos_solve_impl, nondiff_argnums=(0,))


def _matvec(a, x):
    if len(shape(x)) == len(shape(a)) - 1:
        return fnp.matmul(a, x[..., None])[..., 0]
    return fnp.matmul(a, x)


@_pos_solve.defjvp
def _pos_solve_jvp(lower, primals, tangents):
    a, b = primals
    da, db = tangents
    x = _pos_solve(lower, a, b)
    # the tangent solve is the plain Cholesky one: it is linear in its right-hand side and
    # transposes (a custom_jvp call in a linear jaxpr would not)
    return x, _pos_solve_impl(lower, a, db - _matvec(da, x))


_ASSUME_A = ("gen", "sym", "her", "pos")


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False,
          check_finite=True, assume_a="gen"):
    """Solve ``a x = b`` for square ``a`` ``[..., m, m]``.

    Args:
      a, b: ``b`` is ``[m]`` or ``[..., m, k]`` (as ``functrax.numpy.linalg.solve``; with
        ``assume_a='pos'``, ``[..., m]`` is a batch of vectors).
      lower: with ``assume_a='pos'``, the triangle of ``a`` to read.
      assume_a: 'gen', 'sym' or 'her' (LU with partial pivoting) or 'pos' (Cholesky).

    Returns:
      ``x`` of ``b``'s shape.
    """
    del overwrite_a, overwrite_b, debug, check_finite
    if assume_a not in _ASSUME_A:
        raise ValueError(f"Expected assume_a to be one of {_ASSUME_A}; got {assume_a!r}")
    a, b = inexact(a, b)
    if assume_a != "pos":
        return fnp.linalg.solve(a, b)
    _check_solve_shapes("solve", a, b)
    return _pos_solve(bool(lower), a, b)


def _trans_flags(trans):
    if trans in (0, "N"):
        return False, False
    if trans in (1, "T"):
        return True, False
    if trans in (2, "C"):
        return True, True
    raise ValueError(f"Invalid 'trans' value {trans}: use 0 ('N'), 1 ('T') or 2 ('C')")


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
    """Solve ``op(a) x = b`` for triangular ``a`` ``[..., m, m]`` (only its ``lower`` or upper
    triangle is read; ones on the diagonal if ``unit_diagonal``); ``op`` is the identity
    (``trans=0``/'N'), the transpose (1/'T') or the conjugate transpose (2/'C').

    >>> import functrax.numpy as fnp
    >>> solve_triangular(fnp.array([[2.0, 1.0], [0.0, 4.0]]), fnp.array([4.0, 8.0]))
    Array([1., 2.], dtype=float32)
    """
    del overwrite_b, debug, check_finite
    transpose_a, conjugate_a = _trans_flags(trans)
    a, b = inexact(a, b)
    _check_solve_shapes("solve_triangular", a, b)
    a, b, vector = _as_matrix_rhs("solve_triangular", a, b)
    x = _la.triangular_solve(a, b, left_side=True, lower=bool(lower), transpose_a=transpose_a,
                             conjugate_a=conjugate_a, unit_diagonal=bool(unit_diagonal))
    return _vector_out(x, vector)

