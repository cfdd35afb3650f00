"""``functrax.scipy.special``: the gamma family (gamma, log-gamma and its sign, beta and its
log, incomplete gamma and beta, digamma, polygamma, Hurwitz zeta, factorial, comb, poch,
multigammaln, Bernoulli numbers), as ``jax.scipy.special``.

The incomplete functions, polygamma and zeta bind the ``lax`` primitives
(``igamma``/``igammac``/``regularized_incomplete_beta``/``polygamma``/``zeta``); the rest are
compositions of ``lax`` operations. ``betaln`` avoids the cancellation of
``lgamma(a) + lgamma(b) - lgamma(a + b)`` for large arguments with Stirling's series.
"""
from __future__ import annotations

import operator
from fractions import Fraction

import numpy as np

from functrax import core, dtypes, lax
from functrax import numpy as fnp
from functrax.scipy.special_info import concrete, const, promote
from functrax.transforms.custom_derivatives import custom_jvp

__all__ = ["gammaln", "gammasgn", "gamma", "loggamma", "betaln", "beta", "betainc",
           "factorial", "comb", "poch", "multigammaln", "digamma", "polygamma", "zeta",
           "gammainc", "gammaincc", "bernoulli"]


def gammaln(x):
    """``log|Gamma(x)|`` (``lax.lgamma``) for real ``x``.

    >>> round(float(gammaln(5.0)), 6)
    3.178054
    """
    (x,) = promote("gammaln", x)
    return lax.lgamma(x)


def gammasgn(x):
    """The sign of ``Gamma(x)``: +1 or -1; NaN at the poles (non-positive integers), at
    ``-inf`` and NaN; ``-1`` at ``-0.0``.

    >>> import functrax.numpy as fnp
    >>> gammasgn(fnp.array([1.5, -0.5, -1.5]))
    Array([ 1., -1.,  1.], dtype=float32)
    """
    (x,) = promote("gammasgn", x)
    floor_x = lax.floor(x)
    x_negative = x < 0
    is_nan = (x_negative & (x == floor_x)) | fnp.isnan(x)
    is_neg = (x_negative & (fnp.fmod(floor_x, 2) != 0)) | ((x == 0) & fnp.signbit(x))
    return fnp.where(is_nan, const(x, np.nan), fnp.where(is_neg, const(x, -1.0),
                                                         const(x, 1.0)))


def gamma(x):
    """The gamma function ``gammasgn(x) * exp(gammaln(x))`` for real ``x``.

    >>> round(float(gamma(5.0)), 4)
    24.0
    """
    (x,) = promote("gamma", x)
    return gammasgn(x) * lax.exp(lax.lgamma(x))


def loggamma(x):
    """The principal branch of ``log Gamma``: real ``x`` gives ``gammaln(x)`` for ``x > 0``
    and NaN otherwise; complex ``x`` the analytic continuation (branch cut on the negative
    real axis).

    >>> round(float(loggamma(5.0)), 6)
    3.178054
    """
    (x,) = promote("loggamma", x)
    if dtypes.issubdtype(core.get_aval(x).dtype, np.complexfloating):
        from functrax.scipy.special_complex import complex_loggamma
        return complex_loggamma(x)
    return fnp.where(x > 0, lax.lgamma(x), const(x, np.nan))


# --- beta ---

# B_2k / (2k (2k - 1)) for Stirling's series, k = 1..6 (enough for arguments >= 8)
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360)


def _stirling_correction(a):
    """``lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2)`` for ``a >= 8``."""
    inv2 = lax.div(const(a, 1.0), lax.mul(a, a))
    s = const(a, _STIRLING[-1])
    for c in reversed(_STIRLING[:-1]):
        s = lax.add(const(a, c), lax.mul(inv2, s))
    return lax.div(s, a)


