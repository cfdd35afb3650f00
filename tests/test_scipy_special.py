"""functrax.scipy.special and the special-function lax primitives against scipy.special
(test-only reference): accuracy over whole domains and tails in float64 and float32,
special values (0, inf, NaN, negative arguments, poles), gradients at the edges, and JAX's
error types. The op-spec table (tests/opspec/scipy_special.py) drives eager / jit / vmap /
order-2 gradients / Triton on small inputs.

float64 is compared with a relative tolerance (``RTOL64``, tighter per function where the
algorithm allows); float32 in units in the last place of the float64 reference rounded to
float32 (values outside float32's normal range excluded). Where scipy itself is inaccurate
(far tails of gammainc / betainc / fresnel / hyp2f1, which were checked against
high-precision values while writing these tests) the domains stop short of those regions.
"""
from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
import scipy.special as sp

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.errors import ConcretizationTypeError
from functrax.scipy import special as S
from functrax.test_util import check_grads, enable_x64

RTOL64 = 1e-10
EPS32 = float(np.finfo(np.float32).eps)
RNG = np.random.default_rng(1234)


def u(lo, hi, n=1500):
    return RNG.uniform(lo, hi, n)


def logu(lo, hi, n=1500):
    return 10.0 ** RNG.uniform(lo, hi, n)


def ints(lo, hi, n=1500):
    return RNG.integers(lo, hi + 1, n).astype(np.float64)


def cplx(lo, hi, n=1500):
    return RNG.uniform(lo, hi, n) + 1j * RNG.uniform(lo, hi, n)


def _away(x, root, width):
    """``x`` without the points within ``width`` of ``root`` (where a function vanishes, its
    relative error is the absolute error over the distance to the zero)."""
    return x[np.abs(x - root) > width]


def _n6(n=1500):
    return np.arange(n) % 6


