"""C expression templates for the elementwise primitives, and the row-reduction rules.

``c_rules`` maps a primitive to a *template*; a primitive whose lowering differs by dtype or
parameter has one entry per variant, keyed ``(primitive, variant)``, next to (or instead of)
its plain entry (the pattern of ``functrax.lowering.triton.rules``). ``variant(prim, ctx)``
names the variant of an equation (by default the class of its first operand's dtype:
``"float"``, ``"int"``, ``"uint"`` or ``"bool"``); ``lookup`` tries ``(prim, variant)``
first, then ``prim``.

A template is one of:

- a string: a C expression, e.g. ``"exp{f}({0})"``;
- a tuple of strings: each but the last is bound to a temporary ``{t0}``, ``{t1}``, ...
  (``__auto_type``) that later strings may use; the last is the result;
- a function ``fn(ctx) -> str | tuple`` for templates that depend on parameters or dtypes.

Fields: ``{0}``, ``{1}``, ... the operands (names or typed constants, in their register
types); ``{R}`` the output's register type (``float`` for float16/bfloat16: computed in
float32, and rounded to the storage type after each operation, as numpy rounds), ``{IR}``
the first operand's register type, ``{f}`` the libm suffix of ``{R}`` (``"f"`` for float,
``""`` for double), ``{U}`` the unsigned type integer arithmetic wraps in (``uint32_t`` up to
32 bits, else ``uint64_t``), ``{UT}`` the unsigned type of the operand's width, ``{bits}``
the operand's bit width, ``{imin}``/``{imax}`` the output's integer range as C constants.
The code generator casts every result to ``{R}``. Layout primitives are not here: they are
index arithmetic (``functrax.lowering.c.indexing``).

The semantics are the numpy backend's (``functrax.lowering.numpy.rules``): integer
arithmetic wraps, ``x / 0`` is -1 (signed) or the maximum (unsigned), ``x % 0`` is ``x``,
shifts by a negative amount or by at least the width give 0 (the sign for arithmetic right
shifts), float -> int conversion truncates, maps NaN to 0 and saturates, ``max``/``min``
propagate NaN. Transcendental functions of float32 (and float16/bfloat16) call the double
libm function and round once: the correctly rounded result but for rare near-ties (numpy's
own float32 SIMD functions are up to 3-4 ulp from it for log, tan, arcsin, arctan2; the C
result is then within numpy's error of numpy's).

``reduce_rules[(prim, variant)]`` holds a :class:`ReduceRule`.
"""
from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

from functrax import primitives as P
from functrax.lowering.templates import TemplateTable

__all__ = ["c_rules", "reduce_rules", "variant_of", "RuleContext", "ReduceRule", "lookup",
           "lookup_reduce", "variant", "dtype_class", "storage_type", "reg_type", "literal",
           "load_expr", "store_expr", "round_expr", "UnsupportedError", "deftemplate"]

F, SI, U, B = "float", "int", "uint", "bool"  # the dtype classes (variants)


class UnsupportedError(NotImplementedError):
    """An equation, dtype or group shape the C backend cannot lower (yet): the group runs
    on the numpy backend."""


# --- dtypes ---

_BF16 = np.dtype(ml_dtypes.bfloat16)
_TYPES = {  # dtype name -> (storage type, register type)
    "bool": ("uint8_t", "int"), "int8": ("int8_t", "int8_t"), "int16": ("int16_t", "int16_t"),
    "int32": ("int32_t", "int32_t"), "int64": ("int64_t", "int64_t"),
    "uint8": ("uint8_t", "uint8_t"), "uint16": ("uint16_t", "uint16_t"),
    "uint32": ("uint32_t", "uint32_t"), "uint64": ("uint64_t", "uint64_t"),
    "float16": ("uint16_t", "float"), "bfloat16": ("uint16_t", "float"),
    "float32": ("float", "float"), "float64": ("double", "double"),
}


