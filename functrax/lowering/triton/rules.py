"""Triton expression templates for the elementwise and reduction primitives.

``triton_rules`` maps a primitive to a *template*; a primitive whose lowering differs by
dtype or parameter has one entry per variant, keyed ``(primitive, variant)``, next to (or
instead of) its plain entry. ``variant(prim, ctx)`` names the variant of an equation (by
default the class of its first operand's dtype: ``"float"``, ``"int"``, ``"uint"`` or
``"bool"``); ``lookup`` tries ``(prim, variant)`` first, then ``prim``.

A template is one of:

- a string: a Triton expression, e.g. ``"tl.exp({0})"``;
- a tuple of strings: each but the last is bound to a temporary ``{t0}``, ``{t1}``, ... that
  later strings may use; the last is the result;
- a function ``fn(ctx) -> str | tuple`` for templates that depend on parameters or dtypes.

Fields: ``{0}``, ``{1}``, ... the operands (always names or typed constants); ``{T}`` the
output's storage type (``tl.float16``), ``{R}`` its register type (``tl.float32``: float16
and bfloat16 are computed in float32), ``{UT}`` the unsigned integer type of the operand's
width, ``{bits}`` the operand's bit width, ``{imin}``/``{imax}`` the output's integer range,
``{inf}``/``{nan}``. Layout primitives (broadcast, transpose, reshape, ...) are not here:
they are index transformations (see ``codegen.index_rules``).

``reduce_rules[(prim, variant)]`` holds a :class:`ReduceRule` for the row reductions.
"""
from __future__ import annotations

import dataclasses
import numpy as np

from functrax import primitives as P
from functrax.lowering.templates import TemplateTable

__all__ = ["triton_rules", "reduce_rules", "variant_of", "RuleContext", "ReduceRule",
           "lookup", "lookup_reduce", "variant", "dtype_class", "tl_dtype", "reg_dtype",
           "signature_type", "literal", "UnsupportedError"]

INF, NAN = 'float("inf")', 'float("nan")'
F, SI, U, B = "float", "int", "uint", "bool"  # the dtype classes (variants)
PI, HALF_PI, QUARTER_PI, LN2 = (3.141592653589793, 1.5707963267948966, 0.7853981633974483,
                                0.6931471805599453)


class UnsupportedError(NotImplementedError):
    """An equation, dtype or group shape the Triton backend cannot lower (yet)."""


# --- dtypes ---

_TL = {  # numpy dtype name -> (triton.language type, kernel signature type)
    "bool": ("tl.int1", "i1"), "int8": ("tl.int8", "i8"), "int16": ("tl.int16", "i16"),
    "int32": ("tl.int32", "i32"), "int64": ("tl.int64", "i64"), "uint8": ("tl.uint8", "u8"),
    "uint16": ("tl.uint16", "u16"), "uint32": ("tl.uint32", "u32"),
    "uint64": ("tl.uint64", "u64"), "float16": ("tl.float16", "fp16"),
    "bfloat16": ("tl.bfloat16", "bf16"), "float32": ("tl.float32", "fp32"),
    "float64": ("tl.float64", "fp64"),
}
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def tl_name(dtype) -> str:
    name = np.dtype(dtype).name
    if name not in _TL:
        raise UnsupportedError(f"the Triton backend does not support dtype {name} (supported: "
                               f"{', '.join(sorted(_TL))}); compute in a supported dtype or "
                               "use the numpy backend")
    return name


def dtype_class(dtype) -> str:
    """``"float"``, ``"int"``, ``"uint"`` or ``"bool"``; raises UnsupportedError otherwise."""
    name = tl_name(dtype)
    if name in _FLOATS:
        return F
    return B if name == "bool" else (U if name.startswith("uint") else SI)


def tl_dtype(dtype) -> str:
    """The ``triton.language`` type of ``dtype`` in memory, e.g. ``"tl.float16"``."""
    return _TL[tl_name(dtype)][0]


def reg_dtype(dtype) -> str:
    """The type a value of ``dtype`` is computed in (float16/bfloat16 widen to float32)."""
    name = tl_name(dtype)
    return "tl.float32" if name in ("float16", "bfloat16") else _TL[name][0]


def signature_type(dtype) -> str:
    """The pointer type of a buffer of ``dtype`` in a kernel signature, e.g. ``"*fp32"``."""
    return "*" + _TL[tl_name(dtype)][1]


