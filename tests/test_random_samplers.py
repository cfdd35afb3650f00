"""functrax.random samplers beyond JAX's reference vectors: gamma, loggamma, beta, dirichlet,
chisquare, f, t, generalized_normal, ball, poisson, binomial, geometric, cauchy, lognormal,
pareto, weibull_min, rayleigh, maxwell, double_sided_maxwell, triangular, wald,
multivariate_normal, orthogonal.

No JAX vectors exist for these, so they are checked statistically with fixed keys:
- moments against closed forms, with tolerances of 6 standard errors of the sample size;
- KS statistics against closed-form (or independently computed) CDFs, and chi-square
  tests of the discrete samplers against their pmfs;
- support (positive, in [0, 1], integer valued), dtypes, shapes and parameter broadcasting;
- jit and vmap (over keys) equal eager / a Python loop, and traced jaxprs type-check;
- gamma's implicit reparameterization gradient against finite differences of an
  independent incomplete-gamma reference, and gradient means against d E[x] / d a;
- errors for bad keys, shapes, dtypes and parameters.
"""
from __future__ import annotations

import doctest
import math
import sys

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import random
from functrax.lax import random_gamma_grad
from functrax.test_util import enable_x64

N = 20000
K = random.PRNGKey(1234)
Z = 6.0  # tolerance in standard errors


# --- numpy references (independent of the implementation) ---


def _digamma(a):
    """psi(a) by recurrence up to a >= 8 and the asymptotic series."""
    a = float(a)
    acc = 0.0
    while a < 8:
        acc -= 1 / a
        a += 1
    inv2 = 1 / (a * a)
    return acc + math.log(a) - 0.5 / a - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 / 252))


def _trigamma(a):
    a = float(a)
    acc = 0.0
    while a < 8:
        acc += 1 / (a * a)
        a += 1
    inv2 = 1 / (a * a)
    return acc + 1 / a + inv2 / 2 + inv2 / a * (1 / 6 - inv2 * (1 / 30 - inv2 / 42))


