"""Gamma-based samplers: gamma, loggamma, beta, dirichlet, chisquare, f, t,
generalized_normal and ball, following ``jax.random`` step for step.

``gamma`` is Marsaglia and Tsang's rejection method, one ``while_loop`` per element, each
element drawing from its own key (``split(key, a.size)``); for ``a < 1`` the sample of
``a + 1`` is boosted by ``u ** (1 / a)`` (in log space for ``loggamma``). The elements run
together under ``vmap``, which keeps each element's draws independent of the others.

Derivatives with respect to ``a`` are implicit reparameterization gradients (as JAX's
``random_gamma_p`` JVP): ``d sample / d a = -(dF/da) / (dF/dx)`` for the gamma CDF ``F``
(``lax.random_gamma_grad``, a primitive computed by
``functrax/lowering/numpy/special_igamma.py``), a ``custom_jvp`` around the sampler.
Differences from JAX: the keys, uniforms, normals and float32 logs are JAX's (XLA:CPU's
log polynomial), but ``pow`` and ``lgamma``/``digamma`` are numpy's, so values are not
guaranteed bit-equal to JAX's (no reference vectors exist for these samplers; they are
tested statistically). The gradient's series/continued-fraction loops stop per element,
like XLA's.
"""
from __future__ import annotations

import math
import operator

import numpy as np

import functrax.numpy as fnp
from functrax import core, dtypes, lax
from functrax.lax import random_gamma_grad
from functrax.core import Tracer
from functrax.numpy.promotion import check_arraylike
from functrax.random import float_math as fm
from functrax.random.distributions import normal_real, uniform_real, rademacher
from functrax.random.keys import check_key, split_key
from functrax.random.prng import canonicalize_shape
from functrax.transforms import custom_jvp, library_jit, vmap
from functrax.random.sampler_args import (
    cast_to, check_shape, float_dtype, param_shape, sampler_args, shape_of, split_keys,
)

__all__ = ["gamma", "loggamma", "beta", "dirichlet", "chisquare", "f", "t",
           "generalized_normal", "ball"]


def _c(dtype, v):
    return np.asarray(v, dtype)


def _gamma_one(key, alpha, log_space):
    """One Gamma(alpha) sample (Marsaglia-Tsang), or its log, from one key."""
    dt = core.get_aval(alpha).dtype
    one, zero = _c(dt, 1.0), _c(dt, 0.0)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, _c(dt, 1.0 / 3.0))
    c = lax.div(_c(dt, 1.0 / 3.0), lax.sqrt(d))

    def accepted(state):
        _, x2, v, u = state
        squeeze = lax.ge(u, lax.sub(one, lax.mul(_c(dt, 0.0331), lax.mul(x2, x2))))
        log_test = lax.ge(fm.log(u), lax.add(lax.mul(x2, _c(dt, 0.5)),
                                             lax.mul(d, lax.add(lax.sub(one, v), fm.log(v)))))
        return lax.bitwise_and(squeeze, log_test)

    def next_xv(kxv):
        k, sub = split_keys(kxv[0], 2)
        x = normal_real(sub, (), dt)
        return k, x, lax.add(one, lax.mul(x, c))

    def propose(state):
        k, x_key, u_key = split_keys(state[0], 3)
        _, x, v = lax.while_loop(lambda kxv: lax.le(kxv[2], zero), next_xv,
                                 (x_key, zero, _c(dt, -1.0)))
        u = uniform_real(u_key, (), dt, 0.0, 1.0)
        return k, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

    key, subkey = split_keys(key, 2)
    # the initial state fails the test, so the loop proposes at least once
    _, _, v, _ = lax.while_loop(accepted, propose, (key, zero, one, _c(dt, 2.0)))
    inv_alpha = lax.div(one, alpha_orig)
    if log_space:
        u = uniform_real(subkey, (), dt, 0.0, 1.0)
        log_samples = lax.log1p(lax.neg(u))  # -exponential(subkey)
        skip = lax.bitwise_or(boost_mask, lax.eq(log_samples, zero))
        log_boost = lax.select(skip, zero, lax.mul(log_samples, inv_alpha))
        return lax.add(lax.add(fm.log(d), fm.log(v)), log_boost)
    samples = lax.sub(one, uniform_real(subkey, (), dt, 0.0, 1.0))
    boost = lax.select(boost_mask, one, lax.pow(samples, inv_alpha))
    return lax.mul(lax.mul(d, v), boost)


def _gamma_sample(key, a, log_space):
    """Gamma samples (or their logs) for every element of ``a``: element ``i`` uses key
    ``split(key, a.size)[i]`` (jitted, as JAX's ``_gamma``: traced once per shape)."""
    return _gamma_sample_jit(key, a, log_space)


def _gamma_sample_impl(key, a, log_space):
    aval = core.get_aval(a)
    n = math.prod(aval.shape)
    if n == 0:
        return lax.full(aval.shape, 0, aval.dtype)
    keys = split_key(key, (n,))
    flat = lax.reshape(a, (n,))
    out = vmap(lambda k, al: _gamma_one(k, al, log_space))(keys, flat)
    return lax.reshape(out, aval.shape)


