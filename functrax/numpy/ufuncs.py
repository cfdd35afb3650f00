"""Elementwise functions of ``functrax.numpy`` (numpy's ufuncs, as ``jax.numpy`` has them).

Each function checks its arguments, promotes dtypes (JAX's lattice, weak Python scalars) and
broadcasts shapes with the helpers of ``_util``, then binds ``functrax.lax`` primitives, so it
works the same on Arrays and on tracers.

>>> import functrax.numpy as fnp
>>> fnp.add(fnp.arange(3, dtype="int8"), 1)
Array([1, 2, 3], dtype=int8)
"""
from __future__ import annotations

import builtins
import functools
import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.core import Array, Tracer
from functrax.numpy.promotion import (
    broadcast_shapes_named, broadcast_to_shape, check_arraylike, check_rank_promotion,
    promote_args, promote_args_inexact, promote_args_numeric, promote_dtypes,
    promote_dtypes_inexact, promote_dtypes_numeric, promote_shapes, shape_of,
)

_SCALARS = (bool, int, float, complex)

# --- helpers ---


def _dtype(x) -> np.dtype:
    return dtypes.dtype_and_weak(x)[0]


def _weak(x) -> bool:
    return dtypes.dtype_and_weak(x)[1]


def _kind(x) -> str:
    """'b', 'i', 'u', 'f' or 'c' (bfloat16 counts as 'f')."""
    dt = _dtype(x)
    return "f" if dtypes.is_float(dt) else dt.kind


def _const(x, value):
    """``value`` as a strongly typed scalar of ``x``'s dtype (JAX's ``_lax_const``)."""
    return np.asarray(value, _dtype(x))[()]


def _like(x, value):
    """``value`` as a scalar of ``x``'s dtype that is weakly typed when ``x`` is."""
    if _weak(x):
        return Array(np.asarray(value, _dtype(x)), weak_type=True)
    return _const(x, value)


def _asarray(x):
    """``x`` as an Array or tracer; Python scalars keep their weak type."""
    if isinstance(x, (Array, Tracer)):
        return x
    if type(x) in _SCALARS:
        return Array(np.asarray(x, dtypes.python_scalar_dtype(x)), weak_type=type(x) is not bool)
    return Array(np.asarray(x))


def _lax_operands(args):
    """Python scalars left by promotion (weak, of the result dtype) as weak Arrays.

    ``lax`` turns a Python scalar beside another operand into a strong constant; a weak Array
    keeps the result weakly typed, as in JAX (``fnp.sin(1.0) + 1.0`` is weak).
    """
    if len(args) < 2:
        return list(args)
    return [_weak_scalar(a) if type(a) in _SCALARS else a for a in args]


def _weak_scalar(x):
    dt = dtypes.python_scalar_dtype(x)
    return Array._make(np.asarray(x, dt), core.ShapedArray((), dt, True))


def _P(name, *args):
    return _lax_operands(promote_args(name, *args, lax_broadcast=True))


def _I(name, *args):
    return _lax_operands(promote_args_inexact(name, *args, lax_broadcast=True))


def _N(name, *args):
    return _lax_operands(promote_args_numeric(name, *args, lax_broadcast=True))


def _broadcast_all(name, *args):
    """Broadcast every argument (rank-0 ones too) to the common shape."""
    check_rank_promotion(name, [shape_of(a) for a in args])
    shape = broadcast_shapes_named(name, *[shape_of(a) for a in args])
    return [broadcast_to_shape(_asarray(a), shape) for a in args]


def _where(condition, x, y):
    """``select`` with numpy broadcasting and dtype promotion of ``x`` and ``y``."""
    if _dtype(condition) != np.bool_:
        condition = lax.ne(condition, _const(condition, 0))
    x, y = promote_dtypes(x, y)
    if shape_of(condition) == ():
        x, y = _broadcast_all("where", x, y)
    else:
        condition, x, y = _broadcast_all("where", condition, x, y)
    return lax.select(condition, x, y)


def _to_bool(x):
    """``x != 0`` (``x`` itself when it is boolean)."""
    return x if _dtype(x) == np.bool_ else lax.ne(x, _const(x, 0))


def _complex(re, im, like):
    """``re + 1j * im`` as ``like``'s complex dtype (there is no ``complex`` primitive)."""
    dt = _dtype(like)
    re, im = lax.convert_element_type(re, dt), lax.convert_element_type(im, dt)
    return lax.add(re, lax.mul(im, _const(like, 1j)))


