"""The incomplete gamma family on numpy arrays: ``igamma`` (P), ``igammac`` (Q),
``igamma_grad_a`` (dP/da) and ``random_gamma_grad`` (dx/da of a Gamma(a, 1) sample at a
fixed quantile), without scipy.

The scheme is Cephes' ``igam``/``igamc`` (as XLA's): the power series of P for ``x <= 1`` or
``x <= a``, else the continued fraction of Q, with the derivatives in ``a`` of every term
carried along for the gradient modes. Differences from XLA:

- the prefactor ``x**a exp(-x) / Gamma(a)`` is computed for ``a >= 10`` as
  ``a log1pmx((x - a) / a) + log(a / 2 pi) / 2 - stirling(a)``, without the cancellation of
  ``a log x - x - lgamma(a)`` (which loses ``a eps`` relative accuracy near ``x = a``);
- ``random_gamma_grad`` does not skip elements whose prefactor underflows (the prefactor
  cancels from its ratio);
- ``Q`` for ``a < 1/2``, ``x <= 1`` is ``-expm1(u) - exp(u) a sum_{n>=1} (-x)**n / (n!
  (a+n))`` with ``u = a log x - lgamma(1 + a)`` (``lgamma(1 + a)`` by its Taylor series),
  not ``1 - P``, which loses ``log10(1 / Q)`` digits when ``Q`` is small (``a -> 0``);
- iterations run until each element converges (relative change below eps), at most
  ``MAX_ITERATIONS``, on the elements still running only.

Everything is computed in float64 and rounded once to the operands' dtype.
"""
from __future__ import annotations

import numpy as np

from functrax.lowering.numpy.special_functions import (
    EPS64, as_f64, digamma64, finish, lgamma64, log1pmx, stirling_correction,
)
from functrax.lowering.numpy.special_zeta_bessel import zeta64

__all__ = ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "log_igamma_prefactor",
           "MAX_ITERATIONS"]

MAX_ITERATIONS = 20000
_BIG = 1.0 / EPS64


def log_igamma_prefactor(a, x):
    """``log(x**a exp(-x) / Gamma(a))`` in float64 (accurate also for large ``a``)."""
    with np.errstate(all="ignore"):
        direct = a * np.log(x) - x - lgamma64(a)
        big = a >= 10
        ab = np.where(big, a, 10.0)
        t = (x - ab) / ab
        # a (log(x / a) - t), as the series log1pmx(t) near x = a
        main = np.where(np.abs(t) < 0.5, ab * log1pmx(t), ab * (np.log(x / ab) - t))
        accurate = main + 0.5 * np.log(ab / (2 * np.pi)) - stirling_correction(ab)
    return np.where(big, accurate, direct)


def _run(state, step, active):
    """Iterate ``step`` (a function of the sub-state of the running elements returning the
    new sub-state and its done mask) until every element of ``active`` is done."""
    idx = np.flatnonzero(active)
    for _ in range(MAX_ITERATIONS):
        if idx.size == 0:
            break
        sub = {k: v[idx] for k, v in state.items()}
        new, done = step(sub)
        for k, v in new.items():
            state[k][idx] = v
        idx = idx[~done]
    return state


def _series(a, x, active, deriv):
    """``S = sum_n x**n / ((a+1)...(a+n))`` (so ``P = prefactor * S / a``) and ``dS/da``."""
    n = a.shape
    state = {"a": a, "x": x, "r": a.copy(), "c": np.ones(n), "ans": np.ones(n),
             "dc": np.zeros(n), "dans": np.zeros(n)}

    def step(s):
        r = s["r"] + 1.0
        xr = s["x"] / r
        dc = s["dc"] * xr - s["c"] * s["x"] / (r * r)
        c = s["c"] * xr
        ans = s["ans"] + c
        dans = s["dans"] + dc
        done = ~(np.abs(c) > EPS64 * np.abs(ans))
        if deriv:
            done &= ~(np.abs(dc) > EPS64 * np.abs(dans))
        return {"r": r, "c": c, "ans": ans, "dc": dc, "dans": dans}, done

    state = _run(state, step, active)
    return state["ans"], state["dans"]


