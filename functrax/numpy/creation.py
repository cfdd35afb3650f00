"""Array creation: array, asarray, zeros, ones, full, empty, *_like, arange, linspace, eye, ...

Dtypes follow JAX: float32/int32 defaults (64-bit with x64), Python scalars are weakly typed
(``full(3, 2)`` is a weak int32 array, ``array(1.0)`` a weak float32 scalar), and lists take
the promoted dtype of their elements.
"""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.core import Array, Tracer
from functrax.errors import ConcretizationTypeError

_SCALARS = (bool, int, float, complex)


def _dtype(dtype):
    return None if dtype is None else dtypes.canonicalize_dtype(dtype)


def _shape(shape, fun_name):
    """A static shape tuple from an int or a sequence of ints."""
    if isinstance(shape, (int, np.integer)) or (isinstance(shape, (Array, Tracer, np.ndarray))
                                                 and np.ndim(shape) == 0):
        shape = (shape,)
    if isinstance(shape, Tracer) or (isinstance(shape, (list, tuple)) and any(
            isinstance(d, Tracer) for d in shape)):
        return tuple(operator.index(d) for d in shape)  # TracerIntegerConversionError
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{fun_name}: shape must be an integer or a sequence of integers, got "
                        f"{shape!r}. Shapes must be static: under a transformation, pass sizes "
                        "as static arguments.") from None
    if any(d < 0 for d in out):
        raise ValueError(f"{fun_name}: negative dimensions are not allowed, got shape {out}")
    return out


def _check_arraylike(fun_name, x, argname):
    if not core.is_arraylike(x):
        hint = (" Use functrax.numpy.asarray(...) to convert a list or tuple."
                if isinstance(x, (list, tuple)) else "")
        raise TypeError(f"{fun_name} requires an ndarray or scalar `{argname}`, got "
                        f"{type(x).__name__}.{hint}")


# --- array / asarray ---


def _leaves(obj, out):
    """Flatten nested lists/tuples into ``out``, rejecting values that are not numbers."""
    if isinstance(obj, (list, tuple)):
        for x in obj:
            _leaves(x, out)
    elif isinstance(obj, (Array, Tracer)) or type(obj) in _SCALARS or isinstance(
            obj, (np.ndarray, np.generic)):
        if isinstance(obj, (np.ndarray, np.generic)):
            _check_kind(obj.dtype, obj)
        out.append(obj)
    elif hasattr(obj, "__array__"):
        out.append(np.asarray(obj))
        _check_kind(out[-1].dtype, obj)
    else:
        raise TypeError(f"functrax.numpy.array: cannot convert {obj!r} of type "
                        f"{type(obj).__name__} to an array; arrays hold numbers and booleans "
                        "only")
    return out


def _check_kind(dtype, obj):
    if not dtypes.is_supported(dtype):
        raise TypeError(f"functrax.numpy.array: functrax only supports number and bool dtypes, "
                        f"got dtype {np.dtype(dtype)} in {obj!r}")


def _ragged(obj, detail):
    return ValueError(f"functrax.numpy.array: cannot build an array from a ragged nested "
                      f"sequence ({detail}); every level of nesting must be rectangular.")


def _stack_nested(obj, dtype):
    """Nested sequences holding tracers: stack the converted elements (traceable)."""
    if not isinstance(obj, (list, tuple)):
        return asarray(obj, dtype)
    if not obj:
        return Array(np.zeros((0,), dtype))
    parts = [_stack_nested(x, dtype) for x in obj]
    shapes = [core.get_aval(p).shape for p in parts]
    if len(set(shapes)) > 1:
        raise _ragged(obj, f"elements of shapes {shapes}")
    return lax.concatenate([lax.expand_dims(p, (0,)) for p in parts], 0)


