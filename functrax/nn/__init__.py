"""``functrax.nn``: activation functions, softmax/logsumexp, one_hot, standardize and
parameter initializers (``functrax.nn.initializers``), as ``jax.nn``; and layers as pytree
modules (``Module``, ``Linear``, ``Conv2d``, ``MLP``, ...), as Equinox.

``__all__`` lists the ``jax.nn`` functions (as ``functrax.nn.functions.__all__``); the
layers and module helpers are listed in ``functrax.nn.layers.__all__`` and
``functrax.nn.module.__all__``.

>>> import functrax.numpy as fnp
>>> from functrax import nn
>>> nn.softmax(fnp.array([0.0, 0.0]))
Array([0.5, 0.5], dtype=float32)
"""
from functrax.nn.functions import *  # noqa: F401,F403
from functrax.nn.functions import __all__  # noqa: F401
from functrax.nn.attention import dot_product_attention  # noqa: F401
from functrax.nn import initializers  # noqa: F401
# layers as pytree modules (after __all__, which keeps meaning the jax.nn functions)
from functrax.nn.module import (  # noqa: F401
    Module, cast, combine, count_params, field, is_array, is_inexact_array, partition,
)
from functrax.nn.updates import inference_mode, tree_at  # noqa: F401
from functrax.nn.layers import (  # noqa: F401
    AvgPool, AvgPool1d, AvgPool2d, AvgPool3d, BatchNorm, Conv, Conv1d, Conv2d, Conv3d,
    ConvTranspose, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, Dropout, Embedding,
    Identity, Lambda, LayerNorm, Linear, MLP, MaxPool, MaxPool1d, MaxPool2d, MaxPool3d,
    MultiHeadAttention, MultiheadAttention, RMSNorm, Sequential,
)