# name -> (functrax fn, scipy fn, args (float64 / complex128 numpy arrays), rtol64, ulp32)
ACCURACY = {
    "gammaln": (S.gammaln, sp.gammaln, (u(-30, 170),), 1e-12, 8),
    "gammaln_big": (S.gammaln, sp.gammaln, (logu(-10, 30),), 1e-13, 4),
    "gamma": (S.gamma, sp.gamma, (u(-20, 30),), 1e-12, None),
    "gammasgn": (S.gammasgn, sp.gammasgn, (u(-20, 30),), 0, 0),
    "loggamma": (S.loggamma, sp.loggamma, (logu(-5, 5),), 1e-12, 8),
    "loggamma_complex": (S.loggamma, sp.loggamma, (_away(_away(cplx(-30, 30), 1, 0.25), 2,
                                                         0.25),), 1e-12, 256),
    "betaln": (S.betaln, sp.betaln, (logu(-3, 3), logu(-3, 3)), 1e-11, None),
    "beta": (S.beta, sp.beta, (u(0.05, 40), u(0.05, 40)), 1e-12, None),
    "betainc": (S.betainc, sp.betainc, (logu(-2, 3), logu(-2, 3), u(0, 1)), 1e-11, None),
    "factorial": (S.factorial, sp.factorial, (u(0, 170),), 1e-12, None),
    "comb": (S.comb, sp.comb, (ints(0, 200), ints(0, 100)), 1e-11, None),
    "poch": (S.poch, sp.poch, (u(0.1, 30), u(-5, 10)), 1e-12, None),
    "multigammaln": (lambda a: S.multigammaln(a, 4), lambda a: sp.multigammaln(a, 4),
                     (u(1.6, 100),), 1e-13, 8),
    "digamma": (S.digamma, sp.digamma, (np.concatenate([u(-30, 0), logu(-5, 8)]),),
                1e-11, None),
    "polygamma": (lambda x: S.polygamma(fnp.asarray(_n6(), dtype=np.int32), x),
                  lambda x: sp.polygamma(_n6(), x), (logu(-3, 4),), 1e-12, 16),
    "polygamma_negative": (lambda x: S.polygamma(fnp.asarray(_n6() + 1, dtype=np.int32), x),
                           lambda x: sp.polygamma(_n6() + 1, x), (u(-20, -0.05),), 1e-10, None),
    "zeta": (S.zeta, sp.zeta, (1 + logu(-8, 2), logu(-3, 8)), 1e-13, 8),
    "gammainc": (S.gammainc, sp.gammainc, (logu(-3, 4), logu(-4, 4)), 1e-10, 64),
    "gammaincc": (S.gammaincc, sp.gammaincc, (logu(-3, 4), logu(-4, 4)), 1e-10, 64),
    "gammaincc_small_a": (S.gammaincc, sp.gammaincc, (logu(-300, -0.31), u(1e-6, 1)), 1e-12,
                          64),
    "erf": (S.erf, sp.erf, (u(-7, 7),), 1e-15, 1),
    "erfc": (S.erfc, sp.erfc, (u(-7, 27),), 1e-13, 1),  # scipy's tail: ~6e-14
    # float32: XLA's ErfInv32 polynomial, as JAX computes it (~12 ulp near +-1)
    "erfinv": (S.erfinv, sp.erfinv, (u(-1, 1),), 1e-13, 16),
    "erfcx": (S.erfcx, sp.erfcx, (np.concatenate([u(-26, 30), logu(-8, 150)]),), 1e-13, 8),
    "erfcx_complex": (S.erfcx, sp.erfcx, (cplx(-10, 10),), 1e-13, None),
    "dawsn": (S.dawsn, sp.dawsn, (np.concatenate([u(-30, 30), logu(-10, 15)]),), 1e-13, 8),
    "wofz": (S.wofz, sp.wofz, (cplx(-15, 15),), 1e-13, None),
    "wofz_real": (S.wofz, sp.wofz, (u(-30, 30),), 1e-14, None),
    "ndtr": (S.ndtr, sp.ndtr, (u(-38, 9),), 1e-13, None),
    "ndtri": (S.ndtri, sp.ndtri, (np.concatenate([u(0, 1), logu(-300, -1)]),), 1e-14, 8),
    "log_ndtr": (S.log_ndtr, sp.log_ndtr, (u(-19.9, 40),), 1e-13, None),
    "log_ndtr_far": (S.log_ndtr, sp.log_ndtr, (u(-1e5, -20),), 1e-10, None),
    "fresnel": (S.fresnel, sp.fresnel, (np.concatenate([u(-10, 10), logu(-8, 3)]),), 1e-13, 8),
    "owens_t": (S.owens_t, sp.owens_t, (u(-8, 8), u(-10, 10)), 1e-11, None),
    "xlogy": (S.xlogy, sp.xlogy, (u(-3, 3), logu(-5, 5)), 1e-15, 2),
    "xlog1py": (S.xlog1py, sp.xlog1py, (u(-3, 3), u(-1, 5)), 1e-15, 2),
    "entr": (S.entr, sp.entr, (u(-1, 5),), 1e-15, 2),
    "rel_entr": (S.rel_entr, sp.rel_entr, (u(-1, 5), u(-1, 5)), 1e-12, None),
    "kl_div": (S.kl_div, sp.kl_div, (u(0, 5), u(2, 5)), 1e-12, None),
    "logit": (S.logit, sp.logit, (u(0, 1),), 1e-13, None),
    "expit": (S.expit, sp.expit, (u(-700, 80),), 1e-15, 2),
    "boxcox": (S.boxcox, sp.boxcox, (logu(-3, 3), u(-2, 2)), 1e-13, 8),
    "boxcox1p": (S.boxcox1p, sp.boxcox1p, (u(-0.99, 100), u(-2, 2)), 1e-13, 8),
    "expi": (S.expi, sp.expi, (_away(np.concatenate([u(-700, 700), logu(-8, 2)]), 0.3725,
                                     0.05),), 1e-13, 8),  # (away from Ei's zero)
    "expn": (S.expn, sp.expn, (ints(0, 30), logu(-5, 2.8)), 1e-13, 32),
    "expn_large_n": (S.expn, sp.expn, (ints(5000, 9000, 300), logu(-2, 3, 300)), 1e-12, None),
    "exp1": (S.exp1, sp.exp1, (logu(-8, 2.8),), 1e-13, 8),
    "sici": (S.sici, sp.sici, (np.concatenate([u(-40, 40), logu(-8, 8)]),), 1e-12, None),
    "spence": (S.spence, sp.spence, (np.concatenate([u(0, 10), logu(-8, 8)]),), 1e-14, 16),
    "i0": (S.i0, sp.i0, (u(-700, 700),), 1e-14, 4),
    "i0e": (S.i0e, sp.i0e, (np.concatenate([u(-700, 700), logu(-8, 8)]),), 1e-15, 1),
    "i1": (S.i1, sp.i1, (u(-700, 700),), 1e-14, 4),
    "i1e": (S.i1e, sp.i1e, (np.concatenate([u(-700, 700), logu(-8, 8)]),), 1e-15, 1),
    "hyp1f1": (S.hyp1f1, sp.hyp1f1, (u(0.1, 10), u(0.1, 10), u(-30, 200)), 1e-11, None),
    "hyp2f1": (S.hyp2f1, sp.hyp2f1, (u(0.1, 4), u(0.1, 4), u(0.5, 8), u(-2, 0.8)), 1e-9, None),
}

