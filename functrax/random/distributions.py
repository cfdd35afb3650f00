"""Samplers: uniform, normal, truncated_normal, bernoulli, gumbel, exponential, laplace,
logistic, rademacher, categorical, randint, permutation, shuffle, choice.

Each follows JAX's algorithm step for step (same bits, same float operations), so results
equal JAX's default PRNG on CPU.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

import functrax.numpy as fnp
from functrax import core, dtypes, lax
from functrax.core import Array, Tracer
from functrax.numpy.promotion import check_arraylike, promote_dtypes_inexact
from functrax.random import float_math as fm
from functrax.lax import bitcast_convert_type
from functrax.random.keys import check_key, random_bits, split_key
from functrax.random.prng import UINT_DTYPES, canonicalize_shape
from functrax.random.sampler_args import check_shape, dtype_arg, float_dtype, shape_of
from functrax.transforms import library_jit

# --- helpers ---


def _param(name, argname, x, dtype, shape):
    """A distribution parameter as ``dtype``, rank-0 or broadcast to ``shape``."""
    check_arraylike(f"{name} ({argname})", x)
    check_shape(name, shape, shape_of(x))
    x = lax.convert_element_type(x, dtype)
    if shape_of(x) not in ((), tuple(shape)):
        x = fnp.broadcast_to(x, shape)
    return x


def _check_mode(name, mode):
    if mode not in (None, "low"):
        if mode == "high":
            raise NotImplementedError(f"{name}: mode='high' is not implemented; use the "
                                      "default mode='low'")
        raise ValueError(f"{name}: mode must be 'low' or 'high', got {mode!r}")


# --- continuous distributions ---


def uniform(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)``.

    Args:
      key: a PRNG key (``PRNGKey(seed)``).
      shape: the result shape; ``minval``/``maxval`` must broadcast to it.
      dtype: a float dtype (default float32, float64 with x64).
      minval, maxval: the bounds (arrays or scalars).
    Returns:
      An array of ``shape`` and ``dtype``.

    >>> from functrax.random import PRNGKey
    >>> uniform(PRNGKey(0), (3,))
    Array([0.947667  , 0.9785799 , 0.33229148], dtype=float32)
    """
    key = check_key("uniform", key)
    dtype = float_dtype("uniform", dtype)
    shape = canonicalize_shape("uniform", shape)
    return uniform_real(key, shape, dtype, minval, maxval)


def _exact_scaling(minval, maxval, dtype) -> bool:
    """Whether ``maxval - minval`` is known to be 0 or a power of two (not too small): then
    ``floats * span`` is exact, and a plain multiply-add equals the fused one."""
    if isinstance(minval, (Tracer, Array)) or isinstance(maxval, (Tracer, Array)):
        return False
    with np.errstate(all="ignore"):
        span = np.abs(np.asarray(maxval, dtype) - np.asarray(minval, dtype))
        info = dtypes.finfo(dtype)
        smallest = float(info.tiny) * 2.0 ** info.nmant  # floats * span stays normal
        mant = np.frexp(span)[0]
        return bool(np.all((span == 0) | (np.isfinite(span) & (mant == 0.5)
                                          & (span >= smallest))))


def uniform_real(key, shape, dtype, minval, maxval):
    """Uniform floats of ``dtype`` in ``[minval, maxval)`` (JAX's ``_uniform``, staged as
    ``jit(_uniform)``): the bounds are checked here and converted in the jitted body."""
    for argname, bound in (("minval", minval), ("maxval", maxval)):
        check_arraylike(f"uniform ({argname})", bound)
        check_shape("uniform", shape, shape_of(bound))
    exact = _exact_scaling(minval, maxval, dtype)
    return _uniform_jit(key, tuple(shape), np.dtype(dtype), exact, minval, maxval)


