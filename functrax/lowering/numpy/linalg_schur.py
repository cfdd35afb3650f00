"""The Schur decomposition ``A = Z T Z^H`` on numpy arrays (numpy has no ``?gees``).

The matrix is reduced to Hessenberg form by Householder reflections
(``linalg_householder.hessenberg``), then the QR algorithm runs on it with deflation:

- real input: Francis' implicit double-shift step (bulges chased by 3x3 reflectors, Golub &
  Van Loan, Algorithm 7.5.1), with an exceptional shift every 10 steps without deflation; the
  2x2 blocks are standardized as LAPACK's ``dlanv2`` (``[[a, b], [c, a]]`` with ``b c < 0`` for
  a complex pair; split into two 1x1 blocks for real eigenvalues): ``T`` is quasi upper
  triangular, as ``scipy.linalg.schur(output='real')``;
- complex input: the single-shift step with Wilkinson's shift (Givens rotations), ``T``
  upper triangular.

Matrices are processed one at a time (the iteration count depends on the matrix). A matrix
whose iteration does not converge in ``30 max(n, 10)`` steps gives NaNs, as LAPACK's failure
does in JAX.
"""
from __future__ import annotations

import math

import numpy as np

from functrax.lowering.numpy.linalg_householder import hessenberg, householder_product


def _hessenberg_with_q(a):
    """``(h, q)`` with ``a = q h q^H`` for one matrix."""
    n = a.shape[-1]
    packed, taus = hessenberg(a[None])
    h = np.triu(packed[0], -1)
    q = np.eye(n, dtype=a.dtype)
    if n > 1:
        q[1:, 1:] = householder_product(packed[:, 1:, :-1], taus)[0]
    return h, q


def _negligible(h, k, eps, norm):
    scale = abs(h[k - 1, k - 1]) + abs(h[k, k])
    return abs(h[k, k - 1]) <= eps * (scale if scale != 0 else norm)


def _active_start(h, hi, eps, norm):
    """The first row of the unreduced block ending at ``hi`` (zeroing negligible entries)."""
    lo = hi
    while lo > 0:
        if _negligible(h, lo, eps, norm):
            h[lo, lo - 1] = 0
            break
        lo -= 1
    return lo


def _reflector(w):
    """``(v, beta)`` with ``(I - beta v v^T) w = -+||w|| e_1``; beta 0 for a zero ``w``."""
    norm = math.sqrt(float(np.dot(w, w)))
    if norm == 0.0:
        return w, 0.0
    v = w.copy()
    v[0] += math.copysign(norm, w[0])
    return v, 2.0 / float(np.dot(v, v))


def _reflect(h, z, rows, cols_from, rows_to, v, beta):
    """``P h P`` on ``rows`` (``P = I - beta v v^T``), restricted as the bulge chase needs."""
    if beta == 0.0:
        return
    blk = h[rows, cols_from:]
    h[rows, cols_from:] = blk - beta * np.outer(v, v @ blk)
    blk = h[:rows_to + 1, rows]
    h[:rows_to + 1, rows] = blk - beta * np.outer(blk @ v, v)
    z[:, rows] -= beta * np.outer(z[:, rows] @ v, v)


def _double_shift(h, its, lo, hi):
    m = hi
    if its % 10 == 0:  # exceptional shift: breaks cycles of the standard one
        w = abs(h[m, m - 1]) + abs(h[m - 1, m - 2])
        return 1.5 * w, w * w
    s = h[m - 1, m - 1] + h[m, m]
    t = h[m - 1, m - 1] * h[m, m] - h[m - 1, m] * h[m, m - 1]
    return s, t