def _name(dtype) -> str:
    name = np.dtype(dtype).name
    if name not in _TYPES:
        raise UnsupportedError(f"the C backend does not support dtype {name} (supported: "
                               f"{', '.join(sorted(_TYPES))}); compute in a supported dtype "
                               "or use the numpy backend")
    return name


def dtype_class(dtype) -> str:
    """``"float"``, ``"int"``, ``"uint"`` or ``"bool"``; raises UnsupportedError otherwise."""
    name = _name(dtype)
    if name.startswith(("float", "bfloat")):
        return F
    return B if name == "bool" else (U if name.startswith("uint") else SI)


def storage_type(dtype) -> str:
    """The C type of an element in memory (``uint16_t`` for float16/bfloat16 bits)."""
    return _TYPES[_name(dtype)][0]


def reg_type(dtype) -> str:
    """The C type a value of ``dtype`` is computed in."""
    return _TYPES[_name(dtype)][1]


def _narrow(dtype) -> str | None:
    name = _name(dtype)
    return {"float16": "h", "bfloat16": "bf"}.get(name)


def load_expr(ref: str, dtype) -> str:
    """The register value of the element ``ref`` (an lvalue of the storage type)."""
    n = _narrow(dtype)
    return f"ft_{n}2f({ref})" if n else ref


def store_expr(value: str, dtype) -> str:
    """The storage value of the register value ``value``."""
    n = _narrow(dtype)
    if n:
        return f"ft_f2{n}({value})"
    return f"(uint8_t)({value} != 0)" if dtype_class(dtype) == B else value


def round_expr(value: str, dtype) -> str:
    """``value`` rounded to ``dtype``'s precision (float16/bfloat16), else itself."""
    n = _narrow(dtype)
    return f"ft_{n}2f(ft_f2{n}({value}))" if n else value


def c_int(value: int, dtype) -> str:
    """An integer constant of ``dtype`` (valid for the extreme values of 64-bit types)."""
    value = int(value)
    t = reg_type(dtype)
    if t in ("int64_t",) and value == -2 ** 63:
        return "((int64_t)(-9223372036854775807LL - 1))"
    suffix = "ULL" if t == "uint64_t" else ("LL" if t == "int64_t" else "")
    if t == "uint32_t":
        suffix = "U"
    return f"(({t}){value}{suffix})"


def c_float(value: float, reg: str) -> str:
    """A floating constant in register type ``reg`` (exact: Python's repr round-trips)."""
    f = float(value)
    if f != f:
        text = "NAN"
    elif f in (float("inf"), float("-inf")):
        text = "INFINITY" if f > 0 else "(-INFINITY)"
    else:
        text = repr(f)
    return f"(({reg}){text})"


def literal(value, dtype) -> str:
    """A C constant of ``dtype`` (in its register type) holding ``value``."""
    cls = dtype_class(dtype)
    v = np.asarray(value).astype(dtype)
    if cls == B:
        return "1" if bool(v) else "0"
    if cls == F:
        return c_float(float(v.astype(np.float64)), reg_type(dtype))
    return c_int(int(v), dtype)


# --- rule context and lookup ---


@dataclasses.dataclass(frozen=True)
class RuleContext:
    """What a template may depend on: operand and output avals and the equation's params."""

    prim: object
    in_avals: tuple
    out_aval: object
    params: dict

    def fields(self) -> dict:
        out = self.out_aval.dtype
        first = self.in_avals[0].dtype if self.in_avals else out
        R = reg_type(out)
        f = {"R": R, "IR": reg_type(first), "f": "f" if R == "float" else "",
             "bits": np.dtype(first).itemsize * 8 if dtype_class(first) != B else 1}
        if dtype_class(first) in (SI, U):
            width = np.dtype(first).itemsize * 8
            f["UT"] = f"uint{width}_t"
            f["U"] = "uint64_t" if width == 64 else "uint32_t"
        if dtype_class(out) in (SI, U):
            info = np.iinfo(out)
            f["imin"], f["imax"] = c_int(info.min, out), c_int(info.max, out)
        return f