def _uniform(key, shape, dtype, exact, minval, maxval):
    minval = lax.convert_element_type(minval, dtype)
    maxval = lax.convert_element_type(maxval, dtype)
    minval = lax.broadcast_to_rank(minval, len(shape))
    maxval = lax.broadcast_to_rank(maxval, len(shape))
    info = dtypes.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    rng_bits = nbits if nmant >= 8 else 8
    uint_dtype = UINT_DTYPES[nbits]
    bits = random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, uint_dtype)
    # random mantissa under the exponent of 1.0: a float in [1, 2), minus 1
    one_bits = np.array(1.0, dtype).view(uint_dtype)
    float_bits = lax.bitwise_or(
        lax.shift_right_logical(bits, np.asarray(rng_bits - nmant, uint_dtype)), one_bits)
    floats = lax.sub(bitcast_convert_type(float_bits, dtype), np.asarray(1.0, dtype))
    # size-1 axes of the bounds broadcast in the lax ops, as JAX stages them
    span = lax.sub(maxval, minval)
    scaled = (lax.add(lax.mul(floats, span), minval) if exact
              else fm.fma(floats, span, minval))
    return lax.max(minval, scaled)


# static: shape, dtype, and whether the scaling is exact (then a plain multiply-add)
_uniform_jit = library_jit(_uniform, static_argnums=(1, 2, 3))


def normal(key, shape=(), dtype=float):
    """Standard normal samples: ``sqrt(2) * erf_inv(u)`` for ``u`` uniform in (-1, 1).

    Complex dtypes give independent real and imaginary parts of variance 1/2 each. Staged
    as JAX stages it: ``jit(_normal)`` around ``jit(_normal_real)`` around
    ``jit(_uniform)``, with one ``erf_inv``.

    >>> from functrax.random import PRNGKey
    >>> normal(PRNGKey(0), (2,))
    Array([1.6226422, 2.0252647], dtype=float32)
    """
    key = check_key("normal", key)
    dtype = dtype_arg("normal", dtype, "fcV", "a float or complex dtype")
    shape = canonicalize_shape("normal", shape)
    return _normal_jit(key, tuple(shape), np.dtype(dtype))


def _normal(key, shape, dtype):
    if dtype.kind == "c":
        real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        key_re, key_im = split_key(key)
        re = lax.convert_element_type(normal_real(key_re, shape, real), dtype)
        im = lax.convert_element_type(normal_real(key_im, shape, real), dtype)
        return (re + 1j * im) / np.array(np.sqrt(2), dtype)
    return normal_real(key, shape, dtype)


def _normal_real(key, shape, dtype):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform_real(key, shape, dtype, lo, np.array(1.0, dtype))
    # XLA's ErfInv32 (fused Horner steps) for float32: JAX's bits
    return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


_normal_jit = library_jit(_normal, static_argnums=(1, 2))
_normal_real_jit = library_jit(_normal_real, static_argnums=(1, 2))


def normal_real(key, shape, dtype):
    """Standard normal samples of a real float ``dtype`` (``jit(_normal_real)``)."""
    return _normal_real_jit(key, tuple(shape), np.dtype(dtype))


def truncated_normal(key, lower, upper, shape=None, dtype=float):
    """Normal samples truncated to the open interval ``(lower, upper)``.

    Args:
      key: a PRNG key.
      lower, upper: the bounds (broadcastable to ``shape``).
      shape: the result shape; default: the broadcast shape of the bounds.
      dtype: a float dtype.

    >>> from functrax.random import PRNGKey
    >>> truncated_normal(PRNGKey(0), -1.0, 1.0, (2,))
    Array([0.8618594, 0.9412883], dtype=float32)
    """
    key = check_key("truncated_normal", key)
    dtype = float_dtype("truncated_normal", dtype)
    check_arraylike("truncated_normal", lower, upper)
    bshape = np.broadcast_shapes(shape_of(lower), shape_of(upper))
    shape = bshape if shape is None else canonicalize_shape("truncated_normal", shape)
    check_shape("truncated_normal", shape, shape_of(lower), shape_of(upper))
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    u = uniform_real(key, shape, dtype, a, b)
    out = lax.mul(sqrt2, lax.erf_inv(u))
    # clamp into the open interval: rounding (or u == a) must not leave it
    lo = lax.nextafter(lax.stop_gradient(lower), np.array(np.inf, dtype))
    hi = lax.nextafter(lax.stop_gradient(upper), np.array(-np.inf, dtype))
    return fnp.clip(out, lo, hi)


