"""Promotion and broadcasting, done once here so that primitives see equal dtypes and shapes."""
from __future__ import annotations

import operator
import warnings

import numpy as np

from functrax import core, dtypes, lax
from functrax.config import config
from functrax.core import Array, Tracer
from functrax.errors import ConcretizationTypeError

_SCALARS = (bool, int, float, complex)


def check_arraylike(fun_name: str, *args):
    for pos, x in enumerate(args):
        if not (isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in _SCALARS):
            extra = (" Use functrax.numpy.asarray(...) to convert a list or tuple."
                     if isinstance(x, (list, tuple)) else "")
            raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                            f"{type(x).__name__} at position {pos}.{extra}")


def _const(x, dtype, weak):
    """A Python scalar as an operand of ``dtype`` (keeping weak typing when it applies)."""
    if weak and type(x) is not bool and dtypes.python_scalar_dtype(x) == dtype:
        return x
    if weak:
        return Array(np.asarray(x, dtype), weak_type=True)
    return np.asarray(x, dtype)[()]


def cast(x, dtype, weak=False):
    """``x`` as ``dtype``: Python scalars become constants, arrays get convert_element_type."""
    if type(x) in _SCALARS:
        return _const(x, dtype, weak)
    aval = core.get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak:
        return x
    if isinstance(x, (np.ndarray, np.generic)) and not weak:
        return np.asarray(x, dtype)
    return lax.convert_element_type(x, dtype, weak)


def promote_dtypes(*args):
    """Cast all arguments to their JAX result type (weak Python scalars included)."""
    if len(args) == 1:
        return [args[0]]
    dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    return [cast(x, dtype, weak) for x in args]


def promote_dtypes_inexact(*args):
    """Like promote_dtypes, but integers and booleans go to the default float type."""
    dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float_dtype()
    return [cast(x, dtype, weak) for x in args]


def promote_dtypes_numeric(*args):
    """Like promote_dtypes, but booleans go to the default int type."""
    dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    if dtype == np.bool_:
        dtype = dtypes.default_int_dtype()
    return [cast(x, dtype, weak) for x in args]


def shape_of(x):
    return () if type(x) in _SCALARS else np.shape(x) if not isinstance(
        x, (Array, Tracer)) else x.aval.shape


def broadcast_shapes_named(fun_name, *shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{fun_name}: incompatible shapes for broadcasting: "
                         f"shapes={[tuple(s) for s in shapes]}. Make the shapes agree, or add "
                         "axes of size 1 (x[:, None]) where you mean to broadcast.") from None


def broadcast_to_shape(x, shape):
    """Broadcast ``x`` (numpy rules: trailing alignment, size-1 dims) to ``shape``."""
    xs = shape_of(x)
    if tuple(xs) == tuple(shape):
        return x
    lead = len(shape) - len(xs)
    if lead < 0 or any(d not in (1, s) for d, s in zip(xs, shape[lead:])):
        raise ValueError(f"broadcast_to: cannot broadcast shape {tuple(xs)} to {tuple(shape)}")
    return lax.broadcast_in_dim(x, tuple(shape), tuple(range(lead, len(shape))))


_RANK_DOC = "https://docs.jax.dev/en/latest/rank_promotion_warning.html"


def check_rank_promotion(fun_name, shapes):
    """JAX's ``jax_numpy_rank_promotion`` check: operands of different (nonzero) ranks."""
    mode = config.read("numpy_rank_promotion")
    if mode == "allow" or len({len(s) for s in shapes if s}) < 2:
        return
    shown = " ".join(str(tuple(s)) for s in shapes)
    if mode == "warn":
        warnings.warn(f"Following NumPy automatic rank promotion for {fun_name} on shapes "
                      f"{shown}. Set the jax_numpy_rank_promotion config option to 'allow' to "
                      f"disable this warning; for more information, see {_RANK_DOC}.",
                      stacklevel=4)
    else:
        raise ValueError(f"Operands could not be broadcast together for {fun_name} on shapes "
                         f"{shown} and with the config option jax_numpy_rank_promotion="
                         f"'raise'. For more information, see {_RANK_DOC}.")


