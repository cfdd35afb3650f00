"""JVP rules for elementwise primitives and transpose rules for the linear ones.

Rules bind primitives through ``functrax.lax`` so that they work on any trace. Where JAX
writes a rule in a particular form (``mul g (cos x)``), the rule is written in that form, so
that printed jaxprs of derivatives match JAX's.

Elementwise operands broadcast as JAX's lax operands do (a rank-0 operand beside arrays,
size-1 dimensions of equal-rank operands); a tangent contribution that would otherwise keep
an operand's smaller shape is broadcast explicitly (JAX's ``_maybe_broadcast``), so that
every tangent has its output's shape, and a cotangent is summed back to its operand's shape
(JAX's ``_unbroadcast``).
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.transforms.jvp import (
    Zero, defjvp, defjvp2, defjvp_zero, deflinear, instantiate, jvp_rules, maybe_broadcast,
    tangent_aval,
)
from functrax.transforms.transpose import deflinear_transpose, is_undefined

__all__: list = []


def operand_aval(x):
    return x.aval if is_undefined(x) else core.get_aval(x)


def _const(x, v):
    """``v`` as a scalar of ``x``'s dtype (a literal when staged)."""
    return np.asarray(v, operand_aval(x).dtype)[()]


_one = lambda x: _const(x, 1)  # noqa: E731  (JAX's _one: a scalar)
_ones = lambda x: P.full_like(x, 1)  # noqa: E731  (JAX's _ones: x's shape)
_zeros = lambda x: P.full_like(x, 0)  # noqa: E731


def _is_complex(x) -> bool:
    return operand_aval(x).dtype.kind == "c"


_maybe_broadcast = maybe_broadcast


def _out_shape(*xs):
    return P.broadcast_shapes(*(operand_aval(x).shape for x in xs))


def _replace_zero(x):
    return P.select(P.eq(x, _const(x, 0)), _ones(x), x)


# --- non-differentiable primitives ---
for _p in (P.sign_p, P.floor_p, P.ceil_p, P.round_p, P.is_finite_p, P.eq_p, P.ne_p, P.lt_p,
           P.le_p, P.gt_p, P.ge_p, P.and_p, P.or_p, P.xor_p, P.not_p, P.shift_left_p,
           P.shift_right_arithmetic_p, P.shift_right_logical_p, P.nextafter_p, P.argmax_p,
           P.argmin_p, P.reduce_and_p, P.reduce_or_p, P.reduce_xor_p, P.iota_p,
           P.population_count_p, P.clz_p):
    defjvp_zero(_p)
# stop_gradient: the identity with a zero derivative; its rule rebinds it on the parent trace
# so that outer differentiation levels see it too (JAX's _stop_gradient_jvp_rule)
if getattr(P, "stop_gradient_p", None) is not None:
    defjvp_zero(P.stop_gradient_p)

# --- unary math (JAX's forms) ---
defjvp(P.sin_p, lambda g, x: P.mul(g, P.cos(x)))
defjvp(P.cos_p, lambda g, x: P.neg(P.mul(g, P.sin(x))))
defjvp2(P.tan_p, lambda g, ans, x: P.mul(g, P.add(_const(x, 1), P.square(ans))))
defjvp(P.asin_p, lambda g, x: P.mul(g, P.rsqrt(P.sub(_const(x, 1), P.square(x)))))
defjvp(P.acos_p, lambda g, x: P.mul(g, P.neg(P.rsqrt(P.sub(_const(x, 1),
                                                                  P.square(x))))))
defjvp(P.atan_p, lambda g, x: P.div(g, P.add(_const(x, 1), P.square(x))))
defjvp(P.sinh_p, lambda g, x: P.mul(g, P.cosh(x)))
defjvp(P.cosh_p, lambda g, x: P.mul(g, P.sinh(x)))
defjvp2(P.tanh_p, lambda g, ans, x: P.mul(P.add(g, P.mul(g, ans)),
                                          P.sub(_one(x), ans)))
defjvp(P.asinh_p, lambda g, x: P.mul(g, P.rsqrt(P.add(P.square(x), _one(x)))))