def array(object, dtype=None, copy=True, order="K", ndmin=0):
    """Create an array from an Array, tracer, numpy array, Python scalar or nested sequence.

    Python scalars give weakly typed arrays; sequences take the promoted dtype of their
    elements (which may be Arrays or tracers, mixed with scalars).

    >>> array([1, 2, 3])
    Array([1, 2, 3], dtype=int32)
    >>> array([1, 2.5])
    Array([1. , 2.5], dtype=float32)
    """
    if order is not None and order != "K":
        raise NotImplementedError("functrax.numpy.array: only order='K' is supported")
    dtype = _dtype(dtype)
    if isinstance(object, (Array, Tracer)):
        out = object if dtype is None else lax.convert_element_type(object, dtype)
        if copy and out is object and core.is_concrete_array(object):
            # a buffer of its own: donating ``object`` later must not invalidate the copy
            out = lax.copy_p.bind(object)
    elif type(object) in _SCALARS:
        dt = dtype or dtypes.python_scalar_dtype(object)
        out = Array(np.asarray(object, dt), weak_type=dtype is None and type(object) is not bool)
    elif isinstance(object, (list, tuple)):
        leaves = _leaves(object, [])
        dt = dtype or (dtypes.result_dtype_and_weak(*{dtypes.dtype_and_weak(x) for x in leaves})[0]
                       if leaves else dtypes.default_float_dtype())
        if any(isinstance(x, Tracer) for x in leaves):
            out = _stack_nested(object, dt)
        else:
            try:
                val = np.asarray(object, dt)
            except ValueError as e:
                raise _ragged(object, str(e).split(".")[0]) from None
            out = Array(val)
    else:
        val = _leaves(object, [])[0]
        val = np.asarray(val)
        out = Array(np.array(val, dtype or dtypes.canonicalize_dtype(val.dtype), copy=True))
    nd = core.get_aval(out).ndim
    if ndmin > nd:
        out = lax.expand_dims(out, tuple(range(ndmin - nd)))
    return out


def copy(a, order=None):
    """A copy of ``a`` with a buffer of its own (``array(a, copy=True)``).

    >>> copy(array([1.0, 2.0]))
    Array([1., 2.], dtype=float32)
    """
    return array(a, copy=True, order=order)


def asarray(a, dtype=None, order=None, *, copy=None):
    """Like ``array``, but returns ``a`` itself when it already is an array of that dtype."""
    if isinstance(a, (Array, Tracer)) and (dtype is None or _dtype(dtype) == a.dtype):
        return a
    return array(a, dtype=dtype, order=order)


# --- filled arrays ---


def _full(shape, fill_value, dtype, weak):
    """``fill_value`` (a scalar) of ``dtype`` broadcast to ``shape``."""
    if isinstance(fill_value, Tracer):
        fill = lax.convert_element_type(fill_value, dtype, weak)
    else:
        fill = Array(np.asarray(fill_value, dtype), weak_type=weak)
    return lax.broadcast_in_dim(fill, shape, ()) if shape else fill


def zeros(shape, dtype=None):
    """An array of zeros (default dtype float32).

    >>> zeros((2,), dtype=int)
    Array([0, 0], dtype=int32)
    """
    return _full(_shape(shape, "zeros"), 0, _dtype(dtype) or dtypes.default_float_dtype(),
                 False)


def ones(shape, dtype=None):
    """An array of ones (default dtype float32)."""
    return _full(_shape(shape, "ones"), 1, _dtype(dtype) or dtypes.default_float_dtype(), False)


