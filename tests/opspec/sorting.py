"""Op specs: sorting, searching, unique, order statistics and differences of functrax.numpy."""
import numpy as np

from functrax import lax
import functrax.numpy as fnp
from tests.opspec.reductions import nan_checker, with_nans
from tests.opspec.spec import BOOL, F32, I32, OpSpec, distinct, positive, uniform

NUM, ALL3 = (F32, I32), (F32, I32, BOOL)
S = (((5,),), ((2, 4),))
ties = uniform(-2, 2)          # ints in [-2, 2]: plenty of equal elements


def sorted_domain(base=uniform()):
    def gen(rng, shape, dtype):
        return np.sort(np.asarray(base(rng, shape, dtype)), axis=-1)
    return gen


# --- descending / stable references (numpy has no `descending=`) ---


def _np_sort_desc(a, axis=-1):
    return np.flip(np.sort(a, axis=axis), axis=axis)


def _np_argsort_desc(a, axis=-1):
    """Stable descending: equal elements keep their original order (as JAX)."""
    n = a.shape[axis]
    s = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - s, axis=axis)


# --- partition: compare the partition property, not an unspecified order ---


def _parts(xp, part, a, kth):
    p = part(a, kth)
    if xp is np:
        return np.sort(p[..., :kth]), p[..., kth], np.sort(p[..., kth + 1:])
    n = p.shape[-1]
    ax = p.ndim - 1
    lo = lax.slice_in_dim(p, 0, kth, axis=ax)
    mid = lax.index_in_dim(p, kth, ax, keepdims=False)
    hi = lax.slice_in_dim(p, kth + 1, n, axis=ax)
    return fnp.sort(lo), mid, fnp.sort(hi)


def _argpart_kth(xp, a, kth):
    idx = xp.argpartition(a, kth)
    if xp is np:
        return idx[..., kth]
    return lax.index_in_dim(idx, kth, idx.ndim - 1, keepdims=False)


# --- unique with a static size: numpy reference truncated / padded like functrax ---


def _np_unique_sized(a, size, fill_value=None, **kw):
    out = np.unique(a, **kw)
    out = list(out) if isinstance(out, tuple) else [out]
    u = out[0]
    k = len(u)
    fill = u[0] if fill_value is None else fill_value
    res = [np.concatenate([u[:size], np.full(max(size - k, 0), fill, u.dtype)])]
    names = [n for n in ("return_index", "return_inverse", "return_counts") if kw.get(n)]
    for name, x in zip(names, out[1:]):
        if name == "return_index":
            res.append(np.concatenate([x[:size], np.full(max(size - k, 0), x[0])]))
        elif name == "return_inverse":
            res.append(x)
        else:
            res.append(np.concatenate([x[:size], np.zeros(max(size - k, 0), x.dtype)]))
    return res[0] if len(res) == 1 else tuple(res)


def _unique_sized(size, **kw):
    return (lambda a: fnp.unique(a, size=size, **kw),
            lambda a: _np_unique_sized(a, size, **kw))


def _np_unique_rows(a, size):
    u = np.unique(a, axis=0)
    pad = np.repeat(u[:1], max(size - len(u), 0), axis=0)
    return np.concatenate([u[:size], pad], axis=0)


QMETHODS = ("lower", "higher", "midpoint", "nearest")
U6, U6F = _unique_sized(6), _unique_sized(6, fill_value=-7)
U6ALL = _unique_sized(6, return_index=True, return_inverse=True, return_counts=True)
U2C = _unique_sized(2, return_counts=True)


