"""``functrax.random``: JAX's default PRNG (threefry2x32), bit for bit.

Keys are ``uint32[2]`` arrays made by :func:`PRNGKey` (or :func:`key`, which returns the same
raw representation: functrax has no typed key dtype). Every sampler equals
``jax.random``'s with ``jax_threefry_partitionable=True`` (JAX's default) on CPU, traces
under ``jit``, batches under ``vmap`` (map over a batch of keys) and differentiates (keys
and random bits have zero tangents).

>>> import functrax
>>> from functrax import random
>>> k1, k2 = random.split(random.PRNGKey(0))
>>> random.normal(k2, (3,))
Array([-2.4424558 , -2.0356805 ,  0.20554423], dtype=float32)
>>> functrax.vmap(lambda k: random.uniform(k, ()))(random.split(random.PRNGKey(1), 2))
Array([0.70261526, 0.40364635], dtype=float32)
"""
from functrax.random._prng import (
    PRNGKey, bits, clone, fold_in, key, key_data, split, threefry2x32, threefry_2x32,
    wrap_key_data,
)
from functrax.random._distributions import (
    bernoulli, categorical, choice, exponential, gumbel, laplace, logistic, normal,
    permutation, rademacher, randint, shuffle, truncated_normal, uniform,
)

__all__ = [
    "PRNGKey", "bernoulli", "bits", "categorical", "choice", "clone", "exponential",
    "fold_in", "gumbel", "key", "key_data", "laplace", "logistic", "normal", "permutation",
    "rademacher", "randint", "shuffle", "split", "threefry2x32", "threefry_2x32",
    "truncated_normal", "uniform", "wrap_key_data",
]
