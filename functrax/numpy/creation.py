"""Array creation: array, asarray, zeros, ones, full, empty, *_like, arange, linspace, eye, ..."""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.core import Array, Tracer
from functrax.tree_util import tree_leaves

_SCALARS = (bool, int, float, complex)


def _dtype(dtype):
    return None if dtype is None else dtypes.canonicalize_dtype(dtype)


def _shape(shape, fun_name):
    if isinstance(shape, (int, np.integer)) or (isinstance(shape, (Array, Tracer))
                                                 and shape.ndim == 0):
        shape = (shape,)
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{fun_name}: shape must be a sequence of integers, got {shape!r}. "
                        "Shapes must be static: under jit, pass sizes as static "
                        "arguments.") from None
    if any(d < 0 for d in out):
        raise ValueError(f"{fun_name}: negative dimensions are not allowed, got shape {out}")
    return out


def array(object, dtype=None, copy=True, order="K", ndmin=0):
    """Create an array from an Array, tracer, numpy array, Python scalar or nested sequence.

    >>> array([1, 2, 3])
    Array([1, 2, 3], dtype=int32)
    """
    dtype = _dtype(dtype)
    if isinstance(object, (Array, Tracer)):
        out = object if dtype is None else lax.convert_element_type(object, dtype)
    elif isinstance(object, (list, tuple)) and any(
            isinstance(x, (Array, Tracer)) for x in tree_leaves(object)):
        from functrax.numpy.shape_ops import stack
        out = stack([array(x) for x in object])
        if dtype is not None:
            out = lax.convert_element_type(out, dtype)
    else:
        if hasattr(object, "__array__") or isinstance(object, (np.ndarray, np.generic)):
            val = np.asarray(object)
        else:
            try:
                val = np.asarray(object)
            except ValueError as e:
                raise ValueError(f"functrax.numpy.array: cannot build an array from {object!r} "
                                 f"({e}); nested sequences must be rectangular") from None
            if val.dtype.kind in "OSUV":
                raise TypeError(f"functrax.numpy.array: cannot convert {object!r} to an array "
                                "of numbers")
            if val.dtype.kind == "f" and dtype is None:
                val = val.astype(dtypes.default_float_dtype())
            elif val.dtype.kind == "i" and dtype is None:
                val = val.astype(dtypes.default_int_dtype())
        if val.dtype.kind in "OSUV":
            raise TypeError(f"functrax.numpy.array: unsupported dtype {val.dtype} of {object!r}")
        out = Array(np.array(val, dtype=dtype or dtypes.canonicalize_dtype(val.dtype),
                             copy=True))
    if ndmin and core.get_aval(out).ndim < ndmin:
        shape = (1,) * (ndmin - core.get_aval(out).ndim) + core.get_aval(out).shape
        out = lax.reshape(out, shape)
    return out


def asarray(a, dtype=None, order=None, *, copy=None):
    """Like ``array`` but returns ``a`` itself when it is already an Array of that dtype."""
    if isinstance(a, (Array, Tracer)) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    if isinstance(a, np.ndarray) and dtype is None and not copy:
        dt = dtypes.canonicalize_dtype(a.dtype)
        return Array(np.array(a, dt, copy=True))
    return array(a, dtype=dtype)


def zeros(shape, dtype=None):
    """An array of zeros (default dtype float32)."""
    return lax.full(_shape(shape, "zeros"), 0, _dtype(dtype) or dtypes.default_float_dtype())


def ones(shape, dtype=None):
    """An array of ones (default dtype float32)."""
    return lax.full(_shape(shape, "ones"), 1, _dtype(dtype) or dtypes.default_float_dtype())


