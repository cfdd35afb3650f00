"""Parameter initializers (as ``jax.nn.initializers``).

Each factory returns ``init(key, shape, dtype=float32) -> Array``; random ones draw from
``functrax.random`` with the given PRNG key.

>>> from functrax import random
>>> from functrax.nn import initializers
>>> w = initializers.glorot_normal()(random.PRNGKey(0), (3, 4))
>>> w.shape, w.dtype
((3, 4), dtype('float32'))
"""
from __future__ import annotations

import math
import operator
from typing import Protocol

import numpy as np

from functrax import dtypes
from functrax import numpy as fnp

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
    "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
    "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
    "variance_scaling", "xavier_normal", "xavier_uniform", "zeros",
]

_FLOAT = np.float64  # JAX's jnp.float_: float32 unless x64 is enabled


class Initializer(Protocol):
    """What every initializer is: ``init(key, shape, dtype) -> Array``."""

    def __call__(self, key, shape, dtype=_FLOAT): ...
# stddev of a standard normal truncated to (-2, 2)
_TRUNC_STD = 0.87962566103423978


def _random():
    try:
        from functrax import random
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError(f"functrax.nn.initializers needs functrax.random ({e}).") from e
    return random


def _shape(name, shape):
    try:
        return tuple(operator.index(d) for d in
                     ((shape,) if isinstance(shape, (int, np.integer)) else shape))
    except TypeError:
        raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}.") from None


def _dtype(name, dtype, *, inexact=True):
    dt = dtypes.canonicalize_dtype(dtype)
    if inexact and not dtypes.is_inexact(dt):
        raise TypeError(f"{name}: dtype must be a floating dtype, got {dt.name}. Pass e.g. "
                        "dtype=functrax.numpy.float32.")
    return dt


def zeros(key, shape, dtype=_FLOAT):
    """All zeros (``key`` is unused).

    >>> zeros(None, (2,))
    Array([0., 0.], dtype=float32)
    """
    return fnp.zeros(_shape("zeros", shape), _dtype("zeros", dtype, inexact=False))


def ones(key, shape, dtype=_FLOAT):
    """All ones (``key`` is unused)."""
    return fnp.ones(_shape("ones", shape), _dtype("ones", dtype, inexact=False))


def constant(value, dtype=_FLOAT):
    """An initializer returning arrays filled with ``value``.

    >>> constant(-7)(None, (2,))
    Array([-7., -7.], dtype=float32)
    """
    def init(key, shape, dtype=dtype):
        return fnp.full(_shape("constant", shape), value,
                        dtype=_dtype("constant", dtype, inexact=False))
    return init


def uniform(scale=1e-2, dtype=_FLOAT):
    """An initializer drawing uniformly from ``[0, scale)``."""
    def init(key, shape, dtype=dtype):
        dt = _dtype("uniform", dtype)
        return _random().uniform(key, _shape("uniform", shape), dt) * fnp.array(scale, dt)
    return init


def normal(stddev=1e-2, dtype=_FLOAT):
    """An initializer drawing from a normal distribution with mean 0 and ``stddev``."""
    def init(key, shape, dtype=dtype):
        dt = _dtype("normal", dtype)
        return _random().normal(key, _shape("normal", shape), dt) * fnp.array(stddev, dt)
    return init


def truncated_normal(stddev=1e-2, dtype=_FLOAT, lower=-2.0, upper=2.0):
    """An initializer drawing ``stddev * z`` for ``z`` a standard normal truncated to
    ``[lower, upper]`` (so the result's stddev is below ``stddev``)."""
    def init(key, shape, dtype=dtype):
        dt = _dtype("truncated_normal", dtype)
        z = _random().truncated_normal(key, lower, upper, _shape("truncated_normal", shape), dt)
        return z * fnp.array(stddev, dt)
    return init