# name -> atol: Ci oscillates through zero, kl_div cancels to zero where p == q
ABSOLUTE = {"sici": 1e-15, "kl_div": 1e-14}


def _np_dtype(x, wide):
    if np.iscomplexobj(x):
        return np.complex128 if wide else np.complex64
    return np.float64 if wide else np.float32


def _run(fn, args, wide):
    with enable_x64(wide):
        arrays = [fnp.asarray(np.asarray(a, _np_dtype(a, wide))) for a in args]
        out = functrax.jit(fn)(*arrays)
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def _ref(ref, args, wide):
    narrow = [np.asarray(a, _np_dtype(a, wide)) for a in args]
    wide_args = [np.asarray(a, _np_dtype(a, True)) for a in narrow]
    with np.errstate(all="ignore"):
        out = ref(*wide_args)
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("name", sorted(ACCURACY))
def test_float64_matches_scipy(name):
    fn, ref, args, rtol, _ = ACCURACY[name]
    for got, want in zip(_run(fn, args, True), _ref(ref, args, True)):
        assert got.dtype in (np.float64, np.complex128), got.dtype
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=name)
        atol = ABSOLUTE.get(name) or 1e-300  # (subnormal results: scipy flushes some to 0)
        np.testing.assert_allclose(got[finite], want[finite], rtol=rtol, atol=atol,
                                   err_msg=name)


F32_CASES = sorted(n for n, case in ACCURACY.items() if case[4] is not None)


@pytest.mark.parametrize("name", F32_CASES)
def test_float32_within_ulps_of_the_rounded_reference(name):
    fn, ref, args, _, ulps = ACCURACY[name]
    for got, want in zip(_run(fn, args, False), _ref(ref, args, False)):
        assert got.dtype in (np.float32, np.complex64), got.dtype
        want32 = want.astype(got.dtype)
        # (above max / 1e3, exp(|x|) i0e(x)-style formulas overflow before the value does)
        normal = np.isfinite(want32) & (np.abs(want) > np.finfo(np.float32).tiny) & (
            np.abs(want) < float(np.finfo(np.float32).max) / 1e3)
        wide = np.complex128 if np.iscomplexobj(got) else np.float64
        err = np.abs(got[normal].astype(wide) - want[normal]) / np.abs(want[normal])
        worst = err.max() / EPS32 if err.size else 0.0
        assert worst <= max(ulps, 0.5), f"{name}: {worst:.1f} ulp (allowed {ulps})"
        special = ~np.isfinite(want32)
        np.testing.assert_array_equal(np.isnan(got[special]), np.isnan(want32[special]))


# --- special values ---


def _f64(*xs):
    return [fnp.asarray(np.asarray(x, np.float64)) for x in xs]


