"""The regularized incomplete beta function ``I_x(a, b)`` on numpy arrays, without scipy.

Cephes' ``incbet`` scheme, vectorized: the power series when ``b x <= 1`` and ``x <= 0.95``;
otherwise, after the symmetry ``I_x(a, b) = 1 - I_{1-x}(b, a)`` that puts ``x`` below the
mean ``a / (a + b)``, one of two continued fractions (``incbcf`` / ``incbd``), each element
iterating until its own relative change is below eps. The prefactor
``x**a (1-x)**b / (a B(a, b))`` is computed, for ``a, b >= 10``, from the distance of ``x``
to the mean (``a log1pmx(d / x0) + b log1pmx(-d / (1 - x0))``), which keeps its relative
accuracy near the mean for large ``a`` and ``b``.

Special values follow XLA (as JAX): NaN for ``a < 0``, ``b < 0``, ``x`` outside [0, 1], a
NaN operand, or ``a == b == 0``; ``a == 0`` (or ``b == inf``) gives 1 for ``x > 0``;
``b == 0`` (or ``a == inf``) gives 0 for ``x < 1``.
"""
from __future__ import annotations

import numpy as np

from functrax.lowering.numpy.special_functions import (
    EPS64, as_f64, finish, lbeta64, log1pmx, stirling_correction,
)

__all__ = ["betainc", "betainc64", "MAX_ITERATIONS"]

MAX_ITERATIONS = 20000
_BIG = 4.503599627370496e15
_BIGINV = 2.22044604925031308085e-16


def _run(state, step, idx):
    for _ in range(MAX_ITERATIONS):
        if idx.size == 0:
            break
        sub = {k: v[idx] for k, v in state.items()}
        new, done = step(sub)
        for k, v in new.items():
            state[k][idx] = v
        idx = idx[~done]
    return state


def _cf(a, b, x, idx, kind):
    """Cephes' ``incbcf`` (``kind == 0``) or ``incbd`` (``kind == 1``) on the elements
    ``idx``; returns the full-size array of continued-fraction values."""
    n = a.shape
    if kind == 0:
        ks = [a, a + b, a, a + 1.0, np.ones(n), b - 1.0, a + 1.0, a + 2.0]
        z = x
    else:
        ks = [a, b - 1.0, a, a + 1.0, np.ones(n), a + b, a + 1.0, a + 2.0]
        with np.errstate(all="ignore"):
            z = x / (1.0 - x)
    state = {f"k{i + 1}": np.array(k, np.float64) for i, k in enumerate(ks)}
    state.update(z=np.array(z, np.float64), pkm2=np.zeros(n), qkm2=np.ones(n),
                 pkm1=np.ones(n), qkm1=np.ones(n), ans=np.ones(n))
    steps = ((1, 1, 2, 2, 1, -1, 2, 2) if kind == 0 else (1, -1, 2, 2, 1, 1, 2, 2))

    def step(s):
        xk = -(s["z"] * s["k1"] * s["k2"]) / (s["k3"] * s["k4"])
        pk = s["pkm1"] + s["pkm2"] * xk
        qk = s["qkm1"] + s["qkm2"] * xk
        pkm2, pkm1, qkm2, qkm1 = s["pkm1"], pk, s["qkm1"], qk
        xk = (s["z"] * s["k5"] * s["k6"]) / (s["k7"] * s["k8"])
        pk = pkm1 + pkm2 * xk
        qk = qkm1 + qkm2 * xk
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        r = np.where(qk != 0, pk / np.where(qk != 0, qk, 1.0), 0.0)
        keep = (qk == 0) | (r == 0)
        t = np.where(keep, 1.0, np.abs((s["ans"] - r) / np.where(r != 0, r, 1.0)))
        ans = np.where(keep, s["ans"], r)
        new = {f"k{i + 1}": s[f"k{i + 1}"] + d for i, d in enumerate(steps)}
        big = (np.abs(qk) + np.abs(pk)) > _BIG
        small = (np.abs(qk) < _BIGINV) | (np.abs(pk) < _BIGINV)
        scale = np.where(big, _BIGINV, np.where(small, _BIG, 1.0))
        new.update(pkm2=pkm2 * scale, pkm1=pkm1 * scale, qkm2=qkm2 * scale,
                   qkm1=qkm1 * scale, ans=ans)
        return new, ~(t > 3.0 * EPS64)

    with np.errstate(all="ignore"):
        state = _run(state, step, idx)
    return state["ans"]