def literal(value, dtype, shape: str = "[]") -> str:
    """A Triton constant of ``dtype`` (in its register type) holding ``value``, of ``shape``
    (the text of a shape list)."""
    cls = dtype_class(dtype)
    v = np.asarray(value).astype(dtype)
    if cls == B:
        text = "True" if bool(v) else "False"
    elif cls == F:
        f = float(v)
        text = (NAN if f != f else (INF if f > 0 else "-" + INF)) if not np.isfinite(f) \
            else repr(f)
    else:
        text = str(int(v))
    return f"tl.full({shape}, {text}, {reg_dtype(dtype)})"


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
        f = {"T": tl_dtype(out), "R": reg_dtype(out), "inf": INF, "nan": NAN,
             "bits": np.dtype(first).itemsize * 8 if dtype_class(first) != B else 1}
        if dtype_class(first) in (SI, U):
            f["UT"] = f"tl.uint{np.dtype(first).itemsize * 8}"
        if dtype_class(out) in (SI, U):
            info = np.iinfo(out)
            f["imin"], f["imax"] = int(info.min), int(info.max)
        f.update({k: v for k, v in self.params.items() if isinstance(v, (int, float, str))})
        return f


_TABLE = TemplateTable("Triton", "functrax.lowering.triton.rules.triton_rules", dtype_class,
                       UnsupportedError)
triton_rules = _TABLE.rules
# prim -> fn(ctx) -> variant name; the default is the class of the first operand's dtype
variant_of = _TABLE.variant_of
variant, lookup, has_rule, deftemplate = (_TABLE.variant, _TABLE.lookup, _TABLE.has_rule,
                                          _TABLE.deftemplate)


class Steps:
    """Builds a tuple template: ``let`` binds a temporary and returns its field name."""

    def __init__(self):
        self.steps = []

    def let(self, expr: str) -> str:
        self.steps.append(expr)
        return "{t%d}" % (len(self.steps) - 1)

    def result(self, expr: str) -> tuple:
        return tuple(self.steps) + (expr,)


def _where_signed(x, neg, pos):
    return f"tl.where({x} < 0, {neg}, {pos})"


# --- shared math building blocks (operands are field strings such as "{0}" or "{t3}") ---


def _log1p(s: Steps, x: str) -> str:
    """log(1 + x) accurately for small x (Kahan: log(u) * x / (u - 1) with u = 1 + x)."""
    u = s.let(f"1.0 + {x}")
    return s.let(f"tl.where(({u} == 1.0) | ({x} == {{inf}}), {x}, "
                 f"tl.log({u}) * ({x} / ({u} - 1.0)))")


def _expm1(s: Steps, x: str) -> str:
    """exp(x) - 1 accurately for small x (Kahan: (u - 1) * x / log(u) with u = exp(x))."""
    u = s.let(f"tl.exp({x})")
    return s.let(f"tl.where({u} == 1.0, {x}, tl.where(({u} - 1.0 == -1.0) | ({x} > 80.0), "
                 f"{u} - 1.0, ({u} - 1.0) * ({x} / tl.log({u}))))")


def _atan_core(s: Steps, a: str) -> str:
    """atan(a) for a >= 0 (Cephes atanf: reduction to |z| <= tan(pi/8), odd polynomial)."""
    big = s.let(f"{a} > 2.414213562373095")
    mid = s.let(f"{a} > 0.41421356237309503")
    z = s.let(f"tl.where({big}, -1.0 / {a}, tl.where({mid}, ({a} - 1.0) / ({a} + 1.0), {a}))")
    y0 = s.let(f"tl.where({big}, {HALF_PI}, tl.where({mid}, {QUARTER_PI}, 0.0))")
    zz = s.let(f"{z} * {z}")
    p = s.let(f"(((8.05374449538e-2 * {zz} - 1.38776856032e-1) * {zz} + 1.99777106478e-1) * "
              f"{zz} - 3.33329491539e-1) * {zz} * {z} + {z}")
    return s.let(f"{y0} + {p}")


def _signbit(x: str) -> str:
    return f"(({x} < 0.0) | (({x} == 0.0) & (1.0 / {x} < 0.0)))"


def _atan2(s: Steps, y: str, x: str) -> str:
    ax, ay = s.let(f"tl.abs({x})"), s.let(f"tl.abs({y})")
    mx, mn = s.let(f"tl.maximum({ax}, {ay})"), s.let(f"tl.minimum({ax}, {ay})")
    q = s.let(f"tl.where({mx} == 0.0, 0.0, tl.where(({ax} == {{inf}}) & ({ay} == {{inf}}), 1.0, "
              f"{mn} / {mx}))")
    t = _atan_core(s, q)
    t = s.let(f"tl.where({ay} > {ax}, {HALF_PI} - {t}, {t})")
    t = s.let(f"tl.where({_signbit(x)}, {PI} - {t}, {t})")
    t = s.let(f"tl.where({_signbit(y)}, -{t}, {t})")
    return s.let(f"tl.where(({y} != {y}) | ({x} != {x}), {y} + {x}, {t})")


