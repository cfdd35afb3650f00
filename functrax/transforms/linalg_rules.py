"""jvp, transpose and vmap rules of the linear-algebra primitives, as ``jax.lax.linalg``'s.

- cholesky: Murray (arXiv:1602.07527): ``dL = L phi(L^-1 dA L^-H)`` with ``phi`` the lower
  triangle with a halved diagonal.
- triangular_solve: linear in ``b`` (a transpose rule solves with ``op(a)^T``); in ``a``,
  ``-op(a)^-1 op(da) x`` (left) or ``-x op(da) op(a)^-1`` (right), on ``a``'s triangle.
- lu: De Hoog, Anderssen & Lukas: ``L^-1 P dA U^-1 = L^-1 dL + dU U^-1``, split into its
  strictly lower and upper triangles.
- qr (``m >= n``, reduced or square): Townsend's (j-towns.github.io/papers/qr-derivative).
- eigh / svd: classic perturbation theory (distinct eigenvalues / singular values).

cholesky and eigh read one triangle of their operand, so their JVPs take the Hermitian
tangent built from that triangle (JAX's assume a symmetric tangent; the two agree on the
symmetrized inputs ``functrax.numpy.linalg`` passes, and ours also match finite differences
of ``symmetrize_input=False``).

All batch over leading dimensions: a vmap rule moves the batch axis to the front.
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.primitives.linalg import (
    adjoint, as_cols, as_rows, batched_matmul, cholesky_p, conj_if_complex, diagonal, eigh_p,
    eye_like, full_like_matrix, lu_p, permutation_matrix, qr_p, svd_p, transpose_last, tril,
    triangular_solve, triangular_solve_p, triu,
)
from functrax.transforms.batching import bdim_at_front, moveaxis, vmap_rules
from functrax.transforms.jvp import Zero, defjvp2, instantiate, jvp_rules, tangent_aval
from functrax.transforms.transpose import deflinear_transpose


def _real(x):
    return P.real(x) if core.get_aval(x).dtype.kind == "c" else x


def _as(x, like):
    return P.convert_element_type(x, core.get_aval(like).dtype)


def _zeros_for(outs):
    return [Zero(tangent_aval(core.get_aval(o))) for o in outs]


# --- cholesky ---


def _from_triangle(t, lower):
    """The Hermitian matrix whose ``lower`` (or upper) triangle is that of ``t``: the
    primitives read only that triangle, so that is the tangent they see."""
    if lower:
        return P.add(tril(t), adjoint(tril(t, -1)))
    return P.add(triu(t), adjoint(triu(t, 1)))


def _cholesky_jvp(primals, tangents):
    (x,), (sigma_dot,) = primals, tangents
    L = cholesky_p.bind(x)
    sigma_dot = _from_triangle(instantiate(sigma_dot), True)
    tmp = triangular_solve(L, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True,
                           lower=True)
    inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
    n = core.get_aval(x).shape[-1]
    phi = np.tril(np.ones((n, n))) - 0.5 * np.eye(n)
    phi = P.mul(tril(inner), P.broadcast_in_dim(
        phi.astype(core.get_aval(x).dtype), core.get_aval(x).shape,
        (len(core.get_aval(x).shape) - 2, len(core.get_aval(x).shape) - 1)))
    return L, batched_matmul(L, phi)


jvp_rules[cholesky_p] = _cholesky_jvp


# --- triangular_solve ---


def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    m, n = core.get_aval(b).shape[-2:]
    k = 1 if unit_diagonal else 0
    g_a = tril(g_a, -k) if lower else triu(g_a, k)
    g_a = P.neg(g_a)
    g_a = transpose_last(g_a) if transpose_a else g_a
    g_a = conj_if_complex(g_a) if conjugate_a else g_a

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, left_side=left_side, lower=lower,
                                       transpose_a=transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)
    # order the two products, as JAX, whichever way is cheaper
    if left_side:
        return a_inverse(batched_matmul(g_a, ans)) if m > n else batched_matmul(a_inverse(g_a), ans)
    return a_inverse(batched_matmul(ans, g_a)) if m < n else batched_matmul(ans, a_inverse(g_a))


def _triangular_solve_jvp_b(g_b, ans, a, b, **params):
    return triangular_solve_p.bind(a, g_b, **params)


defjvp2(triangular_solve_p, _triangular_solve_jvp_a, _triangular_solve_jvp_b)


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    # nonlinear in a, linear in b (like div with its arguments swapped)
    ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
    return [None, ct_b]


deflinear_transpose(triangular_solve_p, _triangular_solve_transpose)


# --- lu ---


def _lu_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    outs = lu_p.bind(a)
    lu, _, perm = outs
    a_dot = instantiate(a_dot)
    *batch, m, n = core.get_aval(a).shape
    k = min(m, n)
    nd = len(batch) + 2
    x = batched_matmul(permutation_matrix(perm, core.get_aval(a).dtype), a_dot)
    zero = np.zeros((), core.get_aval(a).dtype)
    cfg = [(0, 0, 0)] * nd
    l_cfg = list(cfg)
    l_cfg[-1] = (0, m - k, 0)
    lk = P.slice_in_dim(lu, 0, k, axis=nd - 1)
    l_mat = P.add(P.pad(tril(lk, -1), zero, l_cfg), eye_like(lu, (*batch, m, m)))
    u_cfg = list(cfg)
    u_cfg[-2] = (0, n - k, 0)
    uk = P.slice_in_dim(lu, 0, k, axis=nd - 2)
    u_eye = np.pad(np.eye(n - k, dtype=zero.dtype), ((k, 0), (k, 0)))
    u = P.add(P.pad(triu(uk), zero, u_cfg),
              P.broadcast_in_dim(u_eye, (*batch, n, n), (nd - 2, nd - 1)))
    la = triangular_solve(l_mat, x, left_side=True, transpose_a=False, lower=True,
                          unit_diagonal=True)
    lau = triangular_solve(u, la, left_side=False, transpose_a=False, lower=False)
    lu_dot = P.add(batched_matmul(l_mat, tril(lau, -1)), batched_matmul(triu(lau), u))
    return outs, [lu_dot] + _zeros_for(outs[1:])


jvp_rules[lu_p] = _lu_jvp


# --- qr ---


def _qr_jvp(primals, tangents, *, full_matrices):
    (x,), (dx,) = primals, tangents
    *_, m, n = core.get_aval(x).shape
    if m < n or (full_matrices and m != n):
        raise NotImplementedError(
            "Unimplemented case of QR decomposition derivative: it needs m >= n and, for "
            f"m != n, full_matrices=False (mode='reduced'); got shape {core.get_aval(x).shape} "
            f"and full_matrices={full_matrices}")
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    dx = instantiate(dx)
    dx_rinv = triangular_solve(r, dx)  # right-side solve by default
    qt_dx_rinv = batched_matmul(adjoint(q), dx_rinv)
    lower = tril(qt_dx_rinv, -1)
    do = P.sub(lower, adjoint(lower))  # skew-Hermitian
    if core.get_aval(x).dtype.kind == "c":  # the imaginary part of the diagonal
        imag_diag = P.sub(qt_dx_rinv, _as(P.real(qt_dx_rinv), qt_dx_rinv))
        do = P.add(do, P.mul(eye_like(do), imag_diag))
    dq = P.add(batched_matmul(q, P.sub(do, qt_dx_rinv)), dx_rinv)
    dr = batched_matmul(P.sub(qt_dx_rinv, do), r)
    return [q, r], [dq, dr]


jvp_rules[qr_p] = _qr_jvp


# --- eigh ---


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues):
    (a,), (a_dot,) = primals, tangents
    v, w_real = eigh_p.bind(a, lower=lower, sort_eigenvalues=sort_eigenvalues)
    a_dot = _from_triangle(instantiate(a_dot), lower)
    n = core.get_aval(a).shape[-1]
    w = _as(w_real, a)
    eye = eye_like(a)
    # the reciprocal eigenvalue gaps, with zeros (not NaNs) on the diagonal
    gaps = P.add(eye, P.sub(as_rows(w, n), as_cols(w, n)))
    fmat = P.sub(P.div(full_like_matrix(a, 1), gaps), eye)
    vdag_adot_v = batched_matmul(batched_matmul(adjoint(v), a_dot), v)
    dv = batched_matmul(v, P.mul(fmat, vdag_adot_v))
    dw = _real(diagonal(vdag_adot_v))
    return [v, w_real], [dv, dw]


jvp_rules[eigh_p] = _eigh_jvp


# --- svd ---


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (a,), (da,) = primals, tangents
    m, n = core.get_aval(a).shape[-2:]
    if compute_uv and full_matrices and m != n:  # square: full and reduced coincide
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices of a "
            f"non-square shape {core.get_aval(a).shape}: use full_matrices=False (or "
            "compute_uv=False)")
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    da = instantiate(da)
    ut, v = adjoint(u), adjoint(vt)
    k = core.get_aval(s).shape[-1]
    ds_mat = batched_matmul(batched_matmul(ut, da), v)
    ds = _real(diagonal(ds_mat))
    if not compute_uv:
        return [s], [ds]
    s_row = as_rows(s, k)  # s[..., None, :]
    s_col = transpose_last(s_row)
    eye_s = eye_like(s_row)
    s_diffs = P.mul(P.add(s_row, s_col), P.sub(s_row, s_col))
    f = P.sub(P.div(full_like_matrix(s_diffs, 1), P.add(s_diffs, eye_s)), eye_s)
    f = _as(f, a)
    s_row_a = _as(s_row, a)
    dss = P.mul(s_row_a, ds_mat)  # dS diag(s)
    sds = P.mul(transpose_last(s_row_a), ds_mat)  # diag(s) dS
    s_zero = _as(P.eq(s, full_like_matrix(s, 0)), s)
    s_inv = P.sub(P.div(full_like_matrix(s, 1), P.add(s, s_zero)), s_zero)
    s_inv_mat = _as(P.mul(as_rows(s_inv, k), eye_s), a)
    du_dv_diag = P.mul(P.mul(P.sub(ds_mat, adjoint(ds_mat)), s_inv_mat),
                       full_like_matrix(ds_mat, 0.5))
    du = batched_matmul(u, P.add(P.mul(f, P.add(dss, adjoint(dss))), du_dv_diag))
    dv = batched_matmul(v, P.mul(f, P.add(sds, adjoint(sds))))
    if m > n:
        dav = batched_matmul(da, v)
        du = P.add(du, P.div(P.sub(dav, batched_matmul(u, batched_matmul(ut, dav))),
                                 _as(as_rows(s, m), a)))
    if n > m:
        dahu = batched_matmul(adjoint(da), u)
        dv = P.add(dv, P.div(P.sub(dahu, batched_matmul(v, batched_matmul(vt, dahu))),
                                 _as(as_rows(s, n), a)))
    return [s, u, vt], [ds, du, adjoint(dv)]


jvp_rules[svd_p] = _svd_jvp


# --- vmap: the primitives take leading batch dimensions ---


def _unary_vmap(prim):
    def rule(axis, vals, dims, **params):
        (x,), (d,) = vals, dims
        out = prim.bind(moveaxis(x, d, 0), **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    vmap_rules[prim] = rule


for _p in (cholesky_p, lu_p, qr_p, eigh_p, svd_p):
    _unary_vmap(_p)


def _triangular_solve_vmap(axis, vals, dims, **params):
    (a, b), (da, db) = vals, dims
    a, b = bdim_at_front(a, da, axis.size), bdim_at_front(b, db, axis.size)
    return triangular_solve_p.bind(a, b, **params), 0


vmap_rules[triangular_solve_p] = _triangular_solve_vmap
