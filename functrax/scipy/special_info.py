"""``functrax.scipy.special``: logarithms with defined values at zero, entropies, logistic
functions, logsumexp/softmax and the Box-Cox transforms (as ``jax.scipy.special``).

``xlogy``, ``xlog1py`` and ``x log x`` (inside ``entr`` and ``rel_entr``) have custom JVPs, as
JAX's: ``xlogy(0, y) = 0`` for every ``y`` (``0 log 0 = 0``) with the derivative
``(log y, x / y)`` there, so gradients at zero are defined where the naive product gives NaN.
"""
from __future__ import annotations

import numpy as np

from functrax import core, lax
from functrax.core import Array
from functrax.errors import ConcretizationTypeError
from functrax import numpy as fnp
from functrax.nn.functions import log_softmax as _nn_log_softmax
from functrax.nn.functions import logsumexp as _nn_logsumexp
from functrax.nn.functions import softmax as _nn_softmax
from functrax.numpy.promotion import promote_args_inexact
from functrax.transforms.custom_derivatives import custom_jvp

__all__ = ["xlogy", "xlog1py", "entr", "rel_entr", "kl_div", "logit", "expit", "logsumexp",
           "softmax", "log_softmax", "boxcox", "boxcox1p"]


def promote(name, *args):
    """``args`` promoted to one inexact dtype and broadcast (Python scalars stay weak)."""
    return [fnp.asarray(a) for a in promote_args_inexact(name, *args)]


def concrete(fn, x, context):
    """``fn`` of the concrete value of ``x`` (a static argument: an int, a flag).

    Raises:
      ConcretizationTypeError: if ``x`` is a traced value.
    """
    if isinstance(x, core.Tracer):
        value = x.to_concrete_value()
        if value is None:
            raise ConcretizationTypeError(x, context)
        x = value
    if isinstance(x, Array):
        x = np.asarray(x)
    return fn(x)


def const(x, value):
    """``value`` as a scalar of ``x``'s dtype."""
    return np.asarray(value, core.get_aval(x).dtype)[()]