SPECIAL_VALUES = [
    # (functrax fn, args, expected)
    (S.gammainc, (1.0, 0.0), 0.0), (S.gammainc, (1.0, np.inf), 1.0),
    (S.gammainc, (0.0, 0.5), 1.0), (S.gammainc, (0.0, 0.0), np.nan),
    (S.gammainc, (-1.0, 1.0), np.nan), (S.gammainc, (1.0, -1.0), np.nan),
    (S.gammainc, (np.nan, 1.0), np.nan), (S.gammaincc, (1.0, 0.0), 1.0),
    (S.gammaincc, (1.0, np.inf), 0.0), (S.gammaincc, (0.0, 0.5), 0.0),
    (S.betainc, (2.0, 3.0, 0.0), 0.0), (S.betainc, (2.0, 3.0, 1.0), 1.0),
    (S.betainc, (0.0, 3.0, 0.5), 1.0), (S.betainc, (2.0, 0.0, 0.5), 0.0),
    (S.betainc, (0.0, 0.0, 0.5), np.nan), (S.betainc, (2.0, 3.0, 1.5), np.nan),
    (S.betainc, (-1.0, 3.0, 0.5), np.nan),
    (S.zeta, (1.0, 2.0), np.inf), (S.zeta, (0.5, 2.0), np.nan), (S.zeta, (2.0, 0.0), np.inf),
    (S.zeta, (2.0, -3.0), np.inf), (S.zeta, (2.5, -1.5), np.nan),
    (S.zeta, (2.0, -1.5), sp.zeta(2.0, -1.5)), (S.zeta, (2.0, np.inf), 0.0),
    (S.gammaln, (0.0,), np.inf), (S.gammaln, (-2.0,), np.inf), (S.gammaln, (np.inf,), np.inf),
    (S.gamma, (-2.0,), np.nan), (S.gamma, (0.0,), np.inf), (S.gamma, (-0.0,), -np.inf),
    (S.gammasgn, (-0.0,), -1.0), (S.gammasgn, (-np.inf,), np.nan), (S.gammasgn, (np.inf,), 1.0),
    (S.loggamma, (-1.5,), np.nan), (S.digamma, (0.0,), np.nan), (S.digamma, (-3.0,), np.nan),
    (S.digamma, (np.inf,), np.inf),
    (S.factorial, (-1.0,), 0.0), (S.comb, (5.0, 7.0), 0.0), (S.comb, (-1.0, 1.0), 0.0),
    (S.comb, (5.0, 0.0), 1.0), (S.poch, (3.0, 0.0), 1.0),
    (S.erfcx, (np.inf,), 0.0), (S.erfcx, (-30.0,), np.inf), (S.erfcx, (0.0,), 1.0),
    (S.dawsn, (0.0,), 0.0), (S.dawsn, (np.inf,), 0.0),
    (S.ndtr, (np.inf,), 1.0), (S.ndtr, (-np.inf,), 0.0), (S.ndtri, (0.0,), -np.inf),
    (S.ndtri, (1.0,), np.inf), (S.ndtri, (1.5,), np.nan), (S.log_ndtr, (np.inf,), 0.0),
    (S.xlogy, (0.0, 0.0), 0.0), (S.xlogy, (0.0, np.inf), 0.0), (S.xlog1py, (0.0, -1.0), 0.0),
    (S.entr, (0.0,), 0.0), (S.entr, (-1.0,), -np.inf), (S.rel_entr, (0.0, 0.0), 0.0),
    (S.rel_entr, (1.0, 0.0), np.inf), (S.rel_entr, (-1.0, 1.0), np.inf),
    (S.kl_div, (0.0, 2.0), 2.0), (S.logit, (0.0,), -np.inf), (S.logit, (1.0,), np.inf),
    (S.boxcox, (0.0, 0.5), np.nan), (S.boxcox, (2.0, 0.0), np.log(2.0)),
    (S.boxcox1p, (-1.0, 0.5), np.nan), (S.boxcox1p, (1.0, 0.0), np.log(2.0)),
    (S.expi, (0.0,), -np.inf), (S.exp1, (0.0,), np.inf), (S.exp1, (-1.0,), np.nan),
    (S.expn, (3.0, 0.0), 0.5), (S.expn, (0.0, 2.0), np.exp(-2.0) / 2), (S.expn, (-1.0, 1.0),
                                                                        np.nan),
    (S.spence, (0.0,), np.pi ** 2 / 6), (S.spence, (1.0,), 0.0), (S.spence, (-1.0,), np.nan),
    (S.i0e, (np.inf,), 0.0), (S.i1e, (-np.inf,), 0.0), (S.i0, (0.0,), 1.0), (S.i1, (0.0,), 0.0),
    (S.hyp1f1, (0.0, 2.0, 3.0), 1.0), (S.hyp1f1, (2.0, 2.0, 3.0), np.exp(3.0)),
    (S.hyp1f1, (2.0, 0.0, 3.0), np.inf), (S.hyp1f1, (0.0, 0.0, 3.0), 1.0),
    (S.hyp2f1, (1.0, 1.0, 2.0, 0.0), 1.0), (S.hyp2f1, (1.0, 1.0, 2.0, 1.5), np.inf),
    (S.hyp2f1, (1.0, 1.0, -2.0, 0.5), np.inf),
    (S.hyp2f1, (0.5, 0.5, 3.0, 1.0), sp.hyp2f1(0.5, 0.5, 3.0, 1.0)),
    (S.hyp2f1, (-3.0, 2.0, 4.0, 0.7), sp.hyp2f1(-3.0, 2.0, 4.0, 0.7)),
]


