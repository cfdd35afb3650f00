"""``functrax.random``: JAX's default PRNG (threefry2x32), bit for bit.

Keys are ``uint32[2]`` arrays made by :func:`PRNGKey` (or :func:`key`, which returns the same
raw representation: functrax has no typed key dtype). Every sampler equals
``jax.random``'s with ``jax_threefry_partitionable=True`` (JAX's default) on CPU, traces
under ``jit``, batches under ``vmap`` (map over a batch of keys) and differentiates (keys
and random bits have zero tangents).

Beyond JAX's reference vectors, ``gamma``/``loggamma`` and the samplers built on them
(``beta``, ``dirichlet``, ``chisquare``, ``f``, ``t``, ``generalized_normal``, ``ball``),
``poisson``, ``binomial``, ``geometric`` and the transform samplers (``cauchy``,
``lognormal``, ``pareto``, ``weibull_min``, ``rayleigh``, ``maxwell``,
``double_sided_maxwell``, ``triangular``, ``wald``), ``multivariate_normal`` and
``orthogonal`` follow JAX's algorithms step for step
but are tested statistically, not bit for bit. ``gamma`` differentiates in ``a`` by
implicit reparameterization, as JAX.

>>> import functrax
>>> from functrax import random
>>> k1, k2 = random.split(random.PRNGKey(0))
>>> random.normal(k2, (3,))
Array([-2.4424558 , -2.0356805 ,  0.20554423], dtype=float32)
>>> functrax.vmap(lambda k: random.uniform(k, ()))(random.split(random.PRNGKey(1), 2))
Array([0.70261526, 0.40364635], dtype=float32)
"""
from functrax.random.prng import (
    PRNGKey, bits, clone, fold_in, key, key_data, split, threefry2x32, threefry_2x32,
    wrap_key_data,
)
from functrax.random.distributions import (
    bernoulli, categorical, choice, exponential, gumbel, laplace, logistic, normal,
    permutation, rademacher, randint, shuffle, truncated_normal, uniform,
)
from functrax.random.gamma_samplers import (
    ball, beta, chisquare, dirichlet, f, gamma, generalized_normal, loggamma, t,
)
from functrax.random.linalg_samplers import multivariate_normal, orthogonal
from functrax.random.transformed_samplers import (
    cauchy, double_sided_maxwell, lognormal, maxwell, pareto, rayleigh, triangular, wald,
    weibull_min,
)
from functrax.random.discrete_samplers import binomial, geometric, poisson

__all__ = [
    "PRNGKey", "ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy",
    "chisquare", "choice", "clone", "dirichlet", "double_sided_maxwell", "exponential", "f",
    "fold_in", "gamma", "generalized_normal", "geometric", "gumbel", "key", "key_data",
    "laplace", "loggamma", "logistic", "lognormal", "maxwell", "multivariate_normal", "normal",
    "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint", "rayleigh",
    "shuffle", "split", "t", "threefry2x32", "threefry_2x32", "triangular", "truncated_normal",
    "uniform", "wald", "weibull_min", "wrap_key_data",
]