_gamma_sample_jit = library_jit(_gamma_sample_impl, static_argnums=(2,))


def _gamma_grad(sample, a, log_space):
    """``d sample / d a`` at fixed quantile (``d log(sample) / d a`` in log space)."""
    if not log_space:
        return random_gamma_grad(a, sample)
    x = lax.exp(sample)
    x = lax.select(lax.eq(x, lax.full_like(x, 0.0)),
                   lax.full_like(x, float(dtypes.finfo(core.get_aval(x).dtype).tiny)), x)
    return lax.div(random_gamma_grad(a, x), x)


_gamma_reparam = custom_jvp(_gamma_sample, nondiff_argnums=(2,))


@_gamma_reparam.defjvp
def _gamma_reparam_jvp(log_space, primals, tangents):
    key, a = primals
    ans = _gamma_reparam(key, a, log_space)
    return ans, lax.mul(tangents[1], _gamma_grad(ans, a, log_space))


def _gamma(name, key, a, shape, dtype, log_space):
    key, dtype, shape = sampler_args(name, key, dtype, shape, a)
    return _gamma_reparam(key, cast_to(a, dtype, shape), log_space)


def gamma(key, a, shape=None, dtype=float):
    """Standard Gamma(``a``, 1) samples (density ``x**(a-1) e**-x / Gamma(a)``, ``x > 0``).

    Differentiable in ``a`` (implicit reparameterization, as JAX).

    Args:
      key: a PRNG key.
      a: the shape parameter (> 0), broadcastable to ``shape``.
      shape: the result shape; default ``a``'s shape.
      dtype: a float dtype.
    Returns:
      An array of ``shape`` and ``dtype``. Divide by a rate (or multiply by a scale) for
      other Gamma distributions.

    >>> from functrax.random import PRNGKey
    >>> gamma(PRNGKey(0), 2.0, (1000,)).mean() > 1.8
    Array(True, dtype=bool)
    """
    return _gamma("gamma", key, a, shape, dtype, False)


def loggamma(key, a, shape=None, dtype=float):
    """Logarithms of Gamma(``a``) samples, computed in log space (accurate for small ``a``,
    where ``gamma`` underflows to 0): ``exp(loggamma(...))`` matches ``gamma(...)``.

    >>> from functrax.random import PRNGKey
    >>> bool(loggamma(PRNGKey(0), 1e-3, (4,)).min() < -100)
    True
    """
    return _gamma("loggamma", key, a, shape, dtype, True)


def beta(key, a, b, shape=None, dtype=float):
    """Beta(``a``, ``b``) samples in [0, 1], as ``Ga / (Ga + Gb)`` of two log-space gammas.

    Args:
      key: a PRNG key.
      a, b: the positive shape parameters, broadcastable to ``shape``.
      shape: the result shape; default: the broadcast shape of ``a`` and ``b``.
      dtype: a float dtype.

    >>> from functrax.random import PRNGKey
    >>> x = beta(PRNGKey(0), 2.0, 5.0, (2000,))
    >>> bool(abs(float(x.mean()) - 2 / 7) < 0.02)
    True
    """
    key, dtype, shape = sampler_args("beta", key, dtype, shape, a, b)
    a, b = cast_to(a, dtype, shape), cast_to(b, dtype, shape)
    key_a, key_b = split_keys(key, 2)
    log_ga = _gamma_reparam(key_a, a, True)
    log_gb = _gamma_reparam(key_b, b, True)
    log_max = lax.max(log_ga, log_gb)
    ga = lax.exp(lax.sub(log_ga, log_max))
    gb = lax.exp(lax.sub(log_gb, log_max))
    return lax.div(ga, lax.add(ga, gb))


def dirichlet(key, alpha, shape=None, dtype=float):
    """Dirichlet(``alpha``) samples: nonnegative vectors along the last axis summing to 1.

    Args:
      key: a PRNG key.
      alpha: concentrations of shape ``(..., n)``.
      shape: the batch shape (the result is ``shape + (n,)``); must broadcast with
        ``alpha.shape[:-1]``; default ``alpha.shape[:-1]``.
      dtype: a float dtype.

    >>> import functrax.numpy as fnp
    >>> from functrax.random import PRNGKey
    >>> x = dirichlet(PRNGKey(0), fnp.ones(3), (2,))
    >>> x.shape, bool(fnp.allclose(x.sum(-1), 1.0))
    ((2, 3), True)
    """
    key = check_key("dirichlet", key)
    dtype = float_dtype("dirichlet", dtype)
    check_arraylike("dirichlet", alpha)
    ashape = shape_of(alpha)
    if len(ashape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                         f"{len(ashape)}")
    if shape is None:
        shape = ashape[:-1]
    else:
        shape = canonicalize_shape("dirichlet", shape)
        check_shape("dirichlet", shape, ashape[:-1])
    full = tuple(shape) + ashape[-1:]
    log_g = _gamma_reparam(key, cast_to(alpha, dtype, full), True)
    # softmax along the last axis, the max held constant (as JAX's _softmax)
    m = lax.stop_gradient(fnp.max(log_g, axis=-1, keepdims=True))
    unnormalized = fnp.exp(log_g - m)
    return unnormalized / unnormalized.sum(axis=-1, keepdims=True)


