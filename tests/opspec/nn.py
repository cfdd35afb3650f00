"""Op specs: functrax.nn (activations, softmax/logsumexp, one_hot, standardize).

References are plain numpy (float64 where it matters; canonicalized to float32 by the
drivers). Domains of piecewise functions keep samples away from the kinks, so finite
differences (tests/test_check_grads_opspec.py) see smooth functions.
"""
import math

import numpy as np

from functrax import nn
from tests.opspec.spec import F32, I32, OpSpec, positive, uniform

U = (((2, 3),), ((),), ((4,),))
U2 = (((2, 3),), ((3,),))
W23 = np.array([[True, False, True], [False, True, True]])
W3 = np.array([True, False, True])


def away(*kinks, lo=-3.0, hi=3.0, margin=0.2):
    """Uniform values moved at least ``margin`` away from each of ``kinks``."""
    base = uniform(lo, hi)

    def gen(rng, shape, dtype):
        x = np.array(base(rng, shape, dtype), dtype=np.float64)
        for k in kinks:
            near = np.abs(x - k) < margin
            x = np.where(near, k + np.where(x >= k, margin, -margin), x)
        return x.astype(dtype)
    return gen


# --- numpy references ---
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 1 / (1 + np.exp(-np.asarray(x, np.float64)))


def _elu(x, alpha=1.0):
    x = np.asarray(x, np.float64)
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _gelu(x, approximate=True):
    x = np.asarray(x, np.float64)
    if approximate:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / np.sqrt(2)))


def _relu6(x):
    return np.minimum(np.maximum(np.asarray(x, np.float64), 0), 6.0)


def _softplus(x):
    return np.logaddexp(np.asarray(x, np.float64), 0)


def _softmax(x, axis=-1, where=None):
    x = np.asarray(x, np.float64)
    w = np.ones(x.shape, bool) if where is None else np.broadcast_to(where, x.shape)
    m = np.max(np.where(w, x, -np.inf), axis=axis, keepdims=True)
    e = np.where(w, np.exp(x - m), 0.0)
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis=-1, where=None):
    x = np.asarray(x, np.float64)
    w = np.ones(x.shape, bool) if where is None else np.broadcast_to(where, x.shape)
    m = np.max(np.where(w, x, -np.inf), axis=axis, keepdims=True)
    lse = np.log(np.sum(np.where(w, np.exp(x - m), 0.0), axis=axis, keepdims=True)) + m
    return np.where(w, x - lse, -np.inf)