_TABLE = TemplateTable("C", "functrax.lowering.c.rules.c_rules", dtype_class,
                       UnsupportedError)
c_rules = _TABLE.rules
# prim -> fn(ctx) -> variant name; the default is the class of the first operand's dtype
variant_of = _TABLE.variant_of
variant, lookup, has_rule, deftemplate = (_TABLE.variant, _TABLE.lookup, _TABLE.has_rule,
                                          _TABLE.deftemplate)


def _libm(name):
    return f"{name}{{f}}({{0}})"


def _in_double(name):
    return f"{name}((double){{0}})"


def _full_width_float_only(template):
    """A template valid only in the register precision of the dtype (not for float16 /
    bfloat16, whose steps are not float32 steps)."""
    def rule(ctx):
        if _narrow(ctx.in_avals[0].dtype):
            raise UnsupportedError(f"'{ctx.prim}' on {np.dtype(ctx.in_avals[0].dtype).name} "
                                   "(steps of the narrow type)")
        return template
    return rule


# --- unary ---
deftemplate(P.neg_p, "-{0}", F)
deftemplate(P.neg_p, "0u - ({U}){0}", SI, U)
deftemplate(P.sign_p, "({0} > 0 ? 1 : ({0} < 0 ? -1 : ({0} == 0 ? 0 : {0})))", F)
deftemplate(P.sign_p, "({0} > 0) - ({0} < 0)", SI)
deftemplate(P.sign_p, "{0} > 0", U)
deftemplate(P.abs_p, "fabs{f}({0})", F)
deftemplate(P.abs_p, "({0} < 0 ? 0u - ({U}){0} : ({U}){0})", SI)
deftemplate(P.abs_p, "{0}", U)
deftemplate(P.floor_p, _libm("floor"))
deftemplate(P.ceil_p, _libm("ceil"))
variant_of[P.round_p] = lambda ctx: ("to_nearest_even" if ctx.params.get("rounding_method", 0)
                                     in (1, "TO_NEAREST_EVEN") else "away_from_zero")
deftemplate(P.round_p, _libm("round"), "away_from_zero")
deftemplate(P.round_p, _libm("rint"), "to_nearest_even")  # the default rounding mode
deftemplate(P.is_finite_p, "isfinite({0})")
for _p, _n in ((P.exp2_p, "exp2"), (P.sqrt_p, "sqrt"), (P.cbrt_p, "cbrt"), (P.sin_p, "sin"),
               (P.cos_p, "cos"),
               (P.tan_p, "tan"), (P.asin_p, "asin"), (P.acos_p, "acos"), (P.atan_p, "atan"),
               (P.sinh_p, "sinh"), (P.cosh_p, "cosh"), (P.asinh_p, "asinh"),
               (P.acosh_p, "acosh"), (P.atanh_p, "atanh")):
    deftemplate(_p, _in_double(_n), F)
# computed in double and rounded once, as the numpy backend computes them
for _p, _n in ((P.erf_p, "erf"), (P.erfc_p, "erfc")):
    deftemplate(_p, _in_double(_n), F)


def _vectorizable(kernel, libm):
    """float32, float16, bfloat16: the prelude's branch-free double-precision ``kernel``
    (loops over it vectorize; the result rounds to the correctly rounded one but in rare
    near-ties); float64: libm's ``libm`` (``None``: ``kernel`` is exact enough for the
    float64 formula ``libm`` names)."""
    def rule(ctx):
        if np.dtype(ctx.in_avals[0].dtype) == np.float64:
            return libm
        return f"{kernel}((double){{0}})"
    return rule