def promote_shapes(fun_name, *args, lax_broadcast=False):
    """Broadcast arguments to a common shape; rank-0 operands are left as they are.

    With ``lax_broadcast`` (the ufuncs, which bind one lax op), as JAX's ``promote_shapes``:
    only ranks are promoted (leading size-1 axes) and size-1 dimensions are left to the lax
    operation's own broadcasting, so ``x + b`` of ``f32[3,4]`` and ``f32[4]`` stages
    ``broadcast_in_dim`` to ``f32[1,4]`` and one ``add``.

    Raises:
      ValueError: for shapes that do not broadcast (naming ``fun_name``); for operands of
        different ranks under ``numpy_rank_promotion('raise')`` (``'warn'`` warns), as JAX.
    """
    if len(args) < 2:
        return list(args)
    shapes = [shape_of(x) for x in args]
    nonscalar = {tuple(s) for s in shapes if s != ()}
    if len(nonscalar) <= 1:
        return list(args)
    check_rank_promotion(fun_name, shapes)
    result = broadcast_shapes_named(fun_name, *shapes)
    if lax_broadcast:
        return [x if s == () or len(s) == len(result) else lax.broadcast_to_rank(x, len(result))
                for x, s in zip(args, shapes)]
    return [x if s == () or tuple(s) == result else broadcast_to_shape(x, result)
            for x, s in zip(args, shapes)]


def _same_avals(args):
    """Fast path: all arguments are arrays/tracers of one aval (nothing to promote)."""
    a0 = getattr(args[0], "aval", None)
    if a0 is None:
        return False
    for x in args[1:]:
        a = getattr(x, "aval", None)
        if a is None or not (a is a0 or a == a0):
            return False
    return isinstance(args[0], (Array, Tracer))


def _scalar_fast(args):
    """Fast path for (strong array, Python int/float) pairs: the scalar takes the array's dtype.

    Returns None when the general promotion is needed.
    """
    if len(args) != 2:
        return None
    x, y = args
    swap = False
    if type(x) in (int, float):
        x, y, swap = y, x, True
    elif type(y) not in (int, float):
        return None
    aval = getattr(x, "aval", None)
    if aval is None or aval.weak_type:
        return None
    kind = aval.dtype.kind
    if kind in "fc" or (kind in "iu" and type(y) is int):
        c = aval.dtype.type(y)
        return (c, x) if swap else (x, c)
    return None


def promote_args(fun_name, *args, lax_broadcast=False):
    if _same_avals(args):
        return args
    fast = _scalar_fast(args)
    if fast is not None:
        return fast
    check_arraylike(fun_name, *args)
    dtypes.check_for_prngkeys(fun_name, *args)  # key + 1: JAX's TypeError
    return promote_shapes(fun_name, *promote_dtypes(*args), lax_broadcast=lax_broadcast)


def promote_args_inexact(fun_name, *args, lax_broadcast=False):
    if _same_avals(args) and args[0].aval.dtype.kind in "fc":
        return args
    fast = _scalar_fast(args)
    if fast is not None and core.get_aval(fast[0]).dtype.kind in "fc":
        return fast
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_inexact(*args), lax_broadcast=lax_broadcast)


def promote_args_numeric(fun_name, *args, lax_broadcast=False):
    if _same_avals(args) and args[0].aval.dtype.kind != "b":
        return args
    fast = _scalar_fast(args)
    if fast is not None:
        return fast
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_numeric(*args), lax_broadcast=lax_broadcast)


def canonicalize_axis(axis, ndim, fun_name="axis"):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{fun_name}: axis {axis} is out of bounds for array of dimension "
                         f"{ndim}")
    return axis % ndim


def canonicalize_axes(axis, ndim, fun_name="axis"):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, ndim, fun_name) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{fun_name}: repeated axis in {axis}")
        return axes
    return (canonicalize_axis(axis, ndim, fun_name),)


def asarray_operand(x):
    """An Array, tracer or numpy value as-is; Python scalars and sequences as Arrays."""
    if isinstance(x, (Array, Tracer)):
        return x
    from functrax.numpy.creation import asarray
    return asarray(x)


def static_value(x, fun_name, argname):
    """The concrete value of a static argument (tracers inside must have a known value)."""
    if isinstance(x, core.Tracer):
        v = x.to_concrete_value()
        if v is None:
            raise ConcretizationTypeError(
                x, f"The problem arose with the `{argname}` argument of functrax.numpy."
                   f"{fun_name}, which must be static because it determines the output shape. ")
        return v
    if isinstance(x, (list, tuple)):
        return [static_value(v, fun_name, argname) for v in x]
    return x


def array_operand(fun_name, a):
    check_arraylike(fun_name, a)
    return asarray_operand(a)