def empty(shape, dtype=None):
    """Like ``zeros`` (functrax has no uninitialized memory)."""
    return _full(_shape(shape, "empty"), 0, _dtype(dtype) or dtypes.default_float_dtype(),
                 False)


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (broadcast if it is an array).

    Without ``dtype``, a Python scalar fill gives a weakly typed array of its default dtype.

    >>> full(2, 7)
    Array([7, 7], dtype=int32, weak_type=True)
    """
    _check_arraylike("full", fill_value, "fill_value")
    shape = _shape(shape, "full")
    if np.ndim(fill_value) == 0:
        if dtype is None:
            return _full(shape, fill_value, *dtypes.dtype_and_weak(fill_value))
        return _full(shape, fill_value, _dtype(dtype), False)
    from functrax.numpy.shape_ops import broadcast_to
    return broadcast_to(asarray(fill_value, dtype), shape)


def _like(fun_name, a, fill_value, dtype, shape):
    _check_arraylike(fun_name, a, "a")
    dt, weak = dtypes.dtype_and_weak(a)
    shape = np.shape(a) if shape is None and not isinstance(a, (Array, Tracer)) else (
        a.shape if shape is None else _shape(shape, fun_name))
    return _full(tuple(shape), fill_value, *((dt, weak) if dtype is None else
                                              (_dtype(dtype), False)))


def zeros_like(a, dtype=None, shape=None):
    """Zeros with the shape and dtype (and weak type) of ``a``."""
    return _like("zeros_like", a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None):
    """Ones with the shape and dtype (and weak type) of ``a``."""
    return _like("ones_like", a, 1, dtype, shape)


def empty_like(prototype, dtype=None, shape=None):
    """Like ``zeros_like`` (functrax has no uninitialized memory)."""
    return _like("empty_like", prototype, 0, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    """``fill_value`` with the shape and dtype of ``a`` (broadcast if it is an array)."""
    _check_arraylike("full_like", fill_value, "fill_value")
    if np.ndim(fill_value) == 0:
        return _like("full_like", a, fill_value, dtype, shape)
    _check_arraylike("full_like", a, "a")
    from functrax.numpy.shape_ops import broadcast_to
    shape = np.shape(a) if shape is None else _shape(shape, "full_like")
    return broadcast_to(asarray(fill_value, dtype or dtypes.result_type(a)), shape)


# --- ranges ---


def _concrete_scalar(x, fun_name, argname):
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        if v is None:
            raise ConcretizationTypeError(
                x, f"It arose in functrax.numpy.{fun_name} argument `{argname}`, which must be "
                   "concrete because it determines the output shape. ")
        x = v
    if x is not None and type(x) not in _SCALARS:
        if np.ndim(x) != 0:
            raise ValueError(f"{fun_name}: `{argname}` must be a scalar, got an array of shape "
                             f"{np.shape(x)}")
        x = np.asarray(x)[()]
    return x


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (bounds must be concrete).

    The dtype is the promoted type of the arguments: int32 for Python ints, float32 when any
    is a float.

    >>> arange(3)
    Array([0, 1, 2], dtype=int32)
    >>> arange(1.0, 0.0, -0.5)
    Array([1. , 0.5], dtype=float32)
    """
    args = [a for a in (start, stop, step) if a is not None]
    dt = _dtype(dtype) or dtypes.result_type(*args)
    start = _concrete_scalar(start, "arange", "start")
    stop = _concrete_scalar(stop, "arange", "stop")
    step = _concrete_scalar(step, "arange", "step")
    if step is not None and step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    if stop is None and step is None:
        return lax.iota(dt, max(int(np.ceil(start)), 0))
    if step is None and start == 0:
        return lax.iota(dt, max(int(np.ceil(stop)), 0))
    return Array(np.arange(start, stop, step, dtype=dt))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced samples from ``start`` to ``stop`` (excluded unless ``endpoint``).

    ``start``/``stop`` may be arrays (samples run along ``axis``); with ``retstep`` the
    spacing is returned too (NaN when it is undefined, as numpy).

    >>> linspace(0.0, 1.0, 5)
    Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    from functrax.numpy import ufuncs
    from functrax.numpy.shape_ops import broadcast_to, reshape
    num = operator.index(_concrete_scalar(num, "linspace", "num"))
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative.")
    _check_arraylike("linspace", start, "start")
    _check_arraylike("linspace", stop, "stop")
    def inexact(t):
        return t if dtypes.is_inexact(t) else dtypes.default_float_dtype()
    dt = _dtype(dtype) or inexact(dtypes.result_type(start, stop))
    comp = inexact(dt)
    start, stop = asarray(start, comp), asarray(stop, comp)
    bshape = list(np.broadcast_shapes(start.shape, stop.shape))
    bstart, bstop = broadcast_to(start, bshape), broadcast_to(stop, bshape)
    axis = operator.index(axis)
    if not -len(bshape) - 1 <= axis <= len(bshape):
        raise ValueError(f"linspace: axis {axis} is out of bounds for a result of "
                         f"{len(bshape) + 1} dimensions")
    axis = axis % (len(bshape) + 1)
    bounds = bshape[:axis] + [1] + bshape[axis:]
    div = num - 1 if endpoint else num
    if num > 1:
        delta = ufuncs.true_divide(lax.sub(bstop, bstart), np.asarray(div, comp))
        real = dtypes.finfo(comp).dtype
        iota_shape = [1] * len(bounds)
        iota_shape[axis] = div
        frac = lax.div(lax.reshape(lax.iota(real, div), iota_shape), np.asarray(div, real)[()])
        frac = lax.convert_element_type(frac, comp)
        out = ufuncs.add(ufuncs.multiply(reshape(bstart, bounds), lax.sub(1, frac)),
                         ufuncs.multiply(reshape(bstop, bounds), frac))
        if endpoint:
            out = lax.concatenate([out, lax.expand_dims(bstop, (axis,))], axis)
    elif num == 1:
        delta = _full((), np.nan, comp, False) if endpoint else lax.sub(bstop, bstart)
        out = reshape(bstart, bounds)
    else:
        delta = _full((), np.nan, comp, False)
        out = zeros(bshape[:axis] + [0] + bshape[axis:], comp)
    if dtypes.is_int(dt) and not dtypes.is_int(core.get_aval(out).dtype):
        out = lax.floor(out)
    out = lax.convert_element_type(out, dt)
    return (out, delta) if retstep else out


