"""Op specs: ``functrax.scipy.stats`` (distributions, gaussian_kde, mode, rankdata, sem).

References are ``scipy.stats`` (test-only), evaluated in float64 and rounded to the input
dtype. Domains stay inside the supports and away from their edges (where densities are not
smooth) so that the order-2 gradient checks apply; shape parameters whose derivatives JAX
does not define (``betainc`` in ``a``/``b``, second derivatives of ``igamma`` in ``a``) are
fixed by a lambda. ``tests/test_scipy_stats.py`` covers the tails, the supports' edges,
invalid parameters and the errors.
"""
import numpy as np
import scipy.stats as st

from functrax.scipy import stats as S
from functrax.scipy.special import softmax
from tests.opspec.scipy_special import in_f64, integers
from tests.opspec.spec import F32, I32, OpSpec, positive, uniform

UN = (((3,),), ((2, 3),))
BIN = (((3,), (3,)), ((2, 3), (3,)))
TER = (((3,), (3,), (3,)), ((2, 3), (3,), ()))
QUAD = (((3,), (3,), (3,), (3,)), ((2, 3), (3,), (), ()))
X_LS = (uniform(-3.0, 3.0), uniform(-1.0, 1.0), positive(0.5, 2.0))
Q_LS = (uniform(0.05, 0.95), uniform(-1.0, 1.0), positive(0.5, 2.0))
COUNTS = np.array([1, 3, 4])
COV3 = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
KDE_DATA = np.array([[-1.2, 0.3, 0.8, 2.1, -0.4, 1.1], [0.5, -0.7, 1.3, 0.2, 0.9, -1.5]])


def _spec(name, fn, ref, shapes=UN, **kw):
    return OpSpec("stats_" + name, fn, in_f64(ref), shapes=shapes, **kw)


def _loc_scale(dist, fns, domain_x=X_LS, domain_q=Q_LS, **kw):
    fam, ref = getattr(S, dist), getattr(st, dist)
    out = []
    for f in fns:
        dom = domain_q if f in ("ppf", "isf") else domain_x
        out.append(_spec(f"{dist}_{f}", getattr(fam, f), getattr(ref, f), shapes=TER,
                         domain=dom, **kw))
    return out


def _fixed(dist, f, params, domain, **kw):
    fam, ref = getattr(S, dist), getattr(st, dist)
    return _spec(f"{dist}_{f}_x", lambda x: getattr(fam, f)(x, *params),
                 lambda x: getattr(ref, f)(x, *params), domain=domain, **kw)


def _softmax(z):
    return np.exp(z) / np.exp(z).sum(0)


def _kde_ref(method):
    kde = st.gaussian_kde(KDE_DATA)
    return lambda p: getattr(kde, method)(p)


