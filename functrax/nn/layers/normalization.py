"""``LayerNorm``, ``RMSNorm`` (over trailing axes of one example) and ``BatchNorm`` (over
the batch, through a named ``vmap``/``pmap`` axis, with its running statistics passed and
returned explicitly).

Statistics are computed in at least float32; the output has the dtype of the input
promoted with the parameters'.

>>> import functrax.numpy as fnp
>>> LayerNorm(3)(fnp.array([1.0, 2.0, 3.0])).round(3)
Array([-1.225,  0.   ,  1.225], dtype=float32)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from functrax import lax
from functrax import numpy as fnp
from functrax.nn.layers import _util as u
from functrax.nn.module import Module

__all__ = ["BatchNorm", "LayerNorm", "RMSNorm"]


def _shape_tuple(layer, shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return u.as_tuple(layer, "shape", shape, len(tuple(shape)))


def _out_dtype(x, *params):
    return fnp.result_type(x, *[p for p in params if p is not None])


def _stat_dtype(x):
    return fnp.promote_types(u.dtype_of(x), np.float32)


class _TrailingNorm(Module):
    weight: Any
    bias: Any
    shape: tuple
    eps: float
    use_weight: bool
    use_bias: bool

    def __init__(self, shape, eps=1e-5, use_weight=True, use_bias=True, *,
                 dtype=fnp.float32):
        self.shape = _shape_tuple(type(self).__name__, shape)
        self.eps = float(eps)
        self.use_weight, self.use_bias = bool(use_weight), bool(use_bias)
        self.weight = fnp.ones(self.shape, dtype) if self.use_weight else None
        self.bias = fnp.zeros(self.shape, dtype) if self.use_bias else None

    def _prepare(self, x):
        """``x`` in the statistics' dtype, and the axes to normalise over."""
        shape, n = u.shape_of(x), len(self.shape)
        if len(shape) < n or shape[len(shape) - n:] != self.shape:
            raise ValueError(f"{type(self).__name__}: expected an input whose trailing "
                             f"dimensions are shape={self.shape}, got shape {shape}.")
        return fnp.asarray(x).astype(_stat_dtype(x)), tuple(range(len(shape) - n, len(shape)))

    def _affine(self, y, x):
        if self.use_weight:
            y = y * self.weight
        if self.use_bias:
            y = y + self.bias
        return y.astype(_out_dtype(x, self.weight, self.bias))


