"""Elementwise primitives: unary and binary math, comparisons, logic, select, convert.

Operands of n-ary ops have equal dtypes; their shapes follow JAX's rule for lax operands: a
rank-0 operand may stand beside arrays (``add d 2.0:f32[]``), and arrays of equal rank
broadcast their size-1 dimensions (``mul j k`` with ``j:f32[2] k:f32[1]``, as JAX's
``random.uniform`` stages it). ``passes/explicit_broadcast.py`` makes the latter explicit
before lowering, so backends only see equal shapes or rank-0 operands. Also, ``pow`` takes an
integer exponent beside any inexact base (as ``lax.pow`` does). The result is weakly typed
only when every operand is.
"""
from __future__ import annotations

from functrax.primitives.define import (
    ANY, BOOL_OR_INT, FLOATING, INEXACT, INTEGRAL, NUMBER, Family, ShapedArray, check_dtype,
    dtypes, new_primitive, np, shape_str,
)
from functrax.core import Array
from functrax import core
import operator


def _nary_shape(name, avals):
    """The result shape of an n-ary elementwise op, by JAX's rule for lax operands: rank-0
    operands stand beside arrays; arrays have equal ranks and each dimension is equal or 1
    (a size-1 dimension broadcasts; a 0 beside 1s gives 0)."""
    shapes = [a.shape for a in avals if a.shape != ()]
    if not shapes:
        return ()
    if len({len(s) for s in shapes}) > 1:
        raise TypeError(f"{name} got arrays of different rank: {shape_str(avals)}. "
                        "(functrax.numpy functions broadcast for you; lax-level ops only "
                        "broadcast size-1 dimensions of equal-rank operands.)")
    out = []
    for dims in zip(*shapes):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{shape_str(avals)}.")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _same_dtype(name, avals):
    dts = {a.dtype for a in avals}
    if len(dts) > 1:
        got = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"{name} requires arguments to have the same dtypes, got {got}. "
                        "(functrax.numpy functions promote for you; lax-level ops do not.)")
    return avals[0].dtype


def unop(name, accepted=ANY, out_dtype=None, family=Family.ELEMENTWISE):
    """Define a unary elementwise primitive; ``out_dtype(in_dtype)`` overrides the result;
    ``family`` is ``Family.TRANSCENDENTAL`` for functions costing a transcendental."""
    p = new_primitive(name, family=family)

    def abstract_eval(x, **params):
        check_dtype(name, x.dtype, accepted)
        dt = out_dtype(x.dtype) if out_dtype else x.dtype
        return ShapedArray(x.shape, dt, x.weak_type and out_dtype is None)

    p.def_abstract_eval(abstract_eval)
    return p


def binop(name, accepted=ANY, out_dtype=None, family=Family.ELEMENTWISE):
    """Define a binary elementwise primitive on equal dtypes and broadcast-compatible shapes
    (rank-0 operands, or size-1 dimensions of equal-rank operands: see ``_nary_shape``)."""
    p = new_primitive(name, family=family)

    def abstract_eval(x, y, **params):
        dt = _same_dtype(name, (x, y))
        check_dtype(name, dt, accepted)
        shape = _nary_shape(name, (x, y))
        weak = x.weak_type and y.weak_type and out_dtype is None
        return ShapedArray(shape, out_dtype(dt) if out_dtype else dt, weak)

    p.def_abstract_eval(abstract_eval)
    return p


def _to_bool(_):
    return np.dtype(np.bool_)


def _real_dtype(dt):
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt == np.complex128 else dt)