def _acosh_jvp(g, x):
    if _is_complex(x):
        # principal branch: 1 / (sqrt(z - 1) sqrt(z + 1)); rsqrt(z^2 - 1) (JAX's real form)
        # has the wrong sign where the two square roots' branches differ
        return P.mul(g, P.mul(P.rsqrt(P.sub(x, _one(x))),
                                  P.rsqrt(P.add(x, _one(x)))))
    return P.mul(g, P.rsqrt(P.sub(P.square(x), _one(x))))


defjvp(P.acosh_p, _acosh_jvp)
defjvp(P.atanh_p, lambda g, x: P.mul(P.integer_pow(P.add(_one(x), x), -1),
                                     P.div(g, P.sub(_one(x), x))))
defjvp2(P.exp_p, lambda g, ans, x: P.mul(g, ans))
defjvp2(P.exp2_p, lambda g, ans, x: P.mul(P.log(_const(x, 2)), P.mul(g, ans)))
defjvp(P.log_p, lambda g, x: P.div(g, x))
defjvp(P.log1p_p, lambda g, x: P.div(g, P.add(x, _one(x))))
defjvp2(P.expm1_p, lambda g, ans, x: P.mul(g, P.add(ans, _one(ans))))
defjvp2(P.logistic_p, lambda g, ans, x: P.mul(g, P.mul(ans, P.sub(_one(ans), ans))))
defjvp2(P.sqrt_p, lambda g, ans, x: P.mul(g, P.div(_const(x, 0.5), ans)))
defjvp2(P.rsqrt_p, lambda g, ans, x: P.mul(g, P.mul(_const(x, -0.5), P.div(ans, x))))
defjvp2(P.cbrt_p, lambda g, ans, x: P.mul(g, P.mul(_const(x, 1 / 3),
                                                       P.integer_pow(ans, -2))))
defjvp(P.erf_p, lambda g, x: P.mul(_const(x, 2 / np.sqrt(np.pi)),
                                   P.mul(g, P.exp(P.neg(P.square(x))))))
defjvp(P.erfc_p, lambda g, x: P.mul(_const(x, -2 / np.sqrt(np.pi)),
                                    P.mul(g, P.exp(P.neg(P.square(x))))))
defjvp2(P.erf_inv_p, lambda g, ans, x: P.mul(_const(x, np.sqrt(np.pi) / 2),
                                             P.mul(g, P.exp(P.square(ans)))))
defjvp(P.lgamma_p, lambda g, x: P.mul(g, P.digamma(x)))
defjvp2(P.square_p, lambda g, ans, x: P.mul(g, P.mul(_const(x, 2), x)))


# digamma's JVP (polygamma(1, x), as JAX) is in transforms/special_rules.py


def _abs_jvp(g, ans, x):
    if _is_complex(x):
        cx = P.convert_element_type(ans, operand_aval(x).dtype)
        return P.real(P.mul(g, P.div(P.conj(x), _replace_zero(cx))))
    return P.select(P.ge(x, _const(x, 0)), g, P.neg(g))


defjvp2(P.abs_p, _abs_jvp)


def _integer_pow_jvp(g, x, *, y):
    if y == 0:
        return _zeros(g)
    return P.mul(g, P.mul(_const(x, y), x if y == 2 else P.integer_pow(x, y - 1)))


defjvp(P.integer_pow_p, _integer_pow_jvp)


def _pow_jvp_lhs(g, ans, x, y):
    if np.issubdtype(operand_aval(y).dtype, np.integer):
        # y * x ** (y - 1), exactly 0 where y == 0 (also at x == 0, as in JAX)
        shape = _out_shape(x, y)
        x = _maybe_broadcast(shape, x)
        y = _maybe_broadcast(shape, P.convert_element_type(y, operand_aval(x).dtype))
        jac = P.select(P.eq(y, _const(y, 0)), _zeros(y),
                       P.mul(_replace_zero(y), P.pow(x, P.sub(y, _ones(y)))))
        return P.mul(g, jac)
    return P.mul(g, P.mul(y, P.pow(x, P.sub(y, _ones(y)))))