@custom_jvp
def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` (also at ``y == 0``), with a defined derivative.

    Args:
      x, y: real arrays (broadcast together).

    >>> import functrax.numpy as fnp
    >>> xlogy(fnp.array([0.0, 2.0]), fnp.array([0.0, 3.0]))
    Array([0.       , 2.1972246], dtype=float32)
    """
    x, y = promote("xlogy", x, y)
    x_ok = x != 0.0
    return fnp.where(x_ok, lax.mul(x, lax.log(y)), fnp.zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = xlogy(x, y)
    return result, (x_dot * lax.log(y) + y_dot * x / y).astype(result.dtype)


@custom_jvp
def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0`` (also at ``y == -1``), with a defined derivative.

    >>> import functrax.numpy as fnp
    >>> xlog1py(fnp.array([0.0, 2.0]), fnp.array([-1.0, 1.0]))
    Array([0.       , 1.3862944], dtype=float32)
    """
    x, y = promote("xlog1py", x, y)
    x_ok = x != 0.0
    return fnp.where(x_ok, lax.mul(x, lax.log1p(y)), fnp.zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = xlog1py(x, y)
    return result, (x_dot * lax.log1p(y) + y_dot * x / (1 + y)).astype(result.dtype)


@custom_jvp
def _xlogx(x):
    """``x log x`` with the derivative ``log x + 1``."""
    return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _xlogx(x), x_dot * (lax.log(x) + 1)


def entr(x):
    """Elementwise entropy ``-x log x`` (0 at ``x == 0``, ``-inf`` for ``x < 0``).

    >>> import functrax.numpy as fnp
    >>> entr(fnp.array([0.5, -1.0]))
    Array([0.3465736,      -inf], dtype=float32)
    """
    (x,) = promote("entr", x)
    return lax.select(lax.lt(x, lax.full_like(x, 0)), lax.full_like(x, -np.inf),
                      lax.neg(_xlogx(x)))


def rel_entr(p, q):
    """Elementwise relative entropy: ``p log(p / q)`` for ``p, q > 0``, 0 for ``p == 0,
    q >= 0``, ``inf`` otherwise.

    >>> import functrax.numpy as fnp
    >>> rel_entr(fnp.array([0.5, 0.0, 1.0]), fnp.array([0.25, 1.0, 0.0]))
    Array([0.3465736, 0.       ,       inf], dtype=float32)
    """
    p, q = promote("rel_entr", p, q)
    zero = const(p, 0.0)
    both_gt_zero = lax.bitwise_and(lax.gt(p, zero), lax.gt(q, zero))
    one_zero = lax.bitwise_and(lax.eq(p, zero), lax.ge(q, zero))
    safe_p = fnp.where(both_gt_zero, p, 1)
    safe_q = fnp.where(both_gt_zero, q, 1)
    log_val = lax.sub(_xlogx(safe_p), xlogy(safe_p, safe_q))
    return fnp.where(both_gt_zero, log_val, fnp.where(one_zero, zero, np.inf))


def kl_div(p, q):
    """Elementwise Kullback-Leibler divergence ``rel_entr(p, q) - p + q``.

    >>> import functrax.numpy as fnp
    >>> kl_div(fnp.array([0.5]), fnp.array([0.25]))
    Array([0.09657359], dtype=float32)
    """
    p, q = promote("kl_div", p, q)
    return rel_entr(p, q) - p + q


@custom_jvp
def logit(x):
    """``log(x / (1 - x))``, the inverse of :func:`expit`, with derivative
    ``1 / (x (1 - x))``.

    >>> round(float(logit(0.75)), 6)
    1.098612
    """
    (x,) = promote("logit", x)
    return lax.log(lax.div(x, lax.sub(const(x, 1), x)))


logit.defjvps(lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(const(x, 1), x))))


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))`` (``lax.logistic``).

    >>> round(float(expit(0.0)), 6)
    0.5
    """
    (x,) = promote("expit", x)
    return lax.logistic(x)


logsumexp = _nn_logsumexp


def softmax(x, /, *, axis=None):
    """``exp(x) / sum(exp(x))`` over ``axis`` (default: all axes), as
    ``scipy.special.softmax``.

    >>> import functrax.numpy as fnp
    >>> softmax(fnp.array([0.0, 0.0]))
    Array([0.5, 0.5], dtype=float32)
    """
    return _nn_softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """``x - logsumexp(x)`` over ``axis`` (default: all axes), as
    ``scipy.special.log_softmax``.

    >>> import functrax.numpy as fnp
    >>> log_softmax(fnp.array([0.0, 0.0]))
    Array([-0.6931472, -0.6931472], dtype=float32)
    """
    return _nn_log_softmax(x, axis=axis)


def _boxcox_from_log(log_x, lmbda, invalid):
    """``(exp(lmbda log_x) - 1) / lmbda`` (``log_x`` where ``lmbda == 0``), NaN where
    ``invalid``; the unused branch never sees a zero division."""
    zero = lmbda == 0
    safe = fnp.where(zero, const(lmbda, 1.0), lmbda)
    out = fnp.where(zero, log_x, lax.div(lax.expm1(lax.mul(safe, log_x)), safe))
    return fnp.where(invalid, const(out, np.nan), out)


def boxcox(x, lmbda):
    """Box-Cox transform ``(x**lmbda - 1) / lmbda`` (``log(x)`` for ``lmbda == 0``);
    NaN for ``x <= 0``.

    >>> round(float(boxcox(2.0, 0.5)), 6)
    0.828427
    """
    x, lmbda = promote("boxcox", x, lmbda)
    invalid = x <= 0
    safe_x = fnp.where(invalid, const(x, 1.0), x)
    return _boxcox_from_log(lax.log(safe_x), lmbda, invalid)


def boxcox1p(x, lmbda):
    """Box-Cox transform of ``1 + x``: ``((1 + x)**lmbda - 1) / lmbda`` (``log1p(x)`` for
    ``lmbda == 0``); NaN for ``x <= -1``.

    >>> round(float(boxcox1p(1.0, 0.5)), 6)
    0.828427
    """
    x, lmbda = promote("boxcox1p", x, lmbda)
    invalid = x <= -1
    safe_x = fnp.where(invalid, const(x, 0.0), x)
    return _boxcox_from_log(lax.log1p(safe_x), lmbda, invalid)