def _tanh():
    s = Steps()
    m = s.let("-2.0 * tl.abs({0})")
    e = _expm1(s, m)  # expm1(-2|x|) in (-1, 0]
    t = s.let(f"tl.where({m} < -20.0, 1.0, -{e} / (2.0 + {e}))")
    return s.result(_where_signed("{0}", f"-{t}", t))


def _sinh():
    s = Steps()
    a = s.let("tl.abs({0})")
    e = _expm1(s, a)
    r = s.let(f"tl.where({a} > 80.0, tl.exp({a} - {LN2}), 0.5 * ({e} + {e} / ({e} + 1.0)))")
    return s.result(_where_signed("{0}", f"-{r}", r))


def _cosh():
    s = Steps()
    a = s.let("tl.abs({0})")
    h = s.let(f"tl.where({a} > 80.0, tl.exp({a} - {LN2}), 0.5 * tl.exp({a}))")
    return s.result(f"{h} + 0.25 / {h}")


def _asinh():
    s = Steps()
    a = s.let("tl.abs({0})")
    w = s.let(f"{a} + {a} * {a} / (1.0 + tl.sqrt_rn(1.0 + {a} * {a}))")
    r = s.let(f"tl.where({a} > 1e18, tl.log({a}) + {LN2}, {_log1p(s, w)})")
    return s.result(_where_signed("{0}", f"-{r}", r))


def _acosh():
    s = Steps()
    t = s.let("{0} - 1.0")
    w = s.let(f"{t} + tl.sqrt_rn({t} * ({{0}} + 1.0))")
    r = s.let(f"tl.where({{0}} > 1e18, tl.log({{0}}) + {LN2}, {_log1p(s, w)})")
    return s.result(f"tl.where({{0}} < 1.0, {{nan}}, {r})")


def _atanh():
    s = Steps()
    a = s.let("tl.abs({0})")
    r = s.let(f"0.5 * {_log1p(s, s.let(f'2.0 * {a} / (1.0 - {a})'))}")
    return s.result(_where_signed("{0}", f"-{r}", r))


def _atan():
    s = Steps()
    r = _atan_core(s, s.let("tl.abs({0})"))
    return s.result(_where_signed("{0}", f"-{r}", r))


def _asin():
    s = Steps()
    c = s.let("tl.sqrt_rn((1.0 - {0}) * (1.0 + {0}))")
    return s.result(_atan2(s, "{0}", c))


def _acos():
    s = Steps()
    c = s.let("tl.sqrt_rn((1.0 - {0}) * (1.0 + {0}))")
    return s.result(_atan2(s, c, "{0}"))


def _atan2_rule():
    s = Steps()
    return s.result(_atan2(s, "{0}", "{1}"))


def _pow():
    """x ** y for floats via exp2(y * log2|x|), with the signs and special cases of C pow."""
    s = Steps()
    y = s.let("{1}.to({R})")  # an integer exponent in the base's dtype (a no-op for floats)
    mag = s.let(f"tl.exp2({y} * tl.log2(tl.abs({{0}})))")
    is_int = s.let(f"{y} == tl.floor({y})")  # true for infinities: they count as even
    odd = s.let(f"{is_int} & (tl.floor({y} * 0.5) * 2.0 != {y})")
    # negative base (-0.0 included): odd integer powers negate; non-integer powers are NaN
    # except for -0.0 and -inf, whose powers are infinities or zeros
    neg = s.let(f"tl.where({odd}, -{mag}, tl.where({is_int} | ({{0}} == 0.0) | "
                f"({{0}} == -{{inf}}), {mag}, {{nan}}))")
    r = s.let(f"tl.where({_signbit('{0}')}, {neg}, {mag})")
    one = f"({y} == 0.0) | ({{0}} == 1.0) | ((tl.abs({{0}}) == 1.0) & (tl.abs({y}) == {{inf}}))"
    return s.result(f"tl.where({one}, 1.0, {r})")


def _round_away():
    s = Steps()
    t = s.let("tl.where({0} < 0, tl.ceil({0}), tl.floor({0}))")
    return s.result(f"tl.where(tl.abs({{0}} - {t}) >= 0.5, {t} + tl.where({{0}} < 0, -1.0, 1.0), "
                    f"{t})")


def _round_even():
    s = Steps()
    f = s.let("tl.floor({0})")
    d = s.let(f"{{0}} - {f}")
    return s.result(f"tl.where({d} > 0.5, {f} + 1.0, tl.where({d} < 0.5, {f}, "
                    f"tl.where({f} * 0.5 == tl.floor({f} * 0.5), {f}, {f} + 1.0)))")


