"""``random_gamma_grad(a, x)``: the derivative of a Gamma(a, 1) sample ``x`` with respect to
``a`` at a fixed quantile (implicit reparameterization), as ``jax.lax.random_gamma_grad``.

With ``P(a, x)`` the regularized lower incomplete gamma function (the CDF), holding
``P(a, x(a)) = u`` fixed gives ``dx/da = -(dP/da) / (dP/dx)`` where
``dP/dx = x**(a-1) exp(-x) / Gamma(a)``. ``dP/da`` comes from differentiating, term by term,
the power series of ``P`` (for ``x <= 1`` or ``x <= a``) or the continued fraction of
``Q = 1 - P`` (otherwise), the scheme of XLA's ``RandomGammaGrad`` (ported from Cephes'
``igam``/``igamc``). The common prefactor ``x**a exp(-x) / Gamma(a)`` cancels from the ratio,
so only the sums are evaluated. Both loops are ``while_loop`` s over the whole array: each
element stops updating once its own sum has converged, so results do not depend on what
else is in the batch, and the function traces, jits and batches.
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes, lax
from functrax.random.sampler_args import const_like


def any_true(pred):
    nd = core.get_aval(pred).ndim
    return pred if nd == 0 else lax.reduce_or(pred, tuple(range(nd)))


def _series_sample_derivative(x, a, enabled, eps):
    """``-(dP/da) / (dP/dx)`` from the series ``P = x^a e^-x / Gamma(a+1) * sum_n c_n``."""
    def cond(vals):
        return any_true(vals[0])

    def body(vals):
        enabled, r, c, ans, dc_da, dans_da = vals
        r2 = lax.add(r, const_like(r, 1.0))
        dc_da2 = lax.sub(lax.mul(dc_da, lax.div(x, r2)), lax.div(lax.mul(c, x),
                                                                  lax.mul(r2, r2)))
        dans_da2 = lax.add(dans_da, dc_da2)
        c2 = lax.mul(c, lax.div(x, r2))
        ans2 = lax.add(ans, c2)
        ratio = lax.abs(lax.div(dc_da2, dans_da2))
        going = lax.bitwise_and(enabled, lax.gt(ratio, const_like(r, eps)))
        return (going, lax.select(enabled, r2, r), lax.select(enabled, c2, c),
                lax.select(enabled, ans2, ans), lax.select(enabled, dc_da2, dc_da),
                lax.select(enabled, dans_da2, dans_da))

    one, zero = lax.full_like(a, 1.0), lax.full_like(a, 0.0)
    vals = lax.while_loop(cond, body, (enabled, a, one, one, zero, zero))
    ans, dans_da = vals[3], vals[5]
    dlogax_da = lax.sub(lax.log(x), lax.digamma(lax.add(a, const_like(a, 1.0))))
    return lax.div(lax.mul(lax.neg(lax.add(dans_da, lax.mul(ans, dlogax_da))), x), a)


def _cf_sample_derivative(x, a, enabled, eps):
    """``(dQ/da) / (dP/dx)`` (= ``dx/da``) from the continued fraction of ``Q`` (Cephes'
    ``igamc``), with the derivatives of the convergents carried along."""
    def cond(vals):
        return lax.bitwise_and(lax.lt(vals[4], const_like(x, 2000.0)), any_true(vals[0]))

    def body(vals):
        (enabled, ans, y, z, c, pkm1, qkm1, pkm2, qkm2,
         dpkm2, dqkm2, dpkm1, dqkm1, dans) = vals
        c2 = lax.add(c, const_like(c, 1.0))
        y2 = lax.add(y, const_like(y, 1.0))
        z2 = lax.add(z, const_like(z, 2.0))
        yc = lax.mul(y2, c2)
        pk = lax.sub(lax.mul(pkm1, z2), lax.mul(pkm2, yc))
        qk = lax.sub(lax.mul(qkm1, z2), lax.mul(qkm2, yc))
        nonzero = lax.ne(qk, const_like(qk, 0.0))
        safe_qk = lax.select(nonzero, qk, lax.full_like(qk, 1.0))
        ans2 = lax.select(nonzero, lax.div(pk, safe_qk), ans)
        dpk = lax.add(lax.sub(lax.sub(lax.mul(dpkm1, z2), pkm1), lax.mul(dpkm2, yc)),
                      lax.mul(pkm2, c2))
        dqk = lax.add(lax.sub(lax.sub(lax.mul(dqkm1, z2), qkm1), lax.mul(dqkm2, yc)),
                      lax.mul(qkm2, c2))
        dans2 = lax.select(nonzero, lax.div(lax.sub(dpk, lax.mul(ans2, dqk)), safe_qk), dans)
        change = lax.select(nonzero, lax.abs(lax.sub(dans2, dans)), lax.full_like(dans, 1.0))
        n_pkm2, n_pkm1, n_qkm2, n_qkm1 = pkm1, pk, qkm1, qk
        n_dpkm2, n_dqkm2, n_dpkm1, n_dqkm1 = dpkm1, dqkm1, dpk, dqk
        rescale = lax.gt(lax.abs(pk), const_like(pk, 1.0 / eps))

        def rs(v):
            return lax.select(rescale, lax.mul(v, const_like(v, eps)), v)
        n_pkm2, n_pkm1, n_qkm2, n_qkm1 = rs(n_pkm2), rs(n_pkm1), rs(n_qkm2), rs(n_qkm1)
        n_dpkm2, n_dqkm2, n_dpkm1, n_dqkm1 = rs(n_dpkm2), rs(n_dqkm2), rs(n_dpkm1), rs(n_dqkm1)
        going = lax.bitwise_and(enabled, lax.gt(change, const_like(change, eps)))
        new = (ans2, y2, z2)
        old = (ans, y, z)
        sel = [lax.select(enabled, n, o) for n, o in zip(new, old)]
        carry_new = (n_pkm1, n_qkm1, n_pkm2, n_qkm2, n_dpkm2, n_dqkm2, n_dpkm1, n_dqkm1, dans2)
        carry_old = (pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans)
        sel2 = [lax.select(enabled, n, o) for n, o in zip(carry_new, carry_old)]
        return (going, *sel, c2, *sel2)

    y = lax.sub(const_like(a, 1.0), a)
    z = lax.add(lax.add(x, y), const_like(x, 1.0))
    pkm2 = lax.full_like(x, 1.0)
    qkm2 = x
    pkm1 = lax.add(x, const_like(x, 1.0))
    qkm1 = lax.mul(z, x)
    ans = lax.div(pkm1, qkm1)
    zero = lax.full_like(x, 0.0)
    dqkm1 = lax.neg(x)
    dans = lax.div(lax.sub(zero, lax.mul(ans, dqkm1)), qkm1)
    init = (enabled, ans, y, z, const_like(x, 0.0), pkm1, qkm1, pkm2, qkm2,
            zero, zero, zero, dqkm1, dans)
    vals = lax.while_loop(cond, body, init)
    ans, dans = vals[1], vals[13]
    dlogax_da = lax.sub(lax.log(x), lax.digamma(a))
    # dx/da = -(dP/da) / (dP/dx) = (dQ/da) / (dP/dx), with Q = prefactor * ans
    return lax.mul(lax.add(dans, lax.mul(ans, dlogax_da)), x)


def random_gamma_grad(a, x):
    """``d sample / d a`` for ``sample = x`` drawn from Gamma(``a``, 1), at fixed quantile.

    ``a`` and ``x`` are float arrays of one shape (float16/bfloat16 compute in float32).
    Returns NaN where ``a <= 0``, ``x < 0`` or either is NaN, and 0 where ``x == 0``.

    >>> import numpy as np
    >>> round(float(random_gamma_grad(np.float32(2.5), np.float32(1.0))), 4)
    0.6508
    """
    a_aval = core.get_aval(a)
    dt = a_aval.dtype
    if dt.itemsize == 2:
        out = random_gamma_grad(lax.convert_element_type(a, np.float32),
                                lax.convert_element_type(x, np.float32))
        return lax.convert_element_type(out, dt)
    eps = float(dtypes.finfo(dt).eps)
    is_nan = lax.bitwise_or(lax.ne(a, a), lax.ne(x, x))
    x_is_zero = lax.eq(x, const_like(x, 0.0))
    domain_error = lax.bitwise_or(lax.lt(x, const_like(x, 0.0)), lax.le(a, const_like(a, 0.0)))
    use_cf = lax.bitwise_and(lax.gt(x, const_like(x, 1.0)), lax.gt(x, a))
    bad = lax.bitwise_or(lax.bitwise_or(x_is_zero, domain_error), is_nan)
    # the prefactor x^a e^-x / Gamma(a) cancels; XLA still skips elements where it underflows
    log_ax = lax.sub(lax.sub(lax.mul(a, lax.log(x)), x), lax.lgamma(a))
    underflow = lax.lt(log_ax, const_like(a, -np.log(float(dtypes.finfo(dt).max))))
    enabled = lax.bitwise_not(lax.bitwise_or(bad, underflow))
    safe_x = lax.select(bad, lax.full_like(x, 1.0), x)
    safe_a = lax.select(bad, lax.full_like(a, 1.0), a)
    cf = _cf_sample_derivative(safe_x, safe_a, lax.bitwise_and(enabled, use_cf), eps)
    series = _series_sample_derivative(safe_x, safe_a,
                                       lax.bitwise_and(enabled, lax.bitwise_not(use_cf)), eps)
    out = lax.select(use_cf, cf, series)
    out = lax.select(x_is_zero, lax.full_like(out, 0.0), out)
    return lax.select(lax.bitwise_or(domain_error, is_nan), lax.full_like(out, np.nan), out)
