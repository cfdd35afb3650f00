"""numpy rules of the linear-algebra primitives (``functrax/primitives/linalg.py``).

``np.linalg`` does the work (batched over leading axes). As JAX, a decomposition that fails
(a matrix that is not positive definite, an iteration that does not converge) gives NaNs
for that matrix instead of raising. LU with partial pivoting (numpy has none) is a batched
right-looking Doolittle elimination, one vectorized step per column.

The primitives numpy has no routine for use algorithms of our own: the Householder
reductions (Hessenberg, tridiagonal, pivoted QR, the Householder product) in
``linalg_householder.py``, the Schur decomposition (shifted QR on the Hessenberg form) in
``linalg_schur.py``; a tridiagonal solve is Gaussian elimination with partial pivoting,
vectorized over the batch; eig is ``np.linalg.eig`` (left eigenvectors from the inverse of
the right ones).
"""
from __future__ import annotations

import numpy as np

from functrax.lowering.numpy import linalg_householder as _hh
from functrax.lowering.numpy.linalg_schur import schur as _schur_rule
from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.linalg import (
    cholesky_p, eigh_p, geqp3_p, lu_p, qr_p, svd_p, triangular_solve_p,
)
from functrax.primitives.linalg_more import (
    eig_p, hessenberg_p, householder_product_p, schur_p, tridiagonal_p, tridiagonal_solve_p,
)


def _per_matrix(fn, x, out_shapes):
    """``fn`` over the matrices of ``x`` (batch axes lead); a matrix whose ``fn`` raises
    LinAlgError gets NaN outputs. ``out_shapes``: (core shape, dtype) of each output."""
    batch = x.shape[:-2]
    flat = x.reshape((-1,) + x.shape[-2:])
    try:
        outs = fn(flat)
        return [np.asarray(o).reshape(batch + s).astype(d, copy=False)
                for o, (s, d) in zip(outs, out_shapes)]
    except np.linalg.LinAlgError:
        pass
    res = [np.full((flat.shape[0],) + s, np.nan, d) for s, d in out_shapes]
    for i in range(flat.shape[0]):
        try:
            outs = fn(flat[i:i + 1])
        except np.linalg.LinAlgError:
            continue
        for r, o in zip(res, outs):
            r[i] = np.asarray(o)[0]
    return [r.reshape(batch + s) for r, (s, _) in zip(res, out_shapes)]


def _cholesky(a):
    n = a.shape[-1]
    return _per_matrix(lambda f: [np.linalg.cholesky(f)], a, [((n, n), a.dtype)])[0]


def _tri_op(a, lower, transpose_a, conjugate_a, unit_diagonal):
    """op(a) with the ignored triangle zeroed and a unit diagonal written in."""
    a = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        eye = np.eye(a.shape[-1], dtype=bool)
        a = np.where(eye, np.ones((), a.dtype), a)
    if conjugate_a:
        a = np.conj(a)
    return np.swapaxes(a, -1, -2) if transpose_a else a


def _substitute(t, b, lower):
    """Solve ``t @ x = b`` for triangular ``t`` by substitution (singular ``t``: inf/nan,
    as XLA's triangular solve)."""
    m = t.shape[-1]
    x = np.zeros(b.shape, np.result_type(t, b))
    order = range(m) if lower else range(m - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            acc = b[..., i, :] - np.einsum("...k,...kn->...n", t[..., i, :], x)
            x[..., i, :] = acc / t[..., i, i, None]
    return x


def _triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False,
                      conjugate_a=False, unit_diagonal=False):
    t = _tri_op(a, lower, transpose_a, conjugate_a, unit_diagonal)
    eff_lower = lower != transpose_a  # op(a) is lower triangular
    if not left_side:  # x @ t = b  <=>  t^T @ x^T = b^T
        t, b, eff_lower = np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not eff_lower
    if b.size == 0 or t.shape[-1] == 0:
        x = np.zeros(b.shape, b.dtype)
    else:
        x = _substitute(t, b, eff_lower) if not _all_invertible(t) else np.linalg.solve(t, b)
    x = x.astype(b.dtype, copy=False)
    return np.swapaxes(x, -1, -2) if not left_side else x