@pytest.mark.parametrize("fn,args,want", SPECIAL_VALUES,
                         ids=[f"{f.__name__ if hasattr(f, '__name__') else f}{a}"
                              for f, a, _ in SPECIAL_VALUES])
def test_special_values(fn, args, want):
    with enable_x64():
        got = float(fn(*_f64(*args)))
    if np.isnan(want):
        assert np.isnan(got), got
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-300), (got, want)


def test_sici_and_fresnel_special_values():
    with enable_x64():
        si, ci = S.sici(fnp.asarray(np.array([0.0, np.inf, -np.inf, -1.0])))
        s, c = S.fresnel(fnp.asarray(np.array([0.0, np.inf, -np.inf])))
    np.testing.assert_array_equal(np.asarray(si)[:3], [0.0, np.pi / 2, -np.pi / 2])
    assert np.asarray(ci)[0] == -np.inf and np.asarray(ci)[1] == 0.0
    assert np.isnan(np.asarray(ci)[2])
    np.testing.assert_allclose(np.asarray(ci)[3], sp.sici(-1.0)[1], rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(s), [0.0, 0.5, -0.5])
    np.testing.assert_array_equal(np.asarray(c), [0.0, 0.5, -0.5])


def test_wofz_special_values_and_symmetry():
    with enable_x64():
        z = cplx(-5, 5, 200)
        w = np.asarray(S.wofz(fnp.asarray(z)))
        w_conj = np.asarray(S.wofz(fnp.asarray(-np.conj(z))))
        assert complex(S.wofz(fnp.asarray(0j))) == 1.0
        real = np.asarray(S.wofz(fnp.asarray(np.array([0.5, 6.0]))))
    np.testing.assert_allclose(w_conj, np.conj(w), rtol=1e-13)  # w(-conj z) = conj w(z)
    np.testing.assert_allclose(real.real, np.exp(-np.array([0.5, 6.0]) ** 2), rtol=1e-15)


# --- tails and identities where scipy is not the reference ---


def test_tails_by_identities():
    with enable_x64():
        x = fnp.asarray(np.array([8.5, 10.0, 20.0, 37.0]))
        np.testing.assert_allclose(np.asarray(S.log_ndtr(x)), -sp.ndtr(-np.asarray(x)),
                                   rtol=1e-13)
        a = fnp.asarray(np.array([1e3, 1e4, 1e5]))
        p = np.asarray(S.gammainc(a, a)) + np.asarray(S.gammaincc(a, a))
        np.testing.assert_allclose(p, 1.0, rtol=1e-14)
        # P(a, x) for large a near x = a: the normal approximation's leading term
        np.testing.assert_allclose(np.asarray(S.gammainc(a, a)), 0.5 + 1 / (3 * np.sqrt(
            2 * np.pi * np.asarray(a))), rtol=1e-5)
        # I_x(a, b) + I_{1-x}(b, a) = 1 with a, b large
        ab = fnp.asarray(np.array([2e3, 3e4]))
        s = np.asarray(S.betainc(ab, ab * 1.5, 0.4)) + np.asarray(
            S.betainc(ab * 1.5, ab, 0.6))
        np.testing.assert_allclose(s, 1.0, rtol=1e-13)
        # zeta(2, 1) = pi^2/6, zeta(x, q) - zeta(x, q + 1) = q^-x
        q = fnp.asarray(np.array([0.3, 2.0, 50.0]))
        d = np.asarray(S.zeta(3.5, q)) - np.asarray(S.zeta(3.5, q + 1))
        np.testing.assert_allclose(d, np.asarray(q) ** -3.5, rtol=1e-12)