# --- matrices ---


def _dim(n, fun_name, argname):
    n = operator.index(_concrete_scalar(n, fun_name, argname))
    if n < 0:
        raise ValueError(f"{fun_name}: negative dimensions are not allowed, got {argname}={n}")
    return n


def _diag_offset(rows, k):
    """rows + k, for a static or traced integer offset ``k``."""
    if isinstance(k, (Array, Tracer)):
        if k.dtype.kind not in "iu" or k.ndim:
            raise TypeError(f"k must be an integer scalar, got {core.get_aval(k).str_short()}")
        return lax.add(rows, lax.convert_element_type(k, rows.dtype))
    return lax.add(rows, np.asarray(operator.index(k), rows.dtype)[()])


def _tri_bool(N, M, k):
    i32 = dtypes.canonicalize_dtype(np.int32)
    rows = lax.broadcasted_iota(i32, (N, M), 0)
    cols = lax.broadcasted_iota(i32, (N, M), 1)
    return lax.ge(_diag_offset(rows, k), cols)


def eye(N, M=None, k=0, dtype=None):
    """A 2-D ``N x M`` array with ones on the ``k``-th diagonal (default dtype float32).

    >>> eye(2, 3, k=1, dtype=int)
    Array([[0, 1, 0],
           [0, 0, 1]], dtype=int32)
    """
    N = _dim(N, "eye", "N")
    M = N if M is None else _dim(M, "eye", "M")
    dt = _dtype(dtype) or dtypes.default_float_dtype()
    i32 = dtypes.canonicalize_dtype(np.int32)
    rows = lax.broadcasted_iota(i32, (N, M), 0)
    cols = lax.broadcasted_iota(i32, (N, M), 1)
    return lax.convert_element_type(lax.eq(_diag_offset(rows, k), cols), dt)


