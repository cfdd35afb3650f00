"""Op specs: ``functrax.scipy.special`` and the special-function ``lax`` primitives.

References are ``scipy.special`` (test-only), evaluated in float64 and rounded to the input
dtype; the derivative primitives (``igamma_grad_a``, ``random_gamma_grad``) are checked
against central differences of scipy's ``gammainc``. Domains keep clear of poles, branch
points and the regions where float32 loses accuracy by construction (a value's own
conditioning); ``tests/test_scipy_special.py`` covers the whole domains, tails and special
values in float32 and float64.
"""
import numpy as np
import scipy.special as sp

from functrax import lax
from functrax.scipy import special as S
from tests.opspec.lax_ops import away_from_ints, complex_uniform
from tests.opspec.spec import F32, I32, OpSpec, nonzero, positive, uniform

C64 = np.dtype(np.complex64)
UN = (((3,),), ((2, 3),))
BIN = (((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), ()))
TER = (((3,), (3,), (3,)), ((2, 3), (2, 3), ()))


def in_f64(fn):
    """``fn`` on float64 (complex128) copies of the arguments, each output cast back to the
    first floating argument's dtype."""
    def ref(*args, **kw):
        wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
                if a.dtype.kind in "fc" else a for a in args]
        out = fn(*wide, **kw)
        dt = next(a.dtype for a in args if a.dtype.kind in "fc")
        if isinstance(out, tuple):
            return tuple(np.asarray(o).astype(_like(o, dt)) for o in out)
        return np.asarray(out).astype(_like(out, dt))
    return ref


def _like(out, dt):
    if np.iscomplexobj(out) and np.dtype(dt).kind != "c":
        return np.complex64 if dt == np.float32 else np.complex128
    return dt


def integers(lo, hi):
    def gen(rng, shape, dtype):
        return rng.randint(lo, hi + 1, size=shape).astype(dtype)
    return gen


def _grad_a_ref(a, x, h=1e-6):
    return (sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)


def _random_gamma_grad_ref(a, x):
    dpdx = np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))
    return -_grad_a_ref(a, x) / dpdx


def _spec(name, fn, ref, prims=(), shapes=UN, **kw):
    return OpSpec("special_" + name, fn, in_f64(ref), shapes=shapes, primitives=prims, **kw)


def _lax(name, fn, ref, prims, shapes=BIN, **kw):
    return OpSpec("lax_" + name, fn, in_f64(ref), shapes=shapes, primitives=prims, **kw)


_N3 = np.array([2, 3, 1])
_M3 = np.array([1, -2, 0])

