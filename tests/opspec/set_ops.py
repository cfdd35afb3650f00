"""Op specs: isin and the set operations / array-API unique functions of functrax.numpy.

The set operations' output sizes depend on the values, so the specs pass a static
``size=`` (which makes them traceable); the numpy references are truncated / padded the
way functrax (and JAX) pad: with the default fill of each function (0 for setdiff1d, the
smallest value for the others) or the given ``fill_value``; padded indices are out of
bounds.
"""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import BOOL, F32, I32, OpSpec, uniform

ties = uniform(-3, 3)   # ints in [-3, 3]: plenty of shared and repeated values


def _pad(x, size, fill):
    x = np.asarray(x)
    return np.concatenate([x[:size], np.full(max(size - len(x), 0), fill, x.dtype)])


def _sized(name, size, default, **kw):
    """(functrax fn, numpy ref) of the set operation ``name`` with a static size."""
    def fn(a, b):
        return getattr(fnp, name)(a, b, size=size, **kw)

    def ref(a, b):
        np_kw = {k: v for k, v in kw.items() if k != "fill_value"}
        out = getattr(np, name)(a, b, **np_kw)
        fill = kw.get("fill_value", (0 if not len(out) else out.min()) if default == "min"
                      else 0)
        return _pad(out, size, fill)
    return fn, ref


def _intersect_indices(size):
    def fn(a, b):
        return fnp.intersect1d(a, b, return_indices=True, size=size)

    def ref(a, b):
        v, i, j = np.intersect1d(a, b, return_indices=True)
        fill = v.min() if len(v) else 0
        return (_pad(v, size, fill), _pad(i.astype(np.int32), size, a.size),
                _pad(j.astype(np.int32), size, b.size))
    return fn, ref


def _unique_api(name, size):
    """``unique_*`` with a static size against np.unique (NaN-free inputs)."""
    def fn(x):
        out = getattr(fnp, name)(x, size=size)
        return tuple(out) if isinstance(out, tuple) else out

    def ref(x):
        kw = {"unique_all": dict(return_index=True, return_inverse=True, return_counts=True),
              "unique_counts": dict(return_counts=True),
              "unique_inverse": dict(return_inverse=True), "unique_values": {}}[name]
        out = np.unique(x, **kw)
        out = list(out) if isinstance(out, tuple) else [out]
        u = out[0]
        res = [_pad(u, size, u.min())]
        names = [k for k in ("return_index", "return_inverse", "return_counts") if kw.get(k)]
        for k, v in zip(names, out[1:]):
            if k == "return_index":
                res.append(_pad(v, size, v[0]).astype(np.int32))
            elif k == "return_inverse":
                res.append(v.reshape(x.shape).astype(np.int32))
            else:
                res.append(_pad(v, size, 0).astype(np.int32))
        return res[0] if len(res) == 1 else tuple(res)
    return fn, ref


UNION, DIFF, XOR, INTER = (_sized("union1d", 8, "min"), _sized("setdiff1d", 5, "zero"),
                           _sized("setxor1d", 7, "min"), _sized("intersect1d", 4, "min"))
DIFF_FILL = _sized("setdiff1d", 6, "zero", fill_value=-9)
INTER_U = _sized("intersect1d", 3, "min", assume_unique=True)
INTER_I = _intersect_indices(4)
S2 = (((6,), (5,)), ((3, 2), (4,)))

SPECS = [
    OpSpec("isin", fnp.isin, np.isin, shapes=(((5,), (4,)), ((2, 3), (2, 2)), ((), (3,))),
           dtypes=(I32, F32, (I32, F32)), domain=ties,
           kwargs=({}, {"invert": True})),
    OpSpec("isin_sort", lambda a, b, **kw: fnp.isin(a, b, method="sort", **kw), np.isin,
           shapes=(((5,), (4,)), ((2, 3), ())), dtypes=(I32, F32), domain=ties,
           kwargs=({}, {"invert": True})),
    OpSpec("isin_bool", fnp.isin, np.isin, shapes=(((4,), (2,)),), dtypes=(BOOL,)),
    OpSpec("union1d", UNION[0], UNION[1], shapes=S2, dtypes=(I32, F32), domain=ties),
    OpSpec("setdiff1d", DIFF[0], DIFF[1], shapes=S2, dtypes=(I32, F32), domain=ties),
    OpSpec("setdiff1d_fill", DIFF_FILL[0], DIFF_FILL[1], shapes=(((6,), (3,)),),
           dtypes=(I32,), domain=ties),
    OpSpec("setxor1d", XOR[0], XOR[1], shapes=S2, dtypes=(I32, F32), domain=ties),
    OpSpec("intersect1d", INTER[0], INTER[1], shapes=S2, dtypes=(I32, F32), domain=ties),
    OpSpec("intersect1d_indices", INTER_I[0], INTER_I[1], shapes=(((7,), (6,)),),
           dtypes=(I32,), domain=ties),
    OpSpec("intersect1d_assume_unique", INTER_U[0], INTER_U[1],
           shapes=(((5,), (4,)),), dtypes=(I32,),
           domain=lambda rng, shape, dtype: rng.permutation(9)[:shape[0]].astype(dtype)),
    *[OpSpec(name, *_unique_api(name, 5), shapes=(((7,),), ((2, 3),)), dtypes=(I32, F32),
             domain=ties)
      for name in ("unique_all", "unique_counts", "unique_inverse", "unique_values")],
]
