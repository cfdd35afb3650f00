"""``functrax.scipy.special``: the confluent (``hyp1f1``) and Gauss (``hyp2f1``)
hypergeometric functions of real arguments, as ``jax.scipy.special``.

Both sum their power series in ``while_loop`` s over the whole array, each element stopping
once its term is below eps relative to the sum; they add transformations that keep the sums
short and free of cancellation:

- ``hyp1f1``: Kummer's ``M(a, b, x) = exp(x) M(b - a, b, -x)`` for ``x < 0``; the asymptotic
  series ``Gamma(b) / Gamma(a) exp(x) x**(a - b) sum_k (b-a)_k (1-a)_k / k! x**-k`` (to its
  smallest term) for ``x >= 100`` (JAX's switch point). Special values as JAX: 1 for
  ``a == 0``, ``exp(x)`` for ``a == b``, inf for ``b == 0``. A custom JVP (JAX's series for
  ``a`` and ``b``, ``a / b M(a + 1, b + 1, x)`` for ``x``).
- ``hyp2f1``: JAX's case analysis (Euler's transformation ``(1-x)**(c-a-b) F(c-a, c-b; c;
  x)`` when ``c - a - b <= -1``, ``(1-x)**-a`` / ``(1-x)**-b`` when ``b == c`` / ``a == c``,
  Gauss' sum at ``x == 1``, inf for ``x > 1`` and for non-positive integer ``c``), plus
  Pfaff's transformation ``(1-x)**-a F(a, c-b; c; x / (x - 1))`` for ``x < -1/2`` (the
  direct series diverges for ``x <= -1``). The series terminates for non-positive integer
  ``a`` or ``b``; it is slow for ``x`` close to 1 (at most 5000 terms).
"""
from __future__ import annotations

import numpy as np

from functrax import core, lax
from functrax import numpy as fnp
from functrax.scipy.special_gamma import digamma, gamma, gammasgn
from functrax.scipy.special_info import const, promote
from functrax.transforms.custom_derivatives import custom_jvp
from functrax.transforms.grad import jvp
from functrax.transforms.symbolic_zeros import SymbolicZero as Zero  # as JAX, rules get these

__all__ = ["hyp1f1", "hyp2f1"]


def _eps(x):
    return float(np.finfo(core.get_aval(x).dtype).eps)


def _any(pred):
    nd = core.get_aval(pred).ndim
    return pred if nd == 0 else lax.reduce_or(pred, tuple(range(nd)))


def _sum_series(first, ratio, active, max_terms, monotone=False):
    """``sum_k t_k`` with ``t_0 = 1``, ``t_1 = first``, ``t_{k+1} = t_k ratio(k)`` (``k``
    from 1), each element until ``|t_k| <= eps |sum|`` (or, with ``monotone``, until the
    terms stop decreasing: an asymptotic series)."""
    eps = _eps(first)

    def cond(carry):
        k, running = carry[0], carry[1]
        return lax.bitwise_and(lax.lt(k, const(k, max_terms)), _any(running))

    def body(carry):
        k, running, total, term = carry
        new_total = total + term
        new_term = term * ratio(k)
        going = fnp.abs(new_term) > eps * fnp.abs(new_total)
        if monotone:
            going = going & (fnp.abs(new_term) < fnp.abs(term))
        keep = lambda n, o: fnp.where(running, n, o)  # noqa: E731
        return k + 1, running & going, keep(new_total, total), keep(new_term, term)

    init = (const(first, 1.0), active, fnp.ones_like(first), first)
    return lax.while_loop(cond, body, init)[2]


def _is_nonpositive_int(v):
    return (v <= 0) & (v == fnp.floor(v))


def _hyp1f1_series(a, b, x, active):
    return _sum_series(a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1), active, 500)