def _float_lanes(kernel, libm):
    """float32/float16/bfloat16: the prelude's float32-lane ``kernel`` (within 1 ulp: the hot
    loops of softmax and gelu); float64: libm's ``libm``."""
    return lambda ctx: (f"{libm}({{0}})" if np.dtype(ctx.in_avals[0].dtype) == np.float64
                        else f"{kernel}({{0}})")


deftemplate(P.exp_p, _float_lanes("ft_expf", "exp"), F)
deftemplate(P.tanh_p, _float_lanes("ft_tanhf", "tanh"), F)
for _p, _k, _libm_expr in (
        (P.log_p, "ft_log_d", "log({0})"), (P.log1p_p, "ft_log1p_d", "log1p({0})"),
        (P.expm1_p, "ft_expm1_d", "expm1({0})"),
        (P.logistic_p, "ft_logistic_d", "1.0 / (1.0 + exp(-{0}))")):
    deftemplate(_p, _vectorizable(_k, _libm_expr), F)
deftemplate(P.rsqrt_p, "({R})1 / sqrt{f}({0})", F)
deftemplate(P.square_p, "{0} * {0}", F)
deftemplate(P.square_p, "({U}){0} * ({U}){0}", SI, U)
deftemplate(P.not_p, "~{0}", SI, U)
deftemplate(P.not_p, "!{0}", B)
deftemplate(P.copy_p, "{0}")
deftemplate(P.stop_gradient_p, "{0}")
deftemplate(P.name_p, "{0}")  # checkpoint_name: an identity
deftemplate(P.sharding_constraint_p, "{0}")  # with_sharding_constraint: an identity
deftemplate(P.real_p, "{0}", F)
deftemplate(P.population_count_p, "__builtin_popcountll(({UT}){0})", SI, U)
deftemplate(P.clz_p, "({0} == 0 ? {bits} : __builtin_clzll(({UT}){0}) - (64 - {bits}))", SI, U)


class Steps:
    """Builds a tuple template: ``let`` binds a temporary and returns its field name."""

    def __init__(self):
        self.steps = []

    def let(self, expr: str) -> str:
        self.steps.append(expr)
        return "{t%d}" % (len(self.steps) - 1)

    def result(self, expr: str) -> tuple:
        return tuple(self.steps) + (expr,)


def _integer_pow(ctx: RuleContext):
    """x ** y by repeated squaring (as XLA expands it), 1 / x ** -y for negative y; integer
    products wrap (unsigned arithmetic)."""
    y = int(ctx.params["y"])
    cls = dtype_class(ctx.out_aval.dtype)
    if y == 0:
        return "({R})1"
    if y < 0 and cls != F:
        raise UnsupportedError(f"integer_pow: negative exponent {y} on an integer operand")
    s = Steps()
    acc, base, n = None, "{0}" if cls == F else s.let("({U}){0}"), abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else s.let(f"{acc} * {base}")
        n >>= 1
        if n:
            base = s.let(f"{base} * {base}")
    return s.result(f"({{R}})1 / {acc}" if y < 0 else acc)


deftemplate(P.integer_pow_p, _integer_pow)

