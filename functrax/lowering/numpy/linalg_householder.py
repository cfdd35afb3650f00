"""Householder reductions on numpy arrays, with LAPACK's conventions, batched over leading
axes (every step is one vectorized operation over the batch).

A reflector is ``H = I - tau v v^H`` with ``v[0] = 1`` (stored implicitly) and ``H^H [alpha;
x] = [beta; 0]`` for a real ``beta = -sign(re alpha) ||[alpha; x]||`` (``?larfg``); a zero
``x`` with a real ``alpha`` gives ``tau = 0`` (``H = I``).

- ``hessenberg``: ``?gehrd`` (``A = Q H Q^H``, the reflectors below the first subdiagonal);
- ``tridiagonal``: ``?sytrd`` / ``?hetrd`` (lower or upper);
- ``householder_product``: ``?orgqr`` / ``?ungqr`` (the first columns of ``H_1 ... H_k``);
- ``geqp3``: QR with column pivoting (``?geqp3``), the pivots 0-based.
"""
from __future__ import annotations

import numpy as np


def _real_dtype(dtype):
    return np.empty((), dtype).real.dtype


def _abs2(x):
    return (x.real ** 2 + x.imag ** 2) if np.iscomplexobj(x) else x * x


def larfg(alpha, x):
    """Reflectors for a batch: ``alpha`` ``[b]``, ``x`` ``[b, r]`` -> ``(beta, v, tau)`` with
    ``v`` ``[b, r]`` (the part below the implicit 1) and ``beta`` real (of alpha's dtype)."""
    xnorm2 = np.sum(_abs2(x), axis=-1)
    norm = np.sqrt(_abs2(alpha) + xnorm2)
    sign = np.where(alpha.real >= 0, 1.0, -1.0).astype(_real_dtype(alpha.dtype))
    beta = (-sign * norm).astype(alpha.dtype)
    trivial = (xnorm2 == 0) & (alpha.imag == 0 if np.iscomplexobj(alpha) else True)
    safe_beta = np.where(trivial | (beta == 0), np.ones((), alpha.dtype), beta)
    denom = np.where(trivial, np.ones((), alpha.dtype), alpha - safe_beta)
    tau = np.where(trivial, np.zeros((), alpha.dtype), (safe_beta - alpha) / safe_beta)
    v = np.where(trivial[:, None], np.zeros((), x.dtype), x / denom[:, None])
    beta = np.where(trivial, alpha, beta)
    return beta, v, tau


def _full_v(v):
    """``[1; v]`` for a batch of reflector tails."""
    return np.concatenate([np.ones(v.shape[:-1] + (1,), v.dtype), v], axis=-1)


def apply_left(h, u, tau):
    """``H^H @ h`` for ``H = I - tau u u^H`` (``h`` ``[b, r, c]``, ``u`` ``[b, r]``)."""
    w = np.einsum("br,brc->bc", np.conj(u), h)
    return h - np.conj(tau)[:, None, None] * u[:, :, None] * w[:, None, :]


def apply_right(h, u, tau):
    """``h @ H`` for ``H = I - tau u u^H`` (``h`` ``[b, c, r]``)."""
    w = np.einsum("bcr,br->bc", h, u)
    return h - tau[:, None, None] * w[:, :, None] * np.conj(u)[:, None, :]


def _flat(a):
    return a.reshape((-1,) + a.shape[-2:]).copy()


def hessenberg(a):
    """``?gehrd``: ``(h, taus)``; ``taus`` ``[..., n - 1]`` (the last one 0 for real ``a``)."""
    n = a.shape[-1]
    x = _flat(a)
    taus = np.zeros((x.shape[0], max(n - 1, 0)), a.dtype)
    for i in range(n - 1):  # the last reflector makes a complex subdiagonal entry real
        beta, v, tau = larfg(x[:, i + 1, i], x[:, i + 2:, i])
        u = _full_v(v)
        x[:, :, i + 1:] = apply_right(x[:, :, i + 1:], u, tau)
        x[:, i + 1:, i + 1:] = apply_left(x[:, i + 1:, i + 1:], u, tau)
        x[:, i + 1, i] = beta
        x[:, i + 2:, i] = v
        taus[:, i] = tau
    return [x.reshape(a.shape), taus.reshape(a.shape[:-2] + taus.shape[-1:])]


def _two_sided(x, sl, u, tau):
    """``H^H x[sl, sl] H`` in place (a Hermitian update of the trailing block)."""
    blk = x[:, sl, sl]
    x[:, sl, sl] = apply_left(apply_right(blk, u, tau), u, tau)