def _continued_fraction(a, x, active, deriv):
    """The continued fraction ``F`` of ``Q = prefactor * F`` (Cephes' ``igamc``) and
    ``dF/da``."""
    with np.errstate(all="ignore"):
        y = 1.0 - a
        z = x + y + 1.0
        pkm1, qkm1 = x + 1.0, z * x
        ans = pkm1 / qkm1
        dqkm1 = -x
        dans = -ans * dqkm1 / qkm1
    zeros = np.zeros(a.shape)
    state = {"y": y, "z": z, "c": zeros.copy(), "pkm2": np.ones(a.shape), "qkm2": x.copy(),
             "pkm1": pkm1, "qkm1": qkm1, "dpkm2": zeros.copy(), "dqkm2": zeros.copy(),
             "dpkm1": zeros.copy(), "dqkm1": dqkm1, "ans": ans, "dans": dans}

    def step(s):
        c, y, z = s["c"] + 1.0, s["y"] + 1.0, s["z"] + 2.0
        yc = y * c
        pk = s["pkm1"] * z - s["pkm2"] * yc
        qk = s["qkm1"] * z - s["qkm2"] * yc
        nz = qk != 0
        safe_qk = np.where(nz, qk, 1.0)
        r = pk / safe_qk
        ans = np.where(nz, r, s["ans"])
        change = np.where(nz, np.abs(ans - s["ans"]), np.inf)
        dpk = s["dpkm1"] * z - s["pkm1"] - s["dpkm2"] * yc + s["pkm2"] * c
        dqk = s["dqkm1"] * z - s["qkm1"] - s["dqkm2"] * yc + s["qkm2"] * c
        dans = np.where(nz, (dpk - ans * dqk) / safe_qk, s["dans"])
        dchange = np.where(nz, np.abs(dans - s["dans"]), np.inf)
        new = {"c": c, "y": y, "z": z, "pkm2": s["pkm1"], "pkm1": pk, "qkm2": s["qkm1"],
               "qkm1": qk, "dpkm2": s["dpkm1"], "dpkm1": dpk, "dqkm2": s["dqkm1"],
               "dqkm1": dqk, "ans": ans, "dans": dans}
        big = np.abs(pk) > _BIG
        for k in ("pkm2", "pkm1", "qkm2", "qkm1", "dpkm2", "dpkm1", "dqkm2", "dqkm1"):
            new[k] = np.where(big, new[k] * EPS64, new[k])
        done = ~(change > EPS64 * np.abs(ans))
        if deriv:
            done &= ~(dchange > EPS64 * np.abs(dans))
        return new, done

    with np.errstate(all="ignore"):
        state = _run(state, step, active)
    return state["ans"], state["dans"]


# (-1)**k zeta(k) / k, k = 2..63: lgamma(1 + a) = -euler a + sum_k c_k a**k for |a| < 1
_LGAMMA1P = tuple(float(c) for c in (-1.0) ** np.arange(2, 64) * zeta64(
    np.arange(2, 64, dtype=np.float64), np.ones(62)) / np.arange(2, 64))
_EULER = 0.5772156649015329


def _lgamma1p(a):
    """``lgamma(1 + a)`` for ``|a| <= 1/2``, without the rounding of ``1 + a``."""
    total = np.zeros_like(a)
    for c in reversed(_LGAMMA1P):
        total = (total + c) * a
    return (total - _EULER) * a


def _q_small_a(a, x):
    """``Q(a, x)`` for ``0 < a < 1/2``, ``0 < x <= 1`` (see the module docstring)."""
    with np.errstate(all="ignore"):
        u = a * np.log(x) - _lgamma1p(a)
        total = np.zeros_like(x)
        term = np.ones_like(x)
        for n in range(1, 40):  # x <= 1: x**n / n! < 1e-48 by n = 40
            term = term * (-x) / n
            total = total + term / (a + n)
        return -np.expm1(u) - np.exp(u) * a * total