def _francis_step(h, z, lo, hi, its):
    """One implicit double-shift QR step on the unreduced block ``lo..hi`` (size >= 3)."""
    s, t = _double_shift(h, its, lo, hi)
    x = h[lo, lo] * h[lo, lo] + h[lo, lo + 1] * h[lo + 1, lo] - s * h[lo, lo] + t
    y = h[lo + 1, lo] * (h[lo, lo] + h[lo + 1, lo + 1] - s)
    w = h[lo + 1, lo] * h[lo + 2, lo + 1]
    for k in range(lo, hi - 1):
        v, beta = _reflector(np.array([x, y, w], h.dtype))
        _reflect(h, z, slice(k, k + 3), max(lo, k - 1), min(k + 3, hi), v, beta)
        if k > lo:
            h[k + 1:k + 3, k - 1] = 0
        x, y = h[k + 1, k], h[k + 2, k]
        if k < hi - 2:
            w = h[k + 3, k]
    v, beta = _reflector(np.array([x, y], h.dtype))
    _reflect(h, z, slice(hi - 1, hi + 1), hi - 2, hi, v, beta)
    h[hi, hi - 2] = 0


def _sign(x):
    return 1.0 if x >= 0 else -1.0


def lanv2(a, b, c, d, eps):
    """LAPACK's ``dlanv2``: the rotation ``(cs, sn)`` standardizing ``[[a, b], [c, d]]`` and
    the standardized block ``(a, b, c, d)``."""
    if c == 0:
        return a, b, c, d, 1.0, 0.0
    if b == 0:  # swap rows and columns
        return d, -c, 0.0, a, 0.0, 1.0
    if a - d == 0 and _sign(b) != _sign(c):
        return a, b, c, d, 1.0, 0.0
    temp = a - d
    p = 0.5 * temp
    bcmax = max(abs(b), abs(c))
    bcmis = min(abs(b), abs(c)) * _sign(b) * _sign(c)
    scale = max(abs(p), bcmax)
    zz = p / scale * p + bcmax / scale * bcmis
    if zz >= 4.0 * eps:  # real eigenvalues: an upper triangular block
        zz = p + math.copysign(math.sqrt(scale) * math.sqrt(zz), p)
        a, d = d + zz, d - bcmax / zz * bcmis
        tau = math.hypot(c, zz)
        return a, b - c, 0.0, d, zz / tau, c / tau
    sigma = b + c  # complex or nearly equal eigenvalues: equal diagonal entries
    tau = math.hypot(sigma, temp)
    cs = math.sqrt(0.5 * (1.0 + abs(sigma) / tau))
    sn = -(p / (tau * cs)) * _sign(sigma)
    aa, bb = a * cs + b * sn, -a * sn + b * cs
    cc, dd = c * cs + d * sn, -c * sn + d * cs
    b, c = bb * cs + dd * sn, -aa * sn + cc * cs
    a = d = 0.5 * (aa * cs + cc * sn + (-bb * sn + dd * cs))
    if c != 0 and b != 0 and _sign(b) == _sign(c):  # real after all: triangularize
        sab, sac = math.sqrt(abs(b)), math.sqrt(abs(c))
        p = math.copysign(sab * sac, c)
        tau = 1.0 / math.sqrt(abs(b + c))
        cs1, sn1 = sab * tau, sac * tau
        cs, sn = cs * cs1 - sn * sn1, cs * sn1 + sn * cs1
        return a + p, b - c, 0.0, d - p, cs, sn
    if c != 0 and b == 0:
        return a, -c, 0.0, d, -sn, cs
    return a, b, c, d, cs, sn


def _rotate(h, z, i, cs, sn, block):
    """Rows/columns ``i, i + 1`` of ``h`` and columns of ``z`` by ``drot(cs, sn)``; the
    2x2 block itself is written from ``block``."""
    r0, r1 = h[i, i + 2:].copy(), h[i + 1, i + 2:].copy()
    h[i, i + 2:], h[i + 1, i + 2:] = cs * r0 + sn * r1, cs * r1 - sn * r0
    c0, c1 = h[:i, i].copy(), h[:i, i + 1].copy()
    h[:i, i], h[:i, i + 1] = cs * c0 + sn * c1, cs * c1 - sn * c0
    z0, z1 = z[:, i].copy(), z[:, i + 1].copy()
    z[:, i], z[:, i + 1] = cs * z0 + sn * z1, cs * z1 - sn * z0
    h[i, i], h[i, i + 1], h[i + 1, i], h[i + 1, i + 1] = block