def _axis_size(shape, axis, what):
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    for a in axes:
        if not -len(shape) <= a < len(shape):
            raise ValueError(f"variance_scaling: {what}={axis!r} is out of bounds for a "
                             f"weights shape {shape}.")
    return math.prod(shape[a] for a in axes)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """(fan_in, fan_out) of a weights ``shape``: the in/out sizes times the receptive field
    (all the other non-batch axes)."""
    if len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         f"weights tensor (shape {shape}). Must be at least 2D.")
    in_size = _axis_size(shape, in_axis, "in_axis")
    out_size = _axis_size(shape, out_axis, "out_axis")
    batch_size = _axis_size(shape, batch_axis, "batch_axis")
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=_FLOAT):
    """An initializer whose samples have variance ``scale / n``.

    Args:
      scale: scaling factor (positive).
      mode: ``"fan_in"`` (``n`` = inputs), ``"fan_out"`` (outputs), ``"fan_avg"`` (their
        mean) or ``"fan_geo_avg"`` (their geometric mean); fans count the receptive field
        (every axis but in/out/batch).
      distribution: ``"truncated_normal"`` (normal truncated to 2 stddevs, rescaled),
        ``"normal"`` or ``"uniform"``; complex dtypes draw in the complex plane (a disk, or a
        modulus-truncated normal), as JAX.
      in_axis, out_axis, batch_axis: axes (ints or sequences) of the weights shape.
      dtype: default dtype of the result.

    >>> from functrax import random
    >>> init = variance_scaling(2.0, "fan_in", "normal")
    >>> init(random.PRNGKey(0), (4, 3)).shape
    (4, 3)
    """
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution}")

    def init(key, shape, dtype=dtype):
        shape = _shape("variance_scaling", shape)
        dt = _dtype("variance_scaling", dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out,
                       "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        # as JAX: the variance as an array of the dtype, its square root computed in it
        variance = fnp.array(scale / denominator, dt)
        rnd = _random()
        real = dtypes.is_float(dt)
        if distribution == "truncated_normal":
            if real:
                stddev = fnp.sqrt(variance) / fnp.array(_TRUNC_STD, dt)
                return rnd.truncated_normal(key, -2, 2, shape, dt) * stddev
            stddev = fnp.sqrt(variance) / fnp.array(_COMPLEX_TRUNC_STD, dt)
            return _complex_truncated_normal(key, 2, shape, dt) * stddev
        if distribution == "normal":
            return rnd.normal(key, shape, dt) * fnp.sqrt(variance)
        if real:
            return rnd.uniform(key, shape, dt, -1) * fnp.sqrt(3 * variance)
        return _complex_uniform(key, shape, dt) * fnp.sqrt(variance)
    return init


# stddev of a standard complex normal whose modulus is truncated to 2
_COMPLEX_TRUNC_STD = 0.95311164380491208


def _real_of(dt):
    return np.zeros((), dt).real.dtype


def _complex_uniform(key, shape, dtype):
    """Uniform in a disk of the complex plane: zero mean, unit variance."""
    rnd = _random()
    key_r, key_theta = rnd.split(key)
    real = _real_of(dtype)
    r = fnp.sqrt(2 * rnd.uniform(key_r, shape, real)).astype(dtype)
    theta = 2 * np.pi * rnd.uniform(key_theta, shape, real).astype(dtype)
    return r * fnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
    """A centred complex normal (unit variance before truncation) whose modulus is at most
    ``upper``."""
    rnd = _random()
    key_r, key_theta = rnd.split(key)
    real = _real_of(dtype)
    t = (1 - fnp.exp(fnp.array(-(upper ** 2), dtype))) * \
        rnd.uniform(key_r, shape, real).astype(dtype)
    r = fnp.sqrt(-fnp.log(1 - t))
    theta = 2 * np.pi * rnd.uniform(key_theta, shape, real).astype(dtype)
    return r * fnp.exp(1j * theta)


def orthogonal(scale=1.0, column_axis=-1, dtype=_FLOAT):
    """An initializer of (semi-)orthogonal matrices: the columns along ``column_axis`` are
    orthonormal (the rows, if there are fewer of them), times ``scale``.

    >>> from functrax import random
    >>> w = orthogonal()(random.PRNGKey(0), (3, 3))
    >>> bool(abs(w @ w.T - fnp.eye(3)).max() < 1e-5)
    True
    """
    def init(key, shape, dtype=dtype):
        shape = _shape("orthogonal", shape)
        dt = _dtype("orthogonal", dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        ax = column_axis % len(shape)
        n_rows, n_cols = math.prod(shape) // shape[ax], shape[ax]
        matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        a = _random().normal(key, matrix_shape, dt)
        q, r = fnp.linalg.qr(a)
        q = q * fnp.sign(fnp.diagonal(r))[None, :]  # a uniform (Haar) distribution
        if n_rows < n_cols:
            q = q.T
        q = fnp.reshape(q, tuple(d for i, d in enumerate(shape) if i != ax) + (shape[ax],))
        return fnp.moveaxis(q, -1, ax) * fnp.array(scale, dt)
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=_FLOAT):
    """The delta-orthogonal initializer of convolution kernels (3-D to 5-D): zeros but for an
    orthogonal matrix at the centre of the spatial window (Xiao et al., 2018)."""
    def init(key, shape, dtype=dtype):
        shape = _shape("delta_orthogonal", shape)
        dt = _dtype("delta_orthogonal", dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return fnp.zeros(shape, dt).at[centre].set(ortho)
    return init


def _named(scale, mode, distribution, doc):
    def factory(in_axis=-2, out_axis=-1, batch_axis=(), dtype=_FLOAT):
        return variance_scaling(scale, mode, distribution, in_axis=in_axis,
                                out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)
    factory.__doc__ = doc + (f" (``variance_scaling({scale}, {mode!r}, "
                             f"{distribution!r})``).")
    return factory


glorot_uniform = _named(1.0, "fan_avg", "uniform", "Glorot/Xavier uniform initializer")
glorot_normal = _named(1.0, "fan_avg", "truncated_normal", "Glorot/Xavier normal initializer")
lecun_uniform = _named(1.0, "fan_in", "uniform", "LeCun uniform initializer")
lecun_normal = _named(1.0, "fan_in", "truncated_normal", "LeCun normal initializer")
he_uniform = _named(2.0, "fan_in", "uniform", "He/Kaiming uniform initializer")
he_normal = _named(2.0, "fan_in", "truncated_normal", "He/Kaiming normal initializer")
for _n in ("glorot_uniform", "glorot_normal", "lecun_uniform", "lecun_normal", "he_uniform",
           "he_normal"):
    globals()[_n].__name__ = globals()[_n].__qualname__ = _n
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal
del _n