# --- binary ---
deftemplate(P.add_p, "{0} + {1}", F)
deftemplate(P.add_p, "({U}){0} + ({U}){1}", SI, U)
deftemplate(P.add_p, "{0} | {1}", B)
deftemplate(P.sub_p, "{0} - {1}", F)
deftemplate(P.sub_p, "({U}){0} - ({U}){1}", SI, U)
deftemplate(P.mul_p, "{0} * {1}", F)
deftemplate(P.mul_p, "({U}){0} * ({U}){1}", SI, U)
deftemplate(P.mul_p, "{0} & {1}", B)
deftemplate(P.div_p, "{0} / {1}", F)
# integer division truncates; x / 0 is -1 (signed) or the maximum (unsigned); MIN / -1 wraps
deftemplate(P.div_p, "({1} == 0 ? ({R})-1 : ({1} == -1 ? ({R})(0u - ({U}){0}) : {0} / {1}))", SI)
deftemplate(P.div_p, "({1} == 0 ? {imax} : {0} / {1})", U)
deftemplate(P.rem_p, "fmod{f}({0}, {1})", F)
deftemplate(P.rem_p, "({1} == 0 ? {0} : ({1} == -1 ? 0 : {0} % {1}))", SI)
deftemplate(P.rem_p, "({1} == 0 ? {0} : {0} % {1})", U)
deftemplate(P.pow_p, "pow((double){0}, (double)({R}){1})", F)
deftemplate(P.nextafter_p, _full_width_float_only("nextafter{f}({0}, {1})"), F)
deftemplate(P.atan2_p, "atan2((double){0}, (double){1})", F)
# numpy's maximum / minimum: NaN in either operand gives NaN
deftemplate(P.max_p, "(({0} >= {1}) || ({0} != {0})) ? {0} : {1}", F)
deftemplate(P.max_p, "{0} > {1} ? {0} : {1}", SI, U)
deftemplate(P.max_p, "{0} | {1}", B)
deftemplate(P.min_p, "(({0} <= {1}) || ({0} != {0})) ? {0} : {1}", F)
deftemplate(P.min_p, "{0} < {1} ? {0} : {1}", SI, U)
deftemplate(P.min_p, "{0} & {1}", B)
deftemplate(P.and_p, "{0} & {1}")
deftemplate(P.or_p, "{0} | {1}")
deftemplate(P.xor_p, "{0} ^ {1}")
# shifts by a negative amount (read as unsigned: huge) or by >= the width: 0 / the sign
_IN_RANGE = "(({U}){1} < {bits})"
deftemplate(P.shift_left_p, f"{_IN_RANGE} ? ({{R}})(({{U}}){{0}} << {{1}}) : 0", SI, U)
deftemplate(P.shift_right_arithmetic_p, f"{_IN_RANGE} ? {{0}} >> {{1}} : ({{0}} < 0 ? -1 : 0)",
            SI)
deftemplate(P.shift_right_logical_p, f"{_IN_RANGE} ? ({{R}})(({{UT}}){{0}} >> {{1}}) : 0", SI)
for _p in (P.shift_right_arithmetic_p, P.shift_right_logical_p):
    deftemplate(_p, f"{_IN_RANGE} ? {{0}} >> {{1}} : 0", U)
for _p, _op in ((P.eq_p, "=="), (P.ne_p, "!="), (P.lt_p, "<"), (P.le_p, "<="),
                (P.gt_p, ">"), (P.ge_p, ">=")):
    deftemplate(_p, f"{{0}} {_op} {{1}}")


# --- n-ary ---


def _select_n(ctx: RuleContext):
    n = len(ctx.in_avals) - 1
    if n == 1:
        return "{1}"
    if dtype_class(ctx.in_avals[0].dtype) == B:
        return "({0} ? {2} : {1})"
    expr = "{%d}" % n  # out-of-range selectors clip, as the numpy backend does
    for i in range(n - 2, -1, -1):
        cmp = "<=" if i == 0 else "=="
        expr = f"({{0}} {cmp} {i} ? {{{i + 1}}} : {expr})"
    return expr


deftemplate(P.select_n_p, _select_n)
# np.minimum(np.maximum(x, lo), hi) (NaN propagating)
deftemplate(P.clamp_p, ("(({1} >= {0}) || ({1} != {1})) ? {1} : {0}",
                        "(({t0} <= {2}) || ({t0} != {t0})) ? {t0} : {2}"), F)
deftemplate(P.clamp_p, ("{1} > {0} ? {1} : {0}", "{t0} < {2} ? {t0} : {2}"), SI, U)


# --- convert_element_type: one entry per (source class -> target class) ---


