"""JVP rules for non-linear primitives and transpose rules for linear ones.

Rules bind primitives through ``functrax.lax`` so that they work on any trace. Where JAX
prints a particular form (``mul g (cos x)``), the rule is written in that form.
"""
from __future__ import annotations

import numpy as np

from functrax import core, lax
from functrax import primitives as P
from functrax.transforms.jvp import (
    Zero, defjvp, defjvp2, defjvp_zero, deflinear, instantiate, jvp_rules, tangent_aval,
)
from functrax.transforms.transpose import (
    deflinear_transpose, is_undefined, transpose_rules,
)


def _aval(x):
    return x.aval if is_undefined(x) else core.get_aval(x)


def _const(x, v):
    """``v`` as a scalar of ``x``'s dtype (a literal when staged)."""
    return np.asarray(v, _aval(x).dtype)[()]


# --- non-differentiable primitives ---
for _p in (P.sign_p, P.floor_p, P.ceil_p, P.round_p, P.is_finite_p, P.eq_p, P.ne_p, P.lt_p,
           P.le_p, P.gt_p, P.ge_p, P.and_p, P.or_p, P.xor_p, P.not_p, P.shift_left_p,
           P.shift_right_arithmetic_p, P.shift_right_logical_p, P.nextafter_p, P.argmax_p,
           P.argmin_p, P.reduce_and_p, P.reduce_or_p, P.reduce_xor_p, P.iota_p, P.rem_p):
    defjvp_zero(_p)

# --- unary math ---
defjvp(P.sin_p, lambda g, x: lax.mul(g, lax.cos(x)))
defjvp(P.cos_p, lambda g, x: lax.neg(lax.mul(g, lax.sin(x))))
defjvp2(P.tan_p, lambda g, ans, x: lax.mul(g, lax.add(_const(x, 1), lax.mul(ans, ans))))
defjvp(P.asin_p, lambda g, x: lax.mul(g, lax.rsqrt(lax.sub(_const(x, 1), lax.mul(x, x)))))
defjvp(P.acos_p, lambda g, x: lax.neg(lax.mul(g, lax.rsqrt(lax.sub(_const(x, 1),
                                                                  lax.mul(x, x))))))
defjvp(P.atan_p, lambda g, x: lax.div(g, lax.add(_const(x, 1), lax.mul(x, x))))
defjvp(P.sinh_p, lambda g, x: lax.mul(g, lax.cosh(x)))
defjvp(P.cosh_p, lambda g, x: lax.mul(g, lax.sinh(x)))
defjvp2(P.tanh_p, lambda g, ans, x: lax.mul(g, lax.sub(_const(x, 1), lax.mul(ans, ans))))
defjvp(P.asinh_p, lambda g, x: lax.mul(g, lax.rsqrt(lax.add(lax.mul(x, x), _const(x, 1)))))
defjvp(P.acosh_p, lambda g, x: lax.mul(g, lax.rsqrt(lax.mul(lax.sub(x, _const(x, 1)),
                                                            lax.add(x, _const(x, 1))))))
defjvp(P.atanh_p, lambda g, x: lax.div(g, lax.sub(_const(x, 1), lax.mul(x, x))))
defjvp2(P.exp_p, lambda g, ans, x: lax.mul(g, ans))
defjvp2(P.exp2_p, lambda g, ans, x: lax.mul(g, lax.mul(_const(x, np.log(2)), ans)))
defjvp(P.log_p, lambda g, x: lax.div(g, x))
defjvp(P.log1p_p, lambda g, x: lax.div(g, lax.add(x, _const(x, 1))))
defjvp2(P.expm1_p, lambda g, ans, x: lax.mul(g, lax.add(ans, _const(x, 1))))
defjvp2(P.logistic_p, lambda g, ans, x: lax.mul(g, lax.mul(ans, lax.sub(_const(x, 1), ans))))
defjvp2(P.sqrt_p, lambda g, ans, x: lax.mul(g, lax.div(_const(x, 0.5), ans)))
defjvp2(P.rsqrt_p, lambda g, ans, x: lax.mul(g, lax.mul(_const(x, -0.5), lax.div(ans, x))))
defjvp2(P.cbrt_p, lambda g, ans, x: lax.mul(g, lax.mul(_const(x, 1 / 3),
                                                       lax.integer_pow(ans, -2))))