def _integer_pow(ctx: RuleContext):
    """x ** y by repeated squaring (as XLA expands it), 1 / x ** -y for negative y."""
    y = int(ctx.params["y"])
    if y == 0:
        return "tl.where({0} == {0}, 1, 1).to({R})"  # ones, even where x is inf or NaN
    if y < 0 and dtype_class(ctx.out_aval.dtype) != F:
        raise UnsupportedError(f"integer_pow: negative exponent {y} on an integer operand")
    s = Steps()
    acc, base, n = None, "{0}", abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else s.let(f"{acc} * {base}")
        n >>= 1
        if n:
            base = s.let(f"{base} * {base}")
    return s.result(f"1.0 / {acc}" if y < 0 else acc)


def _select_n(ctx: RuleContext):
    n = len(ctx.in_avals) - 1
    if n == 1:
        return "{1}"
    if dtype_class(ctx.in_avals[0].dtype) == B:
        return "tl.where({0}, {2}, {1})"
    expr = "{%d}" % n  # out-of-range selectors clip, as the numpy backend does
    for i in range(n - 2, -1, -1):
        cmp = "<=" if i == 0 else "=="
        expr = f"tl.where({{0}} {cmp} {i}, {{{i + 1}}}, {expr})"
    return expr


# --- convert_element_type: one entry per (source class -> target class) ---


# float32 -> the nearest bfloat16 (ties to even), kept as float32: the interpreter truncates
# in .to(tl.bfloat16) while the GPU rounds to nearest even; this is exact on both.
BF16_ROUND = ("{0}.to(tl.uint32, bitcast=True)",
              "(({t0} + (32767 + (({t0} >> 16) & 1))) & 4294901760).to(tl.float32, bitcast=True)",
              "tl.where({0} != {0}, {0}, {t1})")


def _bf16_from(x: str) -> tuple:
    """BF16_ROUND of the float32 expression ``x`` (bound to ``{t0}`` first)."""
    return (x,) + tuple(t.replace("{t1}", "{t2}").replace("{t0}", "{t1}").replace("{0}", "{t0}")
                        for t in BF16_ROUND)


def _float_to_float(ctx: RuleContext):
    src, dst = ctx.in_avals[0].dtype, ctx.out_aval.dtype
    if tl_name(dst) == "bfloat16":  # round to the narrow type, keep computing in float32
        return _bf16_from("{0}" if reg_dtype(src) == "tl.float32" else "{0}.to(tl.float32)")
    if tl_dtype(dst) != reg_dtype(dst):
        return "{0}.to({T}).to({R})"
    return "{0}" if reg_dtype(src) == reg_dtype(dst) else "{0}.to({R})"


def _to_float(ctx: RuleContext):
    dst = ctx.out_aval.dtype
    if tl_name(dst) == "bfloat16":
        return _bf16_from("{0}.to(tl.float32)")
    return "{0}.to({T})" if tl_dtype(dst) == reg_dtype(dst) else "{0}.to({T}).to({R})"


def _float_to_int(ctx: RuleContext):
    """NaN -> 0, out-of-range values saturate, others truncate (as XLA converts)."""
    info = np.iinfo(ctx.out_aval.dtype)
    ftype = np.float64 if tl_name(ctx.in_avals[0].dtype) == "float64" else np.float32
    hi_excl = float(info.max) + 1.0  # a power of two: exact in every float type
    hi = ftype(info.max)  # the largest value below hi_excl of the computing type
    hi_clamp = float(hi) if float(hi) <= info.max else float(np.nextafter(hi, ftype(0)))
    s = Steps()
    c = s.let(f"tl.where({{0}} != {{0}}, 0.0, tl.minimum(tl.maximum({{0}}, {float(info.min)!r}), "
              f"{hi_clamp!r}))")
    if hi_clamp == info.max:
        return s.result(f"{c}.to({{T}})")
    return s.result(f"tl.where({{0}} >= {hi_excl!r}, {{imax}}, {c}.to({{T}})).to({{T}})")


def _same_or_cast(ctx: RuleContext):
    same = ctx.in_avals[0].dtype == ctx.out_aval.dtype
    return "{0}" if same else "{0}.to({T})"


variant_of[P.convert_element_type_p] = lambda ctx: (
    f"{dtype_class(ctx.in_avals[0].dtype)}->{dtype_class(ctx.out_aval.dtype)}")
for _src in (F, SI, U, B):
    deftemplate(P.convert_element_type_p, "{0} != 0" if _src != B else "{0}", f"{_src}->{B}")
    for _dst in (SI, U):
        deftemplate(P.convert_element_type_p, _float_to_int if _src == F else _same_or_cast,
                    f"{_src}->{_dst}")
    deftemplate(P.convert_element_type_p, _float_to_float if _src == F else _to_float,
                f"{_src}->{F}")


