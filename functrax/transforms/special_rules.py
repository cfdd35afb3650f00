"""JVP rules of the special-function primitives (``functrax/primitives/special.py``) and of
``digamma``, in JAX's forms; their vmap rules come from the TRANSCENDENTAL family.

- ``igamma``/``igammac``: ``dP/da = igamma_grad_a(a, x)``, ``dP/dx = exp(-x + (a - 1) log x -
  lgamma(a))`` (Q's are the negatives). ``igamma_grad_a`` and ``random_gamma_grad`` have no
  derivative (as JAX: differentiating them raises).
- ``polygamma``: ``d/dx = polygamma(m + 1, x)``; the derivative in ``m`` raises ValueError.
- ``zeta(x, q)``: ``d/dq = -x zeta(x + 1, q)``; ``d/dx`` is the derivative of the
  Euler-Maclaurin expansion (16 direct terms, 12 Bernoulli terms), written with primitives so
  it can be differentiated again. (JAX differentiates ``scipy.special.zeta`` through its
  series expansion and leaves ``lax.zeta`` without a rule; here ``lax.zeta`` has the rule.)
- ``bessel_i0e``/``bessel_i1e``: JAX's ``defjvp2`` forms.
- ``regularized_incomplete_beta``: ``d/dx = x**(a-1) (1-x)**(b-1) / B(a, b)``; the
  derivatives in ``a`` and ``b`` raise ValueError (as JAX).
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.lowering.numpy.special_zeta_bessel import ZETA_BERNOULLI
from functrax.transforms.jvp import defjvp, defjvp2, maybe_broadcast

__all__ = ["zeta_dx"]


def _const(x, v):
    return np.asarray(v, core.get_aval(x).dtype)[()]


def _full_shape(out_of, x):
    """``x`` broadcast to the shape of the (elementwise) operands ``out_of``."""
    return maybe_broadcast(P.broadcast_shapes(*(core.get_aval(v).shape for v in out_of)), x)


# --- incomplete gamma ---


def _igamma_gradx(g, a, x):
    return P.mul(g, P.exp(P.sub(P.add(P.neg(x), P.mul(P.sub(a, _const(a, 1)), P.log(x))),
                                P.lgamma(a))))


def _igamma_grada(g, a, x):
    return P.mul(g, P.igamma_grad_a(a, x))


defjvp(P.igamma_p, lambda g, a, x: _full_shape((a, x), _igamma_grada(g, a, x)),
       lambda g, a, x: _full_shape((a, x), _igamma_gradx(g, a, x)))
defjvp(P.igammac_p, lambda g, a, x: _full_shape((a, x), P.neg(_igamma_grada(g, a, x))),
       lambda g, a, x: _full_shape((a, x), P.neg(_igamma_gradx(g, a, x))))


# --- polygamma and digamma ---


def _polygamma_gradm(g, m, x):
    raise ValueError("polygamma gradient with respect to m is not supported")


def _polygamma_gradx(g, m, x):
    return _full_shape((m, x), P.mul(g, P.polygamma(P.add(m, _const(m, 1)), x)))


defjvp(P.polygamma_p, _polygamma_gradm, _polygamma_gradx)
defjvp(P.digamma_p, lambda g, x: P.mul(g, P.polygamma(_const(x, 1), x)))


# --- Hurwitz zeta ---

_ZETA_N = 16


def _rising_and_log_derivative(s, n):
    """``(s)_n = s (s+1) ... (s+n-1)`` and ``d log (s)_n / ds = sum_i 1 / (s + i)``."""
    prod, dlog = None, None
    for i in range(n):
        term = P.add(s, _const(s, float(i)))
        prod = term if prod is None else P.mul(prod, term)
        inv = P.div(_const(s, 1.0), term)
        dlog = inv if dlog is None else P.add(dlog, inv)
    return prod, dlog


def zeta_dx(x, q):
    """``d zeta(x, q) / dx`` from the Euler-Maclaurin expansion
    ``sum_{k<N} (q+k)**-x + (q+N)**(1-x) / (x-1) + (q+N)**-x (1/2 + sum_j B_2j/(2j)!
    (x)_{2j-1} (q+N)**(1-2j))``, differentiated term by term (in primitives, so it can be
    differentiated again).

    >>> round(float(zeta_dx(2.0, 1.0)), 6)  # zeta'(2)
    -0.937548
    """
    one = _const(x, 1.0)
    total = None
    for k in range(_ZETA_N):
        qk = P.add(q, _const(q, float(k)))
        term = P.mul(P.log(qk), P.pow(qk, P.neg(x)))
        total = term if total is None else P.add(total, term)
    w = P.add(q, _const(q, float(_ZETA_N)))
    log_w = P.log(w)
    xm1 = P.sub(x, one)
    w_1mx = P.pow(w, P.neg(xm1))
    # d/dx of (q+N)**(1-x) / (x-1)
    d_int = P.neg(P.add(P.div(P.mul(log_w, w_1mx), xm1), P.div(w_1mx, P.square(xm1))))
    w_mx = P.pow(w, P.neg(x))
    series, dseries = _const(x, 0.5), None
    for j, coef in enumerate(ZETA_BERNOULLI, start=1):
        rising, dlog = _rising_and_log_derivative(x, 2 * j - 1)
        scale = P.div(_const(x, 1.0 / coef), P.integer_pow(w, 2 * j - 1))
        series = P.add(series, P.mul(rising, scale))
        d = P.mul(P.mul(rising, dlog), scale)
        dseries = d if dseries is None else P.add(dseries, d)
    d_tail = P.sub(P.mul(w_mx, dseries), P.mul(log_w, P.mul(w_mx, series)))
    return P.add(P.neg(total), P.add(d_int, d_tail))


def _zeta_gradx(g, x, q):
    return _full_shape((x, q), P.mul(g, zeta_dx(x, q)))


def _zeta_gradq(g, x, q):
    return _full_shape((x, q), P.mul(g, P.neg(P.mul(x, P.zeta(P.add(x, _const(x, 1)), q)))))


defjvp(P.zeta_p, _zeta_gradx, _zeta_gradq)


# --- exponentially scaled Bessel functions ---


defjvp2(P.bessel_i0e_p, lambda g, y, x: P.mul(g, P.sub(P.bessel_i1e(x),
                                                        P.mul(P.sign(x), y))))


def _bessel_i1e_jvp(g, y, x):
    eps = float(dtypes.finfo(core.get_aval(x).dtype).eps)
    x_is_not_tiny = P.gt(P.abs(x), _const(x, eps))
    safe_x = P.select(x_is_not_tiny, x, P.full_like(x, eps))
    dy_dx = P.sub(P.bessel_i0e(safe_x),
                  P.mul(y, P.add(P.sign(safe_x), P.div(_const(x, 1), safe_x))))
    dy_dx = P.select(x_is_not_tiny, dy_dx, P.full_like(x, 0.5))
    return P.mul(g, dy_dx)


defjvp2(P.bessel_i1e_p, _bessel_i1e_jvp)


# --- incomplete beta ---


def _betainc_grad_not_implemented(g, a, b, x):
    raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_gradx(g, a, b, x):
    lbeta = P.sub(P.add(P.lgamma(a), P.lgamma(b)), P.lgamma(P.add(a, b)))
    one = _const(x, 1)
    partial_x = P.exp(P.sub(P.add(P.mul(P.sub(b, one), P.log1p(P.neg(x))),
                                  P.mul(P.sub(a, one), P.log(x))), lbeta))
    return _full_shape((a, b, x), P.mul(partial_x, g))


defjvp(P.regularized_incomplete_beta_p, _betainc_grad_not_implemented,
       _betainc_grad_not_implemented, _betainc_gradx)