CONTINUOUS = (
    _loc_scale("norm", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"),
               rtol=1e-4)
    + _loc_scale("cauchy", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"),
                 rtol=1e-4)
    + _loc_scale("logistic", ("logpdf", "pdf", "cdf", "sf", "ppf", "isf"), rtol=1e-4)
    + _loc_scale("laplace", ("logpdf", "pdf", "cdf"), rtol=1e-4)
    + _loc_scale("expon", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"),
                 domain_x=(positive(1.5, 4.0), uniform(-1.0, 1.0), positive(0.5, 2.0)),
                 rtol=1e-4)
    + _loc_scale("uniform", ("logpdf", "pdf", "cdf", "ppf"),
                 domain_x=(uniform(0.1, 0.4), uniform(-0.5, 0.0), positive(1.0, 2.0)),
                 rtol=1e-4)
    + [
        _spec("t_logpdf", S.t.logpdf, st.t.logpdf, shapes=QUAD,
              domain=(uniform(-3.0, 3.0), positive(1.0, 10.0), uniform(-1.0, 1.0),
                      positive(0.5, 2.0)), rtol=1e-4),
        _spec("t_pdf", S.t.pdf, st.t.pdf, shapes=BIN,
              domain=(uniform(-3.0, 3.0), positive(1.0, 10.0)), rtol=1e-4),
        _spec("beta_logpdf", S.beta.logpdf, st.beta.logpdf, shapes=TER,
              domain=(uniform(0.1, 0.9), positive(1.5, 4.0), positive(1.5, 4.0)), rtol=1e-4),
        _spec("beta_pdf", S.beta.pdf, st.beta.pdf, shapes=TER,
              domain=(uniform(0.1, 0.9), positive(1.5, 4.0), positive(1.5, 4.0)), rtol=1e-4),
        _spec("gamma_logpdf", S.gamma.logpdf, st.gamma.logpdf, shapes=QUAD,
              domain=(positive(1.5, 5.0), positive(1.5, 4.0), uniform(-1.0, 1.0),
                      positive(0.5, 2.0)), rtol=1e-4),
        _spec("gamma_pdf", S.gamma.pdf, st.gamma.pdf, shapes=BIN,
              domain=(positive(0.2, 5.0), positive(1.5, 4.0)), rtol=1e-4),
        _spec("chi2_logpdf", S.chi2.logpdf, st.chi2.logpdf, shapes=BIN,
              domain=(positive(0.2, 6.0), positive(2.5, 6.0)), rtol=1e-4),
        _spec("chi2_pdf", S.chi2.pdf, st.chi2.pdf, shapes=BIN,
              domain=(positive(0.2, 6.0), positive(2.5, 6.0)), rtol=1e-4),
    ]
    + [_fixed("beta", f, (2.5, 3.5), uniform(0.1, 0.9), rtol=1e-4)
       for f in ("cdf", "logcdf", "sf", "logsf")]
    + [_fixed("gamma", f, (2.5,), positive(0.2, 6.0), rtol=1e-4)
       for f in ("cdf", "logcdf", "sf", "logsf")]
    + [_fixed("chi2", f, (3.5,), positive(0.2, 8.0), rtol=1e-4)
       for f in ("cdf", "logcdf", "sf", "logsf")]
)

DISCRETE = [
    _spec("poisson_logpmf", S.poisson.logpmf, st.poisson.logpmf, shapes=BIN,
          dtypes=((I32, F32),), domain=(integers(0, 8), positive(0.5, 6.0)), rtol=1e-4),
    _spec("poisson_pmf", S.poisson.pmf, st.poisson.pmf, shapes=BIN, dtypes=((I32, F32),),
          domain=(integers(0, 8), positive(0.5, 6.0)), rtol=1e-4),
    _spec("poisson_cdf", S.poisson.cdf, st.poisson.cdf, shapes=BIN, dtypes=((I32, F32),),
          domain=(integers(0, 8), positive(0.5, 6.0)), rtol=1e-4),
    _spec("poisson_entropy", S.poisson.entropy, st.poisson.entropy,
          domain=positive(0.5, 150.0), rtol=1e-5),
    _spec("bernoulli_logpmf", S.bernoulli.logpmf, st.bernoulli.logpmf, shapes=BIN,
          dtypes=((I32, F32),), domain=(integers(0, 1), uniform(0.1, 0.9)), rtol=1e-4),
    _spec("bernoulli_pmf", S.bernoulli.pmf, st.bernoulli.pmf, shapes=BIN,
          dtypes=((I32, F32),), domain=(integers(0, 1), uniform(0.1, 0.9)), rtol=1e-4),
    _spec("bernoulli_cdf", S.bernoulli.cdf, st.bernoulli.cdf, shapes=BIN,
          dtypes=((I32, F32),), domain=(integers(-1, 2), uniform(0.1, 0.9)), rtol=1e-4),
    _spec("bernoulli_ppf", S.bernoulli.ppf, st.bernoulli.ppf, shapes=BIN,
          domain=(uniform(0.0, 1.0), uniform(0.1, 0.9)), rtol=1e-4),
    _spec("binom_logpmf", S.binom.logpmf, st.binom.logpmf, shapes=TER,
          dtypes=((I32, I32, F32),), domain=(integers(0, 5), integers(5, 9), uniform(0.1, 0.9)),
          rtol=1e-4),
    _spec("binom_pmf", S.binom.pmf, st.binom.pmf, shapes=TER, dtypes=((I32, I32, F32),),
          domain=(integers(0, 5), integers(5, 9), uniform(0.1, 0.9)), rtol=1e-4),
    _spec("multinomial_logpmf", lambda z: S.multinomial.logpmf(COUNTS, 8, softmax(z)),
          lambda z: st.multinomial.logpmf(COUNTS, 8, _softmax(z)), shapes=(((3,),),),
          domain=uniform(-1.0, 1.0), rtol=1e-4),
    _spec("multinomial_pmf", lambda z: S.multinomial.pmf(COUNTS, 8, softmax(z)),
          lambda z: st.multinomial.pmf(COUNTS, 8, _softmax(z)), shapes=(((3,),),),
          domain=uniform(-1.0, 1.0), rtol=1e-4),
]