def _pow_jvp_rhs(g, ans, x, y):
    return P.mul(g, P.mul(P.log(_replace_zero(x)), ans))


defjvp2(P.pow_p, _pow_jvp_lhs, _pow_jvp_rhs)


def _balanced_eq(x, z, y):
    """1 where ``x`` is the chosen value ``z``, 1/2 where ``x`` and ``y`` tie (as JAX)."""
    return P.div(P.select(P.eq(x, z), _ones(z), _zeros(z)),
                 P.select(P.eq(y, z), P.full_like(z, 2), _ones(z)))


defjvp2(P.max_p, lambda g, ans, x, y: P.mul(g, _balanced_eq(x, ans, y)),
        lambda g, ans, x, y: P.mul(g, _balanced_eq(y, ans, x)))
defjvp2(P.min_p, lambda g, ans, x, y: P.mul(g, _balanced_eq(x, ans, y)),
        lambda g, ans, x, y: P.mul(g, _balanced_eq(y, ans, x)))
defjvp(P.atan2_p,
       lambda g, x, y: P.mul(g, P.div(y, P.add(P.square(x), P.square(y)))),
       lambda g, x, y: P.mul(g, P.div(P.neg(x), P.add(P.square(x),
                                                               P.square(y)))))
defjvp(P.rem_p,
       lambda g, x, y: _maybe_broadcast(_out_shape(x, y), g),
       lambda g, x, y: P.mul(P.neg(g), P.mul(P.sign(P.div(x, y)),
                                                   P.floor(P.abs(P.div(x, y))))))


def _clamp_jvp_lo(g, lo, x, hi):
    return P.select(P.bitwise_and(P.gt(lo, x), P.lt(lo, hi)),
                    _maybe_broadcast(operand_aval(x).shape, g), _zeros(x))


def _clamp_jvp_x(g, lo, x, hi):
    return P.select(P.bitwise_and(P.gt(x, lo), P.lt(x, hi)), g, _zeros(x))


def _clamp_jvp_hi(g, lo, x, hi):
    return P.select(P.lt(hi, x), _maybe_broadcast(operand_aval(x).shape, g), _zeros(x))


defjvp(P.clamp_p, _clamp_jvp_lo, _clamp_jvp_x, _clamp_jvp_hi)

# --- linear elementwise ---
deflinear(P.neg_p)
deflinear_transpose(P.neg_p, lambda ct, x: [P.neg(ct)])
deflinear(P.copy_p)
deflinear_transpose(P.copy_p, lambda ct, x: [P.copy_p.bind(ct)])
deflinear(P.real_p)
deflinear_transpose(P.real_p, lambda ct, x: [P.convert_element_type(ct, x.aval.dtype)])
deflinear(P.imag_p)
# imag(z) = Re(-i z): its transpose is complex(0, -ct) (JAX's convention)
deflinear_transpose(P.imag_p, lambda ct, x: [P.mul(
    P.convert_element_type(P.neg(ct), x.aval.dtype), _const(x, 1j))])
deflinear(P.conj_p)
deflinear_transpose(P.conj_p, lambda ct, x: [P.conj(ct) if _is_complex(x) else ct])
deflinear(P.complex_p)
# complex(x, y) = x + i y: its transpose is (Re ct, -Im ct) (JAX's convention, as imag's)
deflinear_transpose(P.complex_p, lambda ct, x, y: [
    _unbroadcast(x.aval, P.real(ct)) if is_undefined(x) else None,
    _unbroadcast(y.aval, P.neg(P.imag(ct))) if is_undefined(y) else None])
deflinear(P.reduce_precision_p)
deflinear_transpose(P.reduce_precision_p, lambda ct, x, **params: [
    P.reduce_precision_p.bind(ct, **params)])


def _unbroadcast(aval, ct):
    """Cotangent of an operand that was broadcast (rank 0 beside arrays, or size-1
    dimensions): summed over the broadcast axes, in the operand's shape."""
    ct_shape = core.get_aval(ct).shape
    if aval.shape == ct_shape:
        return ct
    if aval.shape == ():
        return P.reduce_sum(ct, tuple(range(len(ct_shape))))
    axes = tuple(i for i, (a, c) in enumerate(zip(aval.shape, ct_shape)) if a != c)
    return P.reshape(P.reduce_sum(ct, axes), aval.shape)


