"""``MaxPool`` and ``AvgPool`` over the spatial dims of one channel-first example
``(C, *spatial)`` (``lax.reduce_window``); ``MaxPool2d`` etc. fix the number of spatial dims.

>>> import functrax.numpy as fnp
>>> MaxPool2d(2, stride=2)(fnp.ones((3, 4, 4))).shape
(3, 2, 2)
"""
from __future__ import annotations

import math

import numpy as np

from functrax import dtypes, lax
from functrax import numpy as fnp
from functrax.nn.layers import _util as u
from functrax.nn.module import Module

__all__ = ["AvgPool", "AvgPool1d", "AvgPool2d", "AvgPool3d", "MaxPool", "MaxPool1d",
           "MaxPool2d", "MaxPool3d"]


class _Pool(Module):
    num_spatial_dims: int
    kernel_size: tuple
    stride: tuple
    padding: object

    def __init__(self, num_spatial_dims, kernel_size, stride=1, padding=0):
        layer = type(self).__name__
        n = self.num_spatial_dims = u.check_spatial_dims(layer, num_spatial_dims)
        self.kernel_size = u.as_tuple(layer, "kernel_size", kernel_size, n)
        self.stride = u.as_tuple(layer, "stride", stride, n)
        self.padding = u.as_padding(layer, padding, n)

    def _window(self, x):
        """(window, strides, pads) of ``reduce_window`` on the whole ``(C, *spatial)``."""
        u.check_channel_first(type(self).__name__, x, self.num_spatial_dims, None)
        pads = self.padding
        if isinstance(pads, str):
            pads = lax.padtype_to_pads(u.shape_of(x)[1:], self.kernel_size, self.stride, pads)
        return (1,) + self.kernel_size, (1,) + self.stride, ((0, 0),) + tuple(map(tuple, pads))


class MaxPool(_Pool):
    """The maximum over each window (padding counts as ``-inf``).

    Args:
      num_spatial_dims: 1, 2 or 3.
      kernel_size: the window, an int or one int per spatial dim.
      stride: the window step (default 1, as Equinox; pass ``stride=kernel_size`` for
        non-overlapping windows).
      padding: ``"SAME"``, ``"VALID"``, an int, ints or (low, high) pairs (default 0).

    Returns (when called on ``x`` of shape ``(C, *spatial)``):
      an array of shape ``(C, *out_spatial)``.

    Raises:
      ValueError: for bad hyperparameters or an input of the wrong rank.

    >>> import functrax.numpy as fnp
    >>> MaxPool(1, 2, stride=2)(fnp.array([[1.0, 3.0, 2.0, 0.0]]))
    Array([[3., 2.]], dtype=float32)
    """

    def __call__(self, x, *, key=None):
        """The pooled ``x``."""
        window, strides, pads = self._window(x)
        dt = u.dtype_of(x)
        init = -np.inf if dtypes.is_inexact(dt) else (
            False if dt == np.bool_ else dtypes.iinfo(dt).min)
        return lax.reduce_window(x, fnp.array(init, dt), lax.max, window, strides, pads)


class AvgPool(_Pool):
    """The mean over each window.

    Args:
      num_spatial_dims, kernel_size, stride, padding: as :class:`MaxPool`.
      count_include_pad: divide by the full window size (padding counts as zeros; the
        default, as PyTorch, Flax and Equinox), or, when False, by the number of input
        elements in each window.

    Returns (when called on ``x`` of shape ``(C, *spatial)``):
      an array of shape ``(C, *out_spatial)``.

    Raises:
      ValueError: for bad hyperparameters or an input of the wrong rank.

    >>> import functrax.numpy as fnp
    >>> AvgPool(1, 2, stride=2)(fnp.array([[1.0, 3.0, 2.0, 0.0]]))
    Array([[2., 1.]], dtype=float32)
    """
    count_include_pad: bool

    def __init__(self, num_spatial_dims, kernel_size, stride=1, padding=0,
                 count_include_pad=True):
        super().__init__(num_spatial_dims, kernel_size, stride, padding)
        self.count_include_pad = bool(count_include_pad)

    def __call__(self, x, *, key=None):
        """The pooled ``x``."""
        window, strides, pads = self._window(x)
        dt = u.dtype_of(x)
        if not dtypes.is_inexact(dt):
            raise TypeError(f"{type(self).__name__}: expected a floating input, got dtype {dt}"
                            "; cast it with x.astype(functrax.numpy.float32).")
        sums = lax.reduce_window(x, fnp.array(0, dt), lax.add, window, strides, pads)
        if self.count_include_pad:
            return sums / fnp.array(math.prod(self.kernel_size), dt)
        ones = fnp.ones((1,) + u.shape_of(x)[1:], dt)
        counts = lax.reduce_window(ones, fnp.array(0, dt), lax.add, window, strides, pads)
        return sums / counts


def _fixed(base, n):
    return u.fixed_dims(base, n, __name__)


MaxPool1d, MaxPool2d, MaxPool3d = (_fixed(MaxPool, n) for n in (1, 2, 3))
AvgPool1d, AvgPool2d, AvgPool3d = (_fixed(AvgPool, n) for n in (1, 2, 3))