GAMMA = [
    _spec("gammaln", S.gammaln, sp.gammaln, ("lgamma",), domain=away_from_ints()),
    _spec("gamma", S.gamma, sp.gamma, ("lgamma",), domain=away_from_ints(-3.9, 4.0),
          rtol=2e-5),
    _spec("gammasgn", S.gammasgn, sp.gammasgn, domain=away_from_ints()),
    _spec("loggamma", S.loggamma, sp.loggamma, ("lgamma",), domain=positive(0.1, 8.0)),
    _spec("loggamma_complex", S.loggamma, sp.loggamma, dtypes=(C64,),
          domain=complex_uniform(0.3, 4.0), atol=1e-5, rtol=1e-4),
    _spec("betaln", S.betaln, sp.betaln, ("lgamma",), shapes=BIN, domain=positive(0.5, 20.0),
          atol=1e-5, rtol=1e-4),
    _spec("beta", S.beta, sp.beta, ("lgamma",), shapes=BIN, domain=positive(0.5, 5.0),
          rtol=1e-4),
    _spec("betainc", S.betainc, sp.betainc, ("regularized_incomplete_beta",), shapes=TER,
          domain=(positive(0.5, 5.0), positive(0.5, 5.0), uniform(0.05, 0.95)), rtol=1e-4),
    _spec("betainc_x", lambda x: S.betainc(2.5, 3.5, x), lambda x: sp.betainc(2.5, 3.5, x),
          ("regularized_incomplete_beta",), domain=uniform(0.05, 0.95), rtol=1e-4),
    _spec("factorial", S.factorial, sp.factorial, ("lgamma",), domain=positive(0.1, 6.0),
          rtol=1e-4),
    _spec("comb", S.comb, sp.comb, ("lgamma",), shapes=BIN[:2],
          domain=(uniform(5.0, 10.0), uniform(0.5, 4.0)), rtol=1e-4),
    _spec("comb_repetition", lambda n, k: S.comb(n, k, repetition=True),
          lambda n, k: sp.comb(n, k, repetition=True), ("lgamma",), shapes=BIN[:2],
          domain=(uniform(5.0, 10.0), uniform(0.5, 4.0)), rtol=1e-4),
    _spec("poch", S.poch, sp.poch, ("lgamma",), shapes=BIN,
          domain=(positive(0.5, 5.0), uniform(-0.4, 3.0)), rtol=1e-4),
    _spec("multigammaln", lambda a: S.multigammaln(a, 3), lambda a: sp.multigammaln(a, 3),
          ("lgamma",), domain=positive(1.5, 6.0)),
    _spec("digamma", S.digamma, sp.digamma, ("digamma",), domain=positive(0.2, 8.0),
          rtol=1e-4),
    _spec("polygamma", S.polygamma, lambda n, x: sp.polygamma(n, x), ("polygamma",),
          shapes=BIN[:2], dtypes=((I32, F32),), domain=(integers(0, 3), positive(0.5, 5.0)),
          rtol=1e-4),
    _spec("zeta", S.zeta, sp.zeta, ("zeta",), shapes=BIN,
          domain=(uniform(1.5, 6.0), positive(0.5, 5.0)), rtol=1e-4),
    _spec("gammainc", S.gammainc, sp.gammainc, ("igamma",), shapes=BIN,
          domain=(positive(0.5, 5.0), positive(0.1, 8.0)), rtol=1e-4),
    _spec("gammainc_x", lambda x: S.gammainc(2.5, x), lambda x: sp.gammainc(2.5, x),
          ("igamma",), domain=positive(0.1, 8.0), rtol=1e-4),
    _spec("gammaincc", S.gammaincc, sp.gammaincc, ("igammac",), shapes=BIN,
          domain=(positive(0.5, 5.0), positive(0.1, 8.0)), rtol=1e-4),
    _spec("gammaincc_x", lambda x: S.gammaincc(2.5, x), lambda x: sp.gammaincc(2.5, x),
          ("igammac",), domain=positive(0.1, 8.0), rtol=1e-4),
]

ERROR = [
    _spec("erf", S.erf, sp.erf, ("erf",), domain=uniform(-3.0, 3.0)),
    _spec("erfc", S.erfc, sp.erfc, ("erfc",), domain=uniform(-2.0, 4.0), atol=1e-6),
    _spec("erfinv", S.erfinv, sp.erfinv, ("erf_inv",), domain=uniform(-0.95, 0.95),
          rtol=1e-4),
    _spec("erfcx", S.erfcx, sp.erfcx, domain=uniform(-3.0, 10.0), rtol=1e-4),
    _spec("erfcx_complex", S.erfcx, sp.erfcx, dtypes=(C64,), domain=complex_uniform(-3, 3),
          atol=1e-5, rtol=1e-4),
    _spec("dawsn", S.dawsn, sp.dawsn, domain=uniform(-8.0, 8.0), rtol=1e-4),
    _spec("wofz", S.wofz, sp.wofz, dtypes=(C64,), domain=complex_uniform(-4.0, 4.0),
          atol=1e-5, rtol=1e-4),
    _spec("wofz_real", S.wofz, sp.wofz, domain=uniform(-5.0, 5.0), atol=1e-6, rtol=1e-4),
    _spec("ndtr", S.ndtr, sp.ndtr, ("erf", "erfc"), domain=uniform(-8.0, 8.0), atol=1e-7,
          rtol=1e-4),
    _spec("ndtri", S.ndtri, sp.ndtri, domain=uniform(0.02, 0.98), rtol=1e-4),
    _spec("log_ndtr", S.log_ndtr, sp.log_ndtr, ("erf", "erfc"), domain=uniform(-30.0, 10.0),
          atol=1e-6, rtol=1e-4),
    _spec("fresnel", S.fresnel, sp.fresnel, domain=uniform(-4.0, 4.0), atol=1e-6, rtol=1e-4),
    _spec("owens_t", S.owens_t, sp.owens_t, ("erf", "erfc"), shapes=BIN,
          domain=uniform(-3.0, 3.0), atol=1e-6, rtol=1e-4),
]

