"""``Conv`` and ``ConvTranspose`` on one channel-first example ``(C, *spatial)``, with
1, 2 or 3 spatial dimensions (``Conv1d`` ... ``ConvTranspose3d`` fix that number).

Kernels are laid out ``(out_channels, in_channels // groups, *kernel_size)`` (lax's default
``OI...``); biases are ``(out_channels,)``.

>>> import functrax, functrax.numpy as fnp
>>> conv = Conv2d(3, 8, 3, padding="SAME", key=functrax.random.key(0))
>>> conv(fnp.ones((3, 5, 5))).shape
(8, 5, 5)
"""
from __future__ import annotations

import math
from typing import Any

from functrax import lax
from functrax import numpy as fnp
from functrax.nn import initializers
from functrax.nn.layers import _util as u
from functrax.nn.module import Module

__all__ = ["Conv", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose", "ConvTranspose1d",
           "ConvTranspose2d", "ConvTranspose3d"]


def _kernel_init():
    # fan_in = in_channels // groups * prod(kernel_size): the kernel's axis 1 times its window
    return initializers.lecun_normal(in_axis=1, out_axis=0)


def _init_params(self, layer, key, dtype, kernel_init, bias_init):
    wkey, bkey = u.split(u.check_key(layer, key), 2)
    shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
    self.weight = (kernel_init or _kernel_init())(wkey, shape, dtype)
    self.bias = bias_init(bkey, (self.out_channels,), dtype) if self.use_bias else None


def _common(self, layer, num_spatial_dims, in_channels, out_channels, kernel_size, stride,
            padding, dilation, groups, use_bias):
    n = self.num_spatial_dims = u.check_spatial_dims(layer, num_spatial_dims)
    self.in_channels = u.as_int(layer, "in_channels", in_channels)
    self.out_channels = u.as_int(layer, "out_channels", out_channels)
    self.kernel_size = u.as_tuple(layer, "kernel_size", kernel_size, n)
    self.stride = u.as_tuple(layer, "stride", stride, n)
    self.padding = u.as_padding(layer, padding, n)
    self.dilation = u.as_tuple(layer, "dilation", dilation, n)
    self.groups = u.as_int(layer, "groups", groups)
    self.use_bias = bool(use_bias)
    if self.in_channels % self.groups or self.out_channels % self.groups:
        raise ValueError(f"{layer}: groups={self.groups} must divide in_channels="
                         f"{self.in_channels} and out_channels={self.out_channels}.")


def _conv(x, w, bias, n, **kwargs):
    dt = fnp.result_type(x, w)
    y = lax.conv_general_dilated(fnp.asarray(x, dt)[None], fnp.asarray(w, dt), **kwargs)[0]
    return y if bias is None else y + fnp.reshape(bias, (-1,) + (1,) * n)


class Conv(Module):
    """An N-d convolution (cross-correlation) layer, as ``equinox.nn.Conv``.

    Args:
      num_spatial_dims: 1, 2 or 3.
      in_channels, out_channels: channel counts of the input and output.
      kernel_size, stride, dilation, input_dilation: an int or one int per spatial dim
        (``dilation`` dilates the kernel, ``input_dilation`` the input, as lax's rhs/lhs
        dilations).
      padding: ``"SAME"``, ``"SAME_LOWER"``, ``"VALID"``, an int, ints or (low, high)
        pairs per spatial dim (default 0).
      groups: ``feature_group_count``: in and out channels are split into ``groups`` groups.
      use_bias: add a learnable ``(out_channels,)`` bias.
      key: the PRNG key initialising the parameters (keyword, required).
      dtype: the parameters' dtype (default float32).
      kernel_init: default ``lecun_normal`` with fan-in ``in_channels // groups *
        prod(kernel_size)``. bias_init: default ``zeros``.

    Returns (when called on ``x`` of shape ``(in_channels, *spatial)``):
      an array of shape ``(out_channels, *out_spatial)``.

    Raises:
      ValueError: for bad hyperparameters, a missing key, or an input of the wrong rank or
        channel count (batched inputs need ``functrax.vmap``).

    >>> import functrax, functrax.numpy as fnp
    >>> conv = Conv(1, 2, 4, 3, key=functrax.random.key(0))
    >>> conv(fnp.ones((2, 10))).shape
    (4, 8)
    """
    weight: Any
    bias: Any
    num_spatial_dims: int
    in_channels: int
    out_channels: int
    kernel_size: tuple
    stride: tuple
    padding: Any
    dilation: tuple
    input_dilation: tuple
    groups: int
    use_bias: bool

    def __init__(self, num_spatial_dims, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, dilation=1, groups=1, use_bias=True, *, input_dilation=1,
                 key=None, dtype=fnp.float32, kernel_init=None,
                 bias_init=initializers.zeros):
        layer = type(self).__name__
        _common(self, layer, num_spatial_dims, in_channels, out_channels, kernel_size,
                stride, padding, dilation, groups, use_bias)
        self.input_dilation = u.as_tuple(layer, "input_dilation", input_dilation,
                                         self.num_spatial_dims)
        _init_params(self, layer, key, dtype, kernel_init, bias_init)

    def __call__(self, x, *, key=None):
        """The convolution of one example ``x`` of shape ``(in_channels, *spatial)``."""
        n = self.num_spatial_dims
        u.check_channel_first(type(self).__name__, x, n, self.in_channels)
        return _conv(x, self.weight, self.bias, n,
                     window_strides=self.stride, padding=self.padding,
                     lhs_dilation=self.input_dilation, rhs_dilation=self.dilation,
                     feature_group_count=self.groups)