def _standardize(h, z, i, eps):
    a, b, c, d, cs, sn = lanv2(float(h[i, i]), float(h[i, i + 1]), float(h[i + 1, i]),
                               float(h[i + 1, i + 1]), eps)
    _rotate(h, z, i, cs, sn, (a, b, c, d))


def _qr_iterate(h, z, step, two_by_two):
    """Deflating QR iteration from the bottom; False if it did not converge."""
    n = h.shape[0]
    eps = float(np.finfo(h.dtype).eps)
    norm = float(np.max(np.abs(h))) if n else 0.0
    hi, its, max_its = n - 1, 0, 30 * max(n, 10)
    while hi >= 0:
        lo = _active_start(h, hi, eps, norm)
        if lo == hi:
            hi, its = hi - 1, 0
        elif lo == hi - 1 and two_by_two is not None:
            two_by_two(h, z, hi - 1, eps)
            hi, its = hi - 2, 0
        else:
            its += 1
            if its > max_its:
                return False
            step(h, z, lo, hi, its)
    return True


def _wilkinson_shift(h, hi, its):
    if its % 10 == 0:
        return h[hi, hi] + abs(h[hi, hi - 1])
    a, b, c, d = h[hi - 1, hi - 1], h[hi - 1, hi], h[hi, hi - 1], h[hi, hi]
    mean = 0.5 * (a + d)
    disc = np.sqrt(0.25 * (a - d) ** 2 + b * c)
    l1, l2 = mean + disc, mean - disc
    return l1 if abs(l1 - d) <= abs(l2 - d) else l2


def _givens(x, y):
    """``(c, s)``: ``[[c, s], [-conj(s), c]] @ [x, y] = [r, 0]`` with ``c`` real."""
    ax, ay = abs(x), abs(y)
    r = math.hypot(ax, ay)
    if r == 0.0:
        return 1.0, 0.0
    if ax == 0.0:
        return 0.0, np.conj(y) / ay
    return ax / r, (x / ax) * np.conj(y) / r


def _single_shift_step(h, z, lo, hi, its):
    mu = _wilkinson_shift(h, hi, its)
    x, y = h[lo, lo] - mu, h[lo + 1, lo]
    for k in range(lo, hi):
        c, s = _givens(x, y)
        g = np.array([[c, s], [-np.conj(s), c]], h.dtype)
        rows = slice(k, k + 2)
        col0 = max(lo, k - 1)
        h[rows, col0:] = g @ h[rows, col0:]
        top = min(k + 2, hi)
        h[:top + 1, rows] = h[:top + 1, rows] @ np.conj(g.T)
        z[:, rows] = z[:, rows] @ np.conj(g.T)
        if k > lo:
            h[k + 1, k - 1] = 0
        if k < hi - 1:
            x, y = h[k + 1, k], h[k + 2, k]


def _schur_one(a):
    """``(t, z)`` of one square matrix, or None if the iteration failed."""
    h, z = _hessenberg_with_q(a)
    if np.iscomplexobj(a):
        ok = _qr_iterate(h, z, _single_shift_step, None)
        t = np.triu(h)
    else:
        ok = _qr_iterate(h, z, _francis_step, _standardize)
        t = np.triu(h, -1)
    return (t, z) if ok else None


def schur(a, compute_schur_vectors=True):
    """Batched Schur decomposition: ``[t, z]`` (or ``[t]``)."""
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    ts, zs = np.empty_like(flat), np.empty_like(flat)
    for i, m in enumerate(flat):
        if not np.all(np.isfinite(m)):
            ts[i], zs[i] = np.nan, np.nan
            continue
        res = _schur_one(np.array(m))
        if res is None:
            ts[i], zs[i] = np.nan, np.nan
        else:
            ts[i], zs[i] = res
    outs = [ts.reshape(a.shape)]
    if compute_schur_vectors:
        outs.append(zs.reshape(a.shape))
    return outs