def tridiagonal(a, lower=True):
    """``?sytrd``/``?hetrd``: ``(a, d, e, taus)``; the unreferenced triangle of ``a`` is
    returned unchanged, ``d`` and ``e`` are real."""
    n = a.shape[-1]
    x = _flat(a)
    work = np.where(np.tri(n, dtype=bool) if lower else ~np.tri(n, k=-1, dtype=bool),
                    x, np.conj(np.swapaxes(x, -1, -2)))
    nb = x.shape[0]
    real = _real_dtype(a.dtype)
    e = np.zeros((nb, max(n - 1, 0)), real)
    taus = np.zeros((nb, max(n - 1, 0)), a.dtype)
    steps = range(n - 1) if lower else range(n - 2, -1, -1)
    for i in steps:
        if lower:
            beta, v, tau = larfg(work[:, i + 1, i], work[:, i + 2:, i])
            u = _full_v(v)
            _two_sided(work, slice(i + 1, n), u, tau)
            work[:, i + 2:, i] = v
            work[:, i + 1, i] = beta
            work[:, i, i + 1] = np.conj(beta)
        else:  # annihilate a[:i, i + 1] with the pivot a[i, i + 1] (v[i] = 1, v[i+1:] = 0)
            beta, v, tau = larfg(work[:, i, i + 1], work[:, :i, i + 1])
            u = np.concatenate([v, np.ones((nb, 1), v.dtype)], axis=-1)
            _two_sided(work, slice(0, i + 1), u, tau)
            work[:, :i, i + 1] = v
            work[:, i, i + 1] = beta
            work[:, i + 1, i] = np.conj(beta)
        e[:, i] = beta.real
        taus[:, i] = tau
    d = np.real(np.diagonal(work, axis1=-2, axis2=-1)).astype(real)
    keep = np.tri(n, dtype=bool) if lower else ~np.tri(n, k=-1, dtype=bool)
    out = np.where(keep, work, x)
    idx = np.arange(n)
    out[:, idx, idx] = d
    batch = a.shape[:-2]
    return [out.reshape(a.shape), d.reshape(batch + (n,)), e.reshape(batch + e.shape[-1:]),
            taus.reshape(batch + taus.shape[-1:])]


def householder_product(a, taus):
    """``?orgqr``/``?ungqr``: the first ``n`` columns of ``H_1 ... H_k`` (``a`` ``[..., m, n]``,
    ``taus`` ``[..., k]``, ``k <= n <= m``)."""
    m, n = a.shape[-2:]
    k = taus.shape[-1]
    x = _flat(a)
    t = taus.reshape(-1, k)
    q = np.broadcast_to(np.eye(m, n, dtype=a.dtype), x.shape).copy()
    for i in range(k - 1, -1, -1):
        u = _full_v(x[:, i + 1:, i])
        # H_i q = q - tau u (u^H q): apply_left applies H^H, so pass conj(tau)
        q[:, i:, :] = apply_left(q[:, i:, :], u, np.conj(t[:, i]))
    return q.reshape(a.shape)


def geqp3(a):
    """QR with column pivoting: ``(a, jpvt, taus)`` as ``?geqp3`` (pivots 0-based, int32):
    at each step the remaining column of largest norm is moved to the front."""
    m, n = a.shape[-2:]
    k = min(m, n)
    x = _flat(a)
    nb = x.shape[0]
    rows = np.arange(nb)
    jpvt = np.tile(np.arange(n, dtype=np.int32), (nb, 1))
    taus = np.zeros((nb, k), a.dtype)
    for j in range(k):
        norms = np.sum(_abs2(x[:, j:, j:]), axis=1)
        p = j + np.argmax(norms, axis=1)
        x[rows, :, j], x[rows, :, p] = x[rows, :, p].copy(), x[rows, :, j].copy()
        jpvt[rows, j], jpvt[rows, p] = jpvt[rows, p].copy(), jpvt[rows, j].copy()
        beta, v, tau = larfg(x[:, j, j], x[:, j + 1:, j])
        u = _full_v(v)
        x[:, j:, j + 1:] = apply_left(x[:, j:, j + 1:], u, tau)
        x[:, j, j] = beta
        x[:, j + 1:, j] = v
        taus[:, j] = tau
    batch = a.shape[:-2]
    return [x.reshape(a.shape), jpvt.reshape(batch + (n,)), taus.reshape(batch + (k,))]