def betaln(a, b):
    """``log|B(a, b)|``, accurate also when an argument is large (Stirling's series with the
    leading terms cancelled analytically).

    >>> round(float(betaln(2.0, 3.0)), 6)  # log(1 / 12)
    -2.484907
    """
    a, b = promote("betaln", a, b)
    lo, hi = fnp.minimum(a, b), fnp.maximum(a, b)
    direct = lax.lgamma(lo) + lax.lgamma(hi) - lax.lgamma(lo + hi)
    big_hi = (hi >= 8) & (lo > 0)
    hs = fnp.where(big_hi, hi, const(hi, 8.0))
    ls = fnp.where(lo > 0, lo, const(lo, 1.0))
    corr_hi = _stirling_correction(hs) - _stirling_correction(hs + ls)
    # lgamma(hi) - lgamma(hi + lo)
    lg_diff = -(hs + ls - 0.5) * lax.log1p(ls / hs) - ls * lax.log(hs) + ls + corr_hi
    one_big = lax.lgamma(ls) + lg_diff
    both_big = lo >= 8
    lb = fnp.where(both_big, lo, const(lo, 8.0))
    s = lb + hs
    both = (0.5 * np.log(2 * np.pi) + (lb - 0.5) * lax.log(lb / s)
            + hs * lax.log1p(-lb / s) - 0.5 * lax.log(hs) + _stirling_correction(lb)
            + _stirling_correction(hs) - _stirling_correction(s))
    return fnp.where(big_hi, fnp.where(both_big, both, one_big), direct)