# --- gradients at the edges ---


def test_xlogy_family_gradients_at_zero():
    gx = functrax.grad(S.xlogy, argnums=(0, 1))(0.0, 2.0)
    assert float(gx[0]) == pytest.approx(np.log(2.0)) and float(gx[1]) == 0.0
    gx1 = functrax.grad(S.xlog1py, argnums=(0, 1))(0.0, 1.0)
    assert float(gx1[0]) == pytest.approx(np.log(2.0)) and float(gx1[1]) == 0.0
    assert float(functrax.grad(S.entr)(0.5)) == pytest.approx(-(np.log(0.5) + 1))
    g = functrax.grad(S.rel_entr, argnums=(0, 1))(0.5, 0.25)
    np.testing.assert_allclose([float(g[0]), float(g[1])], [np.log(2.0) + 1, -2.0], rtol=1e-6)


def test_bessel_gradients_at_zero():
    assert float(functrax.grad(S.i1e)(0.0)) == 0.5
    assert float(functrax.grad(S.i0e)(0.0)) == 0.0
    with enable_x64():
        check_grads(S.i1e, (np.array([0.1, -0.3, 4.0]),), order=2)


def test_gammainc_derivative_in_a_matches_finite_differences():
    a, x = np.array([0.3, 1.5, 7.0, 40.0]), np.array([0.2, 2.0, 5.0, 45.0])
    h = 1e-6
    want = (sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)
    with enable_x64():
        got = functrax.vmap(functrax.grad(S.gammainc))(fnp.asarray(a), fnp.asarray(x))
        got_c = functrax.vmap(functrax.grad(S.gammaincc))(fnp.asarray(a), fnp.asarray(x))
        direct = lax.igamma_grad_a(fnp.asarray(a), fnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got_c), -want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(direct), want, rtol=1e-6)


def test_random_gamma_grad_is_the_implicit_derivative():
    a, x = np.array([0.3, 1.5, 7.0, 40.0]), np.array([0.2, 2.0, 5.0, 45.0])
    h = 1e-6
    dp_da = (sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)
    dp_dx = np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))
    with enable_x64():
        got = lax.random_gamma_grad(fnp.asarray(a), fnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), -dp_da / dp_dx, rtol=1e-6)


def test_digamma_derivative_is_polygamma_and_polygamma_chains():
    with enable_x64():
        x = np.array([0.7, 3.2, -1.4])
        d = functrax.vmap(functrax.grad(S.digamma))(fnp.asarray(x))
        np.testing.assert_allclose(np.asarray(d), sp.polygamma(1, x), rtol=1e-12)
        dd = functrax.vmap(functrax.grad(functrax.grad(lambda x: S.polygamma(1, x))))(
            fnp.asarray(x))
        np.testing.assert_allclose(np.asarray(dd), sp.polygamma(3, x), rtol=1e-11)
        jaxpr = str(functrax.make_jaxpr(functrax.grad(lax.digamma))(1.0))
    assert "polygamma" in jaxpr


def test_zeta_derivatives():
    with enable_x64():
        dx, dq = functrax.grad(S.zeta, argnums=(0, 1))(2.0, 1.0)
    # zeta'(2) (the Riemann zeta's derivative at 2); d/dq zeta(x, q) = -x zeta(x + 1, q)
    assert float(dx) == pytest.approx(-0.9375482543158437, rel=1e-10)
    assert float(dq) == pytest.approx(-2 * sp.zeta(3.0, 1.0), rel=1e-12)


def test_derivatives_that_raise_as_jax():
    with pytest.raises(ValueError, match="polygamma gradient with respect to m"):
        functrax.grad(lambda m: lax.polygamma(m, 2.0))(1.0)
    with pytest.raises(ValueError, match="Betainc gradient with respect to a and b"):
        functrax.grad(lambda a: S.betainc(a, 2.0, 0.5))(1.0)
    from functrax.errors import MissingRuleError
    with pytest.raises(MissingRuleError):
        functrax.grad(lambda a: lax.igamma_grad_a(a, 2.0))(1.0)