def chisquare(key, df, shape=None, dtype=float):
    """Chi-square samples with ``df`` degrees of freedom: ``2 * Gamma(df / 2)``.

    >>> from functrax.random import PRNGKey
    >>> bool(chisquare(PRNGKey(0), 3.0, (8,)).min() > 0)
    True
    """
    key, dtype, shape = sampler_args("chisquare", key, dtype, shape, df)
    return _chisquare(key, cast_to(df, dtype, shape))


def _chisquare(key, df):
    half_df = lax.div(df, lax.full_like(df, 2.0))
    log_g = _gamma_reparam(key, half_df, True)
    return lax.mul(lax.exp(log_g), lax.full_like(df, 2.0))


def f(key, dfnum, dfden, shape=None, dtype=float):
    """F-distribution samples: ``(chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)``.

    Args:
      key: a PRNG key.
      dfnum, dfden: the numerator and denominator degrees of freedom.
      shape: the result shape; default: the broadcast shape of the parameters.
      dtype: a float dtype.
    """
    key = check_key("f", key)
    dtype = float_dtype("f", dtype)
    check_arraylike("f", dfnum, dfden)
    shape = param_shape("f", shape, dfden, dfnum)
    dfnum, dfden = cast_to(dfnum, dtype, shape), cast_to(dfden, dtype, shape)
    key_dfd, key_dfn = split_keys(key, 2)
    num = lax.div(_chisquare(key_dfn, dfnum), dfnum)
    den = lax.div(_chisquare(key_dfd, dfden), dfden)
    return lax.div(num, den)


def t(key, df, shape=None, dtype=float):
    """Student's t samples with ``df`` degrees of freedom: ``n * sqrt(df / 2 / Gamma(df/2))``.

    ``shape`` defaults to ``df``'s shape (JAX's signature says ``shape=()``, which rejects
    array ``df``; an explicit ``shape`` behaves the same).
    """
    key, dtype, shape = sampler_args("t", key, dtype, shape, df)
    df = cast_to(df, dtype, shape)
    key_n, key_g = split_keys(key, 2)
    n = normal_real(key_n, shape, dtype)
    half_df = lax.div(df, lax.full_like(df, 2.0))
    g = _gamma_reparam(key_g, half_df, False)
    return lax.mul(n, lax.sqrt(lax.div(half_df, g)))


def generalized_normal(key, p, shape=(), dtype=float):
    """Samples of density proportional to ``exp(-|x|**p)``: ``sign * Gamma(1/p) ** (1/p)``.

    Args:
      key: a PRNG key.
      p: the shape parameter (> 0); p=2 is a normal of variance 1/2, p=1 a Laplace.
      shape: the result shape.
      dtype: a float dtype.
    """
    key = check_key("generalized_normal", key)
    dtype = float_dtype("generalized_normal", dtype)
    shape = canonicalize_shape("generalized_normal", shape)
    check_arraylike("generalized_normal", p)
    return _generalized_normal(key, p, shape, dtype)


def _generalized_normal(key, p, shape, dtype):
    k0, k1 = split_keys(key, 2)
    inv_p = 1 / p if isinstance(p, (int, float)) else 1 / fnp.asarray(p)
    check_shape("generalized_normal", shape, shape_of(inv_p))
    g = _gamma_reparam(k0, cast_to(inv_p, dtype, shape), False)
    r = rademacher(k1, shape, dtype)
    return r * g ** inv_p


def ball(key, d, p=2, shape=(), dtype=float):
    """Points uniform in the unit ``p``-norm ball of dimension ``d`` (Barthe et al.).

    Args:
      key: a PRNG key.
      d: the dimension (a concrete non-negative integer).
      p: the norm's exponent (a scalar > 0).
      shape: the batch shape; the result has shape ``(*shape, d)``.
      dtype: a float dtype.

    >>> from functrax.random import PRNGKey
    >>> x = ball(PRNGKey(0), 3, shape=(5,))
    >>> bool(((x ** 2).sum(-1) <= 1).all())
    True
    """
    key = check_key("ball", key)
    dtype = float_dtype("ball", dtype)
    shape = canonicalize_shape("ball", shape)
    if isinstance(d, Tracer):
        raise TypeError("ball: the dimension d must be a concrete integer, got a traced value")
    try:
        d = operator.index(d)
    except TypeError:
        raise TypeError(f"ball: the dimension d must be an integer, got {d!r}") from None
    if d < 0:
        raise ValueError(f"ball: the dimension d must be non-negative, got {d}")
    check_arraylike("ball", p)
    if shape_of(p) != ():
        raise ValueError(f"ball: p must be a scalar, got shape {shape_of(p)}")
    k1, k2 = split_keys(key, 2)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    u = uniform_real(k2, shape, dtype, 0.0, 1.0)
    e = lax.neg(lax.log1p(lax.neg(u)))  # exponential(k2, shape)
    norm = fnp.sum(fnp.abs(g) ** p, axis=-1) + e
    return g / (norm ** (1 / p))[..., None]