# --- unary ---
neg_p = unop("neg", NUMBER)
sign_p = unop("sign", NUMBER)
abs_p = unop("abs", NUMBER, out_dtype=None)
floor_p = unop("floor", FLOATING)
ceil_p = unop("ceil", FLOATING)
round_p = unop("round", FLOATING)
is_finite_p = unop("is_finite", FLOATING, out_dtype=_to_bool)
exp_p = unop("exp", INEXACT, family=Family.TRANSCENDENTAL)
exp2_p = unop("exp2", INEXACT, family=Family.TRANSCENDENTAL)
log_p = unop("log", INEXACT, family=Family.TRANSCENDENTAL)
log1p_p = unop("log1p", INEXACT, family=Family.TRANSCENDENTAL)
expm1_p = unop("expm1", INEXACT, family=Family.TRANSCENDENTAL)
tanh_p = unop("tanh", INEXACT, family=Family.TRANSCENDENTAL)
logistic_p = unop("logistic", INEXACT, family=Family.TRANSCENDENTAL)
sqrt_p = unop("sqrt", INEXACT, family=Family.TRANSCENDENTAL)
rsqrt_p = unop("rsqrt", INEXACT, family=Family.TRANSCENDENTAL)
cbrt_p = unop("cbrt", FLOATING, family=Family.TRANSCENDENTAL)
sin_p = unop("sin", INEXACT, family=Family.TRANSCENDENTAL)
cos_p = unop("cos", INEXACT, family=Family.TRANSCENDENTAL)
tan_p = unop("tan", INEXACT, family=Family.TRANSCENDENTAL)
asin_p = unop("asin", INEXACT, family=Family.TRANSCENDENTAL)
acos_p = unop("acos", INEXACT, family=Family.TRANSCENDENTAL)
atan_p = unop("atan", INEXACT, family=Family.TRANSCENDENTAL)
sinh_p = unop("sinh", INEXACT, family=Family.TRANSCENDENTAL)
cosh_p = unop("cosh", INEXACT, family=Family.TRANSCENDENTAL)
asinh_p = unop("asinh", INEXACT, family=Family.TRANSCENDENTAL)
acosh_p = unop("acosh", INEXACT, family=Family.TRANSCENDENTAL)
atanh_p = unop("atanh", INEXACT, family=Family.TRANSCENDENTAL)
erf_p = unop("erf", FLOATING, family=Family.TRANSCENDENTAL)
erfc_p = unop("erfc", FLOATING, family=Family.TRANSCENDENTAL)
erf_inv_p = unop("erf_inv", FLOATING, family=Family.TRANSCENDENTAL)
lgamma_p = unop("lgamma", FLOATING, family=Family.TRANSCENDENTAL)
digamma_p = unop("digamma", FLOATING, family=Family.TRANSCENDENTAL)
square_p = unop("square", NUMBER)
not_p = unop("not", BOOL_OR_INT)
population_count_p = unop("population_count", INTEGRAL)
copy_p = unop("copy", ANY)
copy_p.def_abstract_eval(lambda x: x)  # any dtype: typed PRNG keys copy too (as JAX)
real_p = unop("real", ("complexfloating",), out_dtype=_real_dtype)
imag_p = unop("imag", ("complexfloating",), out_dtype=_real_dtype)
conj_p = unop("conj", INEXACT)

# abs of a complex number is real
abs_p.def_abstract_eval(lambda x: (check_dtype("abs", x.dtype, NUMBER), ShapedArray(
    x.shape, _real_dtype(x.dtype), x.weak_type))[1])

# --- binary ---
add_p = binop("add", NUMBER + ("bool",))
sub_p = binop("sub", NUMBER)
mul_p = binop("mul", NUMBER + ("bool",))
div_p = binop("div", NUMBER)
rem_p = binop("rem", ("integer", "floating"))
pow_p = binop("pow", INEXACT, family=Family.TRANSCENDENTAL)
max_p = binop("max", ANY)
min_p = binop("min", ANY)
atan2_p = binop("atan2", FLOATING, family=Family.TRANSCENDENTAL)
nextafter_p = binop("nextafter", FLOATING)
and_p = binop("and", BOOL_OR_INT)
or_p = binop("or", BOOL_OR_INT)
xor_p = binop("xor", BOOL_OR_INT)
shift_left_p = binop("shift_left", INTEGRAL)
shift_right_arithmetic_p = binop("shift_right_arithmetic", INTEGRAL)
shift_right_logical_p = binop("shift_right_logical", INTEGRAL)
eq_p = binop("eq", ANY, out_dtype=_to_bool)
ne_p = binop("ne", ANY, out_dtype=_to_bool)
lt_p = binop("lt", ANY, out_dtype=_to_bool)
le_p = binop("le", ANY, out_dtype=_to_bool)
gt_p = binop("gt", ANY, out_dtype=_to_bool)
ge_p = binop("ge", ANY, out_dtype=_to_bool)


@pow_p.def_abstract_eval
def _pow_abstract_eval(x, y):
    # as in JAX, an integer exponent keeps its dtype (the derivative at y == 0 is exactly 0);
    # otherwise both operands have the base's dtype
    check_dtype("pow", x.dtype, INEXACT)
    if not np.issubdtype(y.dtype, np.integer):
        _same_dtype("pow", (x, y))
    shape = _nary_shape("pow", (x, y))
    return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)

