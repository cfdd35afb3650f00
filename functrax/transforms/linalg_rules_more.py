"""jvp, transpose and vmap rules of the primitives of ``functrax/primitives/linalg_more.py``
(and ``geqp3``), as JAX's.

- eig: eigenvalues only, ``dw = diag(V^-1 dA V)`` (Giles, "An extended collection of matrix
  derivative results", eq. 3.1); with eigenvectors requested JAX's NotImplementedError.
- tridiagonal_solve: linear in ``b`` (its transpose solves with ``T^T``, whose diagonals are
  ``du`` shifted down, ``d`` and ``dl`` shifted up); in the diagonals
  ``dx = -T^-1 (dT x)``.
- schur, hessenberg, tridiagonal, householder_product, geqp3: JAX defines no derivative;
  their rules raise its NotImplementedError (``qr(pivoting=True)`` uses geqp3 only under
  ``stop_gradient``).

Every primitive batches over leading dimensions, so each vmap rule moves the batch axes to
the front.
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.primitives.linalg import (
    batched_matmul, diagonal, geqp3_p, lu_p, permutation_matrix, triangular_solve,
)
from functrax.primitives.linalg_more import (
    complex_dtype, eig_p, hessenberg_p, householder_product_p, schur_p, tridiagonal_p,
    tridiagonal_solve_p,
)
from functrax.transforms.batching import bdim_at_front, moveaxis, vmap_rules
from functrax.transforms.jvp import defjvp2, instantiate, jvp_rules
from functrax.transforms.transpose import deflinear_transpose


def _not_differentiable(prim, message=None):
    message = message or (f"Differentiation rule for '{prim}' not implemented (as in JAX): "
                          f"'{prim}' has no derivative; stop_gradient its input, or "
                          "differentiate a function built from differentiable decompositions")

    def rule(primals, tangents, **params):
        raise NotImplementedError(message)
    jvp_rules[prim] = rule


for _p in (hessenberg_p, tridiagonal_p, householder_product_p, geqp3_p):
    _not_differentiable(_p)
_not_differentiable(schur_p, "The differentiation rules for the Schur factorization have not "
                             "been implemented.")


# --- eig ---


def _lu_solve(a, b):
    """``a^-1 b`` by LU with partial pivoting (primitives only)."""
    lu, _, perm = lu_p.bind(a)
    x = batched_matmul(permutation_matrix(perm, core.get_aval(b).dtype), b)
    x = triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu, x, left_side=True, lower=False)


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs):
    if compute_left_eigenvectors or compute_right_eigenvectors:
        raise NotImplementedError(
            "The derivatives of eigenvectors are not implemented, only eigenvalues. See "
            "https://github.com/jax-ml/jax/issues/2748 for discussion (call eig with "
            "compute_left_eigenvectors=False, compute_right_eigenvectors=False, or "
            "functrax.numpy.linalg.eigvals, to differentiate the eigenvalues).")
    (a,), (da,) = primals, tangents
    w, v = eig_p.bind(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True,
                      enable_eigvec_derivs=False)
    da = P.convert_element_type(instantiate(da), complex_dtype(core.get_aval(a).dtype))
    dw = diagonal(_lu_solve(v, batched_matmul(da, v)))
    return [w], [dw]


jvp_rules[eig_p] = _eig_jvp


# --- tridiagonal_solve ---


def _shift_rows(x, down: bool):
    """``x`` moved one row down (a zero first row) or up (a zero last row), axis -2."""
    nd = core.get_aval(x).ndim
    m = core.get_aval(x).shape[-2]
    zero = np.zeros((), core.get_aval(x).dtype)
    cfg = [(0, 0, 0)] * nd
    if down:
        cfg[nd - 2] = (1, 0, 0)
        return P.pad(P.slice_in_dim(x, 0, m - 1, axis=nd - 2), zero, cfg)
    cfg[nd - 2] = (0, 1, 0)
    return P.pad(P.slice_in_dim(x, 1, m, axis=nd - 2), zero, cfg)


def _shift_vec(v, down: bool):
    """A diagonal moved one place along the last axis (zero filled)."""
    nd = core.get_aval(v).ndim
    m = core.get_aval(v).shape[-1]
    zero = np.zeros((), core.get_aval(v).dtype)
    cfg = [(0, 0, 0)] * nd
    if down:
        cfg[nd - 1] = (1, 0, 0)
        return P.pad(P.slice_in_dim(v, 0, m - 1, axis=nd - 1), zero, cfg)
    cfg[nd - 1] = (0, 1, 0)
    return P.pad(P.slice_in_dim(v, 1, m, axis=nd - 1), zero, cfg)


def _times_rows(diag, x):
    """``diag[..., :, None] * x``."""
    shape = core.get_aval(x).shape
    return P.mul(P.broadcast_in_dim(diag, shape, tuple(range(len(shape) - 1))), x)


def _neg_solve(dl, d, du, rhs, params):
    return P.neg(tridiagonal_solve_p.bind(dl, d, du, rhs, **params))


def _jvp_dl(t, x, dl, d, du, b, **params):
    return _neg_solve(dl, d, du, _times_rows(t, _shift_rows(x, down=True)), params)


def _jvp_d(t, x, dl, d, du, b, **params):
    return _neg_solve(dl, d, du, _times_rows(t, x), params)


def _jvp_du(t, x, dl, d, du, b, **params):
    return _neg_solve(dl, d, du, _times_rows(t, _shift_rows(x, down=False)), params)


def _jvp_b(t, x, dl, d, du, b, **params):
    return tridiagonal_solve_p.bind(dl, d, du, t, **params)


defjvp2(tridiagonal_solve_p, _jvp_dl, _jvp_d, _jvp_du, _jvp_b)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, **params):
    # T^T: its subdiagonal is du shifted down, its superdiagonal dl shifted up
    ct_b = tridiagonal_solve_p.bind(_shift_vec(du, down=True), d, _shift_vec(dl, down=False),
                                    ct, **params)
    return [None, None, None, ct_b]


deflinear_transpose(tridiagonal_solve_p, _tridiagonal_solve_transpose)


# --- vmap: batch axes to the front ---


def _front_vmap(prim):
    def rule(axis, vals, dims, **params):
        vals = [bdim_at_front(v, d, axis.size) if len(vals) > 1 else moveaxis(v, d, 0)
                for v, d in zip(vals, dims)]
        out = prim.bind(*vals, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    vmap_rules[prim] = rule


for _p in (hessenberg_p, tridiagonal_p, householder_product_p, schur_p, eig_p,
           tridiagonal_solve_p, geqp3_p):
    _front_vmap(_p)
