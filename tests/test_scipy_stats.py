"""functrax.scipy.stats against scipy.stats (and mpmath where scipy is the less accurate
one: Student's t with large ``df``, the Poisson entropy), both test-only references.

- float64 over grids that include the tails and points outside the support, relative
  tolerances near 1e-13 (absolute ones for log-quantities that cross zero);
- float32 on the standard forms (``loc = 0``, ``scale = 1``) in units of the float32 epsilon
  relative to ``max(|value|, 1)`` for log-quantities and to ``|value|`` for probabilities;
- support and parameter handling (-inf / 0 / NaN), broadcasting and dtype promotion, JAX's
  errors for bad shapes and options, jit / vmap / grad (no NaN from discarded branches);
- gaussian_kde, mode, rankdata, sem against scipy; resample statistically.
"""
from __future__ import annotations

import doctest
import importlib

import mpmath
import numpy as np
import pytest
import scipy.stats as st

import functrax
import functrax.numpy as fnp
from functrax import grad, jit, random, vmap
from functrax.scipy import stats as S
from functrax.test_util import check_grads, enable_x64
from functrax.tree_util import tree_flatten, tree_unflatten

EPS32 = float(np.finfo(np.float32).eps)
RNG = np.random.default_rng(2024)
N = 600


def u(lo, hi, n=N):
    return RNG.uniform(lo, hi, n)


def logu(lo, hi, n=N):
    return 10.0 ** RNG.uniform(lo, hi, n)


def ints(lo, hi, n=N):
    return RNG.integers(lo, hi + 1, n).astype(np.float64)


def cat(*xs):
    return np.concatenate(xs)