def _domain(a, x):
    nan = np.isnan(a) | np.isnan(x)
    return nan | (x < 0) | (a < 0) | ((a == 0) & (x == 0))


def _inputs(a, x):
    (a64, x64), dt = as_f64(a, x)
    return a64.ravel(), x64.ravel(), dt, np.broadcast_shapes(np.shape(a), np.shape(x))


def _regular(a, x, bad):
    """Elements computed by the series / continued fraction (finite, a > 0, x > 0)."""
    return ~bad & (a > 0) & (x > 0) & np.isfinite(x) & np.isfinite(a)


def _value(a, x, lower):
    """P (``lower``) or Q of float64 vectors."""
    bad = _domain(a, x)
    ok = _regular(a, x, bad)
    use_cf = ok & (x > 1) & (x > a)
    use_series = ok & ~use_cf
    with np.errstate(all="ignore"):
        pre = np.exp(log_igamma_prefactor(a, x))
        s, _ = _series(a, x, use_series, False)
        f, _ = _continued_fraction(a, x, use_cf, False)
        p_series = pre * s / a
        q_cf = pre * f
        if lower:
            out = np.where(use_cf, 1.0 - q_cf, p_series)
        else:
            small_a = use_series & (a < 0.5) & (x <= 1)
            q_small = _q_small_a(np.where(small_a, a, 0.25), np.where(small_a, x, 0.5))
            out = np.where(use_cf, q_cf, np.where(small_a, q_small, 1.0 - p_series))
    p_edge = np.where((x == 0) | ((a == np.inf) & (x < np.inf)), 0.0, 1.0)
    out = np.where(ok, out, p_edge if lower else 1.0 - p_edge)
    out = np.where((a == np.inf) & (x == np.inf), np.nan, out)
    return np.where(bad, np.nan, out)


def igamma(a, x):
    a64, x64, dt, shape = _inputs(a, x)
    return finish(_value(a64, x64, True).reshape(shape), dt)


def igammac(a, x):
    a64, x64, dt, shape = _inputs(a, x)
    return finish(_value(a64, x64, False).reshape(shape), dt)


def _derivative_terms(a, x):
    """The series / continued-fraction sums and their ``a``-derivatives, and which applies."""
    bad = np.isnan(a) | np.isnan(x) | (x < 0) | (a <= 0)
    ok = ~bad & (x > 0) & np.isfinite(x) & np.isfinite(a)
    use_cf = ok & (x > 1) & (x > a)
    use_series = ok & ~use_cf
    s, ds = _series(a, x, use_series, True)
    f, df = _continued_fraction(a, x, use_cf, True)
    return bad, ok, use_cf, (s, ds), (f, df)


def igamma_grad_a(a, x):
    a64, x64, dt, shape = _inputs(a, x)
    bad, ok, use_cf, (s, ds), (f, df) = _derivative_terms(a64, x64)
    with np.errstate(all="ignore"):
        pre = np.exp(log_igamma_prefactor(a64, x64))
        logx = np.log(x64)
        series = pre / a64 * (s * (logx - digamma64(a64 + 1.0)) + ds)
        cf = -pre * (f * (logx - digamma64(a64)) + df)
        out = np.where(use_cf, cf, series)
    out = np.where(ok, out, 0.0)
    return finish(np.where(bad, np.nan, out).reshape(shape), dt)


def random_gamma_grad(a, x):
    a64, x64, dt, shape = _inputs(a, x)
    bad, ok, use_cf, (s, ds), (f, df) = _derivative_terms(a64, x64)
    with np.errstate(all="ignore"):
        logx = np.log(x64)
        series = -(ds + s * (logx - digamma64(a64 + 1.0))) * x64 / a64
        cf = (df + f * (logx - digamma64(a64))) * x64
        out = np.where(use_cf, cf, series)
    out = np.where(ok, out, 0.0)
    return finish(np.where(bad, np.nan, out).reshape(shape), dt)
