"""Activation functions, softmax/logsumexp, one_hot and standardize (as ``jax.nn``).

Every function is written with ``functrax.numpy``/``functrax.lax``, so it works on Arrays
and on tracers (grad, vmap, jit). ``relu`` and ``relu6`` have custom JVPs (derivative 0 at
the kinks, as JAX); ``softmax``, ``log_softmax`` and ``logsumexp`` subtract the
(stop-gradient) maximum, so large inputs neither overflow nor give NaN gradients.

>>> import functrax.numpy as fnp
>>> from functrax import nn
>>> nn.relu(fnp.array([-1.0, 0.0, 2.0]))
Array([0., 0., 2.], dtype=float32)
"""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax import numpy as fnp
from functrax.numpy.promotion import check_arraylike, promote_args_inexact
from functrax.transforms.custom_derivatives import custom_jvp

__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp",
    "logsumexp", "mish", "one_hot", "tanh",
    "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus",
    "sparse_plus", "sparse_sigmoid", "squareplus", "standardize", "swish",
]


def _inexact(name, x):
    check_arraylike(name, x)
    (x,) = promote_args_inexact(name, x)
    return fnp.asarray(x)


def _zeros_where_not(cond, g):
    return lax.select(cond, g, lax.full_like(g, 0))


# --- rectifiers ---


@custom_jvp
def relu(x):
    """Rectified linear unit ``max(x, 0)``; its derivative at 0 is 0 (as JAX).

    >>> import functrax
    >>> functrax.grad(relu)(0.0)
    Array(0., dtype=float32, weak_type=True)
    """
    check_arraylike("relu", x)
    return fnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: _zeros_where_not(fnp.greater(x, 0), g))


@custom_jvp
def relu6(x):
    """``min(max(x, 0), 6)``; its derivative at 0 and 6 is 0 (as JAX)."""
    check_arraylike("relu6", x)
    return fnp.minimum(fnp.maximum(x, 0), 6.0)


relu6.defjvps(lambda g, ans, x: _zeros_where_not(
    fnp.logical_and(fnp.greater(x, 0), fnp.less(x, 6)), g))


def leaky_relu(x, negative_slope=1e-2):
    """``x`` where ``x >= 0``, else ``negative_slope * x``."""
    check_arraylike("leaky_relu", x)
    x = fnp.asarray(x)
    return fnp.where(fnp.greater_equal(x, 0), x, negative_slope * x)


