"""``functrax.scipy.special``: special functions, as ``jax.scipy.special``.

The functions live in family modules beside this one; this module gathers them:

- ``special_gamma``: gamma, gammaln, gammasgn, loggamma, beta, betaln, betainc, factorial,
  comb, poch, multigammaln, digamma, polygamma, zeta, gammainc, gammaincc, bernoulli;
- ``special_error``: erf, erfc, erfinv, erfcx, dawsn, wofz, ndtr, ndtri, log_ndtr, fresnel,
  owens_t;
- ``special_info``: xlogy, xlog1py, entr, rel_entr, kl_div, logit, expit, logsumexp,
  softmax, log_softmax, boxcox, boxcox1p;
- ``special_integrals``: expi, expn, exp1, sici, spence;
- ``special_bessel``: i0, i0e, i1, i1e, bessel_jn, sph_harm_y;
- ``special_hyper``: hyp1f1, hyp2f1.

The incomplete gamma and beta functions, polygamma, zeta and the scaled Bessel functions
bind the ``lax`` primitives of the same names (numpy rules in
``functrax/lowering/numpy/special_*.py``); the others are compositions of ``lax`` and
``functrax.numpy`` operations, so every function jits, vmaps and (where JAX does)
differentiates.

Accuracy (tests/test_scipy_special.py, against scipy.special over whole domains and tails):
float64 within about 1e-13 relative almost everywhere (1e-11 to 1e-9 where scipy itself is
the less accurate one: far tails of gammainc/gammaincc/betaln/hyp2f1); float32 within a few
ulp of the rounded float64 value for the primitives (computed in float64, rounded once) and
the well-conditioned compositions. Compositions evaluated in float32 inherit their
formulas' conditioning: ``exp(lgamma(x))`` (gamma, factorial, beta, comb, poch: up to about
100 ulp for large arguments), cancellation near a function's zeros (expi, Ci, logit,
rel_entr, kl_div) and in ``hyp1f1``/``hyp2f1`` with sign-alternating series.

>>> from functrax.scipy import special
>>> round(float(special.gammainc(2.0, 1.0)), 6)
0.264241
"""
from functrax.scipy.special_bessel import bessel_jn, i0, i0e, i1, i1e, sph_harm_y
from functrax.scipy.special_error import (
    dawsn, erf, erfc, erfcx, erfinv, fresnel, log_ndtr, ndtr, ndtri, owens_t, wofz,
)
from functrax.scipy.special_gamma import (
    bernoulli, beta, betainc, betaln, comb, digamma, factorial, gamma, gammainc, gammaincc,
    gammaln, gammasgn, loggamma, multigammaln, poch, polygamma, zeta,
)
from functrax.scipy.special_hyper import hyp1f1, hyp2f1
from functrax.scipy.special_info import (
    boxcox, boxcox1p, entr, expit, kl_div, log_softmax, logit, logsumexp, rel_entr, softmax,
    xlog1py, xlogy,
)
from functrax.scipy.special_integrals import exp1, expi, expn, sici, spence

__all__ = [
    "bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb",
    "dawsn", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expit",
    "expn", "factorial", "fresnel", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn",
    "hyp1f1", "hyp2f1", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax",
    "loggamma", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "owens_t", "poch",
    "polygamma", "rel_entr", "sici", "softmax", "spence", "sph_harm_y", "wofz", "xlog1py",
    "xlogy", "zeta",
]