def _all_invertible(t):
    return bool(np.all(np.diagonal(t, axis1=-2, axis2=-1) != 0))


def _lu(a):
    """Batched LU with partial pivoting (LAPACK getrf's pivot choice: max |re| + |im|)."""
    *batch, m, n = a.shape
    k = min(m, n)
    x = a.reshape(-1, m, n).copy()
    nb = x.shape[0]
    pivots = np.zeros((nb, k), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (nb, 1))
    rows = np.arange(nb)
    with np.errstate(all="ignore"):
        for j in range(k):
            col = x[:, j:, j]
            mag = np.abs(col.real) + np.abs(col.imag) if x.dtype.kind == "c" else np.abs(col)
            p = j + np.argmax(mag, axis=1)
            pivots[:, j] = p
            x[rows, j], x[rows, p] = x[rows, p].copy(), x[rows, j].copy()
            perm[rows, j], perm[rows, p] = perm[rows, p].copy(), perm[rows, j].copy()
            piv = x[:, j, j]
            ok = (piv != 0)[:, None]
            x[:, j + 1:, j] = np.where(ok, x[:, j + 1:, j] / np.where(ok[:, 0], piv, 1)[:, None],
                                       x[:, j + 1:, j])
            x[:, j + 1:, j + 1:] -= x[:, j + 1:, j, None] * x[:, j, None, j + 1:]
    return [x.reshape(a.shape), pivots.reshape(*batch, k), perm.reshape(*batch, m)]


def _qr(a, *, full_matrices=True):
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    mode = "complete" if full_matrices else "reduced"
    if a.size == 0:
        q = np.broadcast_to(np.eye(m, k, dtype=a.dtype), a.shape[:-2] + (m, k)).copy()
        return [q, np.zeros(a.shape[:-2] + (k, n), a.dtype)]
    return _per_matrix(lambda f: list(np.linalg.qr(f, mode=mode)), a,
                       [((m, k), a.dtype), ((k, n), a.dtype)])


def _eigh(a, *, lower=True, sort_eigenvalues=True):
    n = a.shape[-1]
    real = np.empty((), a.dtype).real.dtype
    if a.size == 0:
        return [np.zeros(a.shape, a.dtype), np.zeros(a.shape[:-1], real)]

    def fn(f):
        w, v = np.linalg.eigh(f, UPLO="L" if lower else "U")
        return [v, w]
    return _per_matrix(fn, a, [((n, n), a.dtype), ((n,), real)])


def _svd(a, *, full_matrices=True, compute_uv=True):
    m, n = a.shape[-2:]
    k = min(m, n)
    real = np.empty((), a.dtype).real.dtype
    shapes = [((k,), real)]
    if compute_uv:
        shapes += [((m, m if full_matrices else k), a.dtype),
                   ((n if full_matrices else k, n), a.dtype)]
    if a.size == 0:
        batch = a.shape[:-2]
        return [np.broadcast_to(np.eye(*s, dtype=d) if len(s) == 2 else np.zeros(s, d),
                                batch + s).copy() for s, d in shapes]

    def fn(f):
        if not compute_uv:
            return [np.linalg.svd(f, compute_uv=False)]
        u, s, vh = np.linalg.svd(f, full_matrices=full_matrices)
        return [s, u, vh]
    return _per_matrix(fn, a, shapes)


numpy_rules.update({
    cholesky_p: _cholesky, triangular_solve_p: _triangular_solve, lu_p: _lu, qr_p: _qr,
    eigh_p: _eigh, svd_p: _svd,
})


# --- the primitives of linalg_more.py (and geqp3) ---


def _normalize_columns(v):
    """Unit 2-norm columns whose largest-magnitude component is real and positive, as
    LAPACK's ``?geev`` returns eigenvectors."""
    norms = np.linalg.norm(v, axis=-2, keepdims=True)
    v = v / np.where(norms == 0, 1, norms)
    big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    phase = np.where(big == 0, 1, np.conj(big) / np.where(big == 0, 1, np.abs(big)))
    return v * phase