INFO = [
    _spec("xlogy", S.xlogy, sp.xlogy, ("log",), shapes=BIN,
          domain=(uniform(-2.0, 2.0), positive(0.2, 3.0))),
    _spec("xlog1py", S.xlog1py, sp.xlog1py, ("log1p",), shapes=BIN,
          domain=(uniform(-2.0, 2.0), uniform(-0.8, 3.0))),
    _spec("entr", S.entr, sp.entr, domain=positive(0.1, 3.0)),
    _spec("rel_entr", S.rel_entr, sp.rel_entr, shapes=BIN, domain=positive(0.2, 3.0),
          rtol=1e-4),
    _spec("kl_div", S.kl_div, sp.kl_div, shapes=BIN, domain=positive(0.2, 3.0), atol=1e-5,
          rtol=1e-4),
    _spec("logit", S.logit, sp.logit, domain=uniform(0.05, 0.95), rtol=1e-4),
    _spec("expit", S.expit, sp.expit, ("logistic",)),
    _spec("logsumexp", S.logsumexp, sp.logsumexp, shapes=(((2, 3),),),
          kwargs=({}, {"axis": 1}, {"axis": 0, "keepdims": True})),
    _spec("logsumexp_b", lambda a, b: S.logsumexp(a, b=b), lambda a, b: sp.logsumexp(a, b=b),
          shapes=(((2, 3), (2, 3)),), domain=(uniform(), positive(0.5, 2.0)), rtol=1e-4),
    _spec("softmax", S.softmax, sp.softmax, shapes=(((2, 3),), ((4,),))),
    _spec("log_softmax", S.log_softmax, sp.log_softmax, shapes=(((2, 3),), ((4,),))),
    _spec("boxcox", S.boxcox, sp.boxcox, ("expm1",), shapes=BIN,
          domain=(positive(0.2, 4.0), uniform(-1.5, 1.5)), rtol=1e-4),
    _spec("boxcox1p", S.boxcox1p, sp.boxcox1p, ("expm1",), shapes=BIN,
          domain=(uniform(-0.7, 3.0), uniform(-1.5, 1.5)), rtol=1e-4),
]

INTEGRALS = [
    _spec("expi", S.expi, sp.expi, domain=nonzero(-5.0, 12.0), rtol=1e-4),
    _spec("expn", S.expn, sp.expn, ("while",), shapes=BIN[:2], dtypes=((I32, F32),),
          domain=(integers(0, 4), positive(0.2, 5.0)), rtol=1e-4),
    _spec("exp1", S.exp1, sp.exp1, ("while",), domain=positive(0.1, 8.0), rtol=1e-4),
    _spec("sici", S.sici, sp.sici, domain=nonzero(-12.0, 12.0), atol=1e-6, rtol=1e-4),
    _spec("spence", S.spence, sp.spence, domain=positive(0.05, 5.0), atol=1e-6, rtol=1e-4),
]

