"""Continuous samplers built by transforming uniform or normal draws, each following
``jax.random``'s algorithm step for step: cauchy, lognormal, pareto, weibull_min, rayleigh,
maxwell, double_sided_maxwell, triangular and wald.
"""
from __future__ import annotations

import numpy as np

import functrax.numpy as fnp
from functrax import dtypes, lax
from functrax.numpy.promotion import check_arraylike
from functrax.random import float_math as fm
from functrax.random.distributions import normal_real, uniform_real, normal, rademacher
from functrax.random.keys import check_key
from functrax.random.prng import canonicalize_shape
from functrax.random.sampler_args import (
    cast_to, const_like, dtype_arg, float_dtype, param_shape, sampler_args, shape_of, split_keys,
)


__all__ = ["cauchy", "lognormal", "pareto", "weibull_min", "rayleigh", "maxwell",
           "double_sided_maxwell", "triangular", "wald"]


def cauchy(key, shape=(), dtype=float):
    """Standard Cauchy samples ``tan(pi * (u - 1/2))``.

    >>> from functrax.random import PRNGKey
    >>> cauchy(PRNGKey(0), (2,)).shape
    (2,)
    """
    key = check_key("cauchy", key)
    dtype = float_dtype("cauchy", dtype)
    shape = canonicalize_shape("cauchy", shape)
    u = uniform_real(key, shape, dtype, np.asarray(dtypes.finfo(dtype).eps, dtype), 1.0)
    return lax.tan(lax.mul(np.asarray(np.pi, dtype), lax.sub(u, np.asarray(0.5, dtype))))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=float):
    """Log-normal samples ``exp(sigma * n)`` for standard normal ``n``.

    Args:
      key: a PRNG key.
      sigma: the standard deviation of the underlying normal (broadcastable to ``shape``).
      shape: the result shape; default ``sigma``'s shape.
      dtype: a float (or complex) dtype.
    """
    key = check_key("lognormal", key)
    dtype = dtype_arg("lognormal", dtype, "fcV", "a float or complex dtype")
    check_arraylike("lognormal", sigma)
    shape = param_shape("lognormal", shape, sigma)
    sigma = cast_to(sigma, dtype, shape)
    return lax.exp(lax.mul(normal(key, shape, dtype), sigma))


def pareto(key, b, shape=None, dtype=float):
    """Pareto samples of index ``b`` on ``[1, inf)``: ``exp(e / b)``, ``e`` exponential.

    Args:
      key: a PRNG key.
      b: the shape parameter (> 0), broadcastable to ``shape``.
      shape: the result shape; default ``b``'s shape.
      dtype: a float dtype.
    """
    key, dtype, shape = sampler_args("pareto", key, dtype, shape, b)
    b = cast_to(b, dtype, shape)
    e = lax.neg(lax.log1p(lax.neg(uniform_real(key, shape, dtype, 0.0, 1.0))))
    return lax.exp(lax.div(e, b))


def weibull_min(key, scale, concentration, shape=(), dtype=float):
    """Weibull samples ``scale * (-log1p(-u)) ** (1 / concentration)``.

    As in JAX, the result has the broadcast shape of ``shape``, ``scale`` and
    ``concentration``.
    """
    key = check_key("weibull_min", key)
    dtype = float_dtype("weibull_min", dtype)
    shape = canonicalize_shape("weibull_min", shape)
    check_arraylike("weibull_min", scale, concentration)
    u = uniform_real(key, shape, dtype, 0.0, 1.0)
    return fnp.power(-fnp.log1p(-u), 1.0 / fnp.asarray(concentration)) * scale


def rayleigh(key, scale, shape=None, dtype=float):
    """Rayleigh samples ``scale * sqrt(-2 log(u))``.

    Args:
      key: a PRNG key.
      scale: the scale (> 0), broadcastable to ``shape``.
      shape: the result shape; default ``scale``'s shape.
      dtype: a float dtype.
    """
    key, dtype, shape = sampler_args("rayleigh", key, dtype, shape, scale)
    u = uniform_real(key, shape, dtype, 0.0, 1.0)
    scale = cast_to(scale, dtype, shape)
    return lax.mul(scale, lax.sqrt(lax.mul(fm.log(u), np.asarray(-2.0, dtype))))


def maxwell(key, shape=(), dtype=float):
    """One-sided Maxwell samples: the norm of three standard normals."""
    key = check_key("maxwell", key)
    dtype = float_dtype("maxwell", dtype)
    shape = canonicalize_shape("maxwell", shape)
    return _maxwell(key, shape, dtype)


def _maxwell(key, shape, dtype):
    return fnp.linalg.norm(normal_real(key, (*shape, 3), dtype), axis=-1)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=float):
    """Double-sided Maxwell samples ``sign * maxwell * scale + loc``.

    As in JAX, the sample shape is ``shape + broadcast(loc, scale).shape`` (with
    ``shape = ()`` meaning the parameters' broadcast shape, which is then repeated).
    """
    key = check_key("double_sided_maxwell", key)
    dtype = float_dtype("double_sided_maxwell", dtype)
    shape = canonicalize_shape("double_sided_maxwell", shape)
    check_arraylike("double_sided_maxwell", loc, scale)
    params_shape = tuple(np.broadcast_shapes(shape_of(loc), shape_of(scale)))
    if not shape:
        shape = params_shape
    shape = shape + params_shape
    maxwell_key, rademacher_key = split_keys(key, 2)
    rvs = _maxwell(maxwell_key, shape, dtype)
    sign = rademacher(rademacher_key, shape, dtype)
    return sign * rvs * scale + loc


def triangular(key, left, mode, right, shape=None, dtype=float):
    """Triangular samples on ``[left, right]`` with peak at ``mode`` (inverse CDF).

    Args:
      key: a PRNG key.
      left, mode, right: the bounds and the mode (``left <= mode <= right``).
      shape: the result shape; default: the broadcast shape of the parameters.
      dtype: a float dtype.
    """
    key, dtype, shape = sampler_args("triangular", key, dtype, shape, left, mode, right)
    left, mode, right = (cast_to(x, dtype, shape) for x in (left, mode, right))
    width = lax.sub(right, left)
    fc = lax.div(lax.sub(mode, left), width)
    u = uniform_real(key, shape, dtype, 0.0, 1.0)
    out1 = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(mode, left))))
    out2 = lax.sub(right, lax.sqrt(lax.mul(lax.mul(lax.sub(const_like(u, 1.0), u), width),
                                           lax.sub(right, mode))))
    return lax.select(lax.lt(u, fc), out1, out2)


def wald(key, mean, shape=None, dtype=float):
    """Wald (inverse Gaussian, unit shape) samples with the given ``mean``
    (Michael-Schucany-Haas transformation).
    """
    key, dtype, shape = sampler_args("wald", key, dtype, shape, mean)
    k1, k2 = split_keys(key, 2)
    mean = cast_to(mean, dtype, shape)
    v = normal_real(k1, shape, dtype)
    z = uniform_real(k2, shape, dtype, 0.0, 1.0)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(lax.add(lax.mul(lax.mul(const_like(y, 4.0), mean), y),
                                 lax.mul(mean_sq, y_sq)))
    x = lax.sub(lax.add(mean, lax.div(lax.mul(mean_sq, y), const_like(y, 2.0))),
                lax.mul(lax.div(mean, const_like(y, 2.0)), sqrt_term))
    return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))