defjvp(P.erf_p, lambda g, x: lax.mul(g, lax.mul(_const(x, 2 / np.sqrt(np.pi)),
                                                lax.exp(lax.neg(lax.mul(x, x))))))
defjvp(P.erfc_p, lambda g, x: lax.mul(g, lax.mul(_const(x, -2 / np.sqrt(np.pi)),
                                                 lax.exp(lax.neg(lax.mul(x, x))))))
defjvp2(P.erf_inv_p, lambda g, ans, x: lax.mul(g, lax.mul(_const(x, np.sqrt(np.pi) / 2),
                                                          lax.exp(lax.mul(ans, ans)))))
defjvp(P.lgamma_p, lambda g, x: lax.mul(g, lax.digamma(x)))
defjvp(P.abs_p, lambda g, x: lax.select(lax.ge(x, _const(x, 0)), g, lax.neg(g)))
defjvp(P.square_p, lambda g, x: lax.mul(g, lax.mul(_const(x, 2), x)))


def _integer_pow_jvp(g, x, *, y):
    if y == 0:
        return lax.full_like(g, 0)
    if y == 1:
        return g
    return lax.mul(g, lax.mul(_const(x, y), x if y == 2 else lax.integer_pow(x, y - 1)))


defjvp(P.integer_pow_p, _integer_pow_jvp)


def _pow_jvp_x(g, x, y):
    # y * x ** (y - 1), with 0 ** 0 handled as 1 * 0 ** -1 would not be
    return lax.mul(g, lax.mul(y, lax.pow(x, lax.sub(y, _const(y, 1)))))


def _pow_jvp_y(g, x, y):
    ans = lax.pow(x, y)
    safe_log = lax.select(lax.eq(x, _const(x, 0)), lax.full_like(x, 0), lax.log(
        lax.select(lax.eq(x, _const(x, 0)), lax.full_like(x, 1), x)))
    return lax.mul(g, lax.mul(safe_log, ans))


defjvp(P.pow_p, _pow_jvp_x, _pow_jvp_y)


def _minmax_jvp(cmp):
    # JAX's balanced rule: half the tangent from each side where the operands tie
    def tx(g, x, y):
        return lax.mul(g, _balanced(cmp, x, y))

    def ty(g, x, y):
        return lax.mul(g, _balanced(cmp, y, x))
    return tx, ty


def _balanced(cmp, x, y):
    one, half, zero = _const(x, 1), _const(x, 0.5), _const(x, 0)
    pick = lax.select(cmp(x, y), lax.full_like(x, one), lax.full_like(x, zero))
    return lax.select(lax.eq(x, y), lax.full_like(x, half), pick)


defjvp(P.max_p, *_minmax_jvp(lax.gt))
defjvp(P.min_p, *_minmax_jvp(lax.lt))
defjvp(P.atan2_p,
       lambda g, y, x: lax.mul(g, lax.div(x, lax.add(lax.mul(x, x), lax.mul(y, y)))),
       lambda g, y, x: lax.mul(g, lax.div(lax.neg(y), lax.add(lax.mul(x, x), lax.mul(y, y)))))
defjvp(P.clamp_p,
       lambda g, lo, x, hi: lax.select(lax.gt(lo, x), g, lax.full_like(g, 0)),
       lambda g, lo, x, hi: lax.select(lax.bitwise_and(lax.gt(x, lo), lax.lt(x, hi)), g,
                                       lax.full_like(g, 0)),
       lambda g, lo, x, hi: lax.select(lax.lt(hi, x), g, lax.full_like(g, 0)))

# --- linear elementwise ---
deflinear(P.neg_p)
deflinear_transpose(P.neg_p, lambda ct, x: [lax.neg(ct)])
deflinear(P.copy_p)
deflinear_transpose(P.copy_p, lambda ct, x: [ct])