def _logsumexp(a, b=None, axis=None, keepdims=False, return_sign=False, where=None):
    a = np.asarray(a, np.float64)
    b = np.ones_like(a) if b is None else np.asarray(b, np.float64)
    a, b = np.broadcast_arrays(a, b)
    w = np.ones(a.shape, bool) if where is None else np.broadcast_to(where, a.shape)
    if axis == ():
        axis = tuple()
    w = w & (b != 0)
    m = np.max(np.where(w, a, -np.inf), axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    s = np.sum(np.where(w, b * np.exp(a - m), 0.0), axis=axis, keepdims=True)
    out = np.log(np.abs(s)) + m
    sign = np.sign(s)
    if not keepdims:
        out, sign = np.squeeze(out, axis), np.squeeze(sign, axis)
    if return_sign:
        return out, sign
    return np.where(sign < 0, np.nan, out)


def _one_hot(x, num_classes, dtype=None, axis=-1):
    out = (np.asarray(x)[..., None] == np.arange(num_classes)).astype(
        np.float32 if dtype is None else dtype)
    return np.moveaxis(out, -1, axis)


def _standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    x = np.asarray(x, np.float64)
    if mean is None:
        mean = np.mean(x, axis, keepdims=True, where=True if where is None else where)
    if variance is None:
        variance = np.mean(x * x, axis, keepdims=True,
                           where=True if where is None else where) - mean ** 2
    return (x - mean) / np.sqrt(variance + epsilon)


def _glu(x, axis=-1):
    a, b = np.split(np.asarray(x, np.float64), 2, axis)
    return a * _sigmoid(b)


def _hard_sigmoid(x):
    return _relu6(np.asarray(x, np.float64) + 3) / 6


def _b(fn):
    """``fn(a, b=b, **kw)`` as a two-argument function."""
    return lambda a, b, **kw: fn(a, b=b, **kw)


def _f(x):
    return np.asarray(x, np.float64)


SPECS = [
    # --- rectifiers (domains avoid the kinks) ---
    OpSpec("nn_relu", nn.relu, lambda x: np.maximum(x, np.zeros((), x.dtype)), shapes=U,
           dtypes=(F32, I32), domain=away(0), broadcasting=True, primitives=("max",)),
    OpSpec("nn_relu6", nn.relu6, _relu6, shapes=U, domain=away(0, 6, hi=7.0)),
    OpSpec("nn_leaky_relu", nn.leaky_relu, lambda x, negative_slope=1e-2: np.where(
        x >= 0, x, negative_slope * _f(x)), shapes=U, domain=away(0),
        kwargs=({}, {"negative_slope": 0.3})),
    OpSpec("nn_elu", nn.elu, _elu, shapes=U, domain=away(0), kwargs=({}, {"alpha": 0.5})),
    OpSpec("nn_celu", nn.celu, lambda x, alpha=1.0: np.maximum(_f(x), 0) + alpha * np.expm1(
        np.minimum(_f(x), 0) / alpha), shapes=U, domain=away(0), kwargs=({}, {"alpha": 2.0})),
    OpSpec("nn_selu", nn.selu, lambda x: 1.0507009873554805 * _elu(x, 1.6732632423543772),
           shapes=U, domain=away(0)),
    OpSpec("nn_hard_tanh", nn.hard_tanh, lambda x: np.clip(x, -1, 1).astype(x.dtype),
           shapes=U, dtypes=(F32, I32), domain=away(-1, 1)),
    OpSpec("nn_squareplus", nn.squareplus, lambda x, b=4: (_f(x) + np.sqrt(_f(x) ** 2 + b)) / 2,
           shapes=U, kwargs=({}, {"b": 1.0})),
    OpSpec("nn_sparse_plus", nn.sparse_plus, lambda x: np.where(
        x <= -1, 0.0, np.where(x >= 1, _f(x), (_f(x) + 1) ** 2 / 4)), shapes=U,
        domain=away(-1, 1)),
    # --- sigmoids and smooth activations ---
    OpSpec("nn_sigmoid", nn.sigmoid, _sigmoid, shapes=U, dtypes=(F32, I32),
           domain=uniform(-8, 8), broadcasting=True, out_dtype=lambda d: F32,
           primitives=("logistic",)),
    OpSpec("nn_log_sigmoid", nn.log_sigmoid, lambda x: -_softplus(-_f(x)), shapes=U,
           domain=uniform(-30, 30)),
    OpSpec("nn_softplus", nn.softplus, _softplus, shapes=U, domain=uniform(-30, 30),
           broadcasting=True),
    OpSpec("nn_soft_sign", nn.soft_sign, lambda x: _f(x) / (np.abs(_f(x)) + 1), shapes=U,
           domain=away(0)),
    OpSpec("nn_silu", nn.silu, lambda x: _f(x) * _sigmoid(x), shapes=U),
    OpSpec("nn_swish", nn.swish, lambda x: _f(x) * _sigmoid(x), shapes=U[:1]),
    OpSpec("nn_mish", nn.mish, lambda x: _f(x) * np.tanh(_softplus(x)), shapes=U),
    OpSpec("nn_hard_sigmoid", nn.hard_sigmoid, _hard_sigmoid, shapes=U,
           domain=away(-3, 3, lo=-4.0, hi=4.0)),
    OpSpec("nn_hard_silu", nn.hard_silu, lambda x: _f(x) * _hard_sigmoid(x), shapes=U,
           domain=away(-3, 3, lo=-4.0, hi=4.0)),
    OpSpec("nn_sparse_sigmoid", nn.sparse_sigmoid, lambda x: 0.5 * np.clip(_f(x) + 1, 0, 2),
           shapes=U, domain=away(-1, 1)),
    OpSpec("nn_gelu", nn.gelu, _gelu, shapes=U, broadcasting=True,
           kwargs=({}, {"approximate": False}), primitives=("tanh", "erfc")),
    OpSpec("nn_glu", nn.glu, _glu, shapes=(((2, 4),), ((6,),))),
    OpSpec("nn_glu_axis0", nn.glu, _glu, shapes=(((4, 3),),), kwargs=({"axis": 0},)),
    OpSpec("nn_identity", nn.identity, lambda x: x, shapes=U),
    # --- softmax family ---
    OpSpec("nn_softmax", nn.softmax, _softmax, shapes=U2, domain=uniform(-5, 5), kwargs=(
        {}, {"axis": 0}, {"where": W3}, {"axis": -1, "where": W3})),
    OpSpec("nn_softmax_2d", nn.softmax, _softmax, shapes=(((2, 3),),), kwargs=(
        {"axis": (0, 1)}, {"axis": 0, "where": W23}, {"where": W23})),
    OpSpec("nn_softmax_large", nn.softmax, _softmax, shapes=U2, domain=uniform(1e3, 1e3 + 5)),
    OpSpec("nn_log_softmax", nn.log_softmax, _log_softmax, shapes=U2, domain=uniform(-5, 5),
           kwargs=({}, {"axis": 0}, {"where": W3})),
    OpSpec("nn_log_softmax_2d", nn.log_softmax, _log_softmax, shapes=(((2, 3),),), kwargs=(
        {"axis": (0, 1)}, {"axis": 0, "where": W23})),
    OpSpec("nn_log_softmax_large", nn.log_softmax, _log_softmax, shapes=U2,
           domain=uniform(-1e3 - 5, -1e3)),
    OpSpec("nn_logsumexp", nn.logsumexp, _logsumexp, shapes=(((2, 3),), ((4,),)),
           domain=uniform(-5, 5), reduces=True, kwargs=(
               {}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": ()})),
    OpSpec("nn_logsumexp_where", nn.logsumexp, _logsumexp, shapes=(((2, 3),),), kwargs=(
        {"axis": 1, "where": W23}, {"where": W23, "keepdims": True})),
    OpSpec("nn_logsumexp_large", nn.logsumexp, _logsumexp, shapes=(((2, 3),),),
           domain=uniform(500, 510), kwargs=({}, {"axis": 0})),
    OpSpec("nn_logsumexp_b", _b(nn.logsumexp), _b(_logsumexp),
           shapes=(((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3))),
           domain=(uniform(-3, 3), positive(0.5, 2.0)), broadcasting=True,
           kwargs=({}, {"axis": 1}, {"axis": 0, "keepdims": True})),
    OpSpec("nn_logsumexp_b_signed", _b(nn.logsumexp), _b(_logsumexp),
           shapes=(((2, 3), (2, 3)),), domain=(uniform(-3, 3), away(0, lo=-2.0, hi=2.0)),
           kwargs=({"axis": 1, "return_sign": True}, {"axis": 1}, {"return_sign": True})),
    # --- one_hot, standardize ---
    OpSpec("nn_one_hot", nn.one_hot, _one_hot, shapes=(((5,),), ((2, 3),), ((),)),
           dtypes=(I32,), domain=uniform(-1, 4), kwargs=(
               {"num_classes": 4}, {"num_classes": 3, "axis": 0},
               {"num_classes": 4, "dtype": np.int32}, {"num_classes": 2, "dtype": np.bool_})),
    OpSpec("nn_standardize", nn.standardize, _standardize, shapes=(((2, 3),), ((4, 3),)),
           kwargs=({}, {"axis": 0}, {"axis": (0, 1)}, {"epsilon": 1e-2},
                   {"mean": np.float32(0.5), "variance": np.float32(2.0)}),
           atol=1e-4, rtol=1e-4),
    OpSpec("nn_standardize_where", nn.standardize, _standardize, shapes=(((2, 3),),),
           kwargs=({"where": W23}, {"axis": 0, "where": W23})),
]