MULTIVARIATE = [
    _spec("dirichlet_logpdf", lambda z, a: S.dirichlet.logpdf(softmax(z, axis=0), a),
          lambda z, a: st.dirichlet.logpdf(_softmax(z), a),
          shapes=(((3,), (3,)),), domain=(uniform(-1.0, 1.0), positive(0.8, 3.0)), rtol=1e-4),
    _spec("dirichlet_pdf", lambda z, a: S.dirichlet.pdf(softmax(z, axis=0), a),
          lambda z, a: st.dirichlet.pdf(_softmax(z), a),
          shapes=(((3,), (3,)),), domain=(uniform(-1.0, 1.0), positive(0.8, 3.0)), rtol=1e-4),
    _spec("multivariate_normal_logpdf",
          lambda x, m: S.multivariate_normal.logpdf(x, m, COV3),
          lambda x, m: st.multivariate_normal.logpdf(x, m, COV3),
          shapes=(((3,), (3,)), ((4, 3), (3,))), rtol=1e-4),
    _spec("multivariate_normal_pdf",
          lambda x, m: S.multivariate_normal.pdf(x, m, COV3),
          lambda x, m: st.multivariate_normal.pdf(x, m, COV3),
          shapes=(((3,), (3,)), ((4, 3), (3,))), rtol=1e-4),
    _spec("gaussian_kde_logpdf", lambda p: S.gaussian_kde(KDE_DATA).logpdf(p),
          _kde_ref("logpdf"), shapes=(((2, 4),),), rtol=1e-4),
    _spec("gaussian_kde_evaluate", lambda p: S.gaussian_kde(KDE_DATA).evaluate(p),
          _kde_ref("evaluate"), shapes=(((2, 4),),), rtol=1e-4),
]

STATISTICS = [
    _spec("sem", S.sem, st.sem, shapes=(((4, 3),),), kwargs=({}, {"axis": 1}, {"ddof": 0}),
          rtol=1e-4),
    _spec("rankdata", S.rankdata, st.rankdata, shapes=(((6,),), ((2, 3),)),
          domain=integers(0, 3), rtol=1e-6, check_dtype=False),
    _spec("rankdata_ordinal", lambda a: S.rankdata(a, "ordinal", axis=1),
          lambda a: st.rankdata(a, "ordinal", axis=1).astype(np.int32),
          shapes=(((2, 5),),), domain=integers(0, 3), check_dtype=False),
    _spec("mode", lambda a: tuple(S.mode(a, axis=0)),
          lambda a: tuple(np.asarray(v) for v in st.mode(a, axis=0)),
          shapes=(((6, 3),),), domain=integers(0, 3), check_dtype=False),
]

SPECS = CONTINUOUS + DISCRETE + MULTIVARIATE + STATISTICS