# --- unary ---
deftemplate(P.neg_p, "-{0}")
deftemplate(P.sign_p, "tl.where({0} > 0, 1.0, tl.where({0} < 0, -1.0, {0}))", F)
deftemplate(P.sign_p, "tl.where({0} > 0, 1, tl.where({0} < 0, -1, 0)).to({R})", SI)
deftemplate(P.sign_p, "tl.where({0} > 0, 1, 0).to({R})", U)
deftemplate(P.abs_p, "tl.abs({0})", F, SI)
deftemplate(P.abs_p, "{0}", U)
deftemplate(P.floor_p, "tl.floor({0})")
deftemplate(P.ceil_p, "tl.ceil({0})")
variant_of[P.round_p] = lambda ctx: ("to_nearest_even" if ctx.params.get("rounding_method", 0)
                                     in (1, "TO_NEAREST_EVEN") else "away_from_zero")
deftemplate(P.round_p, _round_away(), "away_from_zero")
deftemplate(P.round_p, _round_even(), "to_nearest_even")
deftemplate(P.is_finite_p, "tl.abs({0}) < {inf}")
deftemplate(P.exp_p, "tl.exp({0})")
deftemplate(P.exp2_p, "tl.exp2({0})")
deftemplate(P.log_p, "tl.log({0})")


def _in_float64(core):
    """``core`` (a ``(steps, x) -> result`` building block) applied in float64 to the operand,
    the result rounded once to the output's type. For float32 (and float16/bfloat16, via
    float32 as the numpy backend rounds them) the float64 value is within a float64 ulp or two
    of the exact one, so the rounded result is the correctly rounded one except in the rare
    near-tie cases, and it agrees with the numpy backend, which computes log1p / expm1 of
    these types in float64 too (libdevice's float64 log/exp on the GPU, numpy's in the
    interpreter). Float64 operands compute as before."""
    s = Steps()
    return s.result(f"{core(s, s.let('{0}.to(tl.float64)'))}.to({{R}})")


deftemplate(P.log1p_p, _in_float64(_log1p))
deftemplate(P.expm1_p, _in_float64(_expm1))
deftemplate(P.tanh_p, _tanh())
deftemplate(P.logistic_p, "1.0 / (1.0 + tl.exp(-{0}))")
deftemplate(P.sqrt_p, "tl.sqrt_rn({0})")
deftemplate(P.rsqrt_p, "tl.rsqrt({0})")
deftemplate(P.cbrt_p, ("tl.exp2(tl.log2(tl.abs({0})) * 0.3333333333333333)",
                         _where_signed("{0}", "-{t0}", "{t0}")))
deftemplate(P.sin_p, "tl.sin({0})")
deftemplate(P.cos_p, "tl.cos({0})")
deftemplate(P.tan_p, "tl.sin({0}) / tl.cos({0})")
deftemplate(P.asin_p, _asin())
deftemplate(P.acos_p, _acos())
deftemplate(P.atan_p, _atan())
deftemplate(P.sinh_p, _sinh())
deftemplate(P.cosh_p, _cosh())
deftemplate(P.asinh_p, _asinh())
deftemplate(P.acosh_p, _acosh())
deftemplate(P.atanh_p, _atanh())
deftemplate(P.erf_p, "tl.erf({0}.to(tl.float64)).to({R})")  # as special.erf: float64, one rounding
# erfc: rules_special_functions (float64, no cancellation of 1 - erf(x) for large x)
deftemplate(P.square_p, "{0} * {0}")
deftemplate(P.not_p, "~{0}", SI, U)
deftemplate(P.not_p, "{0} == 0", B)
deftemplate(P.copy_p, "{0}")
deftemplate(P.stop_gradient_p, "{0}")
deftemplate(P.name_p, "{0}")
deftemplate(P.sharding_constraint_p, "{0}")
deftemplate(P.integer_pow_p, _integer_pow)

