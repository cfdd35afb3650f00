"""``functrax.interpreters``: the rule tables of the transformations as JAX exposes them
(``jax.interpreters.ad``, ``jax.interpreters.batching``), for user-defined primitives
(:mod:`functrax.extend.core`).

>>> from functrax.interpreters import ad, batching
>>> callable(ad.defjvp), callable(batching.defvectorized)
(True, True)
"""
from functrax.interpreters import ad, batching  # noqa: F401

__all__ = ["ad", "batching"]
