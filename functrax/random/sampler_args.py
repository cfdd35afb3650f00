"""Argument checking and small building blocks shared by the samplers of ``functrax.random``:
dtype arguments, parameter shapes (JAX's broadcasting rule and messages), key lists.
"""
from __future__ import annotations

import numpy as np

import functrax.numpy as fnp
from functrax import core, dtypes, lax
from functrax.numpy.promotion import check_arraylike
from functrax.random.keys import check_key, split_key
from functrax.random.prng import canonicalize_shape

def dtype_arg(name, dtype, kinds, what):
    """Canonicalize a user dtype and check its kind (``kinds``: numpy kind letters)."""
    dt = dtypes.canonicalize_dtype(dtype)
    if dt.kind not in kinds:
        raise ValueError(f"dtype argument to `{name}` must be {what}, got {dt.name}")
    return dt


def float_dtype(name, dtype):
    dt = dtype_arg(name, dtype, "fV", "a float dtype")
    if not dtypes.is_float(dt):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt.name}")
    return dt


def check_shape(name, shape, *param_shapes):
    """The parameters must broadcast to exactly ``shape`` (JAX's rule and message)."""
    if not param_shapes:
        return
    try:
        got = np.broadcast_shapes(tuple(shape), *param_shapes)
    except ValueError:
        got = None
    if got != tuple(shape):
        raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                         f"argument, and the result of broadcasting the shapes must equal "
                         f"the shape argument, but got result {got} for shape argument "
                         f"{tuple(shape)} (parameter shapes {list(param_shapes)}).")


def shape_of(x):
    return core.get_aval(x).shape


def split_keys(key, n):
    """``split(key, n)`` as a list of single keys."""
    ks = split_key(key, (n,))
    return [lax.index_in_dim(ks, i, 0, keepdims=False) for i in range(n)]


def param_shape(name, shape, *params):
    """The result shape: ``shape`` (checked against the parameters) or their broadcast."""
    pshapes = [shape_of(p) for p in params]
    if shape is None:
        try:
            return tuple(np.broadcast_shapes(*pshapes))
        except ValueError:
            raise ValueError(f"{name}: parameter shapes {pshapes} are not broadcast-"
                             "compatible") from None
    shape = canonicalize_shape(name, shape)
    check_shape(name, shape, *pshapes)
    return shape


def cast_to(x, dtype, shape):
    """``x`` as ``dtype`` broadcast to ``shape``."""
    x = lax.convert_element_type(x, dtype)
    return x if shape_of(x) == tuple(shape) else fnp.broadcast_to(x, shape)


def const_like(x, v):
    return np.asarray(v, core.get_aval(x).dtype)


def any_true(pred):
    nd = core.get_aval(pred).ndim
    return pred if nd == 0 else lax.reduce_or(pred, tuple(range(nd)))


def int_dtype(name, dtype):
    dt = dtypes.canonicalize_dtype(dtype)
    if dt.kind not in "iu":
        raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dt.name}")
    return dt


def sampler_args(name, key, dtype, shape, *params, dtype_check=float_dtype):
    """The checked key, dtype and result shape of the sampler ``name`` with array
    ``params`` (the result shape: ``shape``, checked against theirs, or their broadcast)."""
    key = check_key(name, key)
    dtype = dtype_check(name, dtype)
    check_arraylike(name, *params)
    return key, dtype, param_shape(name, shape, *params)
