"""``functrax.nn``: activation functions, softmax/logsumexp, one_hot, standardize and
parameter initializers (``functrax.nn.initializers``), as ``jax.nn``.

>>> import functrax.numpy as fnp
>>> from functrax import nn
>>> nn.softmax(fnp.array([0.0, 0.0]))
Array([0.5, 0.5], dtype=float32)
"""
from functrax.nn.functions import *  # noqa: F401,F403
from functrax.nn.functions import __all__  # noqa: F401
from functrax.nn.attention import dot_product_attention  # noqa: F401
from functrax.nn import initializers  # noqa: F401