def _float_to_int(ctx: RuleContext):
    """Truncation toward zero, NaN -> 0, out-of-range values saturate (as XLA converts)."""
    info = np.iinfo(ctx.out_aval.dtype)
    lo, hi = float(info.min), float(info.max) + 1.0  # powers of two: exact in double
    return ("(double){0}",
            f"{{t0}} != {{t0}} ? 0 : ({{t0}} <= {lo!r} ? {{imin}} : ({{t0}} >= {hi!r} ? {{imax}} "
            f": ({{R}}){{t0}}))")


def _float_to_float(ctx: RuleContext):
    src, dst = ctx.in_avals[0].dtype, ctx.out_aval.dtype
    if _name(dst) == "float16" and _name(src) == "float64":
        return "ft_h2f(ft_d2h({0}))"  # one rounding, as numpy converts double -> half
    return "({R}){0}"  # narrow targets are rounded by the code generator


def _bitcast(ctx: RuleContext):
    """``bitcast_convert_type`` between non-bool types of one width (through a union of the
    storage types)."""
    src, dst = ctx.in_avals[0].dtype, ctx.out_aval.dtype
    if np.dtype(src).itemsize != np.dtype(dst).itemsize or B in (dtype_class(src),
                                                                 dtype_class(dst)):
        raise UnsupportedError(f"bitcast_convert_type from {_name(src)} to {_name(dst)}: only "
                               "non-bool types of equal width are lowered elementwise")
    s, d = storage_type(src), storage_type(dst)
    x = store_expr("{0}", src)
    return load_expr(f"((union {{{{ {s} a; {d} b; }}}}){{{{ .a = {x} }}}}).b", dst)


variant_of[P.convert_element_type_p] = lambda ctx: (
    f"{dtype_class(ctx.in_avals[0].dtype)}->{dtype_class(ctx.out_aval.dtype)}")
for _src in (F, SI, U, B):
    deftemplate(P.convert_element_type_p, "{0} != 0" if _src != B else "{0}", f"{_src}->{B}")
    for _dst in (SI, U):
        deftemplate(P.convert_element_type_p, _float_to_int if _src == F else "({R}){0}",
                    f"{_src}->{_dst}")
    deftemplate(P.convert_element_type_p, _float_to_float if _src == F else "({R}){0}",
                f"{_src}->{F}")
deftemplate(P.bitcast_convert_type_p, _bitcast)


# --- row reductions ---


@dataclasses.dataclass(frozen=True)
class ReduceRule:
    """How one reduction accumulates over the elements of a row.

    Attributes:
      accs: ``(C type, initial value, OpenMP reduction operator or None)`` per accumulator
        (templates of the fields, e.g. ``("double", "0.0", "+")``).
      update: a statement template updating the accumulators ``{a0}``, ``{a1}``... with the
        element ``{x}`` (``{k}``: its position along the reduced axis).
      finish: the row's result from the accumulators (a template).
      simd: whether the update vectorizes (``#pragma omp simd`` with the reductions).
    """

    accs: tuple
    update: str
    finish: str
    simd: bool = True


reduce_rules: dict = {}
_SUM_F = ReduceRule((("double", "0.0", "+"),), "{a0} += (double){x};", "({R}){a0}")
_SUM_I = ReduceRule((("{U}", "0", "+"),), "{a0} += ({U}){x};", "({R}){a0}")
_PROD_I = ReduceRule((("{U}", "1", "*"),), "{a0} *= ({U}){x};", "({R}){a0}")
_ANY = ReduceRule((("int", "0", "|"),), "{a0} |= {x};", "{a0}")
_ALL = ReduceRule((("int", "1", "&"),), "{a0} &= {x};", "{a0}")


def _extremum(op, ident_f, ident_i, omp):
    nan = ReduceRule((("{R}", ident_f, omp), ("int", "0", "|")),
                     f"{{a0}} = {{x}} {op} {{a0}} ? {{x}} : {{a0}}; {{a1}} |= {{x}} != {{x}};",
                     "{a1} ? ({R})NAN : {a0}")
    ints = ReduceRule((("{R}", ident_i, omp),), f"{{a0}} = {{x}} {op} {{a0}} ? {{x}} : {{a0}};",
                      "{a0}")
    return nan, ints