def test_log_ndtr_gradient_in_the_tails():
    with enable_x64():
        x = np.array([-50.0, -20.5, 0.0, 9.0])
        g = functrax.vmap(functrax.grad(S.log_ndtr))(fnp.asarray(x))
    # d/dx log ndtr(x) = pdf(x) / ndtr(x) (below -20 JAX's 3-term asymptotic series: 1e-8)
    want = np.exp(-x ** 2 / 2 - 0.5 * np.log(2 * np.pi) - sp.log_ndtr(x))
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-8)


# --- logsumexp, softmax and friends ---


def test_logsumexp_options():
    a = RNG.normal(size=(3, 4))
    b = RNG.uniform(-1, 2, size=(3, 4))
    w = RNG.random((3, 4)) < 0.7
    with enable_x64():
        A, B = fnp.asarray(a), fnp.asarray(b)
        np.testing.assert_allclose(np.asarray(S.logsumexp(A, axis=1, keepdims=True)),
                                   sp.logsumexp(a, axis=1, keepdims=True), rtol=1e-14)
        out, sign = S.logsumexp(A, axis=0, b=B, return_sign=True)
        want, want_sign = sp.logsumexp(a, axis=0, b=b, return_sign=True)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-13)
        np.testing.assert_array_equal(np.asarray(sign), want_sign)
        masked = S.logsumexp(A, axis=1, where=fnp.asarray(w))
        np.testing.assert_allclose(np.asarray(masked), [sp.logsumexp(r[m]) for r, m in zip(a, w)],
                                   rtol=1e-14)
        np.testing.assert_allclose(np.asarray(S.softmax(A)), sp.softmax(a), rtol=1e-14)
        np.testing.assert_allclose(np.asarray(S.log_softmax(A, axis=0)),
                                   sp.log_softmax(a, axis=0), rtol=1e-14)
    assert np.isnan(float(S.logsumexp(fnp.array([0.0, 0.0]), b=fnp.array([1.0, -2.0]))))


# --- bernoulli, bessel_jn, sph_harm_y ---


def test_bernoulli():
    with enable_x64():
        got = np.asarray(S.bernoulli(30))
    np.testing.assert_allclose(got, sp.bernoulli(30), rtol=1e-10)  # scipy's: recurrence
    np.testing.assert_array_equal(got[:9], [1, -1 / 2, 1 / 6, 0, -1 / 30, 0, 1 / 42, 0,
                                            -1 / 30])  # ours: exact, rounded once
    assert S.bernoulli(0).shape == (1,) and S.bernoulli(3).dtype == np.float32
    with pytest.raises(ValueError, match="non-negative"):
        S.bernoulli(-1)