def _igamma(a, x):
    """Regularized lower incomplete gamma P(a, x) by its power series (float64)."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    pos = x > 0
    xp = x[pos]
    term = np.ones_like(xp)
    total = np.ones_like(xp)
    for n in range(1, 2000):
        term = term * xp / (a + n)
        total = total + term
        if np.all(term < 1e-17 * total):
            break
    log_pref = a * np.log(xp) - xp - math.lgamma(a + 1)
    out[pos] = np.exp(log_pref) * total
    return out


def _gamma_sample_grad_ref(a, x, h=1e-5):
    """dx/da at fixed P(a, x): -(dP/da) / (dP/dx), dP/da by central differences."""
    dp_da = (_igamma(a + h, x) - _igamma(a - h, x)) / (2 * h)
    dp_dx = np.exp((a - 1) * np.log(x) - x - math.lgamma(a))
    return -dp_da / dp_dx


def _beta_int_cdf(a, b):
    """Beta CDF for integer a, b: a binomial tail."""
    n = a + b - 1
    return lambda x: sum(math.comb(n, j) * x ** j * (1 - x) ** (n - j) for j in range(a, n + 1))


_erf = np.vectorize(math.erf)


def _ks(samples, cdf):
    x = np.sort(np.asarray(samples, np.float64))
    c = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))


KS_CRIT = 1.95 / math.sqrt(N)  # 0.1% critical value


def _check_moments(name, x, mean, var):
    x = np.asarray(x, np.float64).ravel()
    n = len(x)
    assert np.isfinite(x).all(), name
    se_mean = math.sqrt(var / n)
    assert abs(x.mean() - mean) < Z * se_mean, (name, x.mean(), mean, se_mean)
    m4 = np.mean((x - x.mean()) ** 4)
    se_var = math.sqrt(max(m4 - x.var() ** 2, 1e-30) / n)
    assert abs(x.var() - var) < Z * se_var, (name, x.var(), var, se_var)


def _gamma_fn(z):
    return math.gamma(z)


WEIBULL_MEAN = 2 * _gamma_fn(1 + 1 / 1.5)
WEIBULL_VAR = 4 * (_gamma_fn(1 + 2 / 1.5) - _gamma_fn(1 + 1 / 1.5) ** 2)
GN_P = 1.5
F_N, F_D = 5.0, 20.0

MOMENTS = {
    "gamma_0.3": (lambda k: random.gamma(k, 0.3, (N,)), 0.3, 0.3),
    "gamma_1": (lambda k: random.gamma(k, 1.0, (N,)), 1.0, 1.0),
    "gamma_2.5": (lambda k: random.gamma(k, 2.5, (N,)), 2.5, 2.5),
    "gamma_30": (lambda k: random.gamma(k, 30.0, (N,)), 30.0, 30.0),
    "loggamma_0.05": (lambda k: random.loggamma(k, 0.05, (N,)), _digamma(0.05),
                      _trigamma(0.05)),
    "loggamma_4": (lambda k: random.loggamma(k, 4.0, (N,)), _digamma(4.0), _trigamma(4.0)),
    "beta_2_5": (lambda k: random.beta(k, 2.0, 5.0, (N,)), 2 / 7, 10 / (49 * 8)),
    "beta_0.2_0.3": (lambda k: random.beta(k, 0.2, 0.3, (N,)), 0.4, 0.06 / (0.25 * 1.5)),
    "chisquare_3": (lambda k: random.chisquare(k, 3.0, (N,)), 3.0, 6.0),
    "f_5_20": (lambda k: random.f(k, F_N, F_D, (N,)), F_D / (F_D - 2),
               2 * F_D ** 2 * (F_N + F_D - 2) / (F_N * (F_D - 2) ** 2 * (F_D - 4))),
    "t_10": (lambda k: random.t(k, 10.0, (N,)), 0.0, 10 / 8),
    "generalized_normal": (lambda k: random.generalized_normal(k, GN_P, (N,)), 0.0,
                           _gamma_fn(3 / GN_P) / _gamma_fn(1 / GN_P)),
    "poisson_3": (lambda k: random.poisson(k, 3.0, (N,)), 3.0, 3.0),
    "poisson_50": (lambda k: random.poisson(k, 50.0, (N,)), 50.0, 50.0),
    "binomial_20_0.3": (lambda k: random.binomial(k, 20, 0.3, (N,)), 6.0, 4.2),
    "binomial_200_0.3": (lambda k: random.binomial(k, 200, 0.3, (N,)), 60.0, 42.0),
    "binomial_200_0.8": (lambda k: random.binomial(k, 200, 0.8, (N,)), 160.0, 32.0),
    "geometric_0.3": (lambda k: random.geometric(k, 0.3, (N,)), 1 / 0.3, 0.7 / 0.09),
    "lognormal_0.5": (lambda k: random.lognormal(k, 0.5, (N,)), math.exp(0.125),
                      (math.exp(0.25) - 1) * math.exp(0.25)),
    "pareto_5": (lambda k: random.pareto(k, 5.0, (N,)), 5 / 4, 5 / (16 * 3)),
    "weibull_min": (lambda k: random.weibull_min(k, 2.0, 1.5, (N,)), WEIBULL_MEAN,
                    WEIBULL_VAR),
    "rayleigh_2": (lambda k: random.rayleigh(k, 2.0, (N,)), 2 * math.sqrt(math.pi / 2),
                   (4 - math.pi) / 2 * 4),
    "maxwell": (lambda k: random.maxwell(k, (N,)), 2 * math.sqrt(2 / math.pi),
                (3 * math.pi - 8) / math.pi),
    "double_sided_maxwell": (lambda k: random.double_sided_maxwell(k, 1.0, 2.0, (N,)), 1.0,
                             12.0),
    "triangular": (lambda k: random.triangular(k, 0.0, 1.0, 3.0, (N,)), 4 / 3, 7 / 18),
    "wald_2": (lambda k: random.wald(k, 2.0, (N,)), 2.0, 8.0),
}


@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_moments(name):
    sample, mean, var = MOMENTS[name]
    x = sample(K)
    assert x.shape == (N,)
    _check_moments(name, x, mean, var)


def test_dirichlet_moments_and_support():
    alpha = np.array([0.5, 2.0, 3.5])
    x = np.asarray(random.dirichlet(K, fnp.asarray(alpha, np.float32), (N // 2,)), np.float64)
    assert x.shape == (N // 2, 3) and (x >= 0).all()
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    s = alpha.sum()
    for i, a in enumerate(alpha):
        _check_moments(f"dirichlet[{i}]", x[:, i], a / s, a * (s - a) / (s * s * (s + 1)))


def test_ball_is_uniform_in_the_ball():
    x = np.asarray(random.ball(K, 3, 2, (N // 2,)), np.float64)
    assert x.shape == (N // 2, 3)
    r2 = (x ** 2).sum(-1)
    assert r2.max() <= 1.0 + 1e-6
    # |x|^3 is uniform on [0, 1] for a uniform point in the 3-ball
    assert _ks(r2 ** 1.5, lambda u: np.clip(u, 0, 1)) < 1.95 / math.sqrt(N // 2)
    x1 = np.asarray(random.ball(K, 4, 1.0, (1000,)))
    assert np.abs(x1).sum(-1).max() <= 1.0 + 1e-6


def test_support():
    a = np.asarray(random.gamma(K, 0.05, (N,)))
    assert (a >= 0).all() and a.dtype == np.float32
    b = np.asarray(random.beta(K, 0.1, 0.1, (N,)))
    assert ((b >= 0) & (b <= 1)).all()
    for name, x in (("poisson", random.poisson(K, 4.0, (100,))),
                    ("geometric", random.geometric(K, 0.4, (100,)))):
        assert x.dtype == np.int32, name
        assert (np.asarray(x) >= (1 if name == "geometric" else 0)).all(), name
    bn = np.asarray(random.binomial(K, 30, 0.6, (500,)))
    assert bn.dtype == np.float32 and (bn == np.floor(bn)).all()
    assert ((bn >= 0) & (bn <= 30)).all()
    assert (np.asarray(random.pareto(K, 2.0, (500,))) >= 1).all()
    assert (np.asarray(random.wald(K, 1.5, (500,))) > 0).all()
    tri = np.asarray(random.triangular(K, -1.0, 0.0, 2.0, (500,)))
    assert ((tri >= -1) & (tri <= 2)).all()


def test_edge_parameters():
    np.testing.assert_array_equal(np.asarray(random.poisson(K, 0.0, (5,))), 0)
    x = np.asarray(random.binomial(K, fnp.array([np.nan, -1.0, np.inf, 10.0, 10.0, 7.0]),
                                   fnp.array([0.5, 0.5, 0.5, np.nan, 1.0, 0.0])))
    assert np.isnan(x[:2]).all() and x[2] == np.inf and np.isnan(x[3])
    assert x[4] == 10 and x[5] == 0
    assert random.gamma(K, fnp.ones((0, 3))).shape == (0, 3)


# --- distributions: KS and chi-square ---

_sqrt2 = math.sqrt(2)
CDFS = {
    "gamma_0.3": (lambda k: random.gamma(k, 0.3, (N,)), lambda x: _igamma(0.3, x)),
    "gamma_3": (lambda k: random.gamma(k, 3.0, (N,)),
                lambda x: 1 - np.exp(-x) * (1 + x + x * x / 2)),
    "beta_2_5": (lambda k: random.beta(k, 2.0, 5.0, (N,)), _beta_int_cdf(2, 5)),
    "chisquare_4": (lambda k: random.chisquare(k, 4.0, (N,)),
                    lambda x: 1 - np.exp(-x / 2) * (1 + x / 2)),
    "cauchy": (lambda k: random.cauchy(k, (N,)), lambda x: 0.5 + np.arctan(x) / math.pi),
    "pareto_3": (lambda k: random.pareto(k, 3.0, (N,)), lambda x: 1 - x ** -3.0),
    "rayleigh_2": (lambda k: random.rayleigh(k, 2.0, (N,)), lambda x: 1 - np.exp(-x * x / 8)),
    "weibull": (lambda k: random.weibull_min(k, 2.0, 1.5, (N,)),
                lambda x: 1 - np.exp(-(x / 2) ** 1.5)),
    "maxwell": (lambda k: random.maxwell(k, (N,)),
                lambda x: _erf(x / _sqrt2) - np.sqrt(2 / np.pi) * x * np.exp(-x * x / 2)),
    "triangular": (lambda k: random.triangular(k, 0.0, 1.0, 3.0, (N,)),
                   lambda x: np.where(x < 1, x * x / 3, 1 - (3 - x) ** 2 / 6)),
    "lognormal": (lambda k: random.lognormal(k, 0.5, (N,)),
                  lambda x: 0.5 * (1 + _erf(np.log(x) / (0.5 * _sqrt2)))),
    "t_1": (lambda k: random.t(k, 1.0, (N,)), lambda x: 0.5 + np.arctan(x) / math.pi),
}


@pytest.mark.parametrize("name", sorted(CDFS))
def test_ks(name):
    sample, cdf = CDFS[name]
    x = np.asarray(sample(random.PRNGKey(77)))
    assert np.isfinite(x).all()
    stat = _ks(x, cdf)
    assert stat < KS_CRIT, f"{name}: KS {stat:.4f} >= {KS_CRIT:.4f}"
    assert _ks(x * 1.05 + 0.02, cdf) > KS_CRIT  # the test has power


def _poisson_pmf(lam):
    return lambda k: np.exp(k * math.log(lam) - lam - np.array([math.lgamma(v + 1) for v in k]))


def _binom_pmf(n, p):
    return lambda k: np.array([math.comb(n, int(v)) * p ** v * (1 - p) ** (n - v) for v in k])


def _chi2_test(name, x, pmf, support):
    x = np.asarray(x).astype(np.int64)
    probs = pmf(np.asarray(support, np.float64))
    counts = np.array([(x == v).sum() for v in support], np.float64)
    # pool bins with fewer than 5 expected counts; the rest of the mass is one more bin
    expected = probs * len(x)
    keep = expected >= 5
    c = list(counts[keep]) + [len(x) - counts[keep].sum()]
    e = list(expected[keep]) + [len(x) - expected[keep].sum()]
    c, e = np.array(c), np.array(e)
    if e[-1] < 5:
        c[-2] += c[-1]
        e[-2] += e[-1]
        c, e = c[:-1], e[:-1]
    stat = float(np.sum((c - e) ** 2 / e))
    df = len(c) - 1
    assert stat < df + Z * math.sqrt(2 * df), (name, stat, df)


def _uniform_pmf(lo, hi):
    return lambda k: np.full(len(k), 1.0 / (hi - lo))


DISCRETE = {
    # narrow integer types: the modular reduction must not wrap (a 2x bias if it does)
    "randint_uint8_0_200": (lambda k: random.randint(k, (N,), 0, 200, np.uint8),
                            _uniform_pmf(0, 200), range(0, 200)),
    "randint_int8_-100_100": (lambda k: random.randint(k, (N,), -100, 100, np.int8),
                              _uniform_pmf(-100, 100), range(-100, 100)),
    "randint_int16_0_250": (lambda k: random.randint(k, (N,), 0, 250, np.int16),
                            _uniform_pmf(0, 250), range(0, 250)),
    "randint_int32_0_200": (lambda k: random.randint(k, (N,), 0, 200),
                            _uniform_pmf(0, 200), range(0, 200)),
    "poisson_3": (lambda k: random.poisson(k, 3.0, (N,)), _poisson_pmf(3.0), range(0, 20)),
    "poisson_30": (lambda k: random.poisson(k, 30.0, (N,)), _poisson_pmf(30.0), range(5, 70)),
    "binomial_20_0.3": (lambda k: random.binomial(k, 20, 0.3, (N,)), _binom_pmf(20, 0.3),
                        range(0, 21)),
    "binomial_200_0.3": (lambda k: random.binomial(k, 200, 0.3, (N,)), _binom_pmf(200, 0.3),
                         range(20, 110)),
    "binomial_200_0.8": (lambda k: random.binomial(k, 200, 0.8, (N,)), _binom_pmf(200, 0.8),
                         range(120, 201)),
    "geometric_0.3": (lambda k: random.geometric(k, 0.3, (N,)),
                      lambda k: 0.3 * 0.7 ** (k - 1), range(1, 40)),
}


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_chi_square(name):
    sample, pmf, support = DISCRETE[name]
    _chi2_test(name, sample(random.PRNGKey(5)), pmf, support)


def test_chi_square_has_power():
    x = random.poisson(random.PRNGKey(5), 3.3, (N,))
    with pytest.raises(AssertionError):
        _chi2_test("shifted", x, _poisson_pmf(3.0), range(0, 20))


# --- shapes, dtypes, broadcasting ---


def test_default_shapes_and_broadcasting():
    a = fnp.array([[0.5], [2.0]])
    assert random.gamma(K, a).shape == (2, 1)
    assert random.gamma(K, a, (2, 3)).shape == (2, 3)
    assert random.beta(K, fnp.ones(3), fnp.ones((2, 1))).shape == (2, 3)
    assert random.dirichlet(K, fnp.ones((2, 4))).shape == (2, 4)
    assert random.dirichlet(K, fnp.ones(4), (5,)).shape == (5, 4)
    assert random.binomial(K, fnp.array([3.0, 40.0]), fnp.ones((2, 1)) * 0.5).shape == (2, 2)
    assert random.t(K, fnp.ones(3) * 4).shape == (3,)
    assert random.triangular(K, 0.0, fnp.ones(3) * 0.5, 1.0).shape == (3,)
    assert random.weibull_min(K, fnp.ones(3), 2.0, (2, 3)).shape == (2, 3)
    assert random.ball(K, 5, shape=(2, 3)).shape == (2, 3, 5)
    # per-element parameters are used per element
    g = np.asarray(random.gamma(K, fnp.array([1.0, 100.0]), (N // 4, 2)))
    assert abs(g[:, 0].mean() - 1) < 0.1 and abs(g[:, 1].mean() - 100) < 1.0
    p = np.asarray(random.poisson(K, fnp.array([0.5, 500.0]), (N // 4, 2)))
    assert abs(p[:, 0].mean() - 0.5) < 0.05 and abs(p[:, 1].mean() - 500) < 2.5


def test_dtypes():
    assert random.gamma(K, 2.0, (3,), fnp.float16).dtype == np.float16
    h = np.asarray(random.gamma(K, 2.0, (2000,), fnp.float16), np.float64)
    assert np.isfinite(h).all() and abs(h.mean() - 2) < 0.2
    assert random.poisson(K, 3.0, (3,), fnp.int16).dtype == np.int16
    assert random.geometric(K, 0.5, (3,), fnp.uint8).dtype == np.uint8
    assert random.binomial(K, 5, 0.5, (3,), fnp.float16).dtype == np.float16
    assert random.lognormal(K, 1.0, (3,), fnp.complex64).dtype == np.complex64
    with enable_x64():
        for fn in (lambda: random.gamma(K, 2.0, (3,)), lambda: random.beta(K, 2.0, 3.0, (3,)),
                   lambda: random.dirichlet(K, fnp.ones(3)), lambda: random.t(K, 3.0, (2,)),
                   lambda: random.binomial(K, 10, 0.5, (2,)), lambda: random.wald(K, 1.0)):
            assert fn().dtype == np.float64
        assert random.poisson(K, 3.0, (3,)).dtype == np.int64
        g = np.asarray(random.gamma(K, 2.5, (N // 2,)))
        _check_moments("gamma_f64", g, 2.5, 2.5)


# --- jit, vmap, tracing ---

SAMPLERS = {
    "gamma": lambda k: random.gamma(k, fnp.array([0.3, 1.0, 4.0])),
    "loggamma": lambda k: random.loggamma(k, 0.1, (3,)),
    "beta": lambda k: random.beta(k, 0.5, fnp.array([0.5, 2.0])),
    "dirichlet": lambda k: random.dirichlet(k, fnp.array([0.2, 1.0, 3.0])),
    "chisquare": lambda k: random.chisquare(k, 3.0, (3,)),
    "f": lambda k: random.f(k, 3.0, 6.0, (3,)),
    "t": lambda k: random.t(k, 4.0, (3,)),
    "generalized_normal": lambda k: random.generalized_normal(k, 1.5, (3,)),
    "ball": lambda k: random.ball(k, 3, shape=(2,)),
    "poisson": lambda k: random.poisson(k, fnp.array([0.5, 4.0, 40.0])),
    "binomial": lambda k: random.binomial(k, fnp.array([4.0, 100.0, 100.0]),
                                          fnp.array([0.3, 0.3, 0.9])),
    "geometric": lambda k: random.geometric(k, 0.2, (3,)),
    "cauchy": lambda k: random.cauchy(k, (3,)),
    "lognormal": lambda k: random.lognormal(k, 0.7, (3,)),
    "pareto": lambda k: random.pareto(k, 2.0, (3,)),
    "weibull_min": lambda k: random.weibull_min(k, 1.0, 2.0, (3,)),
    "rayleigh": lambda k: random.rayleigh(k, 1.0, (3,)),
    "maxwell": lambda k: random.maxwell(k, (3,)),
    "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 0.0, 1.0, (3,)),
    "triangular": lambda k: random.triangular(k, 0.0, 0.3, 1.0, (3,)),
    "wald": lambda k: random.wald(k, 1.0, (3,)),
    "multivariate_normal": lambda k: random.multivariate_normal(
        k, fnp.zeros(2), fnp.array([[2.0, 0.5], [0.5, 1.0]]), (3,)),
    "multivariate_normal_eigh": lambda k: random.multivariate_normal(
        k, fnp.ones(2), fnp.array([[2.0, 0.5], [0.5, 1.0]]), method="eigh"),
    "orthogonal": lambda k: random.orthogonal(k, 3, (2,)),
}


# matrix products (einsum, QR) may round differently when batched: equal within 2 ulps
APPROX = {"multivariate_normal", "multivariate_normal_eigh", "orthogonal"}


def _same(a, b, msg):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, msg
    if msg in APPROX:
        np.testing.assert_allclose(a, b, rtol=2.5e-7, atol=1e-7, err_msg=msg)
    else:
        np.testing.assert_array_equal(a, b, err_msg=msg)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_jit_and_vmap_equal_eager(name):
    f = SAMPLERS[name]
    key = random.PRNGKey(7)
    eager = f(key)
    _same(functrax.jit(f)(key), eager, name)
    closed = functrax.make_jaxpr(f)(key)
    functrax.check_jaxpr(closed)
    _same(functrax.core.eval_jaxpr(closed.jaxpr, closed.consts, key)[0], eager, name)
    keys = random.split(random.PRNGKey(3), 3)
    want = np.stack([np.asarray(f(k)) for k in keys])
    _same(functrax.vmap(f)(keys), want, name)
    _same(functrax.jit(functrax.vmap(f))(keys), want, name)


def test_vmap_over_parameters():
    alphas = fnp.array([0.5, 2.0, 7.0])
    got = functrax.vmap(lambda a: random.gamma(K, a, (4,)))(alphas)
    want = np.stack([np.asarray(random.gamma(K, a, (4,))) for a in alphas])
    _same(got, want, "gamma over a")
    lams = fnp.array([1.0, 25.0])
    got = functrax.vmap(lambda lam: random.poisson(K, lam, (5,)))(lams)
    want = np.stack([np.asarray(random.poisson(K, lam, (5,))) for lam in lams])
    _same(got, want, "poisson over lam")


# --- samplers built on decompositions ---

COV = np.array([[2.0, 0.6, 0.2], [0.6, 1.0, 0.3], [0.2, 0.3, 0.5]])
MEAN = np.array([1.0, -1.0, 0.5])


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_moments(method):
    n = N // 2
    x = np.asarray(random.multivariate_normal(K, fnp.asarray(MEAN, np.float32),
                                              fnp.asarray(COV, np.float32), (n,),
                                              method=method), np.float64)
    assert x.shape == (n, 3)
    se_mean = np.sqrt(np.diag(COV) / n)
    assert (np.abs(x.mean(0) - MEAN) < Z * se_mean).all(), x.mean(0)
    var = np.diag(COV)
    se_cov = np.sqrt((np.outer(var, var) + COV ** 2) / n)
    assert (np.abs(np.cov(x.T) - COV) < Z * se_cov).all(), np.cov(x.T)


def test_multivariate_normal_shapes_and_errors():
    covs = fnp.stack([fnp.eye(2), 2 * fnp.eye(2)])
    assert random.multivariate_normal(K, fnp.zeros(2), covs).shape == (2, 2)
    assert random.multivariate_normal(K, fnp.zeros((4, 1, 2)), covs).shape == (4, 2, 2)
    assert random.multivariate_normal(K, fnp.zeros(2), covs, (3, 2)).shape == (3, 2, 2)
    with enable_x64():
        x = random.multivariate_normal(K, np.zeros(2), np.eye(2))
        assert x.dtype == np.float64
    with pytest.raises(ValueError, match="method must be one of"):
        random.multivariate_normal(K, fnp.zeros(2), fnp.eye(2), method="lu")
    with pytest.raises(ValueError, match=r"cov.shape == \(..., n, n\) for n=3"):
        random.multivariate_normal(K, fnp.zeros(3), fnp.eye(2))
    with pytest.raises(ValueError, match="requires mean.ndim >= 1"):
        random.multivariate_normal(K, 0.0, fnp.eye(2))
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.multivariate_normal(K, fnp.zeros(2), covs, (3,))
    with pytest.raises(ValueError, match="`multivariate_normal` must be a float dtype"):
        random.multivariate_normal(K, fnp.zeros(2), fnp.eye(2), dtype=np.int32)


def test_orthogonal():
    q = np.asarray(random.orthogonal(K, 3, (2000,)), np.float64)
    assert q.shape == (2000, 3, 3)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(3), q.shape),
                               atol=1e-5)
    # Haar: q[0, 0]^2 ~ Beta(1/2, 1) in O(3) (mean 1/3), both determinant signs equally
    _check_moments("orthogonal q00^2", q[:, 0, 0] ** 2, 1 / 3, 0.5 / (2.25 * 2.5))
    det = np.linalg.det(q)
    np.testing.assert_allclose(np.abs(det), 1, atol=1e-5)
    _check_moments("orthogonal det", det, 0.0, 1.0)
    wide = np.asarray(random.orthogonal(K, 2, m=4))
    assert wide.shape == (2, 4)
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-5)
    u = np.asarray(random.orthogonal(K, 3, dtype=fnp.complex64))
    assert u.dtype == np.complex64
    np.testing.assert_allclose(u @ u.conj().T, np.eye(3), atol=1e-5)
    with pytest.raises(TypeError, match="orthogonal: n must be a concrete integer"):
        functrax.jit(lambda n: random.orthogonal(K, n))(3)


# --- gradients (implicit reparameterization) ---


def test_random_gamma_grad_matches_reference():
    a = np.array([0.1, 0.5, 1.0, 1.0, 2.5, 2.5, 10.0, 10.0, 40.0, 3.0])
    x = np.array([0.05, 0.3, 1.0, 3.0, 1.0, 6.0, 8.0, 14.0, 33.0, 0.7])
    got = np.asarray(random_gamma_grad(a.astype(np.float32), x.astype(np.float32)))
    want = np.array([_gamma_sample_grad_ref(ai, np.array([xi]))[0] for ai, xi in zip(a, x)])
    np.testing.assert_allclose(got, want, rtol=2e-3)
    with enable_x64():
        got64 = np.asarray(random_gamma_grad(a, x))
        np.testing.assert_allclose(got64, want, rtol=1e-6)
    edge = np.asarray(random_gamma_grad(np.float32([1.0, -1.0, 2.0, np.nan]),
                                        np.float32([0.0, 1.0, -1.0, 1.0])))
    assert edge[0] == 0 and np.isnan(edge[1:]).all()


def test_gamma_grad_is_the_implicit_gradient():
    a = fnp.array([0.3, 1.0, 2.5, 12.0])
    x = random.gamma(K, a)
    g = functrax.grad(lambda a: random.gamma(K, a).sum())(a)
    np.testing.assert_allclose(np.asarray(g), np.asarray(random_gamma_grad(a, x)), rtol=1e-6)
    want = np.array([_gamma_sample_grad_ref(float(ai), np.array([float(xi)]))[0]
                     for ai, xi in zip(np.asarray(a), np.asarray(x))])
    np.testing.assert_allclose(np.asarray(g), want, rtol=3e-3)
    # loggamma: d log(x) / da = (dx/da) / x
    lg = functrax.grad(lambda a: random.loggamma(K, a).sum())(a)
    xl = np.exp(np.asarray(random.loggamma(K, a), np.float64))
    want_l = np.array([_gamma_sample_grad_ref(float(ai), np.array([xi]))[0] / xi
                       for ai, xi in zip(np.asarray(a), xl)])
    np.testing.assert_allclose(np.asarray(lg), want_l, rtol=3e-3)


def _mean_and_se(v):
    v = np.asarray(v, np.float64).ravel()
    return v.mean(), v.std() / math.sqrt(len(v))


def test_gradient_means_match_derivatives_of_the_mean():
    n = N // 2
    # per-element gradients: the gradient of the sum in an array of parameters
    # E[x] = a for Gamma(a): E[dx/da] = 1
    a = fnp.concatenate([fnp.full((n,), 0.4), fnp.full((n,), 3.0)])
    g = np.asarray(functrax.grad(lambda a: random.gamma(K, a).sum())(a))
    for part in (g[:n], g[n:]):
        m, se = _mean_and_se(part)
        assert abs(m - 1) < Z * se, (m, se)
    # E[log x] = digamma(a): E[d log x / da] = trigamma(a)
    gl = functrax.grad(lambda a: random.loggamma(K, a).sum())(fnp.full((n,), 0.7))
    m, se = _mean_and_se(gl)
    assert abs(m - _trigamma(0.7)) < Z * se, (m, se)
    # Beta(a, b): d E[x] / da = b / (a + b)^2
    ga = functrax.grad(lambda a: random.beta(K, a, 3.0).sum())(fnp.full((n,), 2.0))
    m, se = _mean_and_se(ga)
    assert abs(m - 3 / 25) < Z * se, (m, se)


def test_gradient_against_finite_differences_of_the_mean():
    # common random numbers: the same key at a +- h
    h, n = 1e-2, N // 2
    for fn in (lambda a: random.gamma(K, a, (n,)).mean(),
               lambda a: random.beta(K, a, 2.0, (n,)).mean(),
               lambda a: random.chisquare(K, a, (n,)).mean()):
        fd = (float(fn(1.7 + h)) - float(fn(1.7 - h))) / (2 * h)
        g = float(functrax.grad(fn)(1.7))
        assert abs(fd - g) < 0.05 * max(1.0, abs(g)), (fd, g)


def test_gradients_compose():
    f = lambda a, k: random.gamma(k, a, (3,)).sum()  # noqa: E731
    g = functrax.grad(f)(2.0, K)
    assert np.isfinite(float(g))
    _same(functrax.jit(functrax.grad(f))(2.0, K), g, "jit(grad)")
    keys = random.split(K, 3)
    want = np.stack([np.asarray(functrax.grad(f)(2.0, k)) for k in keys])
    _same(functrax.vmap(functrax.grad(f), (None, 0))(2.0, keys), want, "vmap(grad)")
    # a dirichlet sums to one: the gradient of the sum is zero
    gd = functrax.grad(lambda al: random.dirichlet(K, al).sum())(fnp.array([0.5, 1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(gd), 0, atol=1e-5)
    for fn in (lambda df: random.t(K, df, (4,)).sum(), lambda df: random.f(K, df, 5.0, (4,)).sum(),
               lambda p: random.generalized_normal(K, p, (4,)).sum()):
        assert np.isfinite(float(functrax.grad(fn)(3.0)))
    closed = functrax.make_jaxpr(functrax.grad(lambda a: random.beta(K, a, 2.0, (2,)).sum()))(
        1.5)
    functrax.check_jaxpr(closed)


# --- errors ---


def test_errors():
    with pytest.raises(ValueError, match="`gamma` must be a float dtype, got int32"):
        random.gamma(K, 1.0, (2,), np.int32)
    with pytest.raises(ValueError, match="`beta` must be a float dtype"):
        random.beta(K, 1.0, 1.0, (2,), np.int32)
    with pytest.raises(ValueError, match="`poisson` must be an int dtype, got float32"):
        random.poisson(K, 1.0, (2,), np.float32)
    with pytest.raises(ValueError, match="`geometric` must be an int dtype"):
        random.geometric(K, 0.5, (2,), np.float32)
    with pytest.raises(ValueError, match="`binomial` must be a float dtype"):
        random.binomial(K, 5, 0.5, (2,), np.int32)
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.gamma(K, fnp.ones(3), (2,))
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.poisson(K, fnp.ones(3), (3, 2))
    with pytest.raises(ValueError, match="dirichlet requires alpha.ndim >= 1"):
        random.dirichlet(K, 1.0)
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.dirichlet(K, fnp.ones((2, 3)), (4,))
    with pytest.raises(ValueError, match="gamma accepts a single key"):
        random.gamma(random.split(K, 2), 1.0)
    with pytest.raises(TypeError, match="unexpected PRNG key type"):
        random.beta(0, 1.0, 1.0)
    with pytest.raises(TypeError, match="ball: the dimension d must be"):
        random.ball(K, 2.5)
    with pytest.raises(TypeError, match="ball: the dimension d must be a concrete integer"):
        functrax.jit(lambda d: random.ball(K, d))(3)
    with pytest.raises(TypeError, match="shape must be a sequence"):
        random.cauchy(K, 3)


def test_doctests():
    for mod in ("functrax.random.gamma_samplers", "functrax.random.transformed_samplers",
                "functrax.random.discrete_samplers", "functrax.random.linalg_samplers",
                "functrax.random"):
        result = doctest.testmod(sys.modules[mod])
        assert result.failed == 0, mod