def beta(a, b):
    """The beta function ``Gamma(a) Gamma(b) / Gamma(a + b)`` (its sign from
    :func:`gammasgn`, its magnitude ``exp(betaln(a, b))``).

    >>> round(float(beta(2.0, 3.0)), 6)
    0.083333
    """
    a, b = promote("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * lax.exp(betaln(a, b))


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)`` (``lax.betainc``).

    Differentiable in ``x``; the derivatives in ``a`` and ``b`` raise ValueError (as JAX).

    >>> round(float(betainc(2.0, 3.0, 0.5)), 6)
    0.6875
    """
    a, b, x = promote("betainc", a, b, x)
    return lax.betainc(a, b, x)


# --- factorials ---


def factorial(n, exact=False):
    """``n!`` as a float, ``Gamma(n + 1)`` (0 for ``n < 0``).

    Raises:
      NotImplementedError: for ``exact=True`` (JAX has no arbitrary-precision integers).

    >>> round(float(factorial(5)), 4)
    120.0
    """
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = promote("factorial", n)
    return fnp.where(n < 0, const(n, 0.0), lax.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition=False):
    """``N choose k`` as a float (via :func:`betaln`); 0 for ``N < 0``, ``k < 0`` or
    ``k > N``. ``repetition=True`` counts combinations with repetition,
    ``comb(N + k - 1, k)``.

    >>> round(float(comb(10, 3)), 4)
    120.0
    """
    N, k = promote("comb", N, k)
    if repetition:
        N = N + k - 1
        invalid = (N < 0) & ~((N == -1) & (k == 0))
    else:
        invalid = N < 0
    invalid = invalid | (k < 0) | (k > N)
    safe_n = fnp.where(invalid, const(N, 1.0), N)
    safe_k = fnp.where(invalid, const(k, 0.0), k)
    val = lax.exp(-lax.log1p(safe_n) - betaln(safe_n - safe_k + 1, safe_k + 1))
    val = fnp.where(safe_k == 0, const(val, 1.0), val)
    return fnp.where(invalid, const(val, 0.0), val)


@custom_jvp
def poch(z, m):
    """The Pochhammer symbol ``(z)_m = Gamma(z + m) / Gamma(z)`` (1 for ``m == 0``).

    >>> round(float(poch(3.0, 2.0)), 4)
    12.0
    """
    z, m = promote("poch", z, m)
    sign = gammasgn(z + m) * gammasgn(z)
    ratio = sign * lax.exp(lax.lgamma(z + m) - lax.lgamma(z))
    return fnp.where(m == 0.0, const(z, 1.0), ratio)


poch.defjvps(
    lambda z_dot, ans, z, m: (digamma(z + m) - digamma(z)) * ans * z_dot,
    lambda m_dot, ans, z, m: digamma(z + m) * ans * m_dot,
)


def multigammaln(a, d):
    """The log of the multivariate gamma function, ``d (d - 1) / 4 log(pi) +
    sum_{i<d} gammaln(a - i / 2)``; ``d`` is a concrete int.

    >>> round(float(multigammaln(3.0, 2)), 6)
    1.550195
    """
    d = concrete(int, d, "d argument of multigammaln")
    a, d_ = promote("multigammaln", a, d)
    constant = 0.25 * d_ * (d_ - 1) * lax.log(const(a, np.pi))
    b = fnp.arange(d, dtype=core.get_aval(d_).dtype) / 2
    ndim = core.get_aval(a).ndim
    res = fnp.sum(gammaln(fnp.expand_dims(a, -1) - fnp.expand_dims(b, tuple(range(ndim)))),
                  axis=-1)
    return res + constant


# --- digamma, polygamma, zeta ---


def digamma(x):
    """The digamma function ``psi(x) = d/dx log Gamma(x)`` (``lax.digamma``), real ``x``.

    >>> round(float(digamma(1.0)), 6)
    -0.577216
    """
    (x,) = promote("digamma", x)
    return lax.digamma(x)


def polygamma(n, x):
    """The polygamma function ``psi^(n)(x)``, the ``n``-th derivative of digamma.

    Args:
      n: integer array, the order (NaN for negative orders).
      x: real array.

    Raises:
      TypeError: if ``n`` is not of an integer dtype.

    >>> round(float(polygamma(1, 1.0)), 6)  # pi ** 2 / 6
    1.644934
    """
    n_dtype = core.get_aval(n).dtype if not isinstance(n, int) else np.dtype(int)
    if not dtypes.issubdtype(n_dtype, np.integer):
        raise TypeError(f"polygamma: the order n must be an integer array, got dtype "
                        f"{np.dtype(n_dtype).name}. Pass n as an int (or an integer array), "
                        "e.g. polygamma(1, x).")
    n, x = promote("polygamma", n, x)
    return lax.polygamma(n, x)


def zeta(x, q=None):
    """The Hurwitz zeta function ``sum_{k>=0} (k + q) ** -x`` (``lax.zeta``).

    Raises:
      NotImplementedError: for ``q=None`` (the Riemann zeta function is not implemented,
        as in JAX; pass ``q=1`` for it).

    >>> round(float(zeta(2.0, 1.0)), 6)
    1.644934
    """
    if q is None:
        raise NotImplementedError(
            "Riemann zeta function not implemented; pass q != None to compute the Hurwitz "
            "Zeta function.")
    x, q = promote("zeta", x, q)
    return lax.zeta(x, q)


def gammainc(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)`` (``lax.igamma``).

    Differentiable in ``x`` (to every order) and in ``a`` (first order, through
    ``lax.igamma_grad_a``), as JAX.

    >>> round(float(gammainc(2.0, 1.0)), 6)
    0.264241
    """
    a, x = promote("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``
    (``lax.igammac``).

    >>> round(float(gammaincc(2.0, 1.0)), 6)
    0.735759
    """
    a, x = promote("gammaincc", a, x)
    return lax.igammac(a, x)


def _bernoulli_exact(n):
    """B_0 .. B_n (``B_1 = -1/2``) as Fractions (Akiyama-Tanigawa)."""
    out, row = [], []
    for m in range(n + 1):
        row.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        out.append(row[0])
    if n >= 1:
        out[1] = Fraction(-1, 2)
    return out


def bernoulli(n):
    """The Bernoulli numbers ``B_0 .. B_n`` (``B_1 = -1/2``) in the default float dtype.

    Raises:
      ValueError: if ``n`` is negative.

    >>> bernoulli(4)
    Array([ 1.        , -0.5       ,  0.16666667,  0.        , -0.03333334], dtype=float32)
    """
    n = concrete(operator.index, n, "Argument n of bernoulli")
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    vals = [float(v) if abs(v) < 1e308 else float(np.copysign(np.inf, float(v.numerator)))
            for v in _bernoulli_exact(n)]
    return fnp.asarray(np.array(vals, np.float64), dtype=dtypes.default_float_dtype())