# --- binary ---
deftemplate(P.add_p, "{0} + {1}")
deftemplate(P.add_p, "{0} | {1}", B)
deftemplate(P.sub_p, "{0} - {1}")
deftemplate(P.mul_p, "{0} * {1}")
deftemplate(P.mul_p, "{0} & {1}", B)
deftemplate(P.div_p, "{0} / {1}", F)
# integer division truncates; x / 0 is -1 (signed) or the maximum (unsigned), as in XLA
deftemplate(P.div_p, ("{1} == 0", "tl.where({t0}, -1, {0} // tl.where({t0}, 1, {1}))"), SI)
deftemplate(P.div_p, ("{1} == 0", "tl.where({t0}, {imax}, {0} // tl.where({t0}, 1, {1}))"), U)
deftemplate(P.rem_p, "{0} % {1}", F)  # Triton's float % is C's fmod
deftemplate(P.rem_p, ("{1} == 0", "tl.where({t0}, {0}, {0} % tl.where({t0}, 1, {1}))"), SI, U)
deftemplate(P.pow_p, _pow())
_NAN_ALL = "propagate_nan=tl.PropagateNan.ALL"
deftemplate(P.max_p, f"tl.maximum({{0}}, {{1}}, {_NAN_ALL})", F)
deftemplate(P.max_p, "tl.maximum({0}, {1})", SI, U)
deftemplate(P.max_p, "{0} | {1}", B)
deftemplate(P.min_p, f"tl.minimum({{0}}, {{1}}, {_NAN_ALL})", F)
deftemplate(P.min_p, "tl.minimum({0}, {1})", SI, U)
deftemplate(P.min_p, "{0} & {1}", B)
deftemplate(P.atan2_p, _atan2_rule())
deftemplate(P.and_p, "{0} & {1}")
deftemplate(P.or_p, "{0} | {1}")
deftemplate(P.xor_p, "{0} ^ {1}")
# shifts by a negative amount or by >= the bit width: 0 (left/logical), the sign (arithmetic)
_OUT_OF_RANGE = "({1} < 0) | ({1} >= {bits})"
deftemplate(P.shift_left_p, (_OUT_OF_RANGE, "tl.where({t0}, 0, {0} << tl.where({t0}, 0, {1}))"),
            SI, U)
deftemplate(P.shift_right_arithmetic_p,
            f"{{0}} >> tl.where({_OUT_OF_RANGE}, {{bits}} - 1, {{1}})", SI)
deftemplate(P.shift_right_logical_p, (
    _OUT_OF_RANGE, "tl.where({t0}, 0, ({0}.to({UT}, bitcast=True) >> "
                   "tl.where({t0}, 0, {1}).to({UT}, bitcast=True)).to({T}, bitcast=True))"), SI)
for _p in (P.shift_right_arithmetic_p, P.shift_right_logical_p):
    deftemplate(_p, ("{1} >= {bits}", "tl.where({t0}, 0, {0} >> tl.where({t0}, 0, {1}))"), U)


def _population_count(ctx):
    """The 1 bits of an integer by the SWAR reduction, on its bits as uint32 (uint64)."""
    wide = np.dtype(ctx.in_avals[0].dtype).itemsize == 8
    w, ones, top = ("tl.uint64", 0x0101010101010101, 56) if wide else ("tl.uint32", 0x01010101, 24)
    s = Steps()
    u = s.let(f"{{0}}.to({{UT}}, bitcast=True).to({w})")
    pairs = s.let(f"{u} - (({u} >> 1) & {0x55 * ones})")
    nibbles = s.let(f"({pairs} & {0x33 * ones}) + (({pairs} >> 2) & {0x33 * ones})")
    octets = s.let(f"({nibbles} + ({nibbles} >> 4)) & {0x0F * ones}")
    return s.result(f"(({octets} * {ones}) >> {top}).to({{T}})")


deftemplate(P.population_count_p, _population_count)


def _clz(ctx):
    """Leading zeros: the highest 1 bit smeared to the right, then the SWAR count of ones."""
    bits = np.dtype(ctx.in_avals[0].dtype).itemsize * 8
    wide = bits == 64
    w, ones, top = ("tl.uint64", 0x0101010101010101, 56) if wide else ("tl.uint32", 0x01010101, 24)
    s = Steps()
    u = s.let(f"{{0}}.to({{UT}}, bitcast=True).to({w})")
    shift = 1
    while shift < bits:
        u = s.let(f"{u} | ({u} >> {shift})")
        shift *= 2
    pairs = s.let(f"{u} - (({u} >> 1) & {0x55 * ones})")
    nibbles = s.let(f"({pairs} & {0x33 * ones}) + (({pairs} >> 2) & {0x33 * ones})")
    octets = s.let(f"({nibbles} + ({nibbles} >> 4)) & {0x0F * ones}")
    return s.result(f"({bits} - (({octets} * {ones}) >> {top}).to(tl.int32)).to({{T}})")


deftemplate(P.clz_p, _clz)