def _transpose_pads(k, s, d, padding, output_padding):
    """(low, high) padding of the dilated-input convolution computing a transposed one."""
    k = d * (k - 1) + 1  # the dilated kernel
    if padding == "VALID":     # as lax.conv_transpose: out = in * s + max(k - s, 0)
        lo, hi = k - 1, s - 1 + max(k - s, 0)
    elif padding == "SAME":    # as lax.conv_transpose: out = in * s
        total = k + s - 2
        lo = k - 1 if s > k - 1 else math.ceil(total / 2)
        hi = total - lo
    else:                      # the forward convolution's padding (as PyTorch)
        lo, hi = k - 1 - padding[0], k - 1 - padding[1]
    return lo, hi + output_padding


class ConvTranspose(Module):
    """An N-d transposed convolution (the gradient of a convolution with respect to its
    input; a "fractionally strided" convolution), as ``equinox.nn.ConvTranspose``.

    Output size per spatial dim: ``(in - 1) * stride - lo - hi + dilation * (k - 1) + 1 +
    output_padding`` for int / pair paddings ``(lo, hi)`` (the forward convolution's padding,
    as PyTorch); ``"SAME"`` gives ``in * stride`` and ``"VALID"`` ``in * stride + max(k_eff -
    stride, 0)`` (as ``lax.conv_transpose`` and ``flax.linen.ConvTranspose``).

    Args:
      num_spatial_dims, in_channels, out_channels, kernel_size, stride, padding, dilation,
        groups, use_bias, key, dtype, kernel_init, bias_init: as :class:`Conv` (``stride``
        dilates the input, ``dilation`` the kernel).
      output_padding: extra output elements at the high end of each spatial dim (smaller
        than ``stride`` or ``dilation``), to reach sizes a strided convolution maps from.

    Returns (when called on ``x`` of shape ``(in_channels, *spatial)``):
      an array of shape ``(out_channels, *out_spatial)``.

    Raises:
      ValueError: for bad hyperparameters, a missing key or a badly shaped input.

    >>> import functrax, functrax.numpy as fnp
    >>> up = ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1,
    ...                      key=functrax.random.key(0))
    >>> up(fnp.ones((4, 5, 5))).shape
    (2, 10, 10)
    """
    weight: Any
    bias: Any
    num_spatial_dims: int
    in_channels: int
    out_channels: int
    kernel_size: tuple
    stride: tuple
    padding: Any
    output_padding: tuple
    dilation: tuple
    groups: int
    use_bias: bool

    def __init__(self, num_spatial_dims, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, output_padding=0, dilation=1, groups=1, use_bias=True, *,
                 key=None, dtype=fnp.float32, kernel_init=None, bias_init=initializers.zeros):
        layer = type(self).__name__
        _common(self, layer, num_spatial_dims, in_channels, out_channels, kernel_size,
                stride, padding, dilation, groups, use_bias)
        if self.padding == "SAME_LOWER":
            raise ValueError(f"{layer}: padding='SAME_LOWER' is not defined for transposed "
                             "convolutions; use 'SAME', 'VALID', ints or (low, high) pairs.")
        self.output_padding = u.as_tuple(layer, "output_padding", output_padding,
                                         self.num_spatial_dims, minimum=0)
        for o, s, d in zip(self.output_padding, self.stride, self.dilation):
            if o >= max(s, d):
                raise ValueError(f"{layer}: output_padding={self.output_padding} must be "
                                 f"smaller than stride={self.stride} or dilation="
                                 f"{self.dilation} in every spatial dim.")
        _init_params(self, layer, key, dtype, kernel_init, bias_init)

    def __call__(self, x, *, key=None):
        """The transposed convolution of one example ``x`` of shape ``(in_channels, *sp)``."""
        n = self.num_spatial_dims
        u.check_channel_first(type(self).__name__, x, n, self.in_channels)
        pads = tuple(_transpose_pads(k, s, d, self.padding if isinstance(self.padding, str)
                                     else self.padding[i], o)
                     for i, (k, s, d, o) in enumerate(zip(self.kernel_size, self.stride,
                                                          self.dilation,
                                                          self.output_padding)))
        w = fnp.flip(self.weight, axis=tuple(range(2, n + 2)))
        return _conv(x, w, self.bias, n, window_strides=(1,) * n,
                     padding=pads, lhs_dilation=self.stride, rhs_dilation=self.dilation,
                     feature_group_count=self.groups)


def _fixed(base, n):
    return u.fixed_dims(base, n, __name__)


Conv1d, Conv2d, Conv3d = (_fixed(Conv, n) for n in (1, 2, 3))
ConvTranspose1d, ConvTranspose2d, ConvTranspose3d = (_fixed(ConvTranspose, n)
                                                     for n in (1, 2, 3))