def test_bessel_jn():
    z = np.array([0.0, 1e-3, 0.5, 3.0, 10.0, 25.0, -4.0])
    with enable_x64():
        got = np.asarray(S.bessel_jn(fnp.asarray(z), v=5, n_iter=60))
    want = np.stack([sp.jv(k, z) for k in range(6)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    got32 = np.asarray(S.bessel_jn(fnp.asarray(z.astype(np.float32)), v=5, n_iter=60))
    np.testing.assert_allclose(got32, want, rtol=2e-5, atol=2e-7)


def test_sph_harm_y():
    n = np.array([0, 1, 1, 2, 3, 4, 4, 7, 10])
    m = np.array([0, -1, 1, -2, 2, 0, -3, 5, -10])
    theta = RNG.uniform(0, np.pi, n.size)
    phi = RNG.uniform(0, 2 * np.pi, n.size)
    with enable_x64():
        got = np.asarray(S.sph_harm_y(fnp.asarray(n), fnp.asarray(m), fnp.asarray(theta),
                                      fnp.asarray(phi)))
        clipped = np.asarray(S.sph_harm_y(fnp.asarray(np.array([10])), fnp.asarray(
            np.array([2])), fnp.asarray(np.array([0.7])), fnp.asarray(np.array([0.3])),
            n_max=6))
    np.testing.assert_allclose(got, sp.sph_harm_y(n, m, theta, phi), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(clipped, sp.sph_harm_y(6, 2, 0.7, 0.3), rtol=1e-12)
    assert S.sph_harm_y(fnp.array([1]), fnp.array([0]), 0.5, fnp.array([0.0])).shape == (1,)
    with pytest.raises(NotImplementedError, match="diff_n"):
        S.sph_harm_y(n, m, theta, phi, diff_n=1)
    with pytest.raises(ConcretizationTypeError):
        functrax.jit(lambda n: S.sph_harm_y(n, n, fnp.array([0.5]), fnp.array([0.1])))(
            fnp.array([1]))


# --- dtypes and JAX's error types ---


def test_primitives_keep_dtypes_and_print_as_jax():
    for dt in (np.float16, "bfloat16", np.float32):
        x = fnp.asarray(np.array([0.5, 2.0])).astype(dt)
        for f in (lax.bessel_i0e, lax.bessel_i1e, lambda x: lax.igamma(x, x),
                  lambda x: lax.zeta(x + 1, x), lambda x: lax.betainc(x, x, x / 4)):
            assert f(x).dtype == x.dtype
    text = str(functrax.make_jaxpr(lambda a, x: lax.igamma(a, x) + lax.zeta(a, x))(1.0, 2.0))
    assert "igamma a b" in text and "zeta a b" in text
    text = str(functrax.make_jaxpr(lambda a, b, x: lax.betainc(a, b, x))(1.0, 2.0, 0.5))
    assert "regularized_incomplete_beta a b c" in text
    assert S.gammainc(2, 1).dtype == np.float32  # integers promote to the default float


def test_error_types():
    with pytest.raises(TypeError, match="x.dtype=int32 is not supported"):
        S.ndtr(fnp.array([1, 2]))
    with pytest.raises(TypeError, match="not supported"):
        S.ndtri(fnp.array([1, 0]))
    with pytest.raises(TypeError, match="not supported"):
        S.spence(fnp.array([1, 2]))
    with pytest.raises(TypeError, match="series_order must be a Python integer"):
        S.log_ndtr(1.0, series_order=2.0)
    with pytest.raises(ValueError, match="series_order must be <= 30"):
        S.log_ndtr(1.0, series_order=31)
    with pytest.raises(ValueError, match="series_order must be non-negative"):
        S.log_ndtr(1.0, series_order=-1)
    with pytest.raises(NotImplementedError, match="Riemann zeta"):
        S.zeta(2.0)
    with pytest.raises(NotImplementedError, match="exact=True"):
        S.factorial(3, exact=True)
    with pytest.raises(TypeError, match="polygamma: the order n must be an integer"):
        S.polygamma(1.0, 2.0)
    with pytest.raises(ValueError, match="complex"):
        S.dawsn(1.0 + 1j)
    with pytest.raises(ValueError, match="complex input not supported"):
        S.bessel_jn(fnp.array([1.0 + 1j]), v=1)
    with pytest.raises(ConcretizationTypeError):
        functrax.jit(lambda d: S.multigammaln(3.0, d))(2)
    with pytest.raises(TypeError, match="same dtypes"):
        lax.igamma(fnp.ones(2), fnp.ones(2, dtype=np.int32))
    with pytest.raises(TypeError, match="does not accept dtype int32"):
        lax.bessel_i0e(fnp.ones(2, dtype=np.int32))
    with pytest.raises(TypeError, match="incompatible shapes"):
        lax.betainc(fnp.ones(2), fnp.ones(3), fnp.ones(2))
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        S.gammaln([1.0, 2.0])


def test_transforms_compose():
    x = fnp.asarray(np.array([[0.5, 1.5], [2.5, 3.5]], np.float32))
    f = lambda x: S.gammainc(2.0, x) + S.i1e(x) * S.zeta(x + 1.5, x)  # noqa: E731
    np.testing.assert_allclose(np.asarray(functrax.jit(f)(x)), np.asarray(f(x)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(functrax.vmap(f)(x)), np.asarray(f(x)), rtol=1e-6)
    g = functrax.vmap(functrax.vmap(functrax.grad(f)))(x)
    assert np.all(np.isfinite(np.asarray(g)))


MODULES = ["functrax.scipy.special", "functrax.scipy.special_gamma",
           "functrax.scipy.special_error", "functrax.scipy.special_info",
           "functrax.scipy.special_integrals", "functrax.scipy.special_bessel",
           "functrax.scipy.special_hyper", "functrax.primitives.special",
           "functrax.transforms.special_rules"]


@pytest.mark.parametrize("module", MODULES)
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0, module