def identity(n, dtype=None):
    """The ``n x n`` identity matrix (default dtype float32)."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the ``k``-th diagonal of an ``N x M`` array (default float32)."""
    N = _dim(N, "tri", "N")
    M = N if M is None else _dim(M, "tri", "M")
    dt = _dtype(dtype) or dtypes.default_float_dtype()
    return lax.convert_element_type(_tri_bool(N, M, k), dt)


def _tri_mask(fun_name, m, k, lower):
    _check_arraylike(fun_name, m, "m")
    m = asarray(m)
    aval = core.get_aval(m)
    if aval.ndim < 2:
        raise ValueError(f"{fun_name}: argument must be at least 2-D, got shape {aval.shape}")
    n, mm = aval.shape[-2:]
    mask = _tri_bool(n, mm, k if lower else _minus_one(k))
    mask = lax.broadcast_in_dim(mask, aval.shape, (aval.ndim - 2, aval.ndim - 1))
    zero = _full(aval.shape, 0, aval.dtype, aval.weak_type)
    return lax.select(mask, m, zero) if lower else lax.select(mask, zero, m)


def _minus_one(k):
    return lax.sub(k, np.asarray(1, k.dtype)[()]) if isinstance(k, (Array, Tracer)) else (
        operator.index(k) - 1)


def tril(m, k=0):
    """Lower triangle of the last two axes (zeros above the ``k``-th diagonal)."""
    return _tri_mask("tril", m, k, True)


def triu(m, k=0):
    """Upper triangle of the last two axes (zeros below the ``k``-th diagonal)."""
    return _tri_mask("triu", m, k, False)


__all__ = [
    "arange", "array", "asarray", "copy", "empty", "empty_like", "eye", "full", "full_like",
    "identity", "linspace", "ones", "ones_like", "tri", "tril", "triu", "zeros", "zeros_like",
]


# --- logarithmic ranges ---


def _inexact_result(fun_name, dtype, *args):
    for a in args:
        _check_arraylike(fun_name, a, "start/stop")
    def inexact(t):
        return t if dtypes.is_inexact(t) else dtypes.default_float_dtype()
    dt = _dtype(dtype) or inexact(dtypes.result_type(*args))
    return dt, inexact(dt)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``: ``num`` samples evenly spaced on a log scale.

    Args:
      start, stop: the exponents of the first and last samples (arrays broadcast).
      num: the number of samples (static).
      endpoint: include ``base ** stop``.
      base: the base of the logarithm.
      dtype: the result dtype (default: inexact).
      axis: the axis of the samples in the result.

    >>> logspace(0.0, 2.0, 3)
    Array([  1.,  10., 100.], dtype=float32)
    """
    from functrax.numpy import ufuncs
    dt, comp = _inexact_result("logspace", dtype, start, stop)
    lin = linspace(asarray(start, comp), asarray(stop, comp), num, endpoint=endpoint, axis=axis)
    return lax.convert_element_type(ufuncs.power(asarray(base, comp), lin), dt)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` samples from ``start`` to ``stop`` evenly spaced on a log scale (a geometric
    progression; ``start`` and ``stop`` of one sign, or complex).

    >>> geomspace(1.0, 1000.0, 4)
    Array([   1.,   10.,  100., 1000.], dtype=float32)
    """
    from functrax.numpy import ufuncs
    from functrax.numpy.shape_ops import moveaxis
    dt, comp = _inexact_result("geomspace", dtype, start, stop)
    start, stop = asarray(start, comp), asarray(stop, comp)
    sign = ufuncs.sign(start)
    res = ufuncs.multiply(sign, logspace(ufuncs.log10(ufuncs.true_divide(start, sign)),
                                         ufuncs.log10(ufuncs.true_divide(stop, sign)), num,
                                         endpoint=endpoint, base=10.0, dtype=comp, axis=0))
    if axis != 0:
        res = moveaxis(res, 0, axis)
    return lax.convert_element_type(res, dt)


__all__ += ["logspace", "geomspace"]
