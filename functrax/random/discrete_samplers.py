"""Discrete samplers, each following ``jax.random``'s algorithm step for step: geometric,
poisson, binomial (poisson and binomial are rejection samplers built on ``while_loop`` s
over the whole array, so they jit and vmap) and multinomial (a ``scan`` of binomials over
the outcomes).
"""
from __future__ import annotations

import numpy as np

import functrax.numpy as fnp
from functrax import core, lax
from functrax.numpy.promotion import check_arraylike, promote_dtypes_inexact
from functrax.random import float_math as fm
from functrax.random.distributions import uniform_real
from functrax.control_flow.scan import scan
from functrax.random.keys import check_key, split_key
from functrax.transforms import library_jit
from functrax.random.sampler_args import (
    any_true, cast_to, const_like, float_dtype, int_dtype, param_shape, sampler_args, split_keys,
)

_c = const_like  # the formulas below use constants of an operand's dtype often


__all__ = ["geometric", "poisson", "binomial", "multinomial"]


def geometric(key, p, shape=None, dtype=int):
    """Geometric samples (the number of trials up to the first success, ``k >= 1``).

    Args:
      key: a PRNG key.
      p: the success probability (``0 < p < 1``), broadcastable to ``shape``.
      shape: the result shape; default ``p``'s shape.
      dtype: an integer dtype.
    """
    key, dtype, shape = sampler_args("geometric", key, dtype, shape, p, dtype_check=int_dtype)
    (p,) = promote_dtypes_inexact(fnp.asarray(p))
    pdt = core.get_aval(p).dtype
    u = uniform_real(key, shape, pdt, 0.0, 1.0)
    log_one_minus_p = cast_to(lax.log1p(lax.neg(p)), pdt, shape)
    g = lax.add(lax.floor(lax.div(fm.log(u), log_one_minus_p)), _c(u, 1.0))
    return lax.convert_element_type(g, dtype)


_MAX_ITERS = np.iinfo(np.int32).max


def _poisson_knuth(key, lam, shape, dtype):
    """Knuth: count uniforms until their product drops below exp(-lam)."""
    def body(carry):
        i, k, rng, log_prod = carry
        rng, subkey = split_keys(rng, 2)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, _c(k, 1)), k)
        u = uniform_real(subkey, shape, np.dtype(np.float32), 0.0, 1.0)
        return lax.add(i, np.int32(1)), k, rng, lax.add(log_prod, fm.log(u))

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return lax.bitwise_and(any_true(lax.gt(log_prod, lax.neg(lam))),
                               lax.lt(i, np.int32(_MAX_ITERS)))

    init = (np.int32(0), lax.full(shape, 0, dtype), key, lax.full(shape, 0.0, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, _c(k, 1))


def _poisson_rejection(key, lam, shape, dtype):
    """Hormann's transformed rejection (PTRS) for large ``lam``."""
    log_lam = fm.log(lam)
    b = lax.add(_c(lam, 0.931), lax.mul(_c(lam, 2.53), lax.sqrt(lam)))
    a = lax.add(_c(lam, -0.059), lax.mul(_c(lam, 0.02483), b))
    inv_alpha = lax.add(_c(lam, 1.1239), lax.div(_c(lam, 1.1328), lax.sub(b, _c(b, 3.4))))
    v_r = lax.sub(_c(lam, 0.9277), lax.div(_c(lam, 3.6224), lax.sub(b, _c(b, 2.0))))
    f32 = np.dtype(np.float32)

    def body(carry):
        i, k_out, accepted, rng = carry
        rng, k0, k1 = split_keys(rng, 3)
        u = lax.sub(uniform_real(k0, shape, f32, 0.0, 1.0), _c(lam, 0.5))
        v = uniform_real(k1, shape, f32, 0.0, 1.0)
        us = lax.sub(_c(u, 0.5), lax.abs(u))
        k = lax.floor(lax.add(lax.add(lax.mul(lax.add(lax.div(lax.mul(_c(a, 2.0), a), us), b),
                                              u), lam), _c(lam, 0.43)))
        s = fm.log(lax.div(lax.mul(v, inv_alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        t = lax.sub(lax.add(lax.neg(lam), lax.mul(k, log_lam)),
                    lax.lgamma(lax.add(k, _c(k, 1.0))))
        accept1 = lax.bitwise_and(lax.ge(us, _c(us, 0.07)), lax.le(v, v_r))
        reject = lax.bitwise_or(lax.lt(k, _c(k, 0.0)), lax.bitwise_and(
            lax.lt(us, _c(us, 0.013)), lax.gt(v, us)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject),
                                                         lax.le(s, t)))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, np.int32(1)), k_out, lax.bitwise_or(accepted, accept), rng

    def cond(carry):
        i, _, accepted, _ = carry
        return lax.bitwise_and(any_true(lax.bitwise_not(accepted)),
                               lax.lt(i, np.int32(_MAX_ITERS)))

    init = (np.int32(0), lax.full(shape, -1.0, f32), lax.full(shape, False, np.bool_), key)
    k = lax.while_loop(cond, body, init)[1]
    return lax.convert_element_type(k, dtype)


def poisson(key, lam, shape=None, dtype=int):
    """Poisson samples of rate ``lam`` (Knuth's method for ``lam < 10``, transformed
    rejection otherwise), computed in float32 as JAX does.

    Args:
      key: a PRNG key.
      lam: the rate (>= 0), broadcastable to ``shape``.
      shape: the result shape; default ``lam``'s shape.
      dtype: an integer dtype.

    >>> from functrax.random import PRNGKey
    >>> bool((poisson(PRNGKey(0), 3.0, (100,)) >= 0).all())
    True
    """
    key, dtype, shape = sampler_args("poisson", key, dtype, shape, lam, dtype_check=int_dtype)
    lam = cast_to(lam, np.dtype(np.float32), shape)
    return _poisson_jit(key, lam, shape, dtype)


def _poisson(key, lam, shape, dtype):
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, _c(lam, 10.0)))
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
    result = lax.select(use_knuth, _poisson_knuth(key, lam_knuth, shape, dtype),
                        _poisson_rejection(key, lam_rejection, shape, dtype))
    return lax.select(lax.eq(lam, _c(lam, 0.0)), lax.full_like(result, 0), result)