def _unbroadcast(aval, ct):
    """Cotangent of a rank-0 operand that stood beside arrays: sum it."""
    ct_aval = core.get_aval(ct)
    if aval.shape == ct_aval.shape:
        return ct
    return lax.reduce_sum(ct, tuple(range(ct_aval.ndim)))


def _add_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = lax.add(x, y)
    if type(tx) is Zero:
        return out, _maybe_broadcast(ty, out)
    if type(ty) is Zero:
        return out, _maybe_broadcast(tx, out)
    return out, lax.add(tx, ty)


def _sub_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = lax.sub(x, y)
    if type(ty) is Zero:
        return out, _maybe_broadcast(tx, out)
    if type(tx) is Zero:
        return out, _maybe_broadcast(lax.neg(ty), out)
    return out, lax.sub(tx, ty)


def _maybe_broadcast(t, out):
    shape = core.get_aval(out).shape
    if core.get_aval(t).shape == shape:
        return t
    return lax.broadcast_in_dim(t, shape, ())


jvp_rules[P.add_p] = lambda primals, tangents: _add_jvp(primals, tangents)
jvp_rules[P.sub_p] = lambda primals, tangents: _sub_jvp(primals, tangents)
deflinear_transpose(P.add_p, lambda ct, x, y: [
    _unbroadcast(_aval(x), ct) if is_undefined(x) else None,
    _unbroadcast(_aval(y), ct) if is_undefined(y) else None])
deflinear_transpose(P.sub_p, lambda ct, x, y: [
    _unbroadcast(_aval(x), ct) if is_undefined(x) else None,
    _unbroadcast(_aval(y), lax.neg(ct)) if is_undefined(y) else None])

defjvp(P.mul_p, lambda g, x, y: lax.mul(g, y), lambda g, x, y: lax.mul(x, g))


def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise NotImplementedError("transpose of mul with two linear operands (not linear)")
    if is_undefined(x):
        return [_unbroadcast(x.aval, lax.mul(ct, y)), None]
    return [None, _unbroadcast(y.aval, lax.mul(x, ct))]


deflinear_transpose(P.mul_p, _mul_transpose)

defjvp(P.div_p, lambda g, x, y: lax.div(g, y),
       lambda g, x, y: lax.mul(lax.mul(lax.neg(g), x), lax.integer_pow(y, -2)))


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise NotImplementedError("transpose of div in its denominator (not linear)")
    return [_unbroadcast(x.aval, lax.div(ct, y)), None]


deflinear_transpose(P.div_p, _div_transpose)


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = lax.select_n(which, *cases)
    t_cases = tangents[1:]
    if all(type(t) is Zero for t in t_cases):
        return out, Zero(tangent_aval(core.get_aval(out)))
    return out, lax.select_n(which, *[instantiate(t) for t in t_cases])


def _select_n_transpose(ct, which, *cases):
    if is_undefined(which):
        raise ValueError("select_n is not linear in its selector")
    zeros = lax.full_like(ct, 0)
    out = [None]
    for i, c in enumerate(cases):
        if is_undefined(c):
            picks = [zeros] * len(cases)
            picks[i] = ct
            out.append(lax.select_n(which, *picks))
        else:
            out.append(None)
    return out


jvp_rules[P.select_n_p] = _select_n_jvp
deflinear_transpose(P.select_n_p, _select_n_transpose)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False, sharding=None):
    (x,), (t,) = primals, tangents
    out = lax.convert_element_type(x, new_dtype, weak_type)
    out_t = tangent_aval(core.get_aval(out))
    if type(t) is Zero or out_t.dtype != core.get_aval(out).dtype or not np.issubdtype(
            core.get_aval(x).dtype, np.inexact):
        return out, Zero(out_t)
    return out, lax.convert_element_type(t, new_dtype, weak_type)


jvp_rules[P.convert_element_type_p] = _convert_jvp
deflinear_transpose(P.convert_element_type_p, lambda ct, x, *, new_dtype, weak_type=False,
                    sharding=None: [lax.convert_element_type(ct, x.aval.dtype, x.aval.weak_type)])