X = cat(u(-50, 50, N // 2), u(-5, 5, N // 2))
LOC, SCALE = u(-3, 3), logu(-2, 2)
Q = cat(u(0, 1, N // 2), logu(-300, -1, N // 4), 1 - logu(-16, -1, N // 4))
Y01 = cat(u(0, 1, N // 3), logu(-12, 0, N // 3), 1 - logu(-12, 0, N // 3))
A, B = logu(-1, 2), logu(-1, 2)
POS = logu(-4, 3)


def _laplace_logpdf(x, loc, scale):
    return -np.abs((x - loc) / scale) - np.log(2 * scale)


# name -> (functrax fn, reference, float64 args, rtol, atol)
ACCURACY = {
    "norm.logpdf": (S.norm.logpdf, st.norm.logpdf, (X, LOC, SCALE), 1e-14, 1e-14),
    "norm.pdf": (S.norm.pdf, st.norm.pdf, (X, LOC, SCALE), 1e-13, 0),
    "norm.cdf": (S.norm.cdf, st.norm.cdf, (u(-38, 9), LOC, SCALE), 1e-13, 0),
    "norm.sf": (S.norm.sf, st.norm.sf, (u(-9, 38), LOC, SCALE), 1e-13, 0),
    "norm.logcdf": (S.norm.logcdf, st.norm.logcdf, (u(-60, 40), LOC, SCALE), 1e-13, 0),
    "norm.logcdf_far": (S.norm.logcdf, st.norm.logcdf, (-logu(1, 150),), 1e-14, 0),
    "norm.logsf": (S.norm.logsf, st.norm.logsf, (u(-40, 60), LOC, SCALE), 1e-13, 0),
    "norm.ppf": (S.norm.ppf, st.norm.ppf, (Q, LOC, SCALE), 1e-13, 1e-15),
    "norm.isf": (S.norm.isf, st.norm.isf, (Q, LOC, SCALE), 1e-13, 1e-15),
    "t.logpdf": (S.t.logpdf, st.t.logpdf, (X, logu(-1, 3), LOC, SCALE), 1e-12, 1e-13),
    "t.pdf": (S.t.pdf, st.t.pdf, (X, logu(-1, 3)), 1e-12, 0),
    "beta.logpdf": (S.beta.logpdf, st.beta.logpdf, (Y01, A, B), 1e-13, 1e-13),
    "beta.logpdf_outside": (S.beta.logpdf, st.beta.logpdf, (u(-1, 2), A, B, LOC, SCALE),
                            1e-13, 1e-13),
    "beta.pdf": (S.beta.pdf, st.beta.pdf, (Y01, A, B), 1e-12, 0),
    "beta.cdf": (S.beta.cdf, st.beta.cdf, (Y01, A, B), 1e-12, 0),
    "beta.sf": (S.beta.sf, st.beta.sf, (Y01, A, B), 1e-12, 0),
    "beta.logcdf": (S.beta.logcdf, st.beta.logcdf, (Y01, A, B), 1e-12, 0),
    "beta.logsf": (S.beta.logsf, st.beta.logsf, (Y01, A, B), 1e-12, 0),
    "gamma.logpdf": (S.gamma.logpdf, st.gamma.logpdf, (cat(POS, -POS[:50]), cat(A, A[:50]),
                                                       0.0, cat(SCALE, SCALE[:50])),
                     1e-13, 1e-13),
    "gamma.pdf": (S.gamma.pdf, st.gamma.pdf, (POS, A), 1e-12, 0),
    "gamma.cdf": (S.gamma.cdf, st.gamma.cdf, (POS, A), 1e-12, 0),
    "gamma.sf": (S.gamma.sf, st.gamma.sf, (POS, A), 1e-12, 0),
    "gamma.logcdf": (S.gamma.logcdf, st.gamma.logcdf, (POS, A), 1e-12, 1e-300),
    "gamma.logsf": (S.gamma.logsf, st.gamma.logsf, (POS, A), 1e-12, 1e-300),
    "chi2.logpdf": (S.chi2.logpdf, st.chi2.logpdf, (POS, A, 0.0, SCALE), 1e-13, 1e-13),
    "chi2.pdf": (S.chi2.pdf, st.chi2.pdf, (POS, A), 1e-12, 0),
    "chi2.cdf": (S.chi2.cdf, st.chi2.cdf, (POS, A), 1e-12, 0),
    "chi2.sf": (S.chi2.sf, st.chi2.sf, (POS, A), 1e-12, 0),
    "chi2.logcdf": (S.chi2.logcdf, st.chi2.logcdf, (POS, A), 1e-12, 1e-300),
    "chi2.logsf": (S.chi2.logsf, st.chi2.logsf, (POS, A), 1e-12, 1e-300),
    "poisson.logpmf": (S.poisson.logpmf, st.poisson.logpmf, (ints(-2, 300), logu(-2, 2.5)),
                       1e-13, 1e-13),
    "poisson.logpmf_nonint": (S.poisson.logpmf, st.poisson.logpmf, (u(-2, 30), logu(-2, 1.5)),
                              1e-13, 1e-13),
    "poisson.pmf": (S.poisson.pmf, st.poisson.pmf, (ints(0, 300), logu(-2, 2.5)), 1e-12, 0),
    "poisson.cdf": (S.poisson.cdf, st.poisson.cdf, (u(-2, 300), logu(-2, 2.5)), 1e-12, 0),
    "bernoulli.logpmf": (S.bernoulli.logpmf, st.bernoulli.logpmf, (ints(-1, 2), u(0, 1)),
                         1e-14, 1e-15),
    "bernoulli.pmf": (S.bernoulli.pmf, st.bernoulli.pmf, (u(-1, 2), u(0, 1)), 1e-14, 0),
    "bernoulli.cdf": (S.bernoulli.cdf, st.bernoulli.cdf, (u(-1, 2), u(0, 1)), 1e-15, 0),
    "bernoulli.ppf": (S.bernoulli.ppf, st.bernoulli.ppf, (u(0, 1), u(0, 1)), 0, 0),
    "binom.logpmf": (S.binom.logpmf, st.binom.logpmf, (ints(0, 1000), 1000.0, u(0, 1)),
                     1e-12, 1e-12),
    "binom.logpmf_small": (S.binom.logpmf, st.binom.logpmf, (ints(-1, 12), ints(0, 10),
                                                             u(0, 1)), 1e-13, 1e-14),
    "binom.pmf": (S.binom.pmf, st.binom.pmf, (ints(0, 60), 60.0, u(0, 1)), 1e-12, 0),
    "cauchy.logpdf": (S.cauchy.logpdf, st.cauchy.logpdf, (X, LOC, SCALE), 1e-14, 1e-15),
    "cauchy.pdf": (S.cauchy.pdf, st.cauchy.pdf, (X, LOC, SCALE), 1e-14, 0),
    "cauchy.cdf": (S.cauchy.cdf, st.cauchy.cdf, (cat(X, -logu(0, 300)), 0.0, 1.0), 1e-14, 0),
    "cauchy.sf": (S.cauchy.sf, st.cauchy.sf, (cat(X, logu(0, 300)), 0.0, 1.0), 1e-14, 0),
    "cauchy.logcdf": (S.cauchy.logcdf, st.cauchy.logcdf, (X, LOC, SCALE), 1e-14, 0),
    "cauchy.logsf": (S.cauchy.logsf, st.cauchy.logsf, (X, LOC, SCALE), 1e-14, 0),
    "cauchy.ppf": (S.cauchy.ppf, st.cauchy.ppf, (Q, LOC, SCALE), 1e-13, 1e-14),
    "cauchy.isf": (S.cauchy.isf, st.cauchy.isf, (Q, LOC, SCALE), 1e-13, 1e-14),
    "laplace.logpdf": (S.laplace.logpdf, _laplace_logpdf, (X, LOC, SCALE), 1e-15, 1e-15),
    "laplace.pdf": (S.laplace.pdf, st.laplace.pdf, (X[N // 2:], LOC[N // 2:],
                                                    SCALE[N // 2:] + 0.5), 1e-14, 0),
    "laplace.cdf": (S.laplace.cdf, st.laplace.cdf, (X, LOC, SCALE), 1e-14, 0),
    "logistic.logpdf": (S.logistic.logpdf, st.logistic.logpdf, (X, LOC, SCALE), 1e-14, 1e-15),
    "logistic.pdf": (S.logistic.pdf, st.logistic.pdf, (X, LOC, SCALE), 1e-13, 0),
    "logistic.cdf": (S.logistic.cdf, st.logistic.cdf, (X, LOC, SCALE), 1e-14, 0),
    "logistic.sf": (S.logistic.sf, st.logistic.sf, (X, LOC, SCALE), 1e-14, 0),
    "logistic.ppf": (S.logistic.ppf, st.logistic.ppf, (Q, LOC, SCALE), 1e-13, 1e-15),
    "logistic.isf": (S.logistic.isf, st.logistic.isf, (Q, LOC, SCALE), 1e-13, 1e-15),
    "expon.logpdf": (S.expon.logpdf, st.expon.logpdf, (X, LOC, SCALE), 1e-15, 1e-15),
    "expon.pdf": (S.expon.pdf, st.expon.pdf, (X, LOC, SCALE), 1e-13, 0),
    "expon.cdf": (S.expon.cdf, st.expon.cdf, (X, LOC, SCALE), 1e-14, 0),
    "expon.logcdf": (S.expon.logcdf, st.expon.logcdf, (X, LOC, SCALE), 1e-14, 0),
    "expon.sf": (S.expon.sf, st.expon.sf, (X, LOC, SCALE), 1e-13, 0),
    "expon.logsf": (S.expon.logsf, st.expon.logsf, (X, LOC, SCALE), 1e-15, 0),
    "expon.ppf": (S.expon.ppf, st.expon.ppf, (cat(Q, u(-1, 2, 20)), 0.3, 2.0), 1e-14, 0),
    "uniform.logpdf": (S.uniform.logpdf, st.uniform.logpdf, (X, LOC, SCALE), 1e-15, 0),
    "uniform.pdf": (S.uniform.pdf, st.uniform.pdf, (u(-3, 3), LOC, SCALE), 1e-15, 0),
    "uniform.cdf": (S.uniform.cdf, st.uniform.cdf, (u(-3, 3), LOC, SCALE), 1e-14, 0),
    "uniform.ppf": (S.uniform.ppf, st.uniform.ppf, (cat(Q, u(-1, 2, 20)), 0.5, 3.0), 1e-15, 0),
}


def _run(fn, args, wide):
    dt = np.float64 if wide else np.float32
    with enable_x64(wide):
        out = jit(fn)(*[fnp.asarray(np.asarray(a, dt)) for a in args])
        return np.asarray(out)


def _ref(ref, args):
    with np.errstate(all="ignore"):
        return np.asarray(ref(*[np.asarray(a, np.float64) for a in args]), np.float64)


def _assert_close(got, want, rtol, atol, name):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
    finite = np.isfinite(want)
    # scipy's log(cdf) is -inf where the cdf is subnormal; ours is the log of that value
    exact = ~finite & ~((want == -np.inf) & (got < -700))
    if "logcdf" in name or "logsf" in name:  # (and scipy's log of a subnormal is inexact)
        finite &= want > -700
    np.testing.assert_array_equal(got[exact], want[exact], err_msg=name)
    np.testing.assert_allclose(got[finite], want[finite], rtol=rtol, atol=max(atol, 1e-300),
                               err_msg=name)


@pytest.mark.parametrize("name", sorted(ACCURACY))
def test_float64_matches_scipy(name):
    fn, ref, args, rtol, atol = ACCURACY[name]
    got = _run(fn, args, True)
    assert got.dtype == np.float64
    _assert_close(got, _ref(ref, args), rtol, atol, name)


# --- float32, standard forms: name -> (fn, ref, args, ulps, log-quantity) ---

F32 = {
    "norm.logpdf": (S.norm.logpdf, st.norm.logpdf, (u(-12, 12),), 2, True),
    # (special.ndtr's float32 erfc tail: ~35 ulp below -5)
    "norm.cdf": (S.norm.cdf, st.norm.cdf, (u(-9, 5),), 48, False),
    "norm.sf": (S.norm.sf, st.norm.sf, (u(-5, 9),), 48, False),
    "norm.logcdf": (S.norm.logcdf, st.norm.logcdf, (u(-30, 10),), 4, True),
    "norm.ppf": (S.norm.ppf, st.norm.ppf, (cat(u(0.01, 0.99), logu(-30, -2)),), 8, False),
    "norm.isf": (S.norm.isf, st.norm.isf, (cat(u(0.01, 0.99), logu(-30, -2)),), 8, False),
    "t.logpdf": (S.t.logpdf, st.t.logpdf, (u(-10, 10), logu(-1, 3)), 8, True),
    "beta.cdf": (S.beta.cdf, st.beta.cdf, (u(0, 1), u(0.5, 10), u(0.5, 10)), 4, False),
    "beta.sf": (S.beta.sf, st.beta.sf, (u(0, 1), u(0.5, 10), u(0.5, 10)), 8, False),
    "beta.logpdf": (S.beta.logpdf, st.beta.logpdf, (u(0.01, 0.99), u(0.5, 5), u(0.5, 5)), 16,
                    True),
    "gamma.cdf": (S.gamma.cdf, st.gamma.cdf, (logu(-2, 1.5), u(0.5, 10)), 4, False),
    "gamma.sf": (S.gamma.sf, st.gamma.sf, (logu(-2, 1.5), u(0.5, 10)), 4, False),
    "gamma.logpdf": (S.gamma.logpdf, st.gamma.logpdf, (logu(-2, 1.5), u(0.5, 10)), 16, True),
    "chi2.cdf": (S.chi2.cdf, st.chi2.cdf, (logu(-2, 1.5), u(0.5, 10)), 4, False),
    "poisson.logpmf": (S.poisson.logpmf, st.poisson.logpmf, (ints(0, 20), u(0.5, 10)), 16,
                       True),
    "poisson.cdf": (S.poisson.cdf, st.poisson.cdf, (ints(0, 20), u(0.5, 10)), 4, False),
    "binom.logpmf": (S.binom.logpmf, st.binom.logpmf, (ints(0, 10), 10.0, u(0.05, 0.95)), 16,
                     True),
    "cauchy.logpdf": (S.cauchy.logpdf, st.cauchy.logpdf, (u(-100, 100),), 2, True),
    "cauchy.cdf": (S.cauchy.cdf, st.cauchy.cdf, (u(-100, 100),), 4, False),
    "cauchy.ppf": (S.cauchy.ppf, st.cauchy.ppf, (cat(u(0.01, 0.99), logu(-30, -2)),), 4, False),
    "laplace.cdf": (S.laplace.cdf, st.laplace.cdf, (u(-20, 20),), 2, False),
    "logistic.logpdf": (S.logistic.logpdf, st.logistic.logpdf, (u(-30, 30),), 2, True),
    "logistic.cdf": (S.logistic.cdf, st.logistic.cdf, (u(-30, 30),), 2, False),
    "logistic.ppf": (S.logistic.ppf, st.logistic.ppf, (u(0.01, 0.99),), 4, False),
    "expon.cdf": (S.expon.cdf, st.expon.cdf, (logu(-6, 1.5),), 2, False),
    "expon.logcdf": (S.expon.logcdf, st.expon.logcdf, (logu(-6, 1.5),), 2, True),
    "expon.ppf": (S.expon.ppf, st.expon.ppf, (u(0, 1),), 2, False),
    "uniform.ppf": (S.uniform.ppf, st.uniform.ppf, (u(0, 1),), 1, False),
}


@pytest.mark.parametrize("name", sorted(F32))
def test_float32_within_ulps_of_the_rounded_reference(name):
    fn, ref, args, ulps, is_log = F32[name]
    args32 = [np.asarray(a, np.float32) for a in args]
    got = _run(fn, args32, False)
    assert got.dtype == np.float32
    want = _ref(ref, args32)
    ok = np.isfinite(want) & (np.abs(want) > np.finfo(np.float32).tiny)
    scale = np.maximum(np.abs(want[ok]), 1.0) if is_log else np.abs(want[ok])
    worst = (np.abs(got[ok] - want[ok]) / scale).max() / EPS32
    assert worst <= ulps, f"{name}: {worst:.1f} ulp (allowed {ulps})"


# --- references scipy is not accurate enough for ---


def _t_logpdf_mp(x, df):
    x, df = mpmath.mpf(x), mpmath.mpf(df)
    return float(mpmath.loggamma((df + 1) / 2) - mpmath.loggamma(df / 2)
                 - mpmath.log(df * mpmath.pi) / 2 - (df + 1) / 2 * mpmath.log1p(x * x / df))


def test_t_large_df_matches_mpmath():
    x, df = u(-20, 20, 80), logu(2, 15, 80)
    with mpmath.workdps(60):
        want = np.array([_t_logpdf_mp(a, b) for a, b in zip(x, df)])
    np.testing.assert_allclose(_run(S.t.logpdf, (x, df), True), want, rtol=1e-13)
    with enable_x64():
        gauss = S.norm.logpdf(fnp.asarray(x))
        np.testing.assert_allclose(np.asarray(S.t.logpdf(fnp.asarray(x), np.inf)),
                                   np.asarray(gauss), rtol=1e-15)
        np.testing.assert_allclose(np.asarray(S.t.logpdf(fnp.asarray(x), 1e300)),
                                   np.asarray(gauss), rtol=1e-13)


def _poisson_entropy_mp(mu):
    mu = mpmath.mpf(mu)
    sd = mpmath.sqrt(mu)
    lo, hi = max(0, int(mu - 15 * sd - 30)), int(mu + 15 * sd + 60)
    h = mpmath.mpf(0)
    for k in range(lo, hi):
        lp = k * mpmath.log(mu) - mpmath.loggamma(k + 1) - mu
        h -= mpmath.exp(lp) * lp
    return float(h)


def test_poisson_entropy_matches_mpmath():
    mu = cat(logu(-3, 3.3, 40), [99.99, 100.0, 100.01, 1.0, 10.0])
    with mpmath.workdps(30):
        want = np.array([_poisson_entropy_mp(m) for m in mu])
    np.testing.assert_allclose(_run(S.poisson.entropy, (mu,), True), want, rtol=5e-14)
    got32 = _run(S.poisson.entropy, (mu,), False)
    np.testing.assert_allclose(got32, want, rtol=16 * EPS32)
    with enable_x64():
        big = np.array([1e4, 1e8, 1e15])
        np.testing.assert_allclose(np.asarray(S.poisson.entropy(fnp.asarray(big))),
                                   0.5 * np.log(2 * np.pi * np.e * big) - 1 / (12 * big)
                                   - 1 / (24 * big ** 2),
                                   rtol=1e-14)


def test_poisson_entropy_edges():
    with enable_x64():
        out = np.asarray(S.poisson.entropy(fnp.asarray([0.0, -1.0, np.nan])))
    assert out[0] == 0 and np.isnan(out[1]) and np.isnan(out[2])
    assert S.poisson.entropy(fnp.ones((2, 3)), loc=fnp.zeros(3)).shape == (2, 3)


# --- multivariate distributions ---


def _spd(rng, n, batch=()):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_multivariate_normal_matches_scipy():
    rng = np.random.default_rng(0)
    for n in (1, 3, 5):
        cov, mean, x = _spd(rng, n), rng.normal(size=n), rng.normal(size=(7, n))
        with enable_x64():
            got = np.asarray(S.multivariate_normal.logpdf(x, mean, cov))
            got_pdf = np.asarray(S.multivariate_normal.pdf(x, mean, cov))
        np.testing.assert_allclose(got, st.multivariate_normal.logpdf(x, mean, cov), rtol=1e-13)
        np.testing.assert_allclose(got_pdf, st.multivariate_normal.pdf(x, mean, cov), rtol=1e-13)


def test_multivariate_normal_scalar_forms_and_batches():
    rng = np.random.default_rng(1)
    with enable_x64():
        x = rng.normal(size=(4, 3))
        got = np.asarray(S.multivariate_normal.logpdf(x, np.zeros(3), 2.0))
        np.testing.assert_allclose(got, st.multivariate_normal.logpdf(x, np.zeros(3),
                                                                      2 * np.eye(3)))
        got = np.asarray(S.multivariate_normal.logpdf(x[:, 0], 0.5, 2.0))
        np.testing.assert_allclose(got, st.norm.logpdf(x[:, 0], 0.5, np.sqrt(2.0)))
        covs, means = _spd(rng, 3, (4,)), rng.normal(size=(4, 3))
        got = np.asarray(S.multivariate_normal.logpdf(x, means, covs))
        want = [st.multivariate_normal.logpdf(x[i], means[i], covs[i]) for i in range(4)]
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_multivariate_normal_errors():
    with pytest.raises(ValueError, match=r"multivariate_normal.logpdf.*cov.*\(2, 2\)"):
        S.multivariate_normal.logpdf(fnp.zeros(3), fnp.zeros(3), fnp.eye(2))
    with pytest.raises(ValueError, match=r"x must have shape.*x.shape=\(2,\)"):
        S.multivariate_normal.logpdf(fnp.zeros(2), fnp.zeros(3), fnp.eye(3))
    with pytest.raises(NotImplementedError, match="allow_singular"):
        S.multivariate_normal.logpdf(fnp.zeros(3), fnp.zeros(3), fnp.eye(3), allow_singular=True)


def test_dirichlet_matches_scipy():
    rng = np.random.default_rng(2)
    alpha = np.array([0.7, 2.0, 3.5])
    x = rng.dirichlet(alpha, size=6).T
    with enable_x64():
        got = np.asarray(S.dirichlet.logpdf(x, alpha))
        got_short = np.asarray(S.dirichlet.logpdf(x[:-1], alpha))
        got_pdf = np.asarray(S.dirichlet.pdf(x, alpha))
        off = np.asarray(S.dirichlet.logpdf(np.array([0.5, 0.6, -0.1]), alpha))
    want = st.dirichlet.logpdf(x, alpha)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(got_short, want, rtol=1e-10)
    np.testing.assert_allclose(got_pdf, st.dirichlet.pdf(x, alpha), rtol=1e-13)
    assert off == -np.inf
    with pytest.raises(ValueError, match="alpha.*one-dimensional"):
        S.dirichlet.logpdf(x, alpha[None])
    with pytest.raises(ValueError, match=r"x.shape=\(5,\)"):
        S.dirichlet.logpdf(np.ones(5) / 5, alpha)


def test_multinomial_matches_scipy():
    p = np.array([0.2, 0.3, 0.5])
    xs = np.array([[1, 3, 4], [0, 0, 8], [2, 2, 4], [1, 1, 1]])
    with enable_x64():
        got = np.asarray(S.multinomial.logpmf(xs, 8, p))
        got_pmf = np.asarray(S.multinomial.pmf(xs[0], 8, p))
    np.testing.assert_allclose(got[:3], st.multinomial.logpmf(xs[:3], 8, p), rtol=1e-13)
    assert got[3] == -np.inf  # the counts do not sum to n
    np.testing.assert_allclose(got_pmf, st.multinomial.pmf(xs[0], 8, p), rtol=1e-13)
    with pytest.raises(ValueError, match="integer type"):
        S.multinomial.logpmf(np.array([1.0, 3.0, 4.0]), 8, p)


# --- support, invalid parameters, special values ---

SUPPORT = [
    (S.beta.logpdf, (1.5, 2.0, 3.0), -np.inf), (S.beta.pdf, (-0.5, 2.0, 3.0), 0.0),
    (S.beta.logpdf, (0.0, 1.0, 3.0), np.log(3.0)), (S.beta.logpdf, (0.0, 0.5, 3.0), np.inf),
    (S.beta.cdf, (-1.0, 2.0, 3.0), 0.0), (S.beta.cdf, (2.0, 2.0, 3.0), 1.0),
    (S.beta.sf, (2.0, 2.0, 3.0), 0.0), (S.beta.logpdf, (0.5, -1.0, 3.0), np.nan),
    (S.beta.cdf, (0.5, 2.0, 0.0), np.nan),
    (S.gamma.logpdf, (-1.0, 2.0), -np.inf), (S.gamma.logpdf, (0.0, 1.0), 0.0),
    (S.gamma.cdf, (-1.0, 2.0), 0.0), (S.gamma.sf, (-1.0, 2.0), 1.0),
    (S.gamma.logpdf, (1.0, 0.0), np.nan), (S.gamma.cdf, (1.0, 2.0, 0.0, -1.0), np.nan),
    (S.chi2.logpdf, (0.0, 2.0), np.log(0.5)), (S.chi2.logpdf, (-1.0, 2.0), -np.inf),
    (S.chi2.cdf, (np.inf, 3.0), 1.0), (S.chi2.sf, (1.0, -3.0), np.nan),
    (S.norm.logpdf, (1.0, 0.0, -1.0), np.nan), (S.norm.cdf, (np.inf,), 1.0),
    (S.norm.cdf, (-np.inf,), 0.0), (S.norm.ppf, (0.0,), -np.inf), (S.norm.ppf, (1.0,), np.inf),
    (S.norm.ppf, (1.5,), np.nan), (S.norm.isf, (0.0,), np.inf),
    (S.t.logpdf, (1.0, -2.0), np.nan), (S.t.pdf, (1.0, 2.0, 0.0, 0.0), np.nan),
    (S.poisson.logpmf, (-1.0, 2.0), -np.inf), (S.poisson.logpmf, (1.5, 2.0), -np.inf),
    (S.poisson.pmf, (0.0, 0.0), 1.0), (S.poisson.logpmf, (1.0, -2.0), np.nan),
    (S.poisson.cdf, (-0.5, 2.0), 0.0), (S.poisson.cdf, (np.inf, 2.0), 1.0),
    (S.bernoulli.logpmf, (2.0, 0.3), -np.inf), (S.bernoulli.logpmf, (0.5, 0.3), -np.inf),
    (S.bernoulli.pmf, (1.0, 1.5), np.nan), (S.bernoulli.cdf, (0.5, -0.1), np.nan),
    (S.bernoulli.ppf, (1.5, 0.3), np.nan), (S.bernoulli.cdf, (np.nan, 0.3), np.nan),
    (S.binom.logpmf, (11.0, 10.0, 0.3), -np.inf), (S.binom.logpmf, (2.5, 10.0, 0.3), -np.inf),
    (S.binom.pmf, (0.0, 0.0, 0.3), 1.0), (S.binom.logpmf, (1.0, 10.5, 0.3), np.nan),
    (S.binom.logpmf, (1.0, 10.0, 1.3), np.nan), (S.binom.pmf, (10.0, 10.0, 1.0), 1.0),
    (S.cauchy.cdf, (-np.inf,), 0.0), (S.cauchy.sf, (-np.inf,), 1.0),
    (S.cauchy.ppf, (0.0,), -np.inf), (S.cauchy.ppf, (0.5,), 0.0), (S.cauchy.ppf, (1.0,), np.inf),
    (S.cauchy.isf, (1.0,), -np.inf), (S.cauchy.ppf, (-0.1,), np.nan),
    (S.cauchy.logpdf, (1.0, 0.0, 0.0), np.nan),
    (S.laplace.cdf, (np.inf,), 1.0), (S.laplace.cdf, (0.0,), 0.5),
    (S.laplace.logpdf, (1.0, 0.0, -1.0), np.nan),
    (S.logistic.ppf, (0.0,), -np.inf), (S.logistic.ppf, (1.0,), np.inf),
    (S.logistic.ppf, (0.5,), 0.0), (S.logistic.isf, (1.5,), np.nan),
    (S.logistic.logpdf, (1e4,), -1e4),
    (S.expon.logpdf, (-1.0,), -np.inf), (S.expon.cdf, (-1.0,), 0.0), (S.expon.sf, (-1.0,), 1.0),
    (S.expon.logcdf, (-1.0,), -np.inf), (S.expon.logsf, (-1.0,), 0.0),
    (S.expon.logcdf, (1000.0,), 0.0), (S.expon.ppf, (1.0,), np.inf),
    (S.expon.ppf, (-0.5,), np.nan), (S.expon.pdf, (1.0, 0.0, 0.0), np.nan),
    (S.uniform.logpdf, (2.0,), -np.inf), (S.uniform.pdf, (1.0,), 1.0),
    (S.uniform.cdf, (-1.0,), 0.0), (S.uniform.cdf, (5.0,), 1.0), (S.uniform.ppf, (2.0,), np.nan),
    (S.uniform.pdf, (0.5, 0.0, -1.0), np.nan),
]


@pytest.mark.parametrize("fn,args,want", SUPPORT,
                         ids=[f"{f.__module__.rsplit('.', 1)[1]}.{f.__name__}{a}"
                              for f, a, _ in SUPPORT])
def test_support_and_invalid_parameters(fn, args, want):
    for wide in (True, False):
        with enable_x64(wide):
            got = float(fn(*[fnp.asarray(np.asarray(a, np.float64 if wide else np.float32))
                             for a in args]))
        if np.isnan(want):
            assert np.isnan(got), got
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6)


# --- promotion, broadcasting, transformations ---


def test_promotion_follows_promote_args_inexact():
    assert S.norm.logpdf(fnp.arange(3)).dtype == np.float32
    assert S.norm.logpdf(1, 2, 3).dtype == np.float32
    assert S.gamma.cdf(fnp.ones(2, np.float32), 2.0).dtype == np.float32
    assert S.poisson.logpmf(fnp.arange(3), 2).dtype == np.float32
    assert S.bernoulli.ppf(0.3, 0.5).dtype == np.float32
    with enable_x64():
        assert S.norm.logpdf(fnp.arange(3)).dtype == np.float64
        assert S.beta.logpdf(fnp.ones(2, np.float32), 2.0, 3.0).dtype == np.float32
        assert S.beta.logpdf(fnp.ones(2, np.float32), fnp.ones(2), 3.0).dtype == np.float64


def test_broadcasting():
    out = S.norm.logpdf(fnp.ones((2, 1)), fnp.zeros(3), fnp.ones((1, 3)))
    assert out.shape == (2, 3)
    assert S.beta.cdf(fnp.ones((4, 1, 1)) / 2, fnp.ones(3), 2.0).shape == (4, 1, 3)
    assert S.t.logpdf(0.0, fnp.ones((2, 2))).shape == (2, 2)
    with pytest.raises(ValueError, match="norm.logpdf: incompatible shapes"):
        S.norm.logpdf(fnp.ones(3), fnp.ones(2))


def test_jit_vmap_match_eager():
    x = fnp.asarray(u(-3, 3, 8).astype(np.float32))
    for fn in (lambda v: S.t.logpdf(v, 3.0), lambda v: S.cauchy.ppf(fnp.abs(v) / 3),
               lambda v: S.gamma.logcdf(fnp.abs(v), 2.0), lambda v: S.poisson.entropy(v * v)):
        eager = np.asarray(fn(x))
        np.testing.assert_allclose(np.asarray(jit(fn)(x)), eager, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(vmap(fn)(x)), eager, rtol=1e-6)


def test_gradients_match_finite_differences():
    x = np.array([0.3, 1.2, 2.5])
    check_grads(lambda v: S.norm.logcdf(v * 10 - 25), (x,), order=2)
    check_grads(lambda v: S.t.logpdf(v, v + 1.0, 0.5, 2.0), (x,), order=2)
    check_grads(lambda v: S.cauchy.ppf(v / 3), (x,), order=2)
    check_grads(lambda v: S.logistic.isf(v / 3), (x,), order=2)
    check_grads(lambda v: S.beta.logpdf(v / 3, 2.0, 3.5), (x,), order=2)
    check_grads(lambda v: S.gamma.logpdf(v, 2.5, 0.1, 1.5), (x,), order=2)
    check_grads(lambda v: S.poisson.entropy(v * 50), (x,), order=1)
    check_grads(lambda v: S.multivariate_normal.logpdf(v, v * 0.5, np.eye(3) * 2), (x,),
                order=2)


GUARDED = [  # (fn of x, x) whose gradient is 0 there, not NaN: a discarded branch is guarded
    (lambda v: S.beta.logpdf(v, 2.0, 3.0), 1.5), (lambda v: S.beta.pdf(v, 2.0, 3.0), -0.5),
    (lambda v: S.gamma.logpdf(v, 2.0), -1.0), (lambda v: S.gamma.pdf(v, 2.0), -1.0),
    (lambda v: S.chi2.pdf(v, 3.0), -1.0), (lambda v: S.expon.logcdf(v), -1.0),
    (lambda v: S.expon.pdf(v), -2.0), (lambda v: S.poisson.pmf(v, 2.0), -1.0),
    (lambda v: S.binom.pmf(3.0, 10.0, v), 0.3), (lambda v: S.bernoulli.pmf(2.0, v), 0.3),
    (lambda v: S.laplace.cdf(v), 3.0), (lambda v: S.t.pdf(v, np.inf), 1.0),
]


@pytest.mark.parametrize("i", range(len(GUARDED)))
def test_no_nan_gradients_from_discarded_branches(i):
    fn, x = GUARDED[i]
    g = float(grad(fn)(x))
    assert np.isfinite(g), g


def test_gradient_values_at_edges():
    np.testing.assert_allclose(float(grad(S.cauchy.ppf)(0.5)), np.pi, rtol=1e-6)
    np.testing.assert_allclose(float(grad(S.norm.logcdf)(0.0)), 2 * st.norm.pdf(0.0), rtol=1e-6)
    g = float(grad(lambda v: S.expon.logcdf(v))(30.0))
    np.testing.assert_allclose(g, np.exp(-30.0), rtol=1e-4)


# --- gaussian_kde ---


def _kde_pair(d=1, n=40, weights=False, bw=None, seed=0):
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(d, n)) if d > 1 else rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, n) if weights else None
    return (S.gaussian_kde(data, bw_method=bw, weights=w),
            st.gaussian_kde(data, bw_method=bw, weights=w))


@pytest.mark.parametrize("d,weights,bw", [(1, False, None), (2, True, "silverman"),
                                          (3, False, 0.4), (2, False, "scott")])
def test_kde_matches_scipy(d, weights, bw):
    with enable_x64():
        ours, ref = _kde_pair(d, weights=weights, bw=bw)
        pts = np.random.default_rng(9).normal(size=(d, 7)) * 1.5
        np.testing.assert_allclose(np.asarray(ours.evaluate(pts)), ref.evaluate(pts),
                                   rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ours(pts)), ref(pts), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ours.pdf(pts)), ref.pdf(pts), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ours.logpdf(pts)), ref.logpdf(pts), rtol=1e-12)
        np.testing.assert_allclose(float(ours.neff), ref.neff, rtol=1e-13)
        np.testing.assert_allclose(np.asarray(ours.covariance), ref.covariance, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ours.inv_cov), ref.inv_cov, rtol=1e-11)
        mean, cov = np.full(d, 0.3), np.eye(d) * 0.7
        np.testing.assert_allclose(float(ours.integrate_gaussian(mean, cov)),
                                   ref.integrate_gaussian(mean, cov), rtol=1e-12)
        other, other_ref = _kde_pair(d, n=25, seed=5)
        np.testing.assert_allclose(float(ours.integrate_kde(other)),
                                   ref.integrate_kde(other_ref), rtol=1e-12)
        assert (ours.d, ours.n) == (ref.d, ref.n)


def test_kde_one_dimensional_extras():
    with enable_x64():
        ours, ref = _kde_pair(1, weights=True)
        np.testing.assert_allclose(float(ours.integrate_box_1d(-0.5, 1.2)),
                                   ref.integrate_box_1d(-0.5, 1.2), rtol=1e-12)
        far = np.array([40.0, -60.0])
        assert np.all(np.isfinite(np.asarray(ours.logpdf(far))))  # logsumexp: no -inf
        np.testing.assert_allclose(np.asarray(ours.logpdf(far)), ref.logpdf(far), rtol=1e-8)


def test_kde_is_a_pytree_and_jits():
    kde, ref = _kde_pair(2, weights=True)
    leaves, tree = tree_flatten(kde)
    assert len(leaves) == 5
    again = tree_unflatten(tree, leaves)
    pts = np.zeros((2, 3), np.float32)
    np.testing.assert_allclose(np.asarray(jit(lambda k, p: k.evaluate(p))(kde, pts)),
                               np.asarray(again.evaluate(pts)), rtol=1e-5)
    g = grad(lambda k: k.logpdf(np.zeros(2, np.float32))[0])(kde)
    assert isinstance(g, S.gaussian_kde)


def test_kde_resample_statistics():
    with enable_x64():
        kde, _ = _kde_pair(2, n=30, weights=True)
        s = np.asarray(kde.resample(random.key(0), (20000,)))
        assert s.shape == (2, 20000)
        data, w = np.asarray(kde.dataset), np.asarray(kde.weights)
        mean = data @ w
        cov = np.cov(data, aweights=w, bias=True) + np.asarray(kde.covariance)
        se = np.sqrt(np.diag(cov) / s.shape[1])
        assert np.all(np.abs(s.mean(axis=1) - mean) < 5 * se)
        np.testing.assert_allclose(np.cov(s), cov, rtol=0.06, atol=0.02)
        assert kde.resample(random.key(1)).shape == (2,)
        assert kde.resample(random.key(1), (3, 4)).shape == (2, 3, 4)


def test_kde_errors():
    with pytest.raises(ValueError, match="multiple elements"):
        S.gaussian_kde(fnp.ones(1))
    with pytest.raises(ValueError, match="bw_method"):
        S.gaussian_kde(fnp.arange(4.0), bw_method="nope")
    with pytest.raises(ValueError, match="length n=4"):
        S.gaussian_kde(fnp.arange(4.0), weights=fnp.ones(3))
    with pytest.raises(NotImplementedError):
        S.gaussian_kde(fnp.arange(4.0) + 0j)
    kde = S.gaussian_kde(np.random.default_rng(0).normal(size=(2, 10)))
    with pytest.raises(ValueError, match="points have dimension 3, dataset has dimension 2"):
        kde.evaluate(fnp.ones((3, 4)))
    with pytest.raises(ValueError, match="only handles 1D"):
        kde.integrate_box_1d(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="integrate_box_1d"):
        kde.integrate_box(fnp.zeros(2), fnp.ones(2))
    with pytest.raises(NotImplementedError):
        kde.set_bandwidth("scott")
    with pytest.raises(ValueError, match="mean does not have dimension 2"):
        kde.integrate_gaussian(fnp.zeros(3), fnp.eye(2))
    assert kde.evaluate(fnp.ones(2)).shape == (1,)  # one point given as (d,)


# --- mode, rankdata, sem ---


def test_mode_matches_scipy():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, size=(6, 7, 3)).astype(np.float32)
    for axis in (0, 1, -1, None):
        for keepdims in (False, True):
            got = S.mode(x, axis=axis, keepdims=keepdims)
            want = st.mode(x, axis=axis, keepdims=keepdims)
            np.testing.assert_array_equal(np.asarray(got.mode), want.mode)
            np.testing.assert_array_equal(np.asarray(got.count), want.count)
    m = S.mode(fnp.array([3, 1, 1, 3, 2]))  # a tie: the smallest value
    assert (int(m.mode), int(m.count)) == (1, 2)
    assert jit(lambda v: S.mode(v, axis=1).mode)(x).shape == (6, 3)
    with pytest.raises(ValueError, match="Illegal nan_policy"):
        S.mode(x, nan_policy="bad")
    with pytest.raises(NotImplementedError):
        S.mode(x, nan_policy="omit")


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata_matches_scipy(method):
    rng = np.random.default_rng(4)
    x = rng.integers(0, 6, size=(5, 8)).astype(np.float32)
    got = S.rankdata(x, method)
    np.testing.assert_array_equal(np.asarray(got), st.rankdata(x, method).ravel())
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(np.asarray(S.rankdata(x, method, axis=axis)),
                                      st.rankdata(x, method, axis=axis))
    assert got.dtype == (np.float32 if method == "average" else np.int32)
    np.testing.assert_array_equal(np.asarray(jit(lambda v: S.rankdata(v, method))(x)),
                                  np.asarray(got))


def test_rankdata_errors():
    with pytest.raises(ValueError, match="unknown method 'bad'"):
        S.rankdata(fnp.ones(3), "bad")
    with pytest.raises(NotImplementedError):
        S.rankdata(fnp.ones(3), nan_policy="raise")


def test_sem_matches_scipy():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, 5))
    with enable_x64():
        for axis in (0, 1, None):
            for ddof in (0, 1):
                np.testing.assert_allclose(np.asarray(S.sem(x, axis=axis, ddof=ddof)),
                                           st.sem(x, axis=axis, ddof=ddof), rtol=1e-13)
        assert S.sem(x, keepdims=True).shape == (1, 5)
        x[1, 2] = np.nan
        np.testing.assert_allclose(np.asarray(S.sem(x, nan_policy="omit")),
                                   st.sem(x, nan_policy="omit"), rtol=1e-13)
        assert np.isnan(np.asarray(S.sem(x))[2])
    assert S.sem(fnp.arange(4)).dtype == np.float32
    with pytest.raises(ValueError, match="raise is not supported"):
        S.sem(x, nan_policy="raise")


# --- docstrings ---

MODULES = ["functrax.scipy.stats"] + [f"functrax.scipy.stats.{m}" for m in (
    "norm", "multivariate_normal", "t", "beta", "gamma", "poisson", "bernoulli", "binom",
    "multinomial", "cauchy", "laplace", "logistic", "expon", "uniform", "dirichlet", "chi2",
    "kde", "ranks")]


@pytest.mark.parametrize("module", MODULES)
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0


def test_public_names_have_docstrings():
    for m in MODULES[1:]:
        mod = importlib.import_module(m)
        for name in getattr(mod, "__all__", ()):
            assert getattr(mod, name).__doc__, f"{m}.{name}"
    assert functrax.scipy.stats.gaussian_kde.__doc__