def _log_prefactor(a, b, x):
    """``log(x**a (1 - x)**b / (a B(a, b)))``."""
    with np.errstate(all="ignore"):
        direct = a * np.log(x) + b * np.log1p(-x) - lbeta64(a, b) - np.log(a)
        big = (a >= 10) & (b >= 10)
        ab, bb = np.where(big, a, 10.0), np.where(big, b, 10.0)
        s = ab + bb
        x0 = ab / s
        d = x - x0
        # log B(a, b) by Stirling's series, with the a log x0 + b log(1 - x0) part cancelled
        rest = (0.5 * np.log(ab * bb / s) - 0.5 * np.log(2 * np.pi) - stirling_correction(ab)
                - stirling_correction(bb) + stirling_correction(s))
        near = ab * log1pmx(d / x0) + bb * log1pmx(-d * s / bb)
        accurate = near + rest - np.log(ab)
    return np.where(big, accurate, direct)


def _series(a, b, x, idx):
    """Cephes' ``pseries``: ``I_x(a, b)`` for ``b x <= 1``, ``x <= 0.95`` (flat, on idx)."""
    n = a.shape
    with np.errstate(all="ignore"):
        u = (1.0 - b) * x
        state = {"a": a, "b": b, "x": x, "t": u.copy(), "n": np.full(n, 2.0),
                 "s": np.zeros(n), "t1": u / (a + 1.0)}

    def step(s):
        u = (s["n"] - s["b"]) * s["x"] / s["n"]
        t = s["t"] * u
        v = t / (s["a"] + s["n"])
        total = s["s"] + v
        return {"t": t, "n": s["n"] + 1.0, "s": total}, ~(np.abs(v) > EPS64 / s["a"])

    with np.errstate(all="ignore"):
        state = _run(state, step, idx)
        total = state["s"] + state["t1"] + 1.0 / a
        log_pre = a * np.log(x) - lbeta64(a, b)
        return np.exp(log_pre + np.log(total))


def betainc64(a, b, x):
    """``I_x(a, b)`` of flat float64 arrays."""
    nan = np.isnan(a) | np.isnan(b) | np.isnan(x)
    a_zero = (a == 0) | (b == np.inf)
    b_zero = (b == 0) | (a == np.inf)
    bad = nan | (a < 0) | (b < 0) | (x < 0) | (x > 1) | (a_zero & b_zero)
    ok = ~bad & ~a_zero & ~b_zero & (x > 0) & (x < 1)
    out = np.zeros(a.shape)
    with np.errstate(all="ignore"):
        direct = ok & (b * x <= 1.0) & (x <= 0.95)
        out = np.where(direct, _series(a, b, x, np.flatnonzero(direct)), out)
        flip = ok & ~direct & (x > a / (a + b))
        aa, bb = np.where(flip, b, a), np.where(flip, a, b)
        xx = np.where(flip, 1.0 - x, x)
        flipped_series = flip & (bb * xx <= 1.0) & (xx <= 0.95)
        fs = _series(aa, bb, xx, np.flatnonzero(flipped_series))
        out = np.where(flipped_series, 1.0 - fs, out)
        rest = ok & ~direct & ~flipped_series
        y = xx * (aa + bb - 2.0) - (aa - 1.0)
        w0 = _cf(aa, bb, xx, np.flatnonzero(rest & (y < 0)), 0)
        w1 = _cf(aa, bb, xx, np.flatnonzero(rest & (y >= 0)), 1) / (1.0 - xx)
        w = np.where(y < 0, w0, w1)
        t = np.exp(_log_prefactor(aa, bb, xx)) * w
        out = np.where(rest, np.where(flip, 1.0 - t, t), out)
    edge_one = (a_zero & (x > 0)) | (b_zero & (x == 1)) | (~a_zero & ~b_zero & (x == 1))
    out = np.where(~ok, np.where(edge_one, 1.0, 0.0), out)
    return np.where(bad, np.nan, out)


def betainc(a, b, x):
    (a64, b64, x64), dt = as_f64(a, b, x)
    return finish(betainc64(a64.ravel(), b64.ravel(), x64.ravel()).reshape(a64.shape), dt)