# --- parameterized and n-ary ---
integer_pow_p = new_primitive("integer_pow", family=Family.ELEMENTWISE)


@integer_pow_p.def_abstract_eval
def _integer_pow_abstract(x, *, y):
    check_dtype("integer_pow", x.dtype, NUMBER)
    if not isinstance(y, (int, np.integer)):
        raise TypeError(f"integer_pow: the exponent y must be a Python int, got {y!r}")
    if y < 0 and x.dtype.kind in "iu":
        raise TypeError(f"integer_pow: a negative exponent {y} needs a floating operand, "
                        f"got {x.dtype.name}")
    return x


round_p.def_abstract_eval(
    lambda x, *, rounding_method=0: (check_dtype("round", x.dtype, FLOATING), x)[1])

convert_element_type_p = new_primitive("convert_element_type", family=Family.ELEMENTWISE)


@convert_element_type_p.def_abstract_eval
def _convert_abstract(x, *, new_dtype, weak_type=False):
    dtypes.canonicalize_dtype(new_dtype)  # raises for unsupported dtypes
    dtypes.check_conversion(x.dtype, new_dtype)  # no conversion to/from PRNG keys (as JAX)
    return ShapedArray(x.shape, new_dtype, weak_type)


select_n_p = new_primitive("select_n", family=Family.ELEMENTWISE)


@select_n_p.def_abstract_eval
def _select_n_abstract(which, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case")
    if which.dtype.kind not in "biu":
        raise TypeError(f"select_n: the selector must be bool or int32, got {which.dtype.name}")
    if which.dtype.kind == "b" and len(cases) > 2:
        raise TypeError("select_n with a boolean selector takes at most two cases, got "
                        f"{len(cases)}")
    dt = _same_dtype("select_n", cases)
    shapes = {c.shape for c in cases}
    if len(shapes) > 1:
        raise TypeError(f"select_n: cases must have the same shapes, got {shape_str(cases)}")
    shape = cases[0].shape
    if which.shape not in ((), shape):
        raise TypeError(f"select_n: the selector shape {which.shape} must be () or match the "
                        f"case shape {shape}")
    return ShapedArray(shape, dt, all(c.weak_type for c in cases))


clamp_p = new_primitive("clamp", family=Family.ELEMENTWISE)


@clamp_p.def_abstract_eval
def _clamp_abstract(lo, x, hi):
    dt = _same_dtype("clamp", (lo, x, hi))
    check_dtype("clamp", dt, ("integer", "floating"))
    for name, b in (("min", lo), ("max", hi)):
        if b.shape not in ((), x.shape):
            raise TypeError(f"clamp: the {name} bound has shape {b.shape}; it must be a scalar "
                            f"or match the operand shape {x.shape}")
    return ShapedArray(x.shape, dt, x.weak_type)

# identity whose derivative is zero (lax.stop_gradient)
stop_gradient_p = unop("stop_gradient", ANY)


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---

def as_operand(x, like=None):
    """Python scalars take the dtype of ``like`` (as weak-typed constants), else their own."""
    if type(x) in (bool, int, float, complex):
        if like is not None and type(like) not in (bool, int, float, complex):
            dt = core.get_aval(like).dtype
            return Array._make(np.asarray(x, dt), core.scalar_aval(dt, type(x) is not bool))
        return x
    return x


def _unary(prim):
    def op(x):
        return prim.bind(as_operand(x))
    op.__name__ = prim.name
    op.__doc__ = f"Elementwise ``{prim.name}`` (binds the ``{prim.name}`` primitive)."
    return op


def _binary(prim):
    def op(x, y):
        return prim.bind(as_operand(x, y), as_operand(y, x))
    op.__name__ = prim.name
    op.__doc__ = f"Elementwise ``{prim.name}`` of operands of equal dtype and shape (or rank-0)."
    return op


neg, sign, abs, floor, ceil = map(_unary, (neg_p, sign_p, abs_p, floor_p, ceil_p))
exp, exp2, log, log1p, expm1 = map(_unary, (exp_p, exp2_p, log_p, log1p_p, expm1_p))
tanh, logistic, sqrt, rsqrt, cbrt = map(_unary, (tanh_p, logistic_p, sqrt_p, rsqrt_p,
                                                  cbrt_p))
sin, cos, tan, asin, acos, atan = map(_unary, (sin_p, cos_p, tan_p, asin_p, acos_p,
                                                atan_p))
sinh, cosh, asinh, acosh, atanh = map(_unary, (sinh_p, cosh_p, asinh_p, acosh_p,
                                                atanh_p))
erf, erfc, erf_inv, lgamma, digamma = map(_unary, (erf_p, erfc_p, erf_inv_p, lgamma_p,
                                                    digamma_p))
square, is_finite, bitwise_not = map(_unary, (square_p, is_finite_p, not_p))
population_count = _unary(population_count_p)
real, imag, conj = map(_unary, (real_p, imag_p, conj_p))

add, sub, mul, div, rem, pow = map(_binary, (add_p, sub_p, mul_p, div_p, rem_p,
                                              pow_p))
max, min, atan2, nextafter = map(_binary, (max_p, min_p, atan2_p, nextafter_p))
eq, ne, lt, le, gt, ge = map(_binary, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))
bitwise_and, bitwise_or, bitwise_xor = map(_binary, (and_p, or_p, xor_p))
shift_left, shift_right_arithmetic, shift_right_logical = map(_binary, (
    shift_left_p, shift_right_arithmetic_p, shift_right_logical_p))


