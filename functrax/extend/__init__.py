"""``functrax.extend``: the API for extending functrax (JAX's ``jax.extend``):
:mod:`functrax.extend.core` (primitives and jaxprs). The rule tables of the transformations
are in :mod:`functrax.interpreters.ad` and :mod:`functrax.interpreters.batching`.

>>> from functrax.extend import core
>>> core.Primitive("my_op").name
'my_op'
"""
from functrax.extend import core  # noqa: F401

__all__ = ["core"]