def _add_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = P.add(x, y)
    shape = core.get_aval(out).shape
    if type(tx) is Zero:
        return out, _maybe_broadcast(shape, ty)
    if type(ty) is Zero:
        return out, _maybe_broadcast(shape, tx)
    return out, P.add(tx, ty)


def _sub_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = P.sub(x, y)
    shape = core.get_aval(out).shape
    if type(tx) is Zero:
        return out, _maybe_broadcast(shape, P.neg(ty))
    if type(ty) is Zero:
        return out, _maybe_broadcast(shape, tx)
    return out, P.sub(tx, ty)


jvp_rules[P.add_p] = _add_jvp
jvp_rules[P.sub_p] = _sub_jvp
deflinear_transpose(P.add_p, lambda ct, x, y: [
    _unbroadcast(operand_aval(x), ct) if is_undefined(x) else None,
    _unbroadcast(operand_aval(y), ct) if is_undefined(y) else None])
deflinear_transpose(P.sub_p, lambda ct, x, y: [
    _unbroadcast(operand_aval(x), ct) if is_undefined(x) else None,
    _unbroadcast(operand_aval(y), P.neg(ct)) if is_undefined(y) else None])

defjvp(P.mul_p, lambda g, x, y: P.mul(g, y), lambda g, x, y: P.mul(x, g))


def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise NotImplementedError("transpose of mul with two linear operands: the product "
                                  "of two linear values is not linear")
    if is_undefined(x):
        return [_unbroadcast(x.aval, P.mul(ct, y)), None]
    return [None, _unbroadcast(y.aval, P.mul(x, ct))]


deflinear_transpose(P.mul_p, _mul_transpose)

defjvp(P.div_p, lambda g, x, y: P.div(g, y),
       lambda g, x, y: P.mul(P.mul(P.neg(g), x), P.integer_pow(y, -2)))


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise NotImplementedError("transpose of div in its denominator: x / y is not linear "
                                  "in y")
    return [_unbroadcast(x.aval, P.div(ct, y)), None]


deflinear_transpose(P.div_p, _div_transpose)


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = P.select_n(which, *cases)
    t_cases = tangents[1:]
    if all(type(t) is Zero for t in t_cases):
        return out, Zero(tangent_aval(core.get_aval(out)))
    return out, P.select_n(which, *[instantiate(t) for t in t_cases])


def _select_n_transpose(ct, which, *cases):
    if is_undefined(which):
        raise ValueError("select_n is not linear in its selector (the predicate must be a "
                         "known value when transposing)")
    zeros = P.full_like(ct, 0)
    if operand_aval(which).dtype == np.bool_:
        ct0 = P.select(which, zeros, ct) if is_undefined(cases[0]) else None
        ct1 = (P.select(which, ct, zeros)
               if len(cases) > 1 and is_undefined(cases[1]) else None)
        return [None, ct0, ct1][:len(cases) + 1]
    return [None] + [P.select_n(P.eq(which, _const(which, i)), zeros, ct)
                     if is_undefined(c) else None for i, c in enumerate(cases)]


jvp_rules[P.select_n_p] = _select_n_jvp
deflinear_transpose(P.select_n_p, _select_n_transpose)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = P.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    out_t = tangent_aval(core.get_aval(out))
    if type(t) is Zero or out_t.dtype == dtypes.float0:
        return out, Zero(out_t)
    return out, P.convert_element_type_p.bind(t, new_dtype=out_t.dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type=False):
    old = x.aval
    if tangent_aval(old).dtype == dtypes.float0:
        return [Zero(tangent_aval(old))]
    return [P.convert_element_type_p.bind(ct, new_dtype=old.dtype, weak_type=old.weak_type)]


jvp_rules[P.convert_element_type_p] = _convert_jvp
deflinear_transpose(P.convert_element_type_p, _convert_transpose)