SPECS = [
    # --- sort / argsort ---
    OpSpec("sort", fnp.sort, np.sort, shapes=S, dtypes=ALL3, domain=ties,
           kwargs=({}, {"axis": 0}, {"axis": None}), primitives=("sort",)),
    OpSpec("sort_nan", fnp.sort, np.sort, shapes=S, domain=with_nans(),
           kwargs=({}, {"axis": 0})),
    OpSpec("sort_descending", lambda a, axis=-1: fnp.sort(a, axis, descending=True),
           _np_sort_desc, shapes=S, dtypes=NUM, domain=ties, kwargs=({}, {"axis": 0})),
    OpSpec("argsort", fnp.argsort, np.argsort, shapes=S, dtypes=NUM, domain=distinct(),
           kwargs=({}, {"axis": 0}, {"axis": None}), primitives=("sort", "iota")),
    OpSpec("argsort_stable_ties", fnp.argsort,
           lambda a, **kw: np.argsort(a, kind="stable", **kw), shapes=S, dtypes=ALL3,
           domain=ties, kwargs=({}, {"axis": 0})),
    OpSpec("argsort_nan", fnp.argsort, lambda a, **kw: np.argsort(a, kind="stable", **kw),
           shapes=S, domain=with_nans(ties), kwargs=({}, {"axis": 0})),
    OpSpec("argsort_descending", lambda a, axis=-1: fnp.argsort(a, axis, descending=True),
           _np_argsort_desc, shapes=S, dtypes=NUM, domain=ties, kwargs=({}, {"axis": 0})),
    OpSpec("lexsort", lambda a, b, **kw: fnp.lexsort((a, b), **kw),
           lambda a, b, **kw: np.lexsort((a, b), **kw), shapes=(((6,), (6,)),
                                                                 ((2, 4), (2, 4))),
           dtypes=(I32, F32, (F32, I32)), domain=ties, kwargs=({}, {"axis": 0})),
    OpSpec("partition", lambda a, kth: _parts(fnp, fnp.partition, a, kth),
           lambda a, kth: _parts(np, np.partition, a, kth), shapes=S, dtypes=NUM,
           domain=ties, kwargs=({"kth": 0}, {"kth": 2}, {"kth": 3})),
    OpSpec("argpartition", lambda a, kth: _argpart_kth(fnp, a, kth),
           lambda a, kth: _argpart_kth(np, a, kth), shapes=S, dtypes=NUM, domain=distinct(),
           kwargs=({"kth": 1}, {"kth": 3})),
    # --- searchsorted (sorted `a` may be traced) ---
    OpSpec("searchsorted", fnp.searchsorted, np.searchsorted,
           shapes=(((6,), (4,)), ((5,), (2, 3)), ((4,), ())),
           dtypes=(F32, I32, (F32, I32), (I32, F32)), domain=(sorted_domain(ties), ties),
           kwargs=({}, {"side": "right"})),
    OpSpec("searchsorted_nan", fnp.searchsorted, np.searchsorted, shapes=(((6,), (5,)),),
           domain=(sorted_domain(with_nans(ties)), with_nans(ties)),
           kwargs=({}, {"side": "right"})),
    OpSpec("searchsorted_sorter", lambda a, v, **kw: fnp.searchsorted(
        a, v, sorter=fnp.argsort(a), **kw), lambda a, v, **kw: np.searchsorted(
        a, v, sorter=np.argsort(a, kind="stable"), **kw), shapes=(((6,), (4,)),),
           dtypes=NUM, domain=ties, kwargs=({}, {"side": "right"})),
    # --- unique (static size so that it traces) ---
    OpSpec("unique_size", U6[0], U6[1], shapes=(((8,),), ((3, 3),)), dtypes=ALL3,
           domain=ties),
    OpSpec("unique_size_fill", U6F[0], U6F[1], shapes=(((8,),), ((2, 2),)), dtypes=NUM,
           domain=ties),
    OpSpec("unique_size_all", U6ALL[0], U6ALL[1], shapes=(((8,),), ((2, 3),)), dtypes=NUM,
           domain=ties),
    OpSpec("unique_truncated", U2C[0], U2C[1], shapes=(((8,),),), dtypes=NUM, domain=ties),
    OpSpec("unique_nan", U6[0], U6[1], shapes=(((8,),),), domain=with_nans(ties)),
    OpSpec("unique_rows", lambda a: fnp.unique(a, axis=0, size=5),
           lambda a: _np_unique_rows(a, 5), shapes=(((6, 2),),), dtypes=NUM,
           domain=uniform(0, 1)),
    # --- order statistics ---
    OpSpec("quantile", fnp.quantile, np.quantile, shapes=S, dtypes=NUM, reduces=True,
           kwargs=({"q": 0.3}, {"q": 0.3, "axis": 0}, {"q": 0.75, "axis": -1, "keepdims": True},
                   {"q": np.array([0.1, 0.5, 0.9], np.float32), "axis": 0},
                   {"q": np.array([0.0, 1.0], np.float32), "keepdims": True})),
    # numpy keeps int dtypes for lower/higher/nearest; JAX (and functrax) give floats
    OpSpec("quantile_methods", fnp.quantile, np.quantile, shapes=(((7,),), ((2, 5),)),
           dtypes=NUM, out_dtype=lambda dt: np.dtype(np.float32),
           kwargs=tuple({"q": 0.3, "method": m} for m in QMETHODS) + (
               {"q": np.array([0.3, 0.6], np.float32), "method": "nearest", "axis": -1},)),
    OpSpec("quantile_nan", fnp.quantile, np.quantile, shapes=S, domain=with_nans(),
           kwargs=({"q": 0.4}, {"q": 0.4, "axis": -1})),
    OpSpec("nanquantile", fnp.nanquantile, np.nanquantile, shapes=S, dtypes=NUM,
           domain=nan_checker(), reduces=True,
           kwargs=({"q": 0.3}, {"q": 0.3, "axis": -1},
                   {"q": np.array([0.2, 0.9], np.float32), "axis": 0, "keepdims": True})),
    OpSpec("percentile", fnp.percentile, np.percentile, shapes=S, dtypes=NUM, reduces=True,
           kwargs=({"q": 30}, {"q": np.array([10.0, 50.0, 95.0], np.float32), "axis": -1})),
    OpSpec("nanpercentile", fnp.nanpercentile, np.nanpercentile, shapes=S,
           domain=nan_checker(), kwargs=({"q": 30}, {"q": 70, "axis": -1})),
    OpSpec("median", fnp.median, np.median, shapes=S + (((3, 3),),), dtypes=NUM, reduces=True,
           kwargs=({}, {"axis": 0}, {"axis": -1, "keepdims": True})),
    OpSpec("nanmedian", fnp.nanmedian, np.nanmedian, shapes=S, dtypes=NUM,
           domain=nan_checker(), reduces=True, kwargs=({}, {"axis": -1})),
    # --- differences and counting ---
    OpSpec("diff", fnp.diff, np.diff, shapes=S, dtypes=ALL3,
           kwargs=({}, {"n": 2}, {"axis": 0}, {"prepend": 0}, {"append": 1, "n": 3},
                   {"n": 9})),
    OpSpec("diff_arrays", lambda a, b: fnp.diff(a, prepend=b, append=b),
           lambda a, b: np.diff(a, prepend=b, append=b), shapes=(((5,), (2,)),
                                                                ((2, 4), (2, 1))),
           dtypes=(F32, I32, (I32, F32))),
    OpSpec("ediff1d", fnp.ediff1d, np.ediff1d, shapes=S, dtypes=NUM,
           kwargs=({}, {"to_begin": 0, "to_end": 5})),
    OpSpec("bincount", lambda x: fnp.bincount(x, length=6),
           lambda x: np.bincount(x, minlength=6)[:6], shapes=(((9,),), ((0,),)),
           dtypes=(I32,), domain=uniform(0, 4)),
    OpSpec("bincount_weights", lambda x, w: fnp.bincount(x, w, length=4),
           lambda x, w: np.bincount(x, w, minlength=4)[:4], shapes=(((9,), (9,)),),
           dtypes=((I32, F32),), domain=(uniform(0, 5), positive())),
]