BESSEL = [
    _spec("i0", S.i0, sp.i0, ("bessel_i0e",), domain=uniform(-10.0, 10.0), rtol=1e-4),
    _spec("i0e", S.i0e, sp.i0e, ("bessel_i0e",), domain=uniform(-10.0, 10.0)),
    _spec("i1", S.i1, sp.i1, ("bessel_i1e",), domain=uniform(-10.0, 10.0), rtol=1e-4),
    _spec("i1e", S.i1e, sp.i1e, ("bessel_i1e",), domain=uniform(-10.0, 10.0)),
    _spec("bessel_jn", lambda z: S.bessel_jn(z, v=3),
          lambda z: np.stack([sp.jv(k, z) for k in range(4)]), ("scan",),
          domain=positive(0.5, 10.0), atol=1e-5, rtol=1e-4),
    _spec("sph_harm_y", lambda t, p: S.sph_harm_y(_N3, _M3, t, p, n_max=3),
          lambda t, p: sp.sph_harm_y(_N3, _M3, t, p), shapes=(((3,), (3,)), ((2, 3), (3,))),
          domain=(uniform(0.1, 3.0), uniform(0.0, 6.2)), atol=1e-5, rtol=1e-4),
    _spec("hyp1f1", S.hyp1f1, sp.hyp1f1, ("while",), shapes=TER,
          domain=(positive(0.5, 3.0), positive(0.5, 3.0), uniform(-5.0, 5.0)), rtol=1e-4),
    _spec("hyp1f1_x", lambda x: S.hyp1f1(1.5, 2.5, x), lambda x: sp.hyp1f1(1.5, 2.5, x),
          ("while",), domain=uniform(-5.0, 5.0), rtol=1e-4),
    _spec("hyp2f1", S.hyp2f1, sp.hyp2f1, ("while",), shapes=(((3,),) * 4,),
          domain=(positive(0.5, 3.0), positive(0.5, 3.0), positive(1.0, 5.0),
                  uniform(-2.0, 0.6)), rtol=1e-4),
    _spec("hyp2f1_x", lambda x: S.hyp2f1(1.5, 0.5, 2.5, x),
          lambda x: sp.hyp2f1(1.5, 0.5, 2.5, x), ("while",), domain=uniform(-2.0, 0.6),
          rtol=1e-4),
]

LAX = [
    _lax("igamma", lax.igamma, sp.gammainc, ("igamma",),
         domain=(positive(0.5, 5.0), positive(0.1, 8.0)), rtol=1e-4),
    _lax("igammac", lax.igammac, sp.gammaincc, ("igammac",),
         domain=(positive(0.5, 5.0), positive(0.1, 8.0)), rtol=1e-4),
    _lax("igamma_grad_a", lax.igamma_grad_a, _grad_a_ref, ("igamma_grad_a",),
         domain=(positive(0.5, 5.0), positive(0.2, 8.0)), atol=1e-5, rtol=1e-3),
    _lax("random_gamma_grad", lax.random_gamma_grad, _random_gamma_grad_ref,
         ("random_gamma_grad",), domain=(positive(0.5, 5.0), positive(0.2, 8.0)),
         atol=1e-5, rtol=1e-3),
    _lax("polygamma", lax.polygamma, lambda m, x: sp.polygamma(m.astype(int), x),
         ("polygamma",), domain=(integers(0, 3), positive(0.5, 5.0)), rtol=1e-4),
    _lax("zeta", lax.zeta, sp.zeta, ("zeta",), domain=(uniform(1.5, 6.0), positive(0.5, 5.0)),
         rtol=1e-4),
    _lax("bessel_i0e", lax.bessel_i0e, sp.i0e, ("bessel_i0e",), shapes=UN,
         domain=uniform(-10.0, 10.0)),
    _lax("bessel_i1e", lax.bessel_i1e, sp.i1e, ("bessel_i1e",), shapes=UN,
         domain=uniform(-10.0, 10.0)),
    _lax("betainc", lax.betainc, sp.betainc, ("regularized_incomplete_beta",), shapes=TER,
         domain=(positive(0.5, 5.0), positive(0.5, 5.0), uniform(0.05, 0.95)), rtol=1e-4),
]

SPECS = GAMMA + ERROR + INFO + INTEGRALS + BESSEL + LAX