_poisson_jit = library_jit(_poisson, static_argnums=(2, 3))


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k):
    """``log(k!) - Stirling's approximation``: a table for k <= 9, else the series."""
    table = np.asarray(_STIRLING_TAIL, core.get_aval(k).dtype)
    use_table = lax.le(k, _c(k, 9.0))
    kc = lax.clamp(_c(k, 0.0), k, _c(k, 9.0))
    kp1 = lax.add(kc, _c(k, 1.0))
    kp1sq = lax.mul(kp1, kp1)
    approx = lax.div(lax.sub(_c(k, 1.0 / 12), lax.div(lax.sub(_c(k, 1.0 / 360), lax.div(
        _c(k, 1.0 / 1260), kp1sq)), kp1sq)), kp1)
    idx = lax.convert_element_type(lax.floor(kc), np.int32)
    return lax.select(use_table, fnp.take(table, idx, mode="clip"), approx)


def _binomial_inversion(key, count, prob, shape):
    """Sum geometric waiting times until they exceed ``count`` (for small ``count * p``)."""
    log1mp = lax.log1p(lax.neg(prob))

    def body(carry):
        i, num_geom, geom_sum, rng = carry
        subkey, rng = split_keys(rng, 2)
        num_geom = lax.select(lax.le(geom_sum, count), lax.add(num_geom, _c(num_geom, 1.0)),
                              num_geom)
        u = uniform_real(subkey, shape, core.get_aval(prob).dtype, 0.0, 1.0)
        geom = lax.ceil(lax.div(fm.log(u), log1mp))
        return lax.add(i, np.int32(1)), num_geom, lax.add(geom_sum, geom), rng

    def cond(carry):
        return lax.bitwise_and(any_true(lax.le(carry[2], count)),
                               lax.lt(carry[0], np.int32(_MAX_ITERS)))

    zeros = lax.full_like(prob, 0.0)
    k = lax.while_loop(cond, body, (np.int32(0), zeros, zeros, key))[1]
    return lax.sub(k, _c(k, 1.0))