def _hyp1f1_asymptotic(a, b, x, active):
    """For ``x >= 100`` (and ``a`` not a non-positive integer)."""
    first = (b - a) * (1 - a) / x
    series = _sum_series(first, lambda k: (b - a + k) * (1 - a + k) / (k + 1) / x, active,
                         250, monotone=True)
    log_scale = lax.lgamma(b) - lax.lgamma(a) + x + (a - b) * lax.log(x)
    return gammasgn(b) * gammasgn(a) * lax.exp(log_scale) * series


def _hyp1f1_positive(a, b, x, active):
    """``M(a, b, x)`` for ``x >= 0``."""
    asym = active & (x >= 100) & ~_is_nonpositive_int(a)
    xs = fnp.where(asym, const(x, 1.0), x)
    xa = fnp.where(asym, x, const(x, 100.0))
    a_safe = fnp.where(asym, a, const(a, 0.5))
    series = _hyp1f1_series(a, b, xs, active & ~asym)
    asymptotic = _hyp1f1_asymptotic(a_safe, b, xa, asym)
    return fnp.where(asym, asymptotic, series)


def _hyp1f1_impl(a, b, x):
    a, b, x = promote("hyp1f1", a, b, x)
    a, b, x = fnp.broadcast_arrays(a, b, x)
    special = (a == 0) | (a == b) | (b == 0)
    neg = x < 0
    a2 = fnp.where(neg, b - a, a)
    value = _hyp1f1_positive(a2, b, fnp.abs(x), ~special)
    value = fnp.where(neg, lax.exp(x) * value, value)
    value = fnp.where((b == 0) & (a != 0), const(x, np.inf), value)
    value = fnp.where((a == b) & (a != 0), lax.exp(x), value)
    return fnp.where(a == 0, const(x, 1.0), value)


def _hyp1f1_param_derivative(a, b, x, which):
    """JAX's series for ``d M / d a`` (``which == "a"``) or ``d M / d b``."""
    eps = _eps(x)

    def cond(carry):
        k, running = carry[0], carry[1]
        return lax.bitwise_and(lax.lt(k, const(k, 500)), _any(running))

    def body(carry):
        k, running, total, term = carry
        weight = (digamma(a + k) - digamma(a)) if which == "a" else (
            digamma(b) - digamma(b + k))
        new_total = total + term * weight
        new_term = term * (a + k) / (b + k) * x / (k + 1)
        going = fnp.abs(new_term) > eps * fnp.abs(new_total)
        keep = lambda n, o: fnp.where(running, n, o)  # noqa: E731
        return k + 1, running & going, keep(new_total, total), keep(new_term, term)

    init = (const(x, 1.0), fnp.ones_like(x) > 0, fnp.zeros_like(x), a / b * x)
    return lax.while_loop(cond, body, init)[2]


hyp1f1 = custom_jvp(_hyp1f1_impl)
hyp1f1.__doc__ = """The confluent hypergeometric function
``1F1(a; b; x) = sum_k (a)_k / (b)_k x**k / k!`` of real arguments.

``a = b = 0`` gives 1 (unlike scipy). Differentiable in every argument (JAX's JVP).

>>> round(float(hyp1f1(1.0, 2.0, 1.0)), 6)  # (e - 1) / 1
1.718282
"""


def _hyp1f1_jvp(primals, tangents):
    (a, b, x), (a_dot, b_dot, x_dot) = primals, tangents
    a, b, x = fnp.broadcast_arrays(*promote("hyp1f1", a, b, x))
    ans = hyp1f1(a, b, x)
    t_out = fnp.zeros_like(ans)
    # the parameter series are summed only for parameters that are differentiated (their
    # while_loops would block reverse mode over x otherwise)
    if type(a_dot) is not Zero:
        t_out = t_out + _hyp1f1_param_derivative(a, b, x, "a") * a_dot
    if type(b_dot) is not Zero:
        t_out = t_out + _hyp1f1_param_derivative(a, b, x, "b") * b_dot
    if type(x_dot) is not Zero:
        t_out = t_out + a / b * hyp1f1(a + 1, b + 1, x) * x_dot
    return ans, t_out