def gumbel(key, shape=(), dtype=float, mode="low"):
    """Standard Gumbel samples ``-log(-log(u))``.

    >>> from functrax.random import PRNGKey
    >>> gumbel(PRNGKey(0), (2,))
    Array([2.9233725, 3.8326178], dtype=float32)
    """
    key = check_key("gumbel", key)
    dtype = float_dtype("gumbel", dtype)
    shape = canonicalize_shape("gumbel", shape)
    _check_mode("gumbel", mode)
    return _gumbel(key, shape, dtype)


def _gumbel(key, shape, dtype):
    tiny = np.array(dtypes.finfo(dtype).tiny, dtype)
    u = uniform_real(key, shape, dtype, tiny, np.array(1.0, dtype))
    return lax.neg(fm.log(lax.neg(fm.log(u))))


def exponential(key, shape=(), dtype=float):
    """Standard exponential samples ``-log1p(-u)``.

    >>> from functrax.random import PRNGKey
    >>> exponential(PRNGKey(0), (2,))
    Array([2.950128 , 3.8434246], dtype=float32)
    """
    key = check_key("exponential", key)
    dtype = float_dtype("exponential", dtype)
    shape = canonicalize_shape("exponential", shape)
    u = uniform_real(key, shape, dtype, 0.0, 1.0)
    return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key, shape=(), dtype=float):
    """Standard Laplace samples ``sign(u) * log1p(-|u|)``, ``u`` uniform in (-1, 1)."""
    key = check_key("laplace", key)
    dtype = float_dtype("laplace", dtype)
    shape = canonicalize_shape("laplace", shape)
    lo = np.array(-1.0 + float(dtypes.finfo(dtype).epsneg), dtype)
    u = uniform_real(key, shape, dtype, lo, 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=float):
    """Standard logistic samples ``log(u / (1 - u))``."""
    key = check_key("logistic", key)
    dtype = float_dtype("logistic", dtype)
    shape = canonicalize_shape("logistic", shape)
    tiny = np.array(dtypes.finfo(dtype).tiny, dtype)
    x = uniform_real(key, shape, dtype, tiny, 1.0)
    return fm.log(lax.div(x, lax.sub(np.array(1.0, dtype), x)))


# --- discrete distributions ---


def bernoulli(key, p=np.float32(0.5), shape=None, mode="low"):
    """Booleans that are True with probability ``p``.

    Args:
      key: a PRNG key.
      p: the probability (a float scalar or array broadcastable to ``shape``).
      shape: the result shape; default: ``p``'s shape.

    >>> from functrax.random import PRNGKey
    >>> bernoulli(PRNGKey(0), 0.3, (4,))
    Array([False, False, False, False], dtype=bool)
    """
    key = check_key("bernoulli", key)
    _check_mode("bernoulli", mode)
    check_arraylike("bernoulli", p)
    aval = core.get_aval(p)
    if not dtypes.is_float(aval.dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got "
                        f"{aval.dtype.name}.")
    shape = aval.shape if shape is None else canonicalize_shape("bernoulli", shape)
    check_shape("bernoulli", shape, aval.shape)
    p = lax.convert_element_type(p, aval.dtype)
    return lax.lt(uniform_real(key, shape, aval.dtype, 0.0, 1.0), _param(
        "bernoulli", "p", p, aval.dtype, shape))