def elu(x, alpha=1.0):
    """Exponential linear unit: ``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = _inexact("elu", x)
    safe_x = fnp.where(fnp.greater(x, 0), 0.0, x)
    return fnp.where(fnp.greater(x, 0), x, alpha * fnp.expm1(safe_x))


def celu(x, alpha=1.0):
    """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = _inexact("celu", x)
    return fnp.maximum(x, 0.0) + alpha * fnp.expm1(fnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """Scaled ELU: ``1.0507... * elu(x, 1.6732...)``."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]``."""
    check_arraylike("hard_tanh", x)
    x = fnp.asarray(x)
    return fnp.where(fnp.greater(x, 1), 1, fnp.where(fnp.less(x, -1), -1, x))


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth ReLU."""
    x = _inexact("squareplus", x)
    return (x + fnp.sqrt(fnp.square(x) + b)) / 2


def sparse_plus(x):
    """0 for ``x <= -1``, ``x`` for ``x >= 1``, else ``(x + 1)**2 / 4``."""
    x = _inexact("sparse_plus", x)
    return fnp.where(fnp.less_equal(x, -1.0), 0.0,
                     fnp.where(fnp.greater_equal(x, 1.0), x, (x + 1.0) ** 2 / 4))


# --- sigmoids and smooth activations ---


def sigmoid(x):
    """Logistic sigmoid ``1 / (1 + exp(-x))``."""
    return lax.logistic(_inexact("sigmoid", x))


def softplus(x):
    """``log(1 + exp(x))`` without overflow (the values of ``logaddexp(x, 0)``).

    Written as ``x + log1p(exp(-x))`` for ``x > 0`` and ``log1p(exp(x))`` otherwise, each
    branch on inputs that keep the other branch finite, so every derivative is the smooth
    one (``sigmoid(x)``, 0.5 at 0 as in JAX), with no NaN from the branch not taken.
    """
    x = _inexact("softplus", x)
    pos = fnp.greater(x, 0)
    xp = fnp.where(pos, x, 0.0)
    xn = fnp.where(pos, 0.0, x)
    return fnp.where(pos, xp + fnp.log1p(fnp.exp(-xp)), fnp.log1p(fnp.exp(xn)))


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)`` (no overflow)."""
    return -softplus(-_inexact("log_sigmoid", x))


def soft_sign(x):
    """``x / (|x| + 1)``."""
    x = _inexact("soft_sign", x)
    return x / (fnp.abs(x) + 1)


def silu(x):
    """Sigmoid linear unit (swish): ``x * sigmoid(x)``."""
    x = _inexact("silu", x)
    return x * sigmoid(x)


swish = silu


def mish(x):
    """``x * tanh(softplus(x))``."""
    x = _inexact("mish", x)
    return x * fnp.tanh(softplus(x))


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    return relu6(_inexact("hard_sigmoid", x) + 3.0) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (hard swish)."""
    x = _inexact("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def sparse_sigmoid(x):
    """``clip((x + 1) / 2, 0, 1)``."""
    x = _inexact("sparse_sigmoid", x)
    return 0.5 * fnp.clip(x + 1.0, 0.0, 2.0)


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit.

    Args:
      x: input array.
      approximate: the tanh approximation
        ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))`` (default) or, with False,
        the exact ``x/2 * erfc(-x / sqrt(2))``.
    """
    x = _inexact("gelu", x)
    dt = core.get_aval(x).dtype
    if approximate:
        c = np.asarray(np.sqrt(2 / np.pi), dt)[()]
        cdf = 0.5 * (1.0 + fnp.tanh(c * (x + 0.044715 * (x ** 3))))
        return x * cdf
    sqrt_half = np.asarray(np.sqrt(0.5), dt)[()]
    return 0.5 * x * lax.erfc(-x * sqrt_half)


def glu(x, axis=-1):
    """Gated linear unit: the halves ``a, b`` of ``x`` along ``axis`` give ``a * sigmoid(b)``."""
    check_arraylike("glu", x)
    x = fnp.asarray(x)
    size = core.get_aval(x).shape[axis] if core.get_aval(x).ndim else 0
    if size % 2:
        raise ValueError(f"glu: axis {axis} of x (shape {core.get_aval(x).shape}) must have "
                         "an even size, to split it into two halves.")
    x1, x2 = fnp.split(x, [size // 2], axis)
    return x1 * sigmoid(x2)


def identity(x):
    """The identity activation (returns ``x`` as an array)."""
    check_arraylike("identity", x)
    return fnp.asarray(x)


# --- softmax family ---


def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x, axis, keepdims=True)`` (numerically safe).

    Args:
      x: input array.
      axis: axis or axes to normalize over (default the last).
      where: boolean mask of the elements to include; excluded elements give ``-inf``.

    >>> import functrax.numpy as fnp
    >>> log_softmax(fnp.array([0.0, 0.0]))
    Array([-0.6931472, -0.6931472], dtype=float32)
    """
    x = _inexact("log_softmax", x)
    _reduction_dims("log_softmax", core.get_aval(x).ndim, axis)
    x_max = fnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else fnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_lse = fnp.log(fnp.sum(fnp.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_lse
    if where is not None:
        return fnp.where(where, result, -np.inf)
    return result


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x), axis)`` (numerically safe: the maximum is subtracted first).

    Args:
      x: input array.
      axis: axis or axes to normalize over (default the last).
      where: boolean mask of the elements to include; excluded elements give 0.

    >>> import functrax.numpy as fnp
    >>> softmax(fnp.array([1000.0, 1000.0]))
    Array([0.5, 0.5], dtype=float32)
    """
    x = _inexact("softmax", x)
    _reduction_dims("softmax", core.get_aval(x).ndim, axis)
    x_max = fnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else fnp.where(where, x, -np.inf)
    unnormalized = fnp.exp(x_safe - lax.stop_gradient(x_max))
    result = unnormalized / fnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = fnp.where(where, result, 0)
    return result


def _reduction_dims(name, ndim, axis):
    """(positive reduced axes, sorted) for ``axis`` of a rank-``ndim`` array."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for an array of rank {ndim}. "
                             f"Pass axes in [{-ndim}, {ndim}) or axis=None.")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in axis={axis!r}.")
    return tuple(sorted(out))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a), axis))`` without overflow (as ``jax.nn.logsumexp``).

    The maximum subtracted first is a stop-gradient constant, so the gradient is the
    softmax of ``a`` (weighted by ``b``).

    Args:
      a: input array.
      axis: axis or axes to reduce (default all).
      b: optional scale factors, broadcastable against ``a``; may be negative.
      keepdims: keep reduced axes with size 1.
      return_sign: also return the sign of the sum; then the log is of its absolute value.
        Without it, a negative sum gives NaN.
      where: boolean mask of the elements to include.

    Returns:
      The result, or ``(result, sign)`` with ``return_sign=True``.

    >>> import functrax.numpy as fnp
    >>> logsumexp(fnp.array([1000.0, 1000.0]))
    Array(1000.6932, dtype=float32)
    """
    if b is not None:
        check_arraylike("logsumexp", a, b)
        a_arr, b_arr = promote_args_inexact("logsumexp", a, b)
        a_arr = fnp.where(fnp.not_equal(b_arr, 0), a_arr, -np.inf)
    else:
        check_arraylike("logsumexp", a)
        (a_arr,) = promote_args_inexact("logsumexp", a)
        a_arr = fnp.asarray(a_arr)
        b_arr = None
    ndim = core.get_aval(a_arr).ndim
    dims = _reduction_dims("logsumexp", ndim, axis)
    is_complex = dtypes.issubdtype(core.get_aval(a_arr).dtype, np.complexfloating)
    a_real = fnp.real(a_arr) if is_complex else a_arr
    amax = fnp.max(a_real, axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
    amax = lax.stop_gradient(fnp.where(fnp.isfinite(amax), amax, fnp.zeros_like(amax)))
    amax_dims = amax if keepdims else fnp.expand_dims(amax, dims)
    exp_a = fnp.exp(a_arr - amax_dims.astype(core.get_aval(a_arr).dtype))
    if b_arr is not None:
        exp_a = exp_a * b_arr
    sumexp = fnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    sign = fnp.sign(sumexp)
    if return_sign or not is_complex:
        sumexp = fnp.abs(sumexp)
    out = fnp.log(sumexp) + amax.astype(core.get_aval(sumexp).dtype)
    if return_sign:
        return out, sign
    if b_arr is not None and not is_complex:
        out = fnp.where(fnp.less(sign, 0), np.asarray(np.nan, core.get_aval(out).dtype), out)
    return out


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """``log(mean(exp(x), axis))`` without overflow (``logsumexp - log(count)``).

    >>> import functrax.numpy as fnp
    >>> logmeanexp(fnp.array([0.0, 0.0]))
    Array(0., dtype=float32)
    """
    check_arraylike("logmeanexp", x)
    (x,) = promote_args_inexact("logmeanexp", x)
    x = fnp.asarray(x)
    lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    if where is None:
        dims = _reduction_dims("logmeanexp", x.ndim, axis)
        count = np.asarray(float(np.prod([x.shape[d] for d in dims])), lse.dtype)
    else:
        count = fnp.sum(fnp.broadcast_to(where, x.shape), axis=axis,
                        keepdims=keepdims).astype(lse.dtype)
    return lse - fnp.log(count)


@custom_jvp
def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate for small and large ``x`` (Maechler's
    switch at log 2), as ``jax.nn.log1mexp``.

    >>> import functrax.numpy as fnp
    >>> log1mexp(fnp.array([1e-8, 50.0]))
    Array([-1.8420681e+01, -1.9287499e-22], dtype=float32)
    """
    x = fnp.asarray(x)
    c = np.log(2.0)
    return fnp.where(x < c, fnp.log(-fnp.expm1(-x)), fnp.log1p(-fnp.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / fnp.expm1(x))


def tanh(x):
    """The hyperbolic tangent (``functrax.numpy.tanh``)."""
    return fnp.tanh(x)


# --- one_hot and standardize ---


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """One-hot encoding: ``out[..., k, ...] = (x[...] == k)``; out-of-range values give zeros.

    Args:
      x: integer array of class indices.
      num_classes: number of classes (a static int).
      dtype: result dtype (default float32, JAX's ``jnp.float_``).
      axis: where the new class axis goes in the result.

    >>> import functrax.numpy as fnp
    >>> one_hot(fnp.array([0, 2]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    check_arraylike("one_hot", x)
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise TypeError(f"one_hot: num_classes must be a static Python int, got "
                        f"{type(num_classes).__name__}. It fixes the output shape, so it "
                        "cannot be traced; pass it as a static argument.") from None
    if num_classes < 0:
        raise ValueError(f"one_hot: num_classes must be non-negative, got {num_classes}.")
    dtype = dtypes.canonicalize_dtype(np.float64 if dtype is None else dtype)
    x = fnp.asarray(x)
    ndim = core.get_aval(x).ndim
    if not -(ndim + 1) <= axis <= ndim:
        raise ValueError(f"one_hot: axis {axis} is out of bounds for the rank-{ndim + 1} "
                         f"result. Pass an axis in [{-(ndim + 1)}, {ndim}].")
    pos = axis % (ndim + 1)
    lhs = fnp.expand_dims(x, pos)
    rhs_shape = [1] * ndim
    rhs_shape.insert(pos, num_classes)
    rhs = lax.broadcasted_iota(core.get_aval(x).dtype, tuple(rhs_shape), pos)
    return fnp.equal(lhs, rhs).astype(dtype)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis``.

    Args:
      x: input array.
      axis: axis or axes over which ``mean`` and ``variance`` are computed.
      mean, variance: precomputed statistics (broadcastable to ``x``); by default
        ``mean(x)`` and ``mean(x**2) - mean(x)**2`` over ``axis``, keeping dims.
      epsilon: added to the variance.
      where: boolean mask of the elements the statistics use.
    """
    check_arraylike("standardize", x)
    for name, v in (("mean", mean), ("variance", variance), ("where", where)):
        if v is not None:
            try:
                check_arraylike("standardize", v)
            except TypeError:
                raise TypeError(f"standardize: {name} must be an array or None, got "
                                f"{type(v).__name__}.") from None
    if mean is None:
        mean = fnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        variance = fnp.mean(fnp.square(x), axis, keepdims=True, where=where) - fnp.square(mean)
    return fnp.subtract(x, fnp.asarray(mean)) * lax.rsqrt(fnp.asarray(variance) + epsilon)