# the helpers other modules of functrax.numpy share (short names inside this module)
dtype_of, dtype_kind, const_like, asarray_weak = _dtype, _kind, _const, _asarray
inexact_operands, where_promoted, make_complex, to_bool = _I, _where, _complex, _to_bool


def _no_complex(name, *args):
    for x in args:
        if _dtype(x).kind == "c":
            raise TypeError(f"{name} does not support complex-valued inputs, got "
                            f"{_dtype(x).name}. Take the real or imaginary part "
                            "(functrax.numpy.real/imag) or the absolute value first.")


def _unary(name, lax_fn, promote, what, dtype_note):
    def fn(x, /):
        x, = promote(name, x)
        return lax_fn(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {what}, as ``numpy.{name}``.\n\n{dtype_note}\n"
    return fn


def _binary(name, lax_fn, promote, doc):
    def fn(x1, x2, /):
        x1, x2 = promote(name, x1, x2)
        return lax_fn(x1, x2)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {doc}, with numpy broadcasting and JAX type promotion."
    return fn


_INEXACT_NOTE = "Integer and boolean inputs promote to the default float dtype."

# --- unary: transcendental (always inexact) ---
sin = _unary("sin", lax.sin, _I, "sine", _INEXACT_NOTE)
cos = _unary("cos", lax.cos, _I, "cosine", _INEXACT_NOTE)
tan = _unary("tan", lax.tan, _I, "tangent", _INEXACT_NOTE)
arcsin = _unary("arcsin", lax.asin, _I, "inverse sine", _INEXACT_NOTE)
arccos = _unary("arccos", lax.acos, _I, "inverse cosine", _INEXACT_NOTE)
arctan = _unary("arctan", lax.atan, _I, "inverse tangent", _INEXACT_NOTE)
sinh = _unary("sinh", lax.sinh, _I, "hyperbolic sine", _INEXACT_NOTE)
cosh = _unary("cosh", lax.cosh, _I, "hyperbolic cosine", _INEXACT_NOTE)
tanh = _unary("tanh", lax.tanh, _I, "hyperbolic tangent", _INEXACT_NOTE)
arcsinh = _unary("arcsinh", lax.asinh, _I, "inverse hyperbolic sine", _INEXACT_NOTE)
arctanh = _unary("arctanh", lax.atanh, _I, "inverse hyperbolic tangent", _INEXACT_NOTE)
exp = _unary("exp", lax.exp, _I, "exponential ``e**x``", _INEXACT_NOTE)
exp2 = _unary("exp2", lax.exp2, _I, "base-2 exponential ``2**x``", _INEXACT_NOTE)
expm1 = _unary("expm1", lax.expm1, _I, "``exp(x) - 1`` (accurate near 0)", _INEXACT_NOTE)
log = _unary("log", lax.log, _I, "natural logarithm", _INEXACT_NOTE)
log1p = _unary("log1p", lax.log1p, _I, "``log(1 + x)`` (accurate near 0)", _INEXACT_NOTE)
sqrt = _unary("sqrt", lax.sqrt, _I, "square root", _INEXACT_NOTE)
cbrt = _unary("cbrt", lax.cbrt, _I, "cube root", _INEXACT_NOTE)


def arccosh(x, /):
    """Elementwise inverse hyperbolic cosine, as ``numpy.arccosh`` (numpy's branch for complex)."""
    x, = _I("arccosh", x)
    out = lax.acosh(x)
    if _kind(out) == "c":
        re = lax.real(out)
        out = _where(lax.lt(re, _const(re, 0)), lax.neg(out), out)
    return out


asin, acos, atan = arcsin, arccos, arctan
asinh, acosh, atanh = arcsinh, arccosh, arctanh


def log2(x, /):
    """Elementwise base-2 logarithm, as ``numpy.log2``."""
    x, = _I("log2", x)
    return lax.div(lax.log(x), lax.log(_const(x, 2)))


def log10(x, /):
    """Elementwise base-10 logarithm, as ``numpy.log10``."""
    x, = _I("log10", x)
    return lax.div(lax.log(x), lax.log(_const(x, 10)))


def sinc(x, /):
    """Normalized sinc ``sin(pi x) / (pi x)``, 1 at ``x == 0``, as ``numpy.sinc``.

    Near 0 a Taylor polynomial is used, so derivatives of every order are right there too.
    """
    check_arraylike("sinc", x)
    x, = promote_dtypes_inexact(x)
    y = lax.mul(_const(x, np.pi), x)
    abs_y = lax.abs(y)
    small = lax.lt(abs_y, _const(abs_y, 0.1))
    safe = _where(small, _const(x, 1), y)
    y2 = lax.mul(y, y)  # 1 - y**2/6 + y**4/120, accurate to 2e-10 for |y| < 0.1
    taylor = lax.add(_const(x, 1), lax.mul(y2, lax.add(_const(x, -1 / 6),
                                                       lax.mul(y2, _const(x, 1 / 120)))))
    return _where(small, taylor, lax.div(lax.sin(safe), safe))


def deg2rad(x, /):
    """Convert angles from degrees to radians, as ``numpy.deg2rad``."""
    x, = _I("deg2rad", x)
    return lax.mul(x, _const(x, np.pi / 180))


def rad2deg(x, /):
    """Convert angles from radians to degrees, as ``numpy.rad2deg``."""
    x, = _I("rad2deg", x)
    return lax.mul(x, _const(x, 180 / np.pi))


radians, degrees = deg2rad, rad2deg

# --- unary: arithmetic ---
negative = _unary("negative", lax.neg, _P, "``-x``", "Unsigned integers wrap around.")
sign = _unary("sign", lax.sign, _P, "sign: -1, 0 or 1", "For complex ``x``, ``x / |x|``.")
bitwise_not = _unary("bitwise_not", lax.bitwise_not, _P, "bitwise ``~x``",
                     "Logical not for booleans.")
invert = bitwise_invert = bitwise_not


def bitwise_count(x, /):
    """Elementwise count of the 1 bits of ``|x|`` (integers only), as ``numpy.bitwise_count``:
    the result is uint8.

    >>> bitwise_count(array([64, 31, -7]))
    Array([1, 5, 3], dtype=uint8)
    """
    x, = _N("bitwise_count", x)
    return lax.convert_element_type(lax.population_count(lax.abs(x)), np.uint8)


def positive(x, /):
    """Elementwise ``+x``: the input as an array."""
    x, = _P("positive", x)
    return _asarray(x)


def square(x, /):
    """Elementwise ``x * x``; booleans promote to the default integer dtype."""
    check_arraylike("square", x)
    x, = promote_dtypes_numeric(x)
    return lax.square(x)


def reciprocal(x, /):
    """Elementwise ``1 / x``; integers promote to the default float dtype (unlike numpy)."""
    check_arraylike("reciprocal", x)
    x, = promote_dtypes_inexact(x)
    return lax.integer_pow(x, -1)


def absolute(x, /):
    """Elementwise absolute value (real-valued for complex input).

    >>> import functrax.numpy as fnp
    >>> fnp.abs(fnp.array([-2, 0, 3]))
    Array([2, 0, 3], dtype=int32)
    """
    check_arraylike("absolute", x)
    if _kind(x) in "bu":
        return _asarray(x)
    x, = _P("absolute", x)
    return lax.abs(x)


abs = absolute


def fabs(x, /):
    """Elementwise absolute value as a float (complex input is an error)."""
    check_arraylike("fabs", x)
    _no_complex("fabs", x)
    x, = _I("fabs", x)
    return lax.abs(x)


# --- unary: rounding ---


def _integral(name, float_fn, doc):
    def fn(x, /):
        check_arraylike(name, x)
        if _kind(x) in "biu":
            return _asarray(x)
        x, = _I(name, x)
        return float_fn(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{doc}, as ``numpy.{name}``; integer and boolean inputs come back unchanged."
    return fn


floor = _integral("floor", lax.floor, "Round down to integral values")
ceil = _integral("ceil", lax.ceil, "Round up to integral values")
trunc = _integral("trunc", lambda x: _where(lax.lt(x, _const(x, 0)), lax.ceil(x), lax.floor(x)),
                  "Round toward zero")


def _no_out(name, out):
    if out is not None:
        raise NotImplementedError(f"functrax.numpy.{name}: the `out` argument is not "
                                  "supported (arrays are immutable); use the returned array.")


def fix(x, out=None):
    """Round toward zero, as ``numpy.fix`` (``out`` is not supported)."""
    _no_out("fix", out)
    return trunc(x)


def rint(x, /):
    """Round to the nearest integral value, halves to even; integers become floats."""
    check_arraylike("rint", x)
    if _kind(x) in "biu":
        return lax.convert_element_type(x, dtypes.default_float_dtype())
    x, = _I("rint", x)
    if _kind(x) == "c":
        return _complex(rint(lax.real(x)), rint(lax.imag(x)), x)
    return lax.round(x, 1)


def round(a, decimals=0, out=None):
    """Round half to even to ``decimals`` places, as ``numpy.round``.

    >>> import functrax.numpy as fnp
    >>> fnp.round(fnp.array([0.5, 1.5, 2.675]), 2)
    Array([0.5 , 1.5 , 2.68], dtype=float32)
    """
    check_arraylike("round", a)
    _no_out("round", out)
    try:
        decimals = operator.index(decimals)
    except TypeError:
        raise TypeError(f"functrax.numpy.round: decimals must be a static Python int, got "
                        f"{decimals!r}") from None
    if _kind(a) in "iu":
        if decimals < 0:
            raise NotImplementedError("functrax.numpy.round: integer inputs with decimals < 0 "
                                      "are not supported; convert to float first.")
        return _asarray(a)
    if _kind(a) == "c":
        return _complex(round(lax.real(a), decimals), round(lax.imag(a), decimals), a)
    if decimals == 0:
        return lax.round(a, 1)
    factor = _const(a, 10.0 ** decimals)
    return lax.div(lax.round(lax.mul(a, factor), 1), factor)


around = round

# --- unary: predicates ---


def isfinite(x, /):
    """Elementwise test for finite values (always True for integers and booleans)."""
    check_arraylike("isfinite", x)
    x, = promote_args("isfinite", x)
    k = _kind(x)
    if k == "f":
        return lax.is_finite(x)
    if k == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.full_like(x, True, np.bool_)


def isinf(x, /):
    """Elementwise test for positive or negative infinity."""
    check_arraylike("isinf", x)
    x, = promote_args("isinf", x)
    k = _kind(x)
    if k == "f":
        return lax.eq(lax.abs(x), _const(x, np.inf))
    if k == "c":
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    return lax.full_like(x, False, np.bool_)


def _isposneginf(name, infinity, x, out):
    _no_out(name, out)
    check_arraylike(name, x)
    x, = promote_args(name, x)
    k = _kind(x)
    if k == "f":
        return lax.eq(x, _const(x, infinity))
    if k == "c":
        raise ValueError(f"{name} is not well defined for complex input ({_dtype(x).name})")
    return lax.full_like(x, False, np.bool_)


def isposinf(x, /, out=None):
    """Elementwise test for positive infinity."""
    return _isposneginf("isposinf", np.inf, x, out)


def isneginf(x, /, out=None):
    """Elementwise test for negative infinity."""
    return _isposneginf("isneginf", -np.inf, x, out)


def isnan(x, /):
    """Elementwise test for NaN (always False for integers and booleans)."""
    check_arraylike("isnan", x)
    x, = promote_args("isnan", x)
    return lax.ne(x, x)


def signbit(x, /):
    """Elementwise test whether the sign bit is set (True for -0.0 and for a negative NaN).

    >>> signbit(fnp.array([-1.0, -0.0, 0.0, 2.0]))
    Array([ True,  True, False, False], dtype=bool)
    """
    check_arraylike("signbit", x)
    x, = promote_args("signbit", x)
    k = _kind(x)
    if k == "i":
        return lax.lt(x, _const(x, 0))
    if k in "bu":
        return lax.full_like(x, False, np.bool_)
    if k != "f":
        raise ValueError(f"signbit is not well defined for {_dtype(x).name}")
    # as JAX: the bits as a signed integer of the same width are negative iff the sign is set
    from functrax.primitives.prng import bitcast_convert_type_p
    bits = np.dtype(f"int{_dtype(x).itemsize * 8}")
    return lax.lt(bitcast_convert_type_p.bind(x, new_dtype=bits), lax.full_like(x, 0, bits))


# --- binary: arithmetic ---


def add(x1, x2, /):
    """Elementwise ``x1 + x2`` with broadcasting and JAX type promotion (``or`` for bools).

    >>> import functrax.numpy as fnp
    >>> fnp.add(fnp.array([1, 2], dtype="int8"), 1)
    Array([2, 3], dtype=int8)
    """
    x1, x2 = _P("add", x1, x2)
    return lax.bitwise_or(x1, x2) if _dtype(x1) == np.bool_ else lax.add(x1, x2)


def multiply(x1, x2, /):
    """Elementwise ``x1 * x2`` with broadcasting and JAX type promotion (``and`` for bools)."""
    x1, x2 = _P("multiply", x1, x2)
    return lax.bitwise_and(x1, x2) if _dtype(x1) == np.bool_ else lax.mul(x1, x2)


def true_divide(x1, x2, /):
    """Elementwise ``x1 / x2``, always in floating point.

    >>> import functrax.numpy as fnp
    >>> fnp.true_divide(fnp.array([3, 4]), 2)
    Array([1.5, 2. ], dtype=float32)
    """
    x1, x2 = _I("true_divide", x1, x2)
    return lax.div(x1, x2)


subtract = _binary("subtract", lax.sub, _P, "``x1 - x2``")
float_power = _binary("float_power", lax.pow, _I, "``x1 ** x2`` in floating point")
maximum = _binary("maximum", lax.max, _P, "maximum (NaNs propagate)")
minimum = _binary("minimum", lax.min, _P, "minimum (NaNs propagate)")
arctan2 = atan2 = _binary("arctan2", lax.atan2, _I, "``arctan(x1 / x2)`` in the right quadrant")
nextafter = _binary("nextafter", lax.nextafter, _I, "next float after ``x1`` toward ``x2``")
left_shift = bitwise_left_shift = _binary("left_shift", lax.shift_left, _N, "``x1 << x2``")


divide = true_divide


def floor_divide(x1, x2, /):
    """Elementwise ``x1 // x2``, rounding toward negative infinity as numpy does.

    Integer division by zero does not raise; it gives an implementation-defined value.

    >>> import functrax.numpy as fnp
    >>> fnp.floor_divide(fnp.array([-3, 3]), 2)
    Array([-2,  1], dtype=int32)
    """
    x1, x2 = _N("floor_divide", x1, x2)
    k = _kind(x1)
    if k == "u":
        return lax.div(x1, x2)
    if k == "i":
        q = lax.div(x1, x2)
        fix_ = lax.bitwise_and(lax.ne(lax.sign(x1), lax.sign(x2)),
                               lax.ne(lax.rem(x1, x2), _const(x1, 0)))
        return _where(fix_, lax.sub(q, _like(q, 1)), q)
    _no_complex("floor_divide", x1)
    return _float_divmod(x1, x2)[0]


def _float_divmod(x1, x2):
    # as float_divmod in CPython's floatobject.c
    mod = lax.rem(x1, x2)
    div = lax.div(lax.sub(x1, mod), x2)
    ind = lax.bitwise_and(lax.ne(mod, _const(mod, 0)), lax.ne(lax.sign(x2), lax.sign(mod)))
    mod = _where(ind, lax.add(mod, x2), mod)
    div = _where(ind, lax.sub(div, _const(div, 1)), div)
    return lax.round(div), mod


def remainder(x1, x2, /):
    """Elementwise remainder with the sign of the divisor (Python's ``%``).

    Integer division by zero gives 0 (as numpy), without raising.

    >>> import functrax.numpy as fnp
    >>> fnp.remainder(fnp.array([-3, 3]), 2)
    Array([1, 1], dtype=int32)
    """
    x1, x2 = _N("remainder", x1, x2)
    _no_complex("remainder", x1)
    x2 = _nonzero_divisor(x2)
    trunc_mod = lax.rem(x1, x2)
    zero = _const(trunc_mod, 0)
    do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, _const(x2, 0))),
                              lax.ne(trunc_mod, zero))
    return _where(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder


def fmod(x1, x2, /):
    """Elementwise remainder with the sign of the dividend (C's ``fmod``).

    Integer division by zero gives 0 (as numpy), without raising.
    """
    x1, x2 = _N("fmod", x1, x2)
    _no_complex("fmod", x1)
    return lax.rem(x1, _nonzero_divisor(x2))


def _nonzero_divisor(x2):
    """Integer zero divisors replaced by 1, so that the remainder is 0 (as numpy gives)."""
    if _kind(x2) not in "iu":
        return x2
    return _where(lax.eq(x2, _const(x2, 0)), _like(x2, 1), x2)


def divmod(x1, x2, /):
    """``(floor_divide(x1, x2), remainder(x1, x2))``."""
    x1, x2 = _N("divmod", x1, x2)
    if _kind(x1) in "iu":
        return floor_divide(x1, x2), remainder(x1, x2)
    _no_complex("divmod", x1)
    return _float_divmod(x1, x2)


def _static_int(x1, x2):
    """The exponent as a Python int when it is a concrete integer scalar that does not change
    the result dtype (so that eager and traced calls agree), else None."""
    if type(x2) in (int, bool):
        return int(x2)
    concrete = isinstance(x2, (np.ndarray, np.generic)) or core.is_concrete_array(x2)
    if concrete and np.ndim(x2) == 0 and _kind(x2) in "iu" and \
            dtypes.result_type(x1, x2) == _dtype(x1):
        return int(x2)
    return None


def power(x1, x2, /):
    """Elementwise ``x1 ** x2``; a concrete integer exponent becomes ``integer_pow``.

    >>> import functrax.numpy as fnp
    >>> fnp.power(fnp.array([1.5, 2.0]), 2)
    Array([2.25, 4.  ], dtype=float32)
    """
    check_arraylike("power", x1, x2)
    n = _static_int(x1, x2)
    if n is not None:
        x1, = promote_dtypes_numeric(x1)
        return lax.integer_pow(x1, n)
    if _kind(x1) in "fc" and _kind(x2) in "iu":
        # an inexact base with an integer exponent: no promotion, as in JAX (whose derivative
        # at an exponent of 0 is exactly 0, also at a base of 0)
        (x1,), (x2,) = promote_dtypes_numeric(x1), promote_dtypes_numeric(x2)
        x1 = _weak_scalar(x1) if type(x1) in _SCALARS else x1
        return lax.pow(*promote_shapes("power", x1, x2))
    x1, x2 = _N("power", x1, x2)
    if _kind(x1) in "iu":
        return _pow_int_int(*_broadcast_all("power", x1, x2))
    return lax.pow(x1, x2)


pow = power


def _pow_int_int(x1, x2):
    # binary exponentiation over 6 bits (larger exponents overflow, except for bases 0, +-1,
    # whose results only depend on the exponent's parity and being nonzero), as JAX does
    zero, one = _const(x2, 0), _const(x2, 1)
    acc = _where(lax.bitwise_and(lax.eq(x1, _const(x1, 0)), lax.ne(x2, zero)),
                 _like(x1, 0), _like(x1, 1))
    for i in range(6):
        acc = lax.select(lax.ne(lax.bitwise_and(x2, one), zero), lax.mul(acc, x1), acc)
        if i < 5:
            x1 = lax.mul(x1, x1)
            x2 = lax.shift_right_logical(x2, one)
    return acc


def fmax(x1, x2, /):
    """Elementwise maximum that ignores NaNs (NaN only where both are NaN)."""
    x1, x2 = _P("fmax", x1, x2)
    return _where(lax.bitwise_or(greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1, x2, /):
    """Elementwise minimum that ignores NaNs (NaN only where both are NaN)."""
    x1, x2 = _P("fmin", x1, x2)
    return _where(lax.bitwise_or(less(x1, x2), isnan(x2)), x1, x2)


def hypot(x1, x2, /):
    """Elementwise ``sqrt(x1**2 + x2**2)`` without intermediate overflow."""
    x1, x2 = _I("hypot", x1, x2)
    _no_complex("hypot", x1)
    x1, x2 = lax.abs(x1), lax.abs(x2)
    idx_inf = lax.bitwise_or(isposinf(x1), isposinf(x2))
    x1, x2 = maximum(x1, x2), minimum(x1, x2)
    is_zero = lax.eq(x1, _const(x1, 0))
    ratio = lax.div(x2, _where(is_zero, _like(x1, 1), x1))
    x = _where(is_zero, x1, lax.mul(x1, lax.sqrt(lax.add(_like(ratio, 1), lax.square(ratio)))))
    return _where(idx_inf, _const(x, np.inf), x)


def logaddexp(x1, x2, /):
    """Elementwise ``log(exp(x1) + exp(x2))`` without overflow.

    Its derivative is JAX's custom rule (``exp(x_i - out)``), so it is 0.5 / 0.5 where the
    inputs are equal (the kinks of max and abs would give 0 there).
    """
    x1, x2 = _I("logaddexp", x1, x2)
    _no_complex("logaddexp", x1)
    return _logaddexp_custom()(x1, x2)


def _logaddexp_primal(x1, x2):
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    return _where(isnan(delta), lax.add(x1, x2),  # NaNs, or infinities of the same sign
                  lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))


def _replace_inf(x):
    return _where(isinf(x), _const(x, 0), x)


def _logaddexp_jvp(primals, tangents):
    (x1, x2), (t1, t2) = primals, tangents
    out = _logaddexp_custom()(x1, x2)
    o = _replace_inf(out)
    return out, lax.add(lax.mul(t1, lax.exp(lax.sub(_replace_inf(x1), o))),
                        lax.mul(t2, lax.exp(lax.sub(_replace_inf(x2), o))))


@functools.lru_cache(maxsize=None)
def _logaddexp_custom():
    # built on first use: functrax.numpy is imported before the transforms package
    from functrax.transforms.custom_derivatives import custom_jvp
    f = custom_jvp(_logaddexp_primal)
    f.defjvp(_logaddexp_jvp)
    return f


def logaddexp2(x1, x2, /):
    """Elementwise ``log2(2**x1 + 2**x2)`` without overflow (``logaddexp`` in base 2, so it
    shares its derivative rule)."""
    x1, x2 = _I("logaddexp2", x1, x2)
    _no_complex("logaddexp2", x1)
    ln2 = _const(x1, np.log(2))
    return lax.div(_logaddexp_custom()(lax.mul(x1, ln2), lax.mul(x2, ln2)), ln2)


def copysign(x1, x2, /):
    """``|x1|`` with the sign of ``x2``, elementwise (always inexact)."""
    x1, x2 = _I("copysign", x1, x2)
    _no_complex("copysign", x1)
    return _where(signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


def ldexp(x1, x2, /):
    """Elementwise ``x1 * 2**x2`` for an integer ``x2`` (exact, without overflow on the way).

    >>> import functrax.numpy as fnp
    >>> fnp.ldexp(fnp.array([1.5, 3.0]), fnp.array([2, -1]))
    Array([6. , 1.5], dtype=float32)
    """
    check_arraylike("ldexp", x1, x2)
    d1, d2 = _dtype(x1), _dtype(x2)
    if d1.kind == "c" or dtypes.is_inexact(d2):
        raise ValueError(f"ldexp: x1 must be real and x2 an integer, got input types "
                         f"({d1.name}, {d2.name}). Round x2 with astype(int) first.")
    dt = d1 if dtypes.is_float(d1) else dtypes.default_float_dtype()
    x1, x2 = _broadcast_all("ldexp", x1, x2)
    x1 = lax.convert_element_type(x1, dt, _weak(x1) and dt == d1)
    if d2.kind == "b":
        x2 = lax.convert_element_type(x2, np.int32)
    # three factors 2**e, each within the normal range, reach every finite result
    info, iinfo = dtypes.finfo(dt), dtypes.iinfo(_dtype(x2))
    part = builtins.min(int(info.maxexp) - 1, -int(info.minexp))
    lo, hi = builtins.max(-3 * part, int(iinfo.min)), builtins.min(3 * part, int(iinfo.max))
    n = lax.convert_element_type(lax.clamp(_const(x2, lo), x2, _const(x2, hi)), np.int32)
    e1 = lax.div(n, np.int32(3))
    e2 = lax.div(lax.sub(n, e1), np.int32(2))
    e3 = lax.sub(lax.sub(n, e1), e2)
    out = x1
    for e in (e1, e2, e3):
        out = lax.mul(out, lax.exp2(lax.convert_element_type(e, dt)))
    return out


def heaviside(x1, x2, /):
    """Heaviside step: 0 for ``x1 < 0``, ``x2`` for ``x1 == 0``, 1 for ``x1 > 0``."""
    check_arraylike("heaviside", x1, x2)
    x1, x2 = promote_dtypes_inexact(x1, x2)
    zero = _const(x1, 0)
    return _where(lax.lt(x1, zero), zero, _where(lax.gt(x1, zero), _const(x1, 1), x2))


def gcd(x1, x2, /):
    """Elementwise greatest common divisor of integers (non-negative)."""
    x1, x2 = _N("gcd", x1, x2)
    if _kind(x1) not in "iu":
        raise ValueError(f"gcd: arguments must be integers, got {_dtype(x1).name}")
    a, b = _broadcast_all("gcd", absolute(x1), absolute(x2))
    zero = _const(b, 0)
    # Euclid's algorithm takes at most ~1.44 * bits steps (Lame's theorem), plus one swap
    for _ in range(int(np.ceil(_dtype(a).itemsize * 8 * 1.4405)) + 3):
        if type(b) is Array and not np.any(np.asarray(b)):
            break  # eager and done
        nonzero = lax.ne(b, zero)
        a, b = lax.select(nonzero, b, a), lax.select(nonzero, lax.rem(a, b), b)
    return a


def lcm(x1, x2, /):
    """Elementwise least common multiple of integers (non-negative)."""
    x1, x2 = _N("lcm", x1, x2)
    if _kind(x1) not in "iu":
        raise ValueError(f"lcm: arguments must be integers, got {_dtype(x1).name}")
    x1, x2 = absolute(x1), absolute(x2)
    d = gcd(x1, x2)
    return _where(lax.eq(d, _const(d, 0)), _const(d, 0), multiply(x1, floor_divide(x2, d)))


# --- comparisons, logic, bits ---


def _compare(name, lax_fn, doc, complex_lexicographic=True):
    def fn(x1, x2, /):
        x1, x2 = _P(name, x1, x2)
        if complex_lexicographic and _kind(x1) == "c":
            re1, re2 = lax.real(x1), lax.real(x2)
            return _where(lax.eq(re1, re2), lax_fn(lax.imag(x1), lax.imag(x2)),
                          lax_fn(re1, re2))
        return lax_fn(x1, x2)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{doc}`` (a boolean array), with broadcasting and promotion."
    return fn


equal = _compare("equal", lax.eq, "x1 == x2", False)
not_equal = _compare("not_equal", lax.ne, "x1 != x2", False)
less = _compare("less", lax.lt, "x1 < x2")
less_equal = _compare("less_equal", lax.le, "x1 <= x2")
greater = _compare("greater", lax.gt, "x1 > x2")
greater_equal = _compare("greater_equal", lax.ge, "x1 >= x2")


def _logical(name, lax_fn, doc):
    def fn(x1, x2, /):
        x1, x2 = _P(name, x1, x2)
        return lax_fn(_to_bool(x1), _to_bool(x2))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise logical ``{doc}`` of the truth values of ``x1`` and ``x2``."
    return fn


logical_and = _logical("logical_and", lax.bitwise_and, "and")
logical_or = _logical("logical_or", lax.bitwise_or, "or")
logical_xor = _logical("logical_xor", lax.bitwise_xor, "xor")


def logical_not(x, /):
    """Elementwise logical ``not`` of the truth value of ``x``."""
    x, = _P("logical_not", x)
    return lax.bitwise_not(_to_bool(x))


def right_shift(x1, x2, /):
    """Elementwise ``x1 >> x2``: arithmetic for signed, logical for unsigned integers."""
    x1, x2 = _N("right_shift", x1, x2)
    if _kind(x1) == "u":
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


bitwise_right_shift = right_shift
bitwise_and = _binary("bitwise_and", lax.bitwise_and, _P, "bitwise ``x1 & x2``")
bitwise_or = _binary("bitwise_or", lax.bitwise_or, _P, "bitwise ``x1 | x2``")
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor, _P, "bitwise ``x1 ^ x2``")

# --- complex parts ---


def real(x, /):
    """The real part (the input itself for real dtypes)."""
    check_arraylike("real", x)
    return lax.real(x) if _kind(x) == "c" else _asarray(x)


def imag(x, /):
    """The imaginary part (zeros of the input's dtype for real dtypes)."""
    check_arraylike("imag", x)
    return lax.imag(x) if _kind(x) == "c" else lax.full_like(x, 0)


def conjugate(x, /):
    """The complex conjugate (the input itself for real dtypes)."""
    check_arraylike("conjugate", x)
    return lax.conj(x) if _kind(x) == "c" else _asarray(x)


conj = conjugate


def angle(z, deg=False):
    """The counterclockwise angle of complex ``z`` from the positive real axis.

    Args:
      z: an array (real values have angle 0 or pi).
      deg: return degrees instead of radians.
    """
    check_arraylike("angle", z)
    re, im = real(z), imag(z)
    if not dtypes.is_inexact(_dtype(re)):
        dt = dtypes.default_float_dtype()
        re, im = lax.convert_element_type(re, dt), lax.convert_element_type(im, dt)
    out = lax.atan2(im, re)
    return rad2deg(out) if deg else out


def modf(x, /, out=None):
    """``(fractional part, integral part)`` of ``x``, both with the sign of ``x``."""
    _no_out("modf", out)
    check_arraylike("modf", x)
    x, = promote_dtypes_inexact(x)
    whole = _where(lax.ge(x, _const(x, 0)), floor(x), ceil(x))
    return subtract(x, whole), whole


__all__ = [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "exp", "exp2",
    "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sinc", "deg2rad", "rad2deg",
    "degrees", "radians", "negative", "positive", "sign", "square", "reciprocal", "absolute",
    "abs", "fabs", "floor", "ceil", "trunc", "fix", "rint", "round", "around", "modf",
    "isfinite", "isinf", "isnan", "isposinf", "isneginf", "signbit", "add", "subtract",
    "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod", "fmod", "divmod",
    "power", "pow", "float_power", "maximum", "minimum", "fmax", "fmin", "arctan2", "atan2",
    "hypot", "logaddexp", "logaddexp2", "copysign", "nextafter", "ldexp", "heaviside", "gcd",
    "lcm", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "bitwise_invert", "invert", "bitwise_count", "left_shift",
    "right_shift", "bitwise_left_shift", "bitwise_right_shift", "real", "imag", "conj",
    "conjugate", "angle",
]