def empty(shape, dtype=None):
    """Like ``zeros`` (functrax has no uninitialized memory)."""
    return zeros(shape, dtype)


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (broadcast if it is an array)."""
    shape = _shape(shape, "full")
    if np.ndim(fill_value) == 0 and not (isinstance(fill_value, (Array, Tracer))
                                         and fill_value.ndim):
        if dtype is None:
            dtype = dtypes.dtype_and_weak(fill_value)[0]
        return lax.full(shape, fill_value, _dtype(dtype))
    from functrax.numpy.shape_ops import broadcast_to
    return broadcast_to(asarray(fill_value, dtype), shape)


def _like(fill):
    def fn(a, dtype=None, shape=None):
        aval = core.get_aval(a) if not isinstance(a, (list, tuple)) else core.get_aval(
            asarray(a))
        return lax.full(aval.shape if shape is None else _shape(shape, "like"), fill,
                        _dtype(dtype) or aval.dtype)
    return fn


zeros_like = _like(0)
ones_like = _like(1)
empty_like = zeros_like


def full_like(a, fill_value, dtype=None, shape=None):
    aval = core.get_aval(a)
    return full(aval.shape if shape is None else shape, fill_value, dtype or aval.dtype)


def _concrete_scalar(x, fun_name, argname):
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        if v is None:
            from functrax.errors import ConcretizationTypeError
            raise ConcretizationTypeError(
                x, f"It arose in functrax.numpy.{fun_name} argument `{argname}`, which must be "
                   "concrete because it determines the output shape. ")
        return v
    return x


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (bounds must be concrete).

    >>> arange(3)
    Array([0, 1, 2], dtype=int32)
    """
    start = _concrete_scalar(start, "arange", "start")
    stop = _concrete_scalar(stop, "arange", "stop")
    step = _concrete_scalar(step, "arange", "step")
    if stop is None and step is None:
        size = int(np.ceil(np.asarray(start)))
        dt = _dtype(dtype) or dtypes.result_type(start)
        if dt.kind in "iu" and not np.issubdtype(np.asarray(start).dtype, np.floating):
            return lax.iota(dt, max(size, 0))
    vals = np.arange(np.asarray(start), stop if stop is None else np.asarray(stop),
                     step if step is None else np.asarray(step))
    args = [a for a in (start, stop, step) if a is not None]
    dt = _dtype(dtype) or dtypes.result_type(*args)
    return Array(vals.astype(dt))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced samples from ``start`` to ``stop``."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative.")
    dt = _dtype(dtype) or dtypes.result_type(start, stop, float)
    from functrax.numpy.ufuncs import add, multiply, subtract, true_divide
    from functrax.numpy._util import broadcast_to_shape
    start_a, stop_a = asarray(start, dt), asarray(stop, dt)
    div = (num - 1) if endpoint else num
    steps = lax.convert_element_type(lax.iota(dtypes.default_int_dtype(), num), dt)
    shape = np.broadcast_shapes(np.shape(start_a), np.shape(stop_a))
    steps = lax.reshape(steps, (num,) + (1,) * len(shape))
    delta = subtract(stop_a, start_a)
    step = true_divide(delta, div) if div > 0 else multiply(delta, np.nan)
    out = add(start_a, multiply(steps, step)) if div > 0 else add(start_a, multiply(steps, 0))
    if endpoint and num > 1:  # the last sample is exactly `stop`, as numpy
        last = lax.broadcast_in_dim(broadcast_to_shape(stop_a, shape), (1,) + tuple(shape),
                                    tuple(range(1, 1 + len(shape))))
        out = lax.concatenate([lax.slice_in_dim(out, 0, num - 1), lax.convert_element_type(
            last, core.get_aval(out).dtype)], 0)
    if axis != 0:
        from functrax.numpy.shape_ops import moveaxis
        out = moveaxis(out, 0, axis)
    out = lax.convert_element_type(out, dt)
    return (out, step) if retstep else out


def eye(N, M=None, k=0, dtype=None):
    """A 2-D array with ones on the ``k``-th diagonal."""
    M = N if M is None else M
    dt = _dtype(dtype) or dtypes.default_float_dtype()
    rows = lax.broadcasted_iota(dtypes.default_int_dtype(), (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.default_int_dtype(), (N, M), 1)
    return lax.convert_element_type(lax.eq(lax.add(rows, k), cols), dt)


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the ``k``-th diagonal."""
    M = N if M is None else M
    dt = _dtype(dtype) or dtypes.default_float_dtype()
    rows = lax.broadcasted_iota(dtypes.default_int_dtype(), (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.default_int_dtype(), (N, M), 1)
    return lax.convert_element_type(lax.ge(lax.add(rows, k), cols), dt)


def _tri_mask(m, k, lower):
    aval = core.get_aval(m)
    if aval.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} requires an array of at least 2 "
                         f"dimensions, got shape {aval.shape}")
    n, mm = aval.shape[-2:]
    mask = tri(n, mm, k if lower else k - 1, dtype=bool)
    from functrax.numpy.ufuncs import where
    return where(mask if lower else lax.bitwise_not(mask), m, lax.full((), 0, aval.dtype))


def tril(m, k=0):
    """Lower triangle of the last two axes (zeros above the ``k``-th diagonal)."""
    return _tri_mask(asarray(m), k, True)


def triu(m, k=0):
    """Upper triangle of the last two axes (zeros below the ``k``-th diagonal)."""
    return _tri_mask(asarray(m), k, False)
