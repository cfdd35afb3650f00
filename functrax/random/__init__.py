"""``functrax.random``: JAX's default PRNG (threefry2x32), bit for bit.

Keys come in JAX's two kinds: typed key arrays made by :func:`key` (dtype ``key<fry>``,
printed ``Array((), dtype=key<fry>) overlaying: [0 0]``; :func:`key_data` /
:func:`wrap_key_data` convert) and raw ``uint32[2]`` keys made by :func:`PRNGKey`. Every
sampler accepts both and gives the same bits for both, equal to ``jax.random``'s with
``jax_threefry_partitionable=True`` (JAX's default) on CPU; samplers trace under ``jit``,
batch under ``vmap`` (map over a batch of keys) and differentiate (keys and random bits
have zero tangents).

Beyond JAX's reference vectors, ``gamma``/``loggamma`` and the samplers built on them
(``beta``, ``dirichlet``, ``chisquare``, ``f``, ``t``, ``generalized_normal``, ``ball``),
``poisson``, ``binomial``, ``multinomial``, ``geometric`` and the transform samplers (``cauchy``,
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
from functrax.random.prng import threefry2x32, threefry_2x32
from functrax.random.keys import (
    PRNGKey, PRNGSpec, bits, clone, default_prng_impl, fold_in, key, key_data, key_dtype,
    key_impl, split, wrap_key_data,
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
from functrax.random.discrete_samplers import binomial, geometric, multinomial, poisson

__all__ = [
    "PRNGKey", "PRNGSpec", "ball", "bernoulli", "beta", "binomial", "bits", "categorical",
    "cauchy", "chisquare", "choice", "clone", "default_prng_impl", "dirichlet",
    "double_sided_maxwell", "exponential", "f", "fold_in", "gamma", "generalized_normal",
    "geometric", "gumbel", "key", "key_data", "key_dtype", "key_impl", "laplace", "loggamma",
    "logistic", "lognormal", "maxwell", "multinomial", "multivariate_normal", "normal",
    "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint", "rayleigh",
    "shuffle", "split", "t", "threefry2x32", "threefry_2x32", "triangular", "truncated_normal",
    "uniform", "wald", "weibull_min", "wrap_key_data",
]