def rademacher(key, shape=(), dtype=int):
    """Random signs: -1 or +1 with equal probability."""
    key = check_key("rademacher", key)
    dtype = dtypes.canonicalize_dtype(dtype)
    shape = canonicalize_shape("rademacher", shape)
    b = lax.convert_element_type(bernoulli(key, 0.5, shape), dtype)
    return lax.convert_element_type(2 * b - 1, dtype)


def _convert_and_clip_integer(val, dtype):
    """``val`` (integer) as ``dtype``, clipped to ``dtype``'s range instead of wrapping."""
    val_dtype = core.get_aval(val).dtype
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(val_dtype).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(val_dtype).max))
    val = lax.clamp(np.asarray(lo, val_dtype), lax.convert_element_type(val, val_dtype),
                    np.asarray(hi, val_dtype))
    return lax.convert_element_type(val, dtype)


def _int_bound(x, shape):
    """A randint bound as an integer array, rank-0 or broadcast to ``shape``."""
    x = fnp.asarray(x)
    if core.get_aval(x).dtype.kind not in "iu":
        x = x.astype(dtypes.default_int_dtype())
    return x if shape_of(x) in ((), tuple(shape)) else fnp.broadcast_to(x, shape)


def randint(key, shape, minval, maxval, dtype=int):
    """Uniform integers in ``[minval, maxval)`` (JAX's method: two words of random bits
    reduced modulo the span, so the bias is negligible; for 8- and 16-bit dtypes computed in
    32 bits, where it cannot wrap).

    Args:
      key: a PRNG key.
      shape: the result shape; the bounds must broadcast to it.
      minval, maxval: the bounds (clipped to ``dtype``'s range; ``maxval <= minval``
        gives ``minval``).
      dtype: an integer dtype (default int32, int64 with x64).

    >>> from functrax.random import PRNGKey
    >>> randint(PRNGKey(0), (6,), 0, 10)
    Array([9, 0, 2, 3, 1, 7], dtype=int32)
    """
    key = check_key("randint", key)
    dtype = dtypes.canonicalize_dtype(dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dtype.name}")
    shape = canonicalize_shape("randint", shape)
    check_arraylike("randint", minval, maxval)
    check_shape("randint", shape, shape_of(minval), shape_of(maxval))
    minval, maxval = _int_bound(minval, shape), _int_bound(maxval, shape)
    top = _convert_and_clip_integer(np.asarray(np.iinfo(dtype).max, dtype),
                                    core.get_aval(maxval).dtype)
    maxval_out_of_range = lax.gt(maxval, top)
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    nbits = np.iinfo(dtype).bits
    k1, k2 = _split2(key)
    higher_bits = random_bits(k1, nbits, shape)
    lower_bits = random_bits(k2, nbits, shape)
    udt = UINT_DTYPES[nbits]
    one = np.asarray(1, udt)
    span = lax.convert_element_type(lax.sub(maxval, minval), udt)
    # maxval <= minval: span 1, so minval is returned
    span = lax.select(lax.le(maxval, minval), lax.full_like(span, 1), span)
    # maxval beyond dtype's range: the span is one larger (wrapping to 0 keeps all bits)
    span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval)),
                      lax.add(span, one), span)
    if nbits < 32:
        # 8 and 16 bits: the arithmetic in uint32, where (hi % span) * (2**nbits % span)
        # cannot wrap (in the narrow type it does, and the result is ~2x biased); the same
        # values as 32-bit arithmetic wherever that does not wrap
        w = np.dtype(np.uint32)
        higher_bits, lower_bits, span = (lax.convert_element_type(v, w)
                                         for v in (higher_bits, lower_bits, span))
        multiplier = lax.rem(np.asarray(2 ** nbits, w), span)
    else:
        # (hi * 2**nbits + lo) % span, with 2**nbits % span computed without overflow
        multiplier = lax.rem(np.asarray(2 ** (nbits // 2), udt), span)
        multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier),
                     lax.rem(lower_bits, span))
    offset = lax.rem(offset, span)
    shape_t = tuple(shape)
    out = lax.add(minval, lax.convert_element_type(offset, dtype))
    return out if shape_of(out) == shape_t else fnp.broadcast_to(out, shape_t)


def _split2(key):
    keys = split_key(key, (2,))
    return (lax.index_in_dim(keys, 0, 0, keepdims=False),
            lax.index_in_dim(keys, 1, 0, keepdims=False))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Samples of category indices with unnormalized log-probabilities ``logits``
    (the Gumbel-max trick).

    Args:
      key: a PRNG key.
      logits: float log-probabilities; ``axis`` indexes the categories.
      axis: the category axis of ``logits``.
      shape: the result shape; must end with the batch shape of ``logits`` (its shape
        without ``axis``); default: that batch shape.
      replace: False samples without replacement along the leading (extra) dimensions.

    >>> import functrax.numpy as fnp
    >>> from functrax.random import PRNGKey
    >>> categorical(PRNGKey(0), fnp.log(fnp.array([0.1, 0.2, 0.3, 0.4])), shape=(5,))
    Array([1, 3, 2, 3, 1], dtype=int32)
    """
    key = check_key("categorical", key)
    _check_mode("categorical", mode)
    check_arraylike("categorical", logits)
    logits = fnp.asarray(logits)
    aval = core.get_aval(logits)
    if not dtypes.is_float(aval.dtype):
        raise TypeError(f"categorical: logits must have a floating dtype, got "
                        f"{aval.dtype.name} (pass log-probabilities, e.g. fnp.log(p))")
    if aval.ndim == 0:
        raise ValueError("categorical: logits must have at least one dimension (the "
                         "categories)")
    if not -aval.ndim <= axis < aval.ndim:
        raise ValueError(f"categorical: axis {axis} is out of bounds for logits of shape "
                         f"{aval.shape}")
    axis = axis - aval.ndim if axis >= 0 else axis
    batch_shape = tuple(np.delete(np.array(aval.shape, dtype=np.int64), axis).tolist())
    shape = batch_shape if shape is None else canonicalize_shape("categorical", shape)
    check_shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % aval.ndim, aval.shape[axis])
    if replace:
        noise = _gumbel(key, (*prefix, *logits_shape), aval.dtype)
        return fnp.argmax(noise + lax.expand_dims(logits, tuple(range(len(prefix)))),
                          axis=axis)
    k = math.prod(prefix)
    n = aval.shape[axis]
    if k > n:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed "
                         f"number of categories ({n}).")
    noisy = logits + _gumbel(key, aval.shape, aval.dtype)
    idx = _top_k_indices(fnp.moveaxis(noisy, axis, -1), k)
    return fnp.moveaxis(idx, -1, 0).reshape(shape)


def _top_k_indices(x, k):
    """Indices of the ``k`` largest entries along the last axis, largest first (ties: lower
    index first), as ``lax.top_k``."""
    idx = fnp.argsort(x, axis=-1, stable=True, descending=True)
    return lax.slice_in_dim(idx, 0, k, axis=core.get_aval(idx).ndim - 1)


# --- permutations and choice ---


def _shuffle(key, x, axis):
    """Sort ``x`` along ``axis`` by random 32-bit keys, in as many rounds as JAX uses."""
    size = core.get_aval(x).size
    # rounds so that key collisions are unlikely: ceil(3 ln(n) / ln(2**32 - 1))
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        key, subkey = _split2(key)
        sort_keys = random_bits(subkey, 32, shape_of(x))
        _, x = lax.sort((sort_keys, x), dimension=axis, is_stable=True, num_keys=1)
    return x


def _canonical_axis(name, axis, ndim):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def _concrete_int(name, x):
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        if v is None:
            raise TypeError(f"{name}: a traced integer cannot be the population size; pass a "
                            "concrete integer (it decides the result shape), or an array")
        return int(v)
    return int(x)


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``range(x)`` (integer ``x``) or of ``x`` along ``axis``.

    Args:
      key: a PRNG key.
      x: an integer (the result permutes ``arange(x)``) or an array.
      axis: the axis to permute.
      independent: permute each slice along ``axis`` independently.

    >>> from functrax.random import PRNGKey
    >>> permutation(PRNGKey(0), 10)
    Array([0, 1, 8, 5, 6, 4, 3, 2, 7, 9], dtype=int32)
    """
    key = check_key("permutation", key)
    check_arraylike("permutation", x)
    aval = core.get_aval(x)
    axis = _canonical_axis("permutation", axis, aval.ndim or 1)
    if not aval.ndim:
        if aval.dtype.kind not in "iu":
            raise TypeError("x must be an integer or at least 1-dimensional")
        return _shuffle(key, fnp.arange(_concrete_int("permutation", x)), axis)
    if independent or aval.ndim == 1:
        return _shuffle(key, fnp.asarray(x), axis)
    ind = _shuffle(key, fnp.arange(aval.shape[axis]), 0)
    return fnp.take(x, ind, axis, unique_indices=True)


def shuffle(key, x, axis=0):
    """Deprecated: use ``permutation(key, x, axis, independent=True)``."""
    warnings.warn("functrax.random.shuffle is deprecated and will be removed in a future "
                  "release. Use functrax.random.permutation with independent=True.",
                  DeprecationWarning, stacklevel=2)
    key = check_key("shuffle", key)
    check_arraylike("shuffle", x)
    x = fnp.asarray(x)
    return _shuffle(key, x, _canonical_axis("shuffle", axis, max(x.ndim, 1)))


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Random samples from ``arange(a)`` (integer ``a``) or from ``a`` along ``axis``.

    Args:
      key: a PRNG key.
      a: an integer population size, or an array to sample from.
      shape: the sample shape (a sequence).
      replace: sample with replacement (default) or without.
      p: probabilities of the entries (default uniform); 1-D of size ``a.shape[axis]``.
      axis: the axis of ``a`` to sample along.

    >>> from functrax.random import PRNGKey
    >>> choice(PRNGKey(0), 10, (3,), replace=False).shape
    (3,)
    """
    key = check_key("choice", key)
    _check_mode("choice", mode)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of functrax.random.choice must be a sequence, got "
                        f"{shape!r}")
    shape = canonicalize_shape("choice", shape)
    check_arraylike("choice", a)
    arr = fnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = _concrete_int("choice", a)
    else:
        axis = _canonical_axis("choice", axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return fnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else fnp.take(arr, ind, axis)
        else:
            perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=0 if arr.ndim == 0 else axis)
    else:
        ind = _choice_p(key, p, n_inputs, n_draws, shape, replace)
        result = ind if arr.ndim == 0 else fnp.take(arr, ind, axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    return result.reshape(out_shape)


def _choice_p(key, p, n_inputs, n_draws, shape, replace):
    check_arraylike("choice", p)
    (p,) = promote_dtypes_inexact(fnp.asarray(p))
    if shape_of(p) != (n_inputs,):
        raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]. "
                         f"p has shape {shape_of(p)} and a.shape[axis] is {n_inputs}.")
    dt = core.get_aval(p).dtype
    if replace:
        p_cuml = fnp.cumsum(p)
        u = uniform_real(key, shape, dt, 0.0, 1.0)
        r = p_cuml[-1] * (1 - u)
        return fnp.searchsorted(p_cuml, r).astype(dtypes.default_int_dtype())
    g = _gumbel(key, (n_inputs,), dt) + fnp.log(p)
    return _top_k_indices(g, n_draws).astype(dtypes.default_int_dtype())