hyp1f1.defjvp(_hyp1f1_jvp, symbolic_zeros=True)


# --- hyp2f1 ---


def _hyp2f1_series(a, b, c, x, active):
    return _sum_series(a * b / c * x, lambda k: (a + k) * (b + k) / ((c + k) * (k + 1)) * x,
                       active, 5000)


def _hyp2f1_general(a, b, c, x, active):
    """The series, with Pfaff's transformation for ``x < -1/2``."""
    pfaff = x < -0.5
    z = fnp.where(pfaff, x / (x - 1), x)
    b2 = fnp.where(pfaff, c - b, b)
    series = _hyp2f1_series(a, b2, c, z, active)
    return fnp.where(pfaff, (1 - x) ** (-a) * series, series)


def _hyp2f1_impl(a, b, c, x):
    a, b, c, x = promote("hyp2f1", a, b, c, x)
    a, b, c, x = fnp.broadcast_arrays(a, b, c, x)
    eps = _eps(x) * 50
    d = c - a - b
    s = 1 - x
    ca, cb = c - a, c - b
    rd = fnp.round(d)
    is_one = (x == 0) | (((a == 0) | (b == 0)) & (c != 0))
    is_inf = (c == 0) | ((c < 0) & (fnp.fmod(c, 1) == 0))
    euler = (d <= -1) & ~((fnp.abs(d - rd) >= eps) & (s < 0))
    conds = [is_one, is_inf, euler, (d <= 0) & (x == 1), (x < 1) & (b == c),
             (x < 1) & (a == c), x > 1, x == 1]
    index = fnp.full(x.shape, 6, dtype=np.int32)
    for i, cnd in zip((0, 1, 2, 1, 3, 4, 1, 5)[::-1], conds[::-1]):
        index = fnp.where(cnd, i, index)
    general = index == 6
    series = _hyp2f1_general(a, b, c, fnp.where(general, x, const(x, 0.0)), general)
    use_euler = index == 2
    xe = fnp.where(use_euler, x, const(x, 0.0))
    euler_val = s ** d * _hyp2f1_general(ca, cb, c, xe, use_euler)
    gauss = gamma(c) * gamma(d) / (gamma(ca) * gamma(cb))
    return lax.select_n(index, fnp.ones_like(x), fnp.full_like(x, np.inf), euler_val,
                        s ** (-a), s ** (-b), gauss, series)


hyp2f1 = custom_jvp(_hyp2f1_impl)
hyp2f1.__doc__ = """The Gauss hypergeometric function ``2F1(a, b; c; x) = sum_k (a)_k (b)_k / (c)_k
x**k / k!`` of real arguments (``x <= 1``; inf beyond, as JAX).

The derivative in ``x`` is ``a b / c 2F1(a+1, b+1; c+1; x)`` (any order, either mode); the
derivatives in ``a``, ``b``, ``c`` are forward mode through the series' ``while_loop``
(reverse mode over them raises, as JAX's).

>>> round(float(hyp2f1(1.0, 1.0, 2.0, 0.5)), 6)  # -log(1 - x) / x
1.386294
"""


def _hyp2f1_jvp(primals, tangents):
    a, b, c, x = fnp.broadcast_arrays(*promote("hyp2f1", *primals))
    a_dot, b_dot, c_dot, x_dot = tangents
    ans = hyp2f1(a, b, c, x)
    t_out = fnp.zeros_like(ans)
    params = (a_dot, b_dot, c_dot)
    if any(type(t) is not Zero for t in params):
        dots = tuple(fnp.zeros_like(ans) if type(t) is Zero else t for t in params)
        _, t_params = jvp(lambda a, b, c: _hyp2f1_impl(a, b, c, x), (a, b, c), dots)
        t_out = t_out + t_params
    if type(x_dot) is not Zero:
        t_out = t_out + a * b / c * hyp2f1(a + 1, b + 1, c + 1, x) * x_dot
    return ans, t_out


hyp2f1.defjvp(_hyp2f1_jvp, symbolic_zeros=True)
