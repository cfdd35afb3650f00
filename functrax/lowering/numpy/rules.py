"""The numpy backend: the CPU default and the reference every other backend is tested against.

``numpy_rules`` maps each primitive to a function of numpy arrays (operands positional,
params as keywords) returning a numpy array (a list of them for multiple results).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from functrax import core
from functrax import primitives as P

numpy_rules: dict = {}
core.register_eager_rules(numpy_rules)  # eager evaluation runs on this backend


# As in JAX, inf/nan results are values, not events: numpy's floating-point warnings raised
# from this backend are ignored (a filter costs nothing until a warning is issued, unlike
# np.errstate around every call).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"functrax\.lowering\.")


# primitive -> the numpy ufunc its rule is (the executor calls it directly, with out=)
numpy_ufuncs: dict = {}


def defufunc(prim, ufunc):
    """Register the numpy ufunc computing an elementwise primitive (params are ignored)."""
    if not isinstance(ufunc, np.ufunc):
        raise TypeError(f"defufunc({prim}): {ufunc!r} is not a numpy ufunc")
    numpy_rules[prim] = lambda *args, **_: ufunc(*args)
    numpy_ufuncs[prim] = ufunc


# --- elementwise ---
for _p, _f in [
    (P.neg_p, np.negative), (P.sign_p, np.sign), (P.abs_p, np.abs), (P.floor_p, np.floor),
    (P.ceil_p, np.ceil), (P.is_finite_p, np.isfinite), (P.exp_p, np.exp), (P.exp2_p, np.exp2),
    (P.log_p, np.log), (P.tanh_p, np.tanh), (P.sqrt_p, np.sqrt), (P.cbrt_p, np.cbrt),
    (P.sin_p, np.sin), (P.cos_p, np.cos), (P.tan_p, np.tan), (P.asin_p, np.arcsin),
    (P.acos_p, np.arccos), (P.atan_p, np.arctan), (P.sinh_p, np.sinh), (P.cosh_p, np.cosh),
    (P.asinh_p, np.arcsinh), (P.acosh_p, np.arccosh), (P.atanh_p, np.arctanh),
    (P.square_p, np.square), (P.conj_p, np.conj), (P.sub_p, np.subtract),
    (P.max_p, np.maximum), (P.min_p, np.minimum), (P.atan2_p, np.arctan2),
    (P.nextafter_p, np.nextafter), (P.pow_p, np.power),
    (P.eq_p, np.equal), (P.ne_p, np.not_equal), (P.lt_p, np.less), (P.le_p, np.less_equal),
    (P.gt_p, np.greater), (P.ge_p, np.greater_equal), (P.and_p, np.bitwise_and),
    (P.or_p, np.bitwise_or), (P.xor_p, np.bitwise_xor), (P.not_p, np.invert),
    (P.shift_left_p, np.left_shift), (P.shift_right_arithmetic_p, np.right_shift),
]:
    defufunc(_p, _f)

numpy_rules[P.real_p] = lambda x: np.real(x)
# an integer exponent is converted to the base's dtype first (as XLA's lowering does)
numpy_rules[P.pow_p] = lambda x, y: np.power(x, y if y.dtype == x.dtype else y.astype(x.dtype))
numpy_rules[P.population_count_p] = lambda x: (  # the bits of signed ints: an unsigned view
    np.bitwise_count(x.view(f"u{x.itemsize}")).astype(x.dtype))
numpy_rules[P.imag_p] = lambda x: np.imag(x)


def _via_float64(fn):
    """``fn`` of a float16/bfloat16/float32 array computed in float64 and rounded once to
    float32 (then to the input type): numpy's own float32 log1p/expm1 depend on the CPU's
    SIMD code (several ulps apart); this is (but for rare near-ties) the correctly rounded
    value on every machine, and what the Triton backend computes."""
    def rule(x, **_):
        if x.dtype.kind in "fV" and x.dtype.itemsize <= 4:
            return fn(x.astype(np.float64)).astype(np.float32).astype(x.dtype)
        return fn(x)
    return rule


numpy_rules[P.log1p_p] = _via_float64(np.log1p)
numpy_rules[P.expm1_p] = _via_float64(np.expm1)


def _add(x, y):
    return np.logical_or(x, y) if x.dtype == np.bool_ else np.add(x, y)


def _mul(x, y):
    return np.logical_and(x, y) if x.dtype == np.bool_ else np.multiply(x, y)


def _div(x, y):
    if x.dtype.kind in "iu":  # C-style truncating division in integer arithmetic, as XLA
        zero = y == 0
        safe = np.where(zero, 1, y).astype(x.dtype)
        q = x // safe
        if x.dtype.kind == "i":  # floor -> trunc where the signs differ and it is inexact
            q = q + ((x % safe != 0) & ((x < 0) != (safe < 0))).astype(x.dtype)
        fill = -1 if x.dtype.kind == "i" else np.iinfo(x.dtype).max
        return np.where(zero, np.asarray(fill).astype(x.dtype), q).astype(x.dtype)
    return np.true_divide(x, y)


def _rem(x, y):
    if x.dtype.kind in "iu":
        safe = np.where(y == 0, 1, y)
        r = np.fmod(x, safe)
        return np.where(y == 0, x, r).astype(x.dtype)
    return np.fmod(x, y)


def _shift_right_logical(x, y):
    bits = x.dtype.itemsize * 8
    ux = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    # the shift amount is read as unsigned (as XLA does): negative amounts are >= bits too
    out = np.where((y < 0) | (y >= bits), 0, ux >> np.clip(y, 0, bits - 1).astype(ux.dtype))
    return out.astype(ux.dtype).view(x.dtype)


def _round(x, rounding_method=0):
    if rounding_method == 1:
        return np.round(x)
    # away from zero, exactly: floor(x + 0.5) would round 0.49999997 up in float32
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        frac_ge_half = np.abs(x - t) >= 0.5
    return np.where(frac_ge_half, t + np.sign(x), t).astype(x.dtype)


def _logistic(x):
    with np.errstate(over="ignore"):
        return (1 / (1 + np.exp(-x))).astype(x.dtype)


def _rsqrt(x):
    with np.errstate(divide="ignore"):
        return (1 / np.sqrt(x)).astype(x.dtype)


def _integer_pow(x, *, y):
    if y == 0:
        return np.ones_like(x)
    acc = None
    base = x
    n = abs(y)
    while n:  # binary exponentiation, as XLA expands it
        if n & 1:
            acc = base if acc is None else acc * base
        n >>= 1
        if n:
            base = base * base
    return (1 / acc).astype(x.dtype) if y < 0 else acc


def _convert(x, *, new_dtype, weak_type=False, sharding=None):
    new_dtype = np.dtype(new_dtype)
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = np.real(x)
    if new_dtype == np.bool_:
        return x != 0
    if new_dtype.kind in "iu" and x.dtype.kind == "f":
        # clip in float64: in float32, iinfo(int32).max rounds up to 2**31 and would wrap
        info = np.iinfo(new_dtype)
        with np.errstate(invalid="ignore"):
            x = np.clip(np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0)), info.min,
                        info.max)
            # for 64-bit targets float64(max) rounds up to 2**63 / 2**64, which astype wraps:
            # saturate those to max (XLA's semantics)
            top = x >= float(info.max)
            out = x.astype(new_dtype)
        if new_dtype.itemsize == 8 and np.any(top):
            out = np.where(top, new_dtype.type(info.max), out)
        return out
    return x.astype(new_dtype)


def _select_n(which, *cases):
    if len(cases) == 1:
        return cases[0]
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(which.astype(np.int64), cases, mode="clip")


def _clamp(lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi)


numpy_rules.update({
    P.add_p: lambda x, y: _add(x, y), P.mul_p: lambda x, y: _mul(x, y),
    P.div_p: lambda x, y: _div(x, y), P.rem_p: lambda x, y: _rem(x, y),
    P.shift_right_logical_p: lambda x, y: _shift_right_logical(x, y),
    P.round_p: _round, P.logistic_p: lambda x: _logistic(x), P.rsqrt_p: lambda x: _rsqrt(x),
    P.integer_pow_p: _integer_pow, P.convert_element_type_p: _convert,
    P.select_n_p: _select_n, P.clamp_p: _clamp, P.copy_p: lambda x: np.array(x, copy=True),
    P.stop_gradient_p: lambda x: x,
    P.name_p: lambda x, **_: x,
    P.sharding_constraint_p: lambda x, **_: x,  # one array holds every device's data here
})


# --- reductions ---


def _reducer(fn):
    return lambda x, *, axes, out_sharding=None: np.asarray(fn(x, axis=tuple(axes)))


def _reduce_sum(x, axis):
    if x.dtype == np.bool_:
        return np.logical_or.reduce(x, axis=axis)
    return np.add.reduce(x, axis=axis, dtype=x.dtype)


def _reduce_prod(x, axis):
    return np.all(x, axis=axis) if x.dtype == np.bool_ else np.prod(x, axis=axis, dtype=x.dtype)


def _reduce_bitwise(ufunc, identity):
    def fn(x, axis):
        if not axis:
            return x
        return ufunc.reduce(x, axis=axis) if x.size else np.full(
            [d for i, d in enumerate(x.shape) if i not in axis], identity(x.dtype), x.dtype)
    return fn


def _max_identity(dt):
    return -np.inf if dt.kind in "fc" else (False if dt.kind == "b" else np.iinfo(dt).min)


def _min_identity(dt):
    return np.inf if dt.kind in "fc" else (True if dt.kind == "b" else np.iinfo(dt).max)


def _reduce_max(x, axis):
    if x.size == 0:
        return np.full([d for i, d in enumerate(x.shape) if i not in axis], _max_identity(x.dtype),
                       x.dtype)
    return np.max(x, axis=axis)


def _reduce_min(x, axis):
    if x.size == 0:
        return np.full([d for i, d in enumerate(x.shape) if i not in axis], _min_identity(x.dtype),
                       x.dtype)
    return np.min(x, axis=axis)


numpy_rules.update({
    P.reduce_sum_p: _reducer(_reduce_sum), P.reduce_prod_p: _reducer(_reduce_prod),
    P.reduce_max_p: _reducer(_reduce_max), P.reduce_min_p: _reducer(_reduce_min),
    P.reduce_and_p: _reducer(_reduce_bitwise(np.bitwise_and, lambda dt: ~np.zeros((), dt))),
    P.reduce_or_p: _reducer(_reduce_bitwise(np.bitwise_or, lambda dt: np.zeros((), dt))),
    P.reduce_xor_p: _reducer(_reduce_bitwise(np.bitwise_xor, lambda dt: np.zeros((), dt))),
})


def _argreduce(fn, cmp_nan):
    def rule(x, *, axes, index_dtype):
        axis = axes[0]
        if x.dtype.kind in "fc":  # NaN wins, as in JAX
            nan = np.isnan(x)
            idx = np.where(nan.any(axis=axis), np.argmax(nan, axis=axis), fn(x, axis=axis))
        else:
            idx = fn(x, axis=axis)
        return np.asarray(idx, index_dtype)
    return rule


numpy_rules[P.argmax_p] = _argreduce(np.argmax, True)
numpy_rules[P.argmin_p] = _argreduce(np.argmin, True)


def _cumulative(ufunc):
    def rule(x, *, axis, reverse=False):
        if reverse:
            x = np.flip(x, axis)
        if ufunc is np.add and x.dtype == np.bool_:
            out = np.logical_or.accumulate(x, axis=axis)
        elif ufunc is np.multiply and x.dtype == np.bool_:
            out = np.logical_and.accumulate(x, axis=axis)
        else:
            out = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
        return np.flip(out, axis) if reverse else out
    return rule


numpy_rules.update({
    P.cumsum_p: _cumulative(np.add), P.cumprod_p: _cumulative(np.multiply),
    P.cummax_p: _cumulative(np.maximum), P.cummin_p: _cumulative(np.minimum),
    P.cumlogsumexp_p: _cumulative(np.logaddexp),
})


def _sort(*operands, dimension, is_stable, num_keys):
    keys = [np.moveaxis(o, dimension, -1) for o in operands[:num_keys]]
    # lexsort sorts by the last key first; NaNs sort to the end as in XLA's total order
    order = np.lexsort([part for k in reversed(keys) for part in _sortable(k)], axis=-1)
    outs = []
    for o in operands:
        moved = np.moveaxis(o, dimension, -1)
        outs.append(np.moveaxis(np.take_along_axis(moved, order, axis=-1), -1, dimension))
    return outs


def _sortable(k):
    """lexsort keys (least significant first) for one sort key: complex sorts by (real, imag)."""
    if k.dtype.kind == "c":
        return [k.imag, k.real]
    if k.dtype.kind == "V":  # ml_dtypes (bfloat16, float8, int4): numpy cannot order them;
        return [k.astype(np.float32)]  # float32 holds each exactly (NaNs last, -0.0 == 0.0)
    return [k]


numpy_rules[P.sort_p] = _sort


def _top_k(x, *, k):
    # descending, the lower index first among ties, NaN largest: a stable ascending argsort
    # of the reversed last axis, reversed
    n = x.shape[-1]
    pos = np.flip(np.argsort(np.flip(x, -1), axis=-1, kind="stable"), -1)[..., :k]
    idx = n - 1 - pos
    return [np.take_along_axis(x, idx, -1), idx.astype(np.int32)]


numpy_rules[P.top_k_p] = _top_k
numpy_rules[P.optimization_barrier_p] = lambda *xs: list(xs)
numpy_rules[P.pvary_p] = lambda *xs, axes, axis_index_groups=None: list(xs)  # a type only


# --- shape ---


def _broadcast_in_dim(x, *, shape, broadcast_dimensions, sharding=None):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


def _reshape(x, *, new_sizes, dimensions=None, sharding=None):
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


def _pad(x, padding_value, *, padding_config):
    lo = [p[0] for p in padding_config]
    hi = [p[1] for p in padding_config]
    interior = [p[2] for p in padding_config]
    full_shape = [max(lo_ + hi_ + d + max(d - 1, 0) * it, 0) + max(-lo_, 0) + max(-hi_, 0)
                  for d, lo_, hi_, it in zip(x.shape, lo, hi, interior)]
    out = np.full(full_shape, padding_value, x.dtype)
    idx = tuple(slice(max(lo_, 0), max(lo_, 0) + (d - 1) * (it + 1) + 1 if d else max(lo_, 0),
                      it + 1) for d, lo_, it in zip(x.shape, lo, interior))
    out[idx] = x
    crop = tuple(slice(max(-lo_, 0), n - max(-hi_, 0)) for n, lo_, hi_ in zip(full_shape, lo, hi))
    return out[crop]


def _slice(x, *, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    return x[tuple(slice(s, e, st) for s, e, st in zip(start_indices, limit_indices, strides))]


def _iota(*, dtype, shape, dimension, sharding=None):
    ar = np.arange(shape[dimension], dtype=dtype)
    bshape = [1] * len(shape)
    bshape[dimension] = shape[dimension]
    return np.broadcast_to(ar.reshape(bshape), shape)


numpy_rules.update({
    P.broadcast_in_dim_p: _broadcast_in_dim, P.reshape_p: _reshape,
    P.transpose_p: lambda x, *, permutation: np.transpose(x, permutation),
    P.squeeze_p: lambda x, *, dimensions: np.squeeze(x, tuple(dimensions)),
    P.expand_dims_p: lambda x, *, dimensions: np.expand_dims(x, tuple(dimensions)),
    P.rev_p: lambda x, *, dimensions: np.flip(x, tuple(dimensions)) if dimensions else x,
    P.concatenate_p: lambda *xs, dimension: np.concatenate(xs, axis=dimension),
    P.pad_p: _pad, P.slice_p: _slice, P.iota_p: _iota,
})


# --- indexing ---


def _clamped_starts(operand_shape, indices, sizes):
    return [int(min(max(int(i), 0), d - s)) for i, d, s in zip(indices, operand_shape, sizes)]


def _dynamic_slice(x, *indices, slice_sizes):
    starts = _clamped_starts(x.shape, indices, slice_sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))]


def _dynamic_update_slice(x, update, *indices):
    starts = _clamped_starts(x.shape, indices, update.shape)
    out = np.array(x, copy=True)
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return out


numpy_rules.update({P.dynamic_slice_p: _dynamic_slice,
                    P.dynamic_update_slice_p: _dynamic_update_slice})


# --- contraction ---


def compute_dtype(dtype, preferred=None):
    """The dtype a product (``dot_general``, ``conv_general_dilated``) of ``dtype`` operands
    (result ``preferred`` when given) is computed in: float16 / bfloat16 / fp8 in float32,
    rounded once to the result type (as XLA on CPU and GPU), booleans in int32, every other
    type in itself (every backend).

    >>> compute_dtype(np.float16), compute_dtype(np.int8, np.float32)
    (dtype('float32'), dtype('float32'))
    """
    dt = np.dtype(preferred) if preferred is not None else np.dtype(dtype)
    if dt == np.bool_:
        return np.dtype(np.int32)
    if dt.itemsize < 4 and (dt.kind == "f" or dt.kind == "V"):  # float16, bfloat16, fp8
        return np.dtype(np.float32)
    return dt


def _dot_general(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = np.dtype(preferred_element_type) if preferred_element_type else lhs.dtype
    # accumulate in the preferred type when given (int8 x int8 -> f32 sums in f32), and
    # float16 / bfloat16 in float32 (BLAS), rounded once to the result type, as XLA does;
    # numpy's own half / ml_dtypes loops are not relied on (slower, version-dependent)
    compute = compute_dtype(lhs.dtype, preferred_element_type)
    lhs = lhs.astype(compute, copy=False)
    rhs = rhs.astype(compute, copy=False)
    out = _dot_matmul(lhs, rhs, tuple(lc), tuple(rc), tuple(lb), tuple(rb))
    if out is None:
        out = _dot_transposed(lhs, rhs, lc, rc, lb, rb)
    if type(out) is not np.ndarray:  # 1-D . 1-D gives a numpy scalar
        out = np.asarray(out)
    return out.astype(out_dtype, copy=False)


def _dot_matmul(lhs, rhs, lc, rc, lb, rb):
    """Fast paths: one contraction and leading batch dimensions map straight onto matmul of
    (transposed) views, without copies; None for every other layout."""
    nb = len(lb)
    if len(lc) != 1 or lb != rb or lb != tuple(range(nb)):
        return None
    (c,), (d,) = lc, rc
    ln, rn = lhs.ndim - nb, rhs.ndim - nb
    if ln not in (1, 2) or rn not in (1, 2) or (nb and (ln, rn) != (2, 2)):
        return None
    if ln == 2:  # lhs free dim first, contraction last
        lhs = lhs if c == nb + 1 else np.swapaxes(lhs, -1, -2)
    if rn == 2:  # rhs contraction first, free dim last
        rhs = rhs if d == nb else np.swapaxes(rhs, -1, -2)
    if ln == 2 and rn == 2 and lhs.shape[-1] == 1:
        # an outer product (per-example weight gradients: vmap of a dense layer's grad): the
        # broadcast product is the same numbers, ~3x faster than a batched matmul of K = 1
        return np.multiply(lhs, rhs)
    return np.matmul(lhs, rhs)


def _dot_transposed(lhs, rhs, lc, rc, lb, rb):
    """The general case: move batch, free and contracting dims into place, batch-matmul."""
    lf = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rf = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    bsz = [lhs.shape[i] for i in lb]
    lhs_t = np.transpose(lhs, list(lb) + lf + list(lc)).reshape(
        [math.prod(bsz), math.prod(lhs.shape[i] for i in lf), math.prod(
            lhs.shape[i] for i in lc)])
    rhs_t = np.transpose(rhs, list(rb) + list(rc) + rf).reshape(
        [math.prod(bsz), math.prod(rhs.shape[i] for i in rc), math.prod(
            rhs.shape[i] for i in rf)])
    shape = bsz + [lhs.shape[i] for i in lf] + [rhs.shape[i] for i in rf]
    return np.matmul(lhs_t, rhs_t).reshape(shape)


numpy_rules[P.dot_general_p] = _dot_general

# --- special functions (erf, lgamma, ...): see special.py ---
from functrax.lowering.numpy import special_functions as _special  # noqa: E402

numpy_rules.update({
    P.erf_p: lambda x: _special.erf(x), P.erfc_p: lambda x: _special.erfc(x),
    P.erf_inv_p: lambda x: _special.erf_inv(x), P.lgamma_p: lambda x: _special.lgamma(x),
    P.digamma_p: lambda x: _special.digamma(x),
})