def _reduce_precision(ctx):
    """XLA's reduce_precision on the bits: mantissa rounded to nearest even, then exponents out
    of the reduced range to inf / signed zero; NaNs stay NaN. Works in uint32 (uint64) so that
    constants never widen a 16-bit operand."""
    import ml_dtypes
    dt = np.dtype(ctx.in_avals[0].dtype)
    info = ml_dtypes.finfo(dt)
    nbits, src_exp, src_mant = dt.itemsize * 8, int(info.nexp), int(info.nmant)
    e_bits, m_bits = int(ctx.params["exponent_bits"]), int(ctx.params["mantissa_bits"])
    w = "tl.uint64" if nbits == 64 else "tl.uint32"
    ut, t = f"tl.uint{nbits}", tl_dtype(dt)
    x = "{0}" if reg_dtype(dt) == t else f"{{0}}.to({t})"  # float16 registers hold float32
    s = Steps()
    u = s.let(f"{x}.to({ut}, bitcast=True).to({w})")
    if m_bits < src_mant:
        drop = src_mant - m_bits
        u = s.let(f"{u} + ((({u} >> {drop}) & 1) + {(1 << (drop - 1)) - 1})")
        u = s.let(f"({u} >> {drop}) << {drop}")
    if e_bits < src_exp:
        src_bias, red_bias = (1 << (src_exp - 1)) - 1, (1 << (e_bits - 1)) - 1
        e = s.let(f"({u} >> {src_mant}) & {(1 << src_exp) - 1}")
        sz = s.let(f"(({u} >> {nbits - 1}) & 1) << {nbits - 1}")
        inf = s.let(f"{sz} | ({(1 << src_exp) - 1} << {src_mant})")
        u = s.let(f"tl.where({e} > {src_bias + red_bias}, {inf}, "
                  f"tl.where({e} <= {src_bias - red_bias}, {sz}, {u}))")
    out = s.let(f"{u}.to({ut}).to({t}, bitcast=True).to({{R}})")
    if m_bits > 0:
        out = s.let(f"tl.where({{0}} != {{0}}, {{0}}, {out})")
    return s.result(out)


deftemplate(P.reduce_precision_p, _reduce_precision, F)
for _p, _op in ((P.eq_p, "=="), (P.ne_p, "!="), (P.lt_p, "<"), (P.le_p, "<="),
                (P.gt_p, ">"), (P.ge_p, ">=")):
    deftemplate(_p, f"{{0}} {_op} {{1}}")
# i1 compares as a signed integer (True is -1): order booleans explicitly
deftemplate(P.lt_p, "({0} == 0) & ({1} != 0)", B)
deftemplate(P.le_p, "({0} == 0) | ({1} != 0)", B)
deftemplate(P.gt_p, "({0} != 0) & ({1} == 0)", B)
deftemplate(P.ge_p, "({0} != 0) | ({1} == 0)", B)

# --- n-ary ---
deftemplate(P.select_n_p, _select_n)
deftemplate(P.clamp_p, f"tl.minimum(tl.maximum({{1}}, {{0}}, {_NAN_ALL}), {{2}}, {_NAN_ALL})", F)
deftemplate(P.clamp_p, "tl.minimum(tl.maximum({1}, {0}), {2})", SI, U)



# --- bit-level reinterpretation and the PRNG cipher ---


def _bitcast(ctx: RuleContext):
    """``bitcast_convert_type`` between types of one width (float16/bfloat16 registers hold
    float32: narrowed before the bitcast, widened after; both exact)."""
    src, dst = ctx.in_avals[0].dtype, ctx.out_aval.dtype
    if np.dtype(src).itemsize != np.dtype(dst).itemsize or B in (dtype_class(src),
                                                                 dtype_class(dst)):
        raise UnsupportedError(f"bitcast_convert_type from {tl_name(src)} to {tl_name(dst)}: only "
                               "non-bool types of equal width are lowered elementwise")
    x = "{0}" if reg_dtype(src) == tl_dtype(src) else f"{{0}}.to({tl_dtype(src)})"
    y = f"{x}.to({{T}}, bitcast=True)"
    return y if reg_dtype(dst) == tl_dtype(dst) else f"{y}.to({{R}})"


deftemplate(P.bitcast_convert_type_p, _bitcast)

