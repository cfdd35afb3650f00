"""``functrax.scipy.stats``: probability distributions and statistics, as
``jax.scipy.stats``.

One module per distribution (``norm``, ``multivariate_normal``, ``t``, ``beta``, ``gamma``,
``chi2``, ``poisson``, ``bernoulli``, ``binom``, ``multinomial``, ``cauchy``, ``laplace``,
``logistic``, ``expon``, ``uniform``, ``dirichlet``), each a set of functions
(``logpdf``/``pdf``/``cdf``/``logcdf``/``sf``/``logsf``/``ppf``/``isf``, ``logpmf``/``pmf``,
``entropy``) with SciPy's argument names and defaults; and ``gaussian_kde``, ``mode``,
``rankdata``, ``sem``.

Arguments are promoted as JAX's ``promote_args_inexact`` (integers to the default float
type) and broadcast; outside the support log-densities are ``-inf``, densities 0 and cdfs 0
or 1; invalid parameters (``scale <= 0``, non-positive shape parameters, probabilities
outside ``[0, 1]``) give NaN, as ``scipy.stats``. Everything is a composition of
``functrax.numpy``/``lax``/``functrax.scipy.special`` operations, so it jits, vmaps and
differentiates; discarded ``where`` branches are evaluated at safe points, so gradients carry
no NaN from them.

Accuracy (tests/test_scipy_stats.py, against scipy.stats and mpmath): float64 within about
1e-13 relative over the domains including the tails (``norm.logcdf(-40)``, ``t`` with
``df`` up to 1e300, ``beta`` near 0 and 1, Cauchy and logistic quantiles at 1e-300);
float32 within a few ulp of the rounded float64 value where the formula is well
conditioned.

>>> from functrax.scipy import stats
>>> round(float(stats.norm.cdf(1.0)), 6)
0.841345
"""
from functrax.scipy.stats import (  # noqa: F401
    bernoulli, beta, binom, cauchy, chi2, dirichlet, expon, gamma, laplace, logistic,
    multinomial, multivariate_normal, norm, poisson, t, uniform,
)
from functrax.scipy.stats.kde import gaussian_kde
from functrax.scipy.stats.ranks import mode, rankdata, sem

__all__ = [
    "bernoulli", "beta", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
    "gaussian_kde", "laplace", "logistic", "mode", "multinomial", "multivariate_normal",
    "norm", "poisson", "rankdata", "sem", "t", "uniform",
]