def _eig(a, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
         enable_eigvec_derivs=False):
    n = a.shape[-1]
    dt = np.result_type(a.dtype, np.complex64)
    need_v = compute_left_eigenvectors or compute_right_eigenvectors

    def fn(f):
        if not need_v:
            return [np.linalg.eigvals(f)]
        w, vr = np.linalg.eig(f)
        outs = [w]
        if compute_left_eigenvectors:
            outs.append(_normalize_columns(np.conj(np.swapaxes(np.linalg.inv(vr), -1, -2))))
        if compute_right_eigenvectors:
            outs.append(vr)
        return outs
    shapes = [((n,), dt)] + [((n, n), dt)] * (int(compute_left_eigenvectors)
                                              + int(compute_right_eigenvectors))
    if a.size == 0:
        return [np.zeros(a.shape[:-2] + s, d) for s, d in shapes]
    return _per_matrix(fn, a, shapes)


def _tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """Gaussian elimination with partial pivoting (``?gtsv``), batched: row ``i`` holds
    ``(diag, super, super2)`` at columns ``i, i + 1, i + 2`` after elimination."""
    m = d.shape[-1]
    if m == 0 or b.size == 0:
        return np.zeros(b.shape, b.dtype)
    lo, dg, up = (np.broadcast_to(x, d.shape).reshape(-1, m).copy() for x in (dl, d, du))
    rhs = b.reshape((-1,) + b.shape[-2:]).copy()
    up2 = np.zeros_like(dg)
    with np.errstate(all="ignore"):
        for i in range(m - 1):
            swap = np.abs(dg[:, i]) < np.abs(lo[:, i + 1])
            _pivot_rows(swap, i, lo, dg, up, up2, rhs, m)
            fact = lo[:, i + 1] / dg[:, i]
            dg[:, i + 1] -= fact * up[:, i]
            if i + 1 < m - 1:
                up[:, i + 1] -= fact * up2[:, i]
            rhs[:, i + 1] -= fact[:, None] * rhs[:, i]
        x = np.zeros_like(rhs)
        for i in range(m - 1, -1, -1):
            acc = rhs[:, i].copy()
            if i + 1 < m:
                acc -= up[:, i, None] * x[:, i + 1]
            if i + 2 < m:
                acc -= up2[:, i, None] * x[:, i + 2]
            x[:, i] = acc / dg[:, i, None]
    return x.reshape(b.shape)


def _pivot_rows(swap, i, lo, dg, up, up2, rhs, m):
    """Exchange rows ``i`` and ``i + 1`` where ``swap`` (row ``i + 1``: ``lo, dg, up``)."""
    s = swap
    r0 = (dg[:, i].copy(), up[:, i].copy())
    r1 = (lo[:, i + 1].copy(), dg[:, i + 1].copy(), up[:, i + 1].copy() if i + 1 < m - 1
          else np.zeros_like(dg[:, i]))
    dg[:, i] = np.where(s, r1[0], r0[0])
    up[:, i] = np.where(s, r1[1], r0[1])
    up2[:, i] = np.where(s, r1[2], 0)
    lo[:, i + 1] = np.where(s, r0[0], r1[0])
    dg[:, i + 1] = np.where(s, r0[1], r1[1])
    if i + 1 < m - 1:
        up[:, i + 1] = np.where(s, 0, r1[2])
    top = rhs[:, i].copy()
    rhs[:, i] = np.where(s[:, None], rhs[:, i + 1], top)
    rhs[:, i + 1] = np.where(s[:, None], top, rhs[:, i + 1])


def _schur(a, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    return _schur_rule(a, compute_schur_vectors)


numpy_rules.update({
    hessenberg_p: _hh.hessenberg,
    tridiagonal_p: lambda a, *, lower=True: _hh.tridiagonal(a, lower),
    householder_product_p: _hh.householder_product,
    geqp3_p: _hh.geqp3,
    schur_p: _schur,
    eig_p: _eig,
    tridiagonal_solve_p: _tridiagonal_solve,
})