_MAX_F, _MAX_I = _extremum(">", "(-INFINITY)", "{imin}", "max")
_MIN_F, _MIN_I = _extremum("<", "INFINITY", "{imax}", "min")
reduce_rules.update({
    (P.reduce_sum_p, F): _SUM_F, (P.reduce_sum_p, SI): _SUM_I, (P.reduce_sum_p, U): _SUM_I,
    (P.reduce_sum_p, B): _ANY,
    # a product in the dtype's register type, as numpy multiplies (overflow to inf alike)
    (P.reduce_prod_p, F): ReduceRule((("{R}", "1", "*"),), "{a0} *= {x};", "{a0}"),
    (P.reduce_prod_p, SI): _PROD_I, (P.reduce_prod_p, U): _PROD_I, (P.reduce_prod_p, B): _ALL,
    (P.reduce_max_p, F): _MAX_F, (P.reduce_max_p, SI): _MAX_I, (P.reduce_max_p, U): _MAX_I,
    (P.reduce_max_p, B): _ANY,
    (P.reduce_min_p, F): _MIN_F, (P.reduce_min_p, SI): _MIN_I, (P.reduce_min_p, U): _MIN_I,
    (P.reduce_min_p, B): _ALL,
    (P.reduce_or_p, B): _ANY, (P.reduce_and_p, B): _ALL,
})
for _cls in (SI, U):
    reduce_rules.update({
        (P.reduce_or_p, _cls): ReduceRule((("{R}", "0", "|"),), "{a0} |= {x};", "{a0}"),
        (P.reduce_and_p, _cls): ReduceRule((("{R}", "~({R})0", "&"),), "{a0} &= {x};", "{a0}"),
        (P.reduce_xor_p, _cls): ReduceRule((("{R}", "0", "^"),), "{a0} ^= {x};", "{a0}"),
    })
reduce_rules[(P.reduce_xor_p, B)] = ReduceRule((("int", "0", "^"),), "{a0} ^= {x};", "{a0}")


def _argreduce(op):
    """The first index of the extremum; a NaN wins (the first one), as the numpy backend."""
    nan = ReduceRule((("{IR}", "0", None), ("int64_t", "0", None), ("int", "0", None)),
                     f"if (!{{a2}}) {{{{ if ({{x}} != {{x}}) {{{{ {{a2}} = 1; {{a1}} = {{k}}; }}}} "
                     f"else if ({{k}} == 0 || {{x}} {op} {{a0}}) {{{{ {{a0}} = {{x}}; "
                     f"{{a1}} = {{k}}; }}}} }}}}", "({R}){a1}", simd=False)
    ints = ReduceRule((("{IR}", "0", None), ("int64_t", "0", None)),
                      f"if ({{k}} == 0 || {{x}} {op} {{a0}}) {{{{ {{a0}} = {{x}}; "
                      f"{{a1}} = {{k}}; }}}}", "({R}){a1}", simd=False)
    return nan, ints


for _p, _op in ((P.argmax_p, ">"), (P.argmin_p, "<")):
    _nan, _ints = _argreduce(_op)
    reduce_rules.update({(_p, F): _nan, (_p, SI): _ints, (_p, U): _ints, (_p, B): _ints})


def lookup_reduce(prim, dtype) -> ReduceRule:
    """The reduction rule of ``prim`` on ``dtype``.

    Raises:
      UnsupportedError: for reductions without a C lowering.
    """
    rule = reduce_rules.get((prim, dtype_class(dtype)))
    if rule is None:
        raise UnsupportedError(
            f"the C backend has no row-reduction rule for '{prim}' on {np.dtype(dtype).name}; "
            f"supported: {sorted({f'{p}[{v}]' for p, v in reduce_rules})}")
    return rule