class LayerNorm(_TrailingNorm):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing ``shape`` axes.

    Args:
      shape: the normalised trailing shape (an int or a tuple); leading axes are kept.
      eps: added to the variance.
      use_weight, use_bias: learnable scale (ones) and offset (zeros) of ``shape``.
      dtype: the parameters' dtype.

    Returns (when called on ``x`` of shape ``(..., *shape)``):
      the normalised array, of ``x``'s shape.

    Raises:
      ValueError: if ``x``'s trailing dimensions are not ``shape``.

    >>> LayerNorm((2, 2), use_bias=False)
    LayerNorm(weight=f32[2,2], bias=None, shape=(2, 2), eps=1e-05, use_weight=True, use_bias=False)
    """

    def __call__(self, x, *, key=None):
        """The normalised ``x``."""
        xf, axes = self._prepare(x)
        mean = fnp.mean(xf, axis=axes, keepdims=True)
        var = fnp.mean(fnp.square(xf - mean), axis=axes, keepdims=True)
        return self._affine((xf - mean) * lax.rsqrt(var + self.eps), x)


class RMSNorm(_TrailingNorm):
    """``x / sqrt(mean(x**2) + eps) * weight (+ bias)`` over the trailing ``shape`` axes.

    Args:
      shape, eps, use_weight, dtype: as :class:`LayerNorm`.
      use_bias: a learnable offset (default False, as Flax and most transformers).

    Returns (when called on ``x`` of shape ``(..., *shape)``):
      the normalised array, of ``x``'s shape.

    Raises:
      ValueError: if ``x``'s trailing dimensions are not ``shape``.

    >>> import functrax.numpy as fnp
    >>> RMSNorm(2)(fnp.array([3.0, 4.0])).round(3)
    Array([0.849, 1.131], dtype=float32)
    """

    def __init__(self, shape, eps=1e-5, use_weight=True, use_bias=False, *,
                 dtype=fnp.float32):
        super().__init__(shape, eps, use_weight, use_bias, dtype=dtype)

    def __call__(self, x, *, key=None):
        """The normalised ``x``."""
        xf, axes = self._prepare(x)
        ms = fnp.mean(fnp.square(xf), axis=axes, keepdims=True)
        return self._affine(xf * lax.rsqrt(ms + self.eps), x)


class BatchNorm(Module):
    """Batch normalisation of one channel-first example ``(C, *spatial)``, the batch being a
    named ``functrax.vmap``/``pmap`` axis.

    In training, the mean and variance of each channel are taken over the spatial axes and
    (``lax.pmean``) over the axis ``axis_name``; the running statistics are updated as
    ``momentum * running + (1 - momentum) * batch`` (Flax's convention). In evaluation the
    running statistics are used. The state is explicit::

        state = bn.init_state()
        y, state = functrax.vmap(lambda x: bn(x, state, training=True), axis_name="batch",
                                 out_axes=(0, None))(xs)

    Args:
      num_features: the number of channels ``C``.
      axis_name: the name of the batch axis (required for ``training=True``).
      momentum: the running statistics' decay.
      eps: added to the variance.
      use_weight, use_bias: learnable per-channel scale (ones) and offset (zeros).
      dtype: the parameters' and the state's dtype.

    Returns (when called as ``bn(x, state, training=...)``):
      ``(y, new_state)``; ``new_state is state`` when not training.

    Raises:
      ValueError: for a badly shaped input or state, or ``training=True`` without a bound
        batch axis.

    >>> import functrax, functrax.numpy as fnp
    >>> bn = BatchNorm(2, axis_name="batch")
    >>> xs = fnp.array([[1.0, 2.0], [3.0, 6.0]])
    >>> y, st = functrax.vmap(lambda x: bn(x, bn.init_state(), training=True),
    ...                       axis_name="batch", out_axes=(0, None))(xs)
    >>> y.round(3), st["mean"]
    (Array([[-1., -1.],
           [ 1.,  1.]], dtype=float32), Array([0.02, 0.04], dtype=float32))
    """
    weight: Any
    bias: Any
    num_features: int
    axis_name: Any
    momentum: float
    eps: float
    use_weight: bool
    use_bias: bool
    dtype: Any

    def __init__(self, num_features, axis_name=None, momentum=0.99, eps=1e-5,
                 use_weight=True, use_bias=True, *, dtype=fnp.float32):
        self.num_features = u.as_int("BatchNorm", "num_features", num_features)
        self.axis_name, self.momentum, self.eps = axis_name, float(momentum), float(eps)
        if not 0.0 <= self.momentum <= 1.0:
            raise ValueError(f"BatchNorm: momentum must lie in [0, 1], got {momentum}.")
        self.use_weight, self.use_bias = bool(use_weight), bool(use_bias)
        self.dtype = np.dtype(dtype)
        c = self.num_features
        self.weight = fnp.ones((c,), dtype) if self.use_weight else None
        self.bias = fnp.zeros((c,), dtype) if self.use_bias else None

    def init_state(self) -> dict:
        """The initial running statistics: ``{"mean": zeros(C), "var": ones(C)}``."""
        c = self.num_features
        return {"mean": fnp.zeros((c,), self.dtype), "var": fnp.ones((c,), self.dtype)}

    def _check(self, x, state):
        shape = u.shape_of(x)
        if not shape or shape[0] != self.num_features:
            raise ValueError(f"BatchNorm: expected one example of shape (C={self.num_features}"
                             f", *spatial), got shape {shape}. Batch statistics come from "
                             f"the vmapped axis: use functrax.vmap(..., axis_name="
                             f"{self.axis_name or 'batch'!r}) over the batch.")
        if not isinstance(state, dict) or set(state) != {"mean", "var"} or any(
                u.shape_of(v) != (self.num_features,) for v in state.values()):
            raise ValueError("BatchNorm: state must be the dict bn.init_state() returns "
                             f"({{'mean', 'var'}} of shape ({self.num_features},)), got "
                             f"{state!r}.")

    def _batch_stats(self, xf, axes):
        mean = fnp.mean(xf, axis=axes) if axes else xf
        if self.axis_name is None:
            raise ValueError("BatchNorm: training=True takes statistics over the batch, so it "
                             "needs axis_name: build BatchNorm(..., axis_name='batch') and "
                             "call it inside functrax.vmap(..., axis_name='batch').")
        try:
            mean = lax.pmean(mean, self.axis_name)
            c = fnp.reshape(mean, mean.shape + (1,) * len(axes))
            sq = fnp.square(xf - c)
            var = lax.pmean(fnp.mean(sq, axis=axes) if axes else sq, self.axis_name)
        except NameError as e:
            raise ValueError(f"BatchNorm: axis_name={self.axis_name!r} is not bound: call the "
                             f"layer inside functrax.vmap(..., axis_name={self.axis_name!r}) "
                             f"(or pmap) over the batch ({e}).") from None
        return mean, var

    def __call__(self, x, state, *, training, key=None):
        """``(normalised x, new state)``; ``training`` (keyword) picks batch or running
        statistics."""
        self._check(x, state)
        xf = fnp.asarray(x).astype(_stat_dtype(x))
        axes = tuple(range(1, xf.ndim))
        if training:
            mean, var = self._batch_stats(xf, axes)
            m = self.momentum
            new_state = {k: (m * state[k] + (1 - m) * lax.stop_gradient(v)).astype(
                u.dtype_of(state[k])) for k, v in (("mean", mean), ("var", var))}
        else:
            mean, var = state["mean"].astype(xf.dtype), state["var"].astype(xf.dtype)
            new_state = state
        bshape = (self.num_features,) + (1,) * len(axes)
        y = (xf - fnp.reshape(mean, bshape)) * lax.rsqrt(fnp.reshape(var, bshape) + self.eps)
        if self.use_weight:
            y = y * fnp.reshape(self.weight, bshape)
        if self.use_bias:
            y = y + fnp.reshape(self.bias, bshape)
        return y.astype(_out_dtype(x, self.weight, self.bias)), new_state
