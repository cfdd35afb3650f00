"""Op specs: windowed reductions (``lax.reduce_window`` with its monoids and general
computations), max pooling's derivatives (``select_and_gather_add`` / ``select_and_scatter_add``
through ``jvp`` / ``vjp``) and ``lax.reduce`` with a general computation.

The references loop over every output position and every window element in Python (small
shapes), computing operand positions from the definition (``o * stride + w * dilation -
low padding``, real when on a multiple of the base dilation inside the operand), and do not
share code with functrax.
"""
import itertools

import ml_dtypes
import numpy as np

import functrax.numpy as fnp
from functrax import jvp, lax, vjp
from tests.opspec.spec import BOOL, F32, I32, OpSpec, uniform

F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)

# --- the loop references ---


def ref_pads(shape, window, strides, padding):
    """(low, high) pairs of a padding string, from the definition of SAME / VALID."""
    if padding == "VALID":
        return [(0, 0)] * len(shape)
    out = []
    for d, w, s in zip(shape, window, strides):
        total = max(0, (-(-d // s) - 1) * s + w - d)
        small, big = total // 2, total - total // 2
        out.append((small, big) if padding == "SAME" else (big, small))
    return out


def _config(x, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    n = x.ndim
    ws = tuple(window_strides or (1,) * n)
    bd = tuple(base_dilation or (1,) * n)
    wdl = tuple(window_dilation or (1,) * n)
    if isinstance(padding, str):
        span = [(w - 1) * d + 1 for w, d in zip(window_dimensions, wdl)]
        padding = ref_pads(x.shape, span, ws, padding)
    dilated = [(d - 1) * b + 1 if d else 0 for d, b in zip(x.shape, bd)]
    out = tuple(max(0, (n_ + lo + hi - (w - 1) * dl - 1) // s + 1) for n_, (lo, hi), w, dl, s
                in zip(dilated, padding, window_dimensions, wdl, ws))
    return ws, tuple(padding), bd, wdl, out


def window_positions(x, o, window_dimensions, ws, padding, bd, wdl):
    """(operand index or None for padding / a hole) of each element of window ``o``, in
    row-major window order."""
    for w in itertools.product(*[range(k) for k in window_dimensions]):
        pos = [oi * s + wi * dl - lo for oi, wi, s, dl, (lo, _) in
               zip(o, w, ws, wdl, padding)]
        real = all(0 <= p <= (d - 1) * b and p % b == 0 for p, d, b in zip(pos, x.shape, bd))
        yield tuple(p // b for p, b in zip(pos, bd)) if real else None


def ref_reduce_window(xs, inits, op, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    """A sequential reduction from the init values over each window (tuples of operands)."""
    xs = [np.asarray(x) for x in xs]
    ws, pads, bd, wdl, out = _config(xs[0], window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation)
    res = [np.empty(out, x.dtype) for x in xs]
    for o in np.ndindex(*out):
        acc = tuple(inits)
        for p in window_positions(xs[0], o, window_dimensions, ws, pads, bd, wdl):
            acc = op(acc, tuple(inits) if p is None else tuple(x[p] for x in xs))
        for r, a in zip(res, acc):
            r[o] = a
    return res


def _single(op):
    return lambda a, b: (op(a[0], b[0]),)


def _identity(kind, dtype):
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.bool_(kind == "min")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if kind == "max" else info.max)
    return np.array(-np.inf if kind == "max" else np.inf, dtype)[()]


def _wide_add(a, b):
    return np.add(a, b, dtype=np.float64) if np.asarray(a).dtype.kind in "fV" else \
        np.add(a, b, dtype=np.asarray(a).dtype)


_REF_OPS = {"sum": (_wide_add, lambda dt: np.zeros((), dt)[()]),
            "max": (np.maximum, lambda dt: _identity("max", dt)),
            "min": (np.minimum, lambda dt: _identity("min", dt))}


def ref_monoid(kind):
    op, init = _REF_OPS[kind]

    def ref(x, **kw):
        (out,) = ref_reduce_window([x], [init(x.dtype)], _single(op), **kw)
        return out.astype(x.dtype)
    return ref


def ref_select(x, t, select, window_dimensions, window_strides=None, padding="VALID",
               base_dilation=None, window_dilation=None):
    """Per window: the position of the first maximum (``ge``) or minimum (``le``); NaN is
    the extreme (first NaN wins); padding and holes hold the extreme's identity."""
    ws, pads, bd, wdl, out = _config(x, window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation)
    ident = _identity("max" if select == "ge" else "min", x.dtype)
    chosen = np.empty(out, object)
    for o in np.ndindex(*out):
        best, where = None, None
        for p in window_positions(x, o, window_dimensions, ws, pads, bd, wdl):
            v = ident if p is None else x[p]
            better = best is None or (v > best if select == "ge" else v < best) or (
                v != v and best == best)
            if better:
                best, where = v, p
        chosen[o] = where
    return chosen


def ref_gather(x, t, select="ge", **kw):
    chosen = ref_select(x, t, select, **kw)
    out = np.zeros(chosen.shape, t.dtype)
    for o in np.ndindex(*chosen.shape):
        if chosen[o] is not None:
            out[o] = t[chosen[o]]
    return out


def ref_scatter(x, ct, select="ge", **kw):
    chosen = ref_select(x, x, select, **kw)
    out = np.zeros(x.shape, np.float64)
    for o in np.ndindex(*chosen.shape):
        if chosen[o] is not None:
            out[chosen[o]] += ct[o]
    return out.astype(ct.dtype)


# --- the functions under test ---


def _init(kind, dtype):
    return {"sum": 0, "max": _identity("max", dtype), "min": _identity("min", dtype)}[kind]


_LAX = {"sum": lax.add, "max": lax.max, "min": lax.min}


def _pool(kind):
    def fn(x, **kw):
        return lax.reduce_window(x, _init(kind, x.dtype), _LAX[kind], **kw)
    return fn


def _kw(window_dimensions, window_strides=None, padding="VALID", base_dilation=None,
        window_dilation=None):
    return dict(window_dimensions=window_dimensions, window_strides=window_strides,
                padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)


# configurations per rank: (first one: the one the gradient checks use)
CONFIGS = {
    1: (_kw((3,), (2,), "VALID"), _kw((2,), (1,), "SAME"), _kw((3,), (2,), "SAME_LOWER"),
        _kw((2,), (3,), ((1, 2),)), _kw((2,), (1,), ((0, 1),), (2,), (1,)),
        _kw((2,), (1,), "VALID", None, (3,)), _kw((3,), (1,), ((-1, 2),))),
    2: (_kw((2, 2), (2, 2), "SAME"), _kw((3, 2), (1, 1), "VALID"),
        _kw((2, 3), (2, 1), ((1, 0), (1, 1))), _kw((2, 2), (1, 2), "SAME", (2, 1), (1, 2)),
        _kw((1, 2), (1, 1), ((0, 0), (2, 0)), (1, 3), (1, 1)), _kw((3, 3), (1, 1), "SAME")),
    3: (_kw((2, 2, 1), (1, 2, 1), "SAME"), _kw((1, 2, 2), (1, 1, 2), ((0, 1), (1, 0), (0, 0))),
        _kw((2, 1, 2), (1, 1, 1), "VALID", (1, 2, 1), (1, 1, 2))),
}
SHAPES = {1: (((7,),), ((4,),)), 2: (((4, 5),), ((3, 6),)), 3: (((2, 3, 4),),)}
DTYPES = {"sum": (F32, I32), "max": (F32, I32, BOOL), "min": (F32, I32, BOOL)}
PRIMS = {"sum": ("reduce_window_sum",), "max": ("reduce_window_max",),
         "min": ("reduce_window_min",)}

MONOIDS = [
    OpSpec(f"reduce_window_{kind}_{n}d", _pool(kind), ref_monoid(kind), shapes=SHAPES[n],
           dtypes=DTYPES[kind], domain=uniform(-3, 3), kwargs=CONFIGS[n],
           primitives=PRIMS[kind])
    for kind in ("sum", "max", "min") for n in (1, 2, 3)
]

NARROW = [
    OpSpec(f"reduce_window_{kind}_narrow", _pool(kind), ref_monoid(kind), shapes=(((4, 5),),),
           dtypes=(F16, BF16), domain=uniform(-3, 3), kwargs=CONFIGS[2][:2],
           primitives=PRIMS[kind])
    for kind in ("sum", "max")
]


def _ties(rng, shape, dtype):
    """Few distinct values: most windows hold several maxima."""
    return rng.randint(0, 3, size=shape).astype(dtype)


def _max_pool_jvp(x, t, **kw):
    return jvp(lambda a: _pool("max")(a, **kw), (x,), (t,))[1]


def _min_pool_jvp(x, t, **kw):
    return jvp(lambda a: _pool("min")(a, **kw), (x,), (t,))[1]


def _max_pool_vjp(x, ct, **kw):
    return vjp(lambda a: _pool("max")(a, **kw), x)[1](ct)[0]


def _ct_shape(kw, shape):
    x = np.zeros(shape)
    return _config(x, kw["window_dimensions"], kw["window_strides"], kw["padding"],
                   kw["base_dilation"], kw["window_dilation"])[4]


_GATHER_KW = CONFIGS[2]
_SCATTER_KW = tuple(k for k in CONFIGS[2] if k["window_dilation"] is None)

DERIVATIVES = [
    OpSpec("max_pool_jvp", _max_pool_jvp, lambda x, t, **kw: ref_gather(x, t, "ge", **kw),
           shapes=(((4, 5), (4, 5)),), kwargs=_GATHER_KW, primitives=("select_and_gather_add",)),
    OpSpec("min_pool_jvp", _min_pool_jvp, lambda x, t, **kw: ref_gather(x, t, "le", **kw),
           shapes=(((3, 6), (3, 6)),), kwargs=CONFIGS[2][:3],
           primitives=("select_and_gather_add",)),
    OpSpec("max_pool_jvp_ties", _max_pool_jvp, lambda x, t, **kw: ref_gather(x, t, "ge", **kw),
           shapes=(((5, 6), (5, 6)),), kwargs=CONFIGS[2][:3], domain=(_ties, uniform()),
           primitives=("select_and_gather_add",)),
] + [
    OpSpec(f"max_pool_vjp_{i}", _max_pool_vjp,
           lambda x, ct, **kw: ref_scatter(x, ct, "ge", **kw),
           shapes=(((4, 5), _ct_shape(kw, (4, 5))),), kwargs=(kw,),
           primitives=("select_and_scatter_add",))
    for i, kw in enumerate(_SCATTER_KW)
] + [
    OpSpec("max_pool_vjp_ties", _max_pool_vjp,
           lambda x, ct, **kw: ref_scatter(x, ct, "ge", **kw),
           shapes=(((5, 6), _ct_shape(_SCATTER_KW[0], (5, 6))),), kwargs=(_SCATTER_KW[0],),
           domain=(_ties, uniform()), primitives=("select_and_scatter_add",)),
]

# --- general computations ---


def _prod_pool(x, **kw):
    return lax.reduce_window(x, np.ones((), x.dtype), lax.mul, **kw)


def _ref_prod_pool(x, **kw):
    (out,) = ref_reduce_window([x], [np.ones((), x.dtype)[()]], _single(np.multiply), **kw)
    return out


def _argmax_comp(a, b):
    pick = a[0] >= b[0]
    return lax.select(pick, a[0], b[0]), lax.select(pick, a[1], b[1])


def _argmax_pool(x, **kw):
    idx = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    return lax.reduce_window((x, idx), (_identity("max", x.dtype), np.int32(0)),
                             _argmax_comp, **kw)


def _ref_argmax_pool(x, **kw):
    idx = np.broadcast_to(np.arange(x.shape[-1], dtype=np.int32), x.shape)

    def op(a, b):
        return (a[0], a[1]) if a[0] >= b[0] else (b[0], b[1])
    return tuple(ref_reduce_window([x, idx], [_identity("max", x.dtype), np.int32(0)], op,
                                   **kw))


def _logsumexp_pool(x, **kw):
    return lax.reduce_window(x, np.array(-np.inf, x.dtype), fnp.logaddexp, **kw)


def _ref_logsumexp_pool(x, **kw):
    (out,) = ref_reduce_window([x.astype(np.float64)], [-np.inf], _single(np.logaddexp), **kw)
    return out.astype(x.dtype)


GENERAL = [
    OpSpec("reduce_window_prod", _prod_pool, _ref_prod_pool, shapes=(((4, 5),),),
           dtypes=(F32, I32), domain=uniform(-2, 2), kwargs=CONFIGS[2][:4], rtol=1e-5,
           primitives=("reduce_window",)),
    OpSpec("reduce_window_argmax", _argmax_pool, _ref_argmax_pool, shapes=(((4, 5),),),
           dtypes=(F32, I32), domain=uniform(-2, 2), kwargs=CONFIGS[2][:3],
           primitives=("reduce_window",)),
    OpSpec("reduce_window_logsumexp", _logsumexp_pool, _ref_logsumexp_pool,
           shapes=(((7,),), ((9,),)), kwargs=(_kw((3,), (2,), "SAME"), _kw((2,), (1,), "VALID")),
           primitives=("reduce_window",)),
]

# --- lax.reduce ---


def _ref_reduce(xs, inits, op, dimensions):
    """Sequential reduction from the init values over the reduced indices (row-major)."""
    xs = [np.asarray(x) for x in xs]
    kept = [i for i in range(xs[0].ndim) if i not in dimensions]
    out_shape = tuple(xs[0].shape[i] for i in kept)
    res = [np.empty(out_shape, x.dtype) for x in xs]
    for o in np.ndindex(*out_shape):
        acc = tuple(inits)
        for r in np.ndindex(*[xs[0].shape[d] for d in dimensions]):
            idx = [0] * xs[0].ndim
            for i, v in zip(kept, o):
                idx[i] = v
            for d, v in zip(dimensions, r):
                idx[d] = v
            acc = op(acc, tuple(x[tuple(idx)] for x in xs))
        for rr, a in zip(res, acc):
            rr[o] = a
    return res


def _reduce_mul(x, dimensions):
    return lax.reduce(x, np.ones((), x.dtype), lambda a, b: a * b, dimensions)


def _reduce_sum_max(x, y, dimensions):
    return lax.reduce((x, y), (np.zeros((), x.dtype), _identity("max", y.dtype)),
                      lambda a, b: (a[0] + b[0], fnp.maximum(a[1], b[1])), dimensions)


def _reduce_argmax(x, dimensions):
    idx = lax.broadcasted_iota(np.int32, x.shape, dimensions[0])
    return lax.reduce((x, idx), (_identity("max", x.dtype), np.int32(0)), _argmax_comp,
                      dimensions)


def _ref_reduce_argmax(x, dimensions):
    idx = np.broadcast_to(np.arange(x.shape[dimensions[0]], dtype=np.int32).reshape(
        [-1 if i == dimensions[0] else 1 for i in range(x.ndim)]), x.shape)
    return tuple(_ref_reduce([x, idx], [_identity("max", x.dtype), np.int32(0)],
                             lambda a, b: a if a[0] >= b[0] else b, dimensions))


_DIMS = ({"dimensions": (1,)}, {"dimensions": (0, 2)}, {"dimensions": ()},
         {"dimensions": (0, 1, 2)})

REDUCE = [
    OpSpec("lax_reduce_general_mul", _reduce_mul, lambda x, dimensions: _ref_reduce(
        [x], [np.ones((), x.dtype)[()]], _single(np.multiply), dimensions)[0],
        shapes=(((2, 3, 4),),), dtypes=(F32, I32), domain=uniform(-2, 2), kwargs=_DIMS,
        primitives=("reduce",)),
    OpSpec("lax_reduce_variadic", _reduce_sum_max, lambda x, y, dimensions: tuple(_ref_reduce(
        [x, y], [np.zeros((), x.dtype)[()], _identity("max", y.dtype)],
        lambda a, b: (a[0] + b[0], np.maximum(a[1], b[1])), dimensions)),
        shapes=(((2, 3, 4), (2, 3, 4)),), dtypes=(F32, (F32, I32)), kwargs=_DIMS,
        primitives=("reduce",)),
    OpSpec("lax_reduce_argmax", _reduce_argmax, _ref_reduce_argmax, shapes=(((3, 4, 2),),),
           dtypes=(F32, I32), domain=uniform(-2, 2),
           kwargs=({"dimensions": (1,)}, {"dimensions": (0,)}), primitives=("reduce",)),
    OpSpec("lax_reduce_monoid_max", lambda x, dimensions: lax.reduce(
        x, _identity("max", x.dtype), lax.max, dimensions),
        lambda x, dimensions: np.max(x, axis=dimensions) if x.size else x,
        shapes=(((2, 3, 4),),), dtypes=(F32, I32), kwargs=_DIMS[:2],
        primitives=("reduce_max",)),
]

SPECS = MONOIDS + NARROW + DERIVATIVES + GENERAL + REDUCE