def round(x, rounding_method=0):
    """Round to integral values: method 0 away from zero, 1 to nearest even."""
    return round_p.bind(x, rounding_method=int(rounding_method))


def integer_pow(x, y: int):
    """``x ** y`` for a static Python int ``y`` (computed by repeated multiplication)."""
    return integer_pow_p.bind(x, y=operator.index(y))


def convert_element_type(operand, new_dtype, weak_type: bool = False):
    """Cast ``operand`` to ``new_dtype`` (canonicalized: float64 means float32 unless x64)."""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    aval = core.get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type and isinstance(
            operand, (core.Tracer, Array)):
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def select_n(which, *cases):
    """Select elementwise from ``cases`` by the (bool or int) ``which``."""
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false`` (``select_n(pred, on_false, on_true)``)."""
    return select_n_p.bind(pred, on_false, on_true)


def clamp(min, x, max):
    return clamp_p.bind(as_operand(min, x), x, as_operand(max, x))


def stop_gradient(x):
    """``x`` with a zero derivative (maps over pytrees; non-float leaves pass unchanged).

    >>> import functrax
    >>> functrax.grad(lambda x: x * stop_gradient(x))(3.0)
    Array(3., dtype=float32, weak_type=True)
    """
    from functrax.tree_util import tree_map

    def stop(v):
        if dtypes.is_inexact(core.get_aval(v).dtype):
            return stop_gradient_p.bind(v)
        return v
    return tree_map(stop, x)

__all__ = [
    "unop", "binop", "neg_p", "sign_p", "abs_p", "floor_p", "ceil_p",
    "round_p", "is_finite_p",
    "exp_p", "exp2_p", "log_p", "log1p_p", "expm1_p", "tanh_p", "logistic_p", "sqrt_p",
    "rsqrt_p", "cbrt_p", "sin_p", "cos_p", "tan_p", "asin_p", "acos_p", "atan_p", "sinh_p",
    "cosh_p", "asinh_p", "acosh_p", "atanh_p", "erf_p", "erfc_p", "erf_inv_p", "lgamma_p",
    "digamma_p", "square_p", "not_p", "population_count_p", "copy_p", "real_p", "imag_p",
    "conj_p", "add_p", "sub_p", "mul_p", "div_p", "rem_p", "pow_p", "max_p", "min_p",
    "atan2_p", "nextafter_p", "and_p", "or_p", "xor_p", "shift_left_p",
    "shift_right_arithmetic_p", "shift_right_logical_p", "eq_p", "ne_p", "lt_p", "le_p",
    "gt_p", "ge_p", "integer_pow_p", "convert_element_type_p", "select_n_p", "clamp_p",
    "stop_gradient_p", "as_operand", "neg", "sign", "abs", "floor", "ceil", "exp", "exp2",
    "log", "log1p", "expm1", "tanh", "logistic", "sqrt", "rsqrt", "cbrt", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc",
    "erf_inv", "lgamma", "digamma", "square", "is_finite", "bitwise_not", "population_count",
    "real", "imag", "conj", "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2",
    "nextafter", "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or",
    "bitwise_xor", "shift_left", "shift_right_arithmetic", "shift_right_logical", "round",
    "integer_pow", "convert_element_type", "select_n", "select", "clamp", "stop_gradient",
]