def _btrs(key, count, prob, shape):
    """Hormann's transformed rejection with squeeze (BTRS) for large ``count * p``."""
    one = _c(prob, 1.0)
    stddev = lax.sqrt(lax.mul(lax.mul(count, prob), lax.sub(one, prob)))
    b = lax.add(_c(prob, 1.15), lax.mul(_c(prob, 2.53), stddev))
    a = lax.add(lax.add(_c(prob, -0.0873), lax.mul(_c(prob, 0.0248), b)),
                lax.mul(_c(prob, 0.01), prob))
    c = lax.add(lax.mul(count, prob), _c(prob, 0.5))
    v_r = lax.sub(_c(prob, 0.92), lax.div(_c(prob, 4.2), b))
    r = lax.div(prob, lax.sub(one, prob))
    alpha = lax.mul(lax.add(_c(prob, 2.83), lax.div(_c(prob, 5.1), b)), stddev)
    m = lax.floor(lax.mul(lax.add(count, one), prob))
    dt = core.get_aval(prob).dtype
    log = fm.log

    def body(carry):
        i, k_out, accepted, rng = carry
        rng, k0, k1 = split_keys(rng, 3)
        u = lax.sub(uniform_real(k0, shape, dt, 0.0, 1.0), _c(prob, 0.5))
        v = uniform_real(k1, shape, dt, 0.0, 1.0)
        us = lax.sub(_c(u, 0.5), lax.abs(u))
        accept1 = lax.bitwise_and(lax.ge(us, _c(us, 0.07)), lax.le(v, v_r))
        k = lax.floor(lax.add(lax.mul(lax.add(lax.div(lax.mul(_c(a, 2.0), a), us), b), u), c))
        reject = lax.bitwise_or(lax.lt(k, _c(k, 0.0)), lax.gt(k, count))
        v = log(lax.div(lax.mul(v, alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        cm1 = lax.add(lax.sub(count, m), one)
        ck1 = lax.add(lax.sub(count, k), one)
        ub = (lax.mul(lax.add(m, _c(m, 0.5)), log(lax.div(lax.add(m, one), lax.mul(r, cm1))))
              + lax.mul(lax.add(count, one), log(lax.div(cm1, ck1)))
              + lax.mul(lax.add(k, _c(k, 0.5)), log(lax.div(lax.mul(r, ck1), lax.add(k, one))))
              + _stirling_approx_tail(m) + _stirling_approx_tail(lax.sub(count, m))
              - _stirling_approx_tail(k) - _stirling_approx_tail(lax.sub(count, k)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject),
                                                         lax.le(v, ub)))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, np.int32(1)), k_out, lax.bitwise_or(accepted, accept), rng

    def cond(carry):
        return lax.bitwise_and(any_true(lax.bitwise_not(carry[2])),
                               lax.lt(carry[0], np.int32(_MAX_ITERS)))

    init = (np.int32(0), lax.full_like(prob, -1.0), lax.full(shape, False, np.bool_), key)
    return lax.while_loop(cond, body, init)[1]


def binomial(key, n, p, shape=None, dtype=float):
    """Binomial samples: successes in ``n`` trials of probability ``p`` (as floats).

    Uses inversion (summed geometric waiting times) where ``n * min(p, 1-p) <= 10`` and
    Hormann's BTRS rejection otherwise, as JAX. NaN for NaN/negative ``n`` or invalid
    ``p``; ``inf`` for infinite ``n``; non-integer ``n`` is floored.

    Args:
      key: a PRNG key.
      n: the number of trials, broadcastable to ``shape``.
      p: the success probability, broadcastable to ``shape``.
      shape: the result shape; default: the broadcast shape of ``n`` and ``p``.
      dtype: a float dtype.

    >>> from functrax.random import PRNGKey
    >>> x = binomial(PRNGKey(0), 20, 0.3, (4,))
    >>> bool(((x >= 0) & (x <= 20)).all())
    True
    """
    key = check_key("binomial", key)
    check_arraylike("binomial", n, p)
    dtype = float_dtype("binomial", dtype)
    shape = param_shape("binomial", shape, n, p)
    (prob,) = promote_dtypes_inexact(fnp.asarray(p))
    pdt = core.get_aval(prob).dtype
    count = cast_to(n, pdt, shape)
    prob = cast_to(prob, pdt, shape)
    return _binomial_jit(key, count, prob, shape, dtype)


def _binomial(key, count, prob, shape, dtype):
    one = _c(prob, 1.0)
    p_lt_half = lax.lt(prob, _c(prob, 0.5))
    q = lax.select(p_lt_half, prob, lax.sub(one, prob))
    count_nan_or_neg = lax.bitwise_or(lax.ne(count, count), lax.lt(count, _c(count, 0.0)))
    count_inf = lax.eq(lax.abs(count), _c(count, np.inf))
    q_is_nan = lax.ne(q, q)
    q_l_0 = lax.lt(q, _c(q, 0.0))
    q = lax.select(lax.bitwise_or(q_is_nan, q_l_0), lax.full_like(q, 0.01), q)
    use_inversion = lax.bitwise_or(count_nan_or_neg, lax.le(lax.mul(count, q), _c(q, 10.0)))
    count = lax.floor(count)
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    samples = lax.select(use_inversion, _binomial_inversion(key, count_inv, q, shape),
                         _btrs(key, count_btrs, q_btrs, shape))
    samples = lax.convert_element_type(samples, dtype)
    invalid = lax.bitwise_or(lax.bitwise_or(q_l_0, q_is_nan), count_nan_or_neg)
    samples = lax.select(invalid, lax.full_like(samples, np.nan), samples)
    samples = lax.select(lax.bitwise_and(count_inf, lax.bitwise_not(invalid)),
                         lax.full_like(samples, np.inf), samples)
    keep = lax.bitwise_or(lax.bitwise_or(p_lt_half, count_nan_or_neg),
                          lax.bitwise_or(q_is_nan, count_inf))
    return lax.select(keep, samples,
                      lax.sub(lax.convert_element_type(count, dtype), samples))


_binomial_jit = library_jit(_binomial, static_argnums=(3, 4))


# --- multinomial ---


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial counts: ``n`` trials over the outcomes of ``p`` (the last axis).

    As JAX: the count of outcome ``i`` is binomial in the trials left after outcomes
    ``< i``, with probability ``p[i] / sum(p[i:])`` (a ``scan`` over the outcomes, outcome
    ``i`` drawing with key ``split(key, k)[i]``).

    Args:
      key: a PRNG key (typed or raw).
      n: the number of trials, broadcastable to ``p.shape[:-1]`` (or ``shape``).
      p: the outcome probabilities along the last axis.
      shape: optional, the batch shape (the result shape without the outcomes axis),
        broadcast-compatible with ``p.shape[:-1]``; default ``p.shape[:-1]``.
      dtype: a float dtype (default float32, float64 with x64).
      unroll: the ``unroll`` of the scan over the outcomes.
    Returns:
      Counts of shape ``p.shape`` (``shape + p.shape[-1:]`` when ``shape`` is given).
    Raises:
      ValueError: for a rank-0 ``p``, a non-float dtype or incompatible shapes.

    >>> from functrax.random import key
    >>> c = multinomial(key(0), 10, fnp.array([0.2, 0.3, 0.5]))
    >>> c.shape, float(c.sum())
    ((3,), 10.0)
    """
    key = check_key("multinomial", key)
    check_arraylike("multinomial", n, p)
    dtype = float_dtype("multinomial", float if dtype is None else dtype)
    n, p = promote_dtypes_inexact(fnp.asarray(n), fnp.asarray(p))
    p_shape = core.get_aval(p).shape
    if not p_shape:
        raise ValueError("multinomial: p must have at least one dimension (the outcomes, "
                         "along the last axis), got shape ()")
    shape = param_shape("multinomial", shape, n, lax.index_in_dim(p, 0, -1, keepdims=False))
    n = fnp.broadcast_to(n, shape)
    p = fnp.moveaxis(fnp.broadcast_to(p, shape + p_shape[-1:]), -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = lax.div(p, lax.select(lax.eq(remaining, _c(remaining, 0.0)),
                                   lax.full_like(remaining, 1.0), remaining))
    keys = split_key(key, (p_shape[-1],))

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        ratio = lax.clamp(_c(ratio, 0.0), ratio, _c(ratio, 1.0))
        count = binomial(k, remainder, ratio, dtype=core.get_aval(remainder).dtype)
        return lax.sub(remainder, count), count

    _, counts = scan(step, n, (ratios, keys), unroll=unroll)
    return lax.convert_element_type(fnp.moveaxis(counts, 0, -1), dtype)
