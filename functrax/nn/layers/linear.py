"""``Linear``, ``Identity`` and ``Embedding``.

>>> import functrax, functrax.numpy as fnp
>>> lin = Linear(3, 2, key=functrax.random.key(0))
>>> lin(fnp.ones(3)).shape
(2,)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from functrax import core, dtypes
from functrax import numpy as fnp
from functrax.nn import initializers
from functrax.nn.layers import _util as u
from functrax.nn.module import Module

__all__ = ["Embedding", "Identity", "Linear"]


class Linear(Module):
    """An affine map ``x @ weight + bias`` on the last axis, as ``flax.linen.Dense``.

    Args:
      in_features, out_features: the sizes of the last axis of the input and the output.
      use_bias: add a learnable bias.
      key: the PRNG key initialising the parameters (keyword, required).
      dtype: the parameters' dtype (default float32).
      kernel_init: ``init(key, (in, out), dtype)`` (default ``lecun_normal()``).
      bias_init: ``init(key, (out,), dtype)`` (default ``zeros``).

    Returns (when called on ``x`` of shape ``(..., in_features)``):
      an array of shape ``(..., out_features)``.

    Raises:
      ValueError: for a missing key, or an input whose last axis is not ``in_features``.

    >>> import functrax, functrax.numpy as fnp
    >>> Linear(3, 2, key=functrax.random.key(0))
    Linear(weight=f32[3,2], bias=f32[2], in_features=3, out_features=2, use_bias=True)
    """
    weight: Any
    bias: Any
    in_features: int
    out_features: int
    use_bias: bool

    def __init__(self, in_features, out_features, use_bias=True, *, key=None,
                 dtype=fnp.float32, kernel_init=None, bias_init=initializers.zeros):
        wkey, bkey = u.split(u.check_key("Linear", key), 2)
        self.in_features = u.as_int("Linear", "in_features", in_features)
        self.out_features = u.as_int("Linear", "out_features", out_features)
        self.use_bias = bool(use_bias)
        kernel_init = kernel_init or initializers.lecun_normal()
        self.weight = kernel_init(wkey, (self.in_features, self.out_features), dtype)
        self.bias = bias_init(bkey, (self.out_features,), dtype) if self.use_bias else None

    def __call__(self, x, *, key=None):
        """``x @ weight + bias`` for ``x`` of shape ``(..., in_features)``."""
        shape = u.shape_of(x)
        if not shape or shape[-1] != self.in_features:
            raise ValueError(f"Linear: expected an input of shape (..., in_features="
                             f"{self.in_features}), got shape {shape}.")
        y = fnp.matmul(x, self.weight)
        return y + self.bias if self.use_bias else y


class Identity(Module):
    """The identity layer: returns its input (extra arguments are ignored).

    >>> import functrax.numpy as fnp
    >>> Identity()(fnp.ones(2))
    Array([1., 1.], dtype=float32)
    """

    def __call__(self, x, *args, key=None, **kwargs):
        return x


class Embedding(Module):
    """A lookup table: maps integer indices to rows of ``weight`` (``num_embeddings, features``).

    Args:
      num_embeddings: the number of rows (the vocabulary size).
      features: the size of each vector.
      key: the PRNG key initialising the table (keyword, required).
      dtype: the table's dtype (default float32).
      embedding_init: ``init(key, (num_embeddings, features), dtype)``; default Flax's
        ``variance_scaling(1.0, "fan_in", "normal", out_axis=0)`` (stddev
        ``1 / sqrt(features)``).

    Returns (when called on an int array of shape ``s``):
      an array of shape ``s + (features,)``.

    Raises:
      TypeError: for non-integer indices. IndexError: for concrete out-of-range indices.

    >>> import functrax, functrax.numpy as fnp
    >>> emb = Embedding(10, 4, key=functrax.random.key(0))
    >>> emb(fnp.array([1, 2, 3])).shape
    (3, 4)
    """
    weight: Any
    num_embeddings: int
    features: int

    def __init__(self, num_embeddings, features, *, key=None, dtype=fnp.float32,
                 embedding_init=None):
        key = u.check_key("Embedding", key)
        self.num_embeddings = u.as_int("Embedding", "num_embeddings", num_embeddings)
        self.features = u.as_int("Embedding", "features", features)
        init = embedding_init or initializers.variance_scaling(1.0, "fan_in", "normal",
                                                               out_axis=0)
        self.weight = init(key, (self.num_embeddings, self.features), dtype)

    def __call__(self, x, *, key=None):
        """The rows ``weight[x]``."""
        x = x if u.is_arraylike(x) else np.asarray(x)
        dt = u.dtype_of(x)
        if not dtypes.is_int(dt):
            raise TypeError(f"Embedding: indices must be integers, got dtype {dt} (shape "
                            f"{u.shape_of(x)}); cast them with x.astype(int).")
        if not isinstance(x, core.Tracer):
            v = np.asarray(x)
            if v.size and (v.min() < 0 or v.max() >= self.num_embeddings):
                raise IndexError(f"Embedding: indices must lie in [0, {self.num_embeddings}),"
                                 f" got values from {v.min()} to {v.max()}.")
        return fnp.take(self.weight, x, axis=0)