# the rotation amounts of Threefry-2x32, four per group of rounds, alternating
THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32_lines(k1: str, k2: str, x1: str, x2: str, shape: str) -> tuple:
    """Threefry-2x32 with 20 rounds (Random123), as ``numpy_prng._threefry2x32`` computes it:
    ``(lines, y1, y2)``, the statements computing the two uint32 results from the uint32
    tensors named ``k1 .. x2`` (of the block ``shape``, a shape list's text), and their names.
    uint32 additions wrap; rotations are two shifts and an or."""
    def u32(c):
        return f"tl.full({shape}, {int(c)}, tl.uint32)"

    lines = [f"tf_k0 = {k1}", f"tf_k1 = {k2}", f"tf_k2 = {k1} ^ {k2} ^ {u32(0x1BD11BDA)}",
             f"tf_a = {x1} + tf_k0", f"tf_b = {x2} + tf_k1"]
    for i in range(5):
        for r in THREEFRY_ROTATIONS[i % 2]:
            lines.append("tf_a = tf_a + tf_b")
            lines.append(f"tf_b = ((tf_b << {u32(r)}) | (tf_b >> {u32(32 - r)})) ^ tf_a")
        lines.append(f"tf_a = tf_a + tf_k{(i + 1) % 3}")
        lines.append(f"tf_b = tf_b + tf_k{(i + 2) % 3} + {u32(i + 1)}")
    return lines, "tf_a", "tf_b"


# --- row reductions ---


@dataclasses.dataclass(frozen=True)
class ReduceRule:
    """How one reduction lowers over the column axis of a [rows, cols] tile.

    Attributes:
      identity: the neutral element (a template of fields), filling masked lanes.
      accumulate: combines the accumulator tile ``{acc}`` with a masked tile ``{0}``
        elementwise (looping over column chunks).
      finish: reduces the tile ``{0}`` to a [rows, 1] column (a template; may be a tuple).
    """

    identity: str
    accumulate: str
    finish: object


reduce_rules: dict = {}
_KEEP = "axis=1, keep_dims=True"


def _nan_fix(reduce_fn):
    """tl.max / tl.min skip NaNs; a row with a NaN reduces to NaN (as XLA)."""
    return (f"tl.{reduce_fn}({{0}}, {_KEEP})",
            f"tl.where(tl.max(({{0}} != {{0}}).to(tl.int32), {_KEEP}) > 0, {{nan}}, {{t0}})")


_ANY = ReduceRule("False", "{acc} | {0}", f"tl.max({{0}}.to(tl.int32), {_KEEP}) != 0")
_ALL = ReduceRule("True", "{acc} & {0}", f"tl.min({{0}}.to(tl.int32), {_KEEP}) != 0")
reduce_rules.update({
    (P.reduce_sum_p, F): ReduceRule("0.0", "{acc} + {0}", f"tl.sum({{0}}, {_KEEP})"),
    (P.reduce_sum_p, SI): ReduceRule("0", "{acc} + {0}", f"tl.sum({{0}}, {_KEEP}).to({{R}})"),
    (P.reduce_sum_p, U): ReduceRule("0", "{acc} + {0}", f"tl.sum({{0}}, {_KEEP}).to({{R}})"),
    (P.reduce_sum_p, B): _ANY,
    (P.reduce_max_p, F): ReduceRule(f"-{INF}", f"tl.maximum({{acc}}, {{0}}, {_NAN_ALL})",
                                    _nan_fix("max")),
    (P.reduce_max_p, SI): ReduceRule("{imin}", "tl.maximum({acc}, {0})", f"tl.max({{0}}, {_KEEP})"),
    (P.reduce_max_p, U): ReduceRule("0", "tl.maximum({acc}, {0})", f"tl.max({{0}}, {_KEEP})"),
    (P.reduce_max_p, B): _ANY,
    (P.reduce_min_p, F): ReduceRule(INF, f"tl.minimum({{acc}}, {{0}}, {_NAN_ALL})",
                                    _nan_fix("min")),
    (P.reduce_min_p, SI): ReduceRule("{imax}", "tl.minimum({acc}, {0})", f"tl.min({{0}}, {_KEEP})"),
    (P.reduce_min_p, U): ReduceRule("{imax}", "tl.minimum({acc}, {0})", f"tl.min({{0}}, {_KEEP})"),
    (P.reduce_min_p, B): _ALL,
    (P.reduce_or_p, B): _ANY,
    (P.reduce_and_p, B): _ALL,
})


def lookup_reduce(prim, dtype) -> ReduceRule:
    """The reduction rule of ``prim`` on ``dtype``.

    Raises:
      UnsupportedError: for reductions without a Triton lowering (reduce_prod, argmax, ...).
    """
    arg_rule = rules_special.arg_reduce_rules.get(prim)
    if arg_rule is not None:
        return arg_rule(prim, dtype)
    rule = reduce_rules.get((prim, dtype_class(dtype)))
    if rule is None:
        raise UnsupportedError(
            f"the Triton backend has no row-reduction rule for '{prim}' on "
            f"{np.dtype(dtype).name}; supported: "
            f"{sorted({f'{p}[{v}]' for p, v in reduce_rules})}")
    return rule


from functrax.lowering.triton import (  # noqa: E402 - registers more rules
    rules_special_functions as rules_special,
)
