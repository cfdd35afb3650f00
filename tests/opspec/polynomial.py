"""Op specs: the polynomial functions of functrax.numpy against numpy's (np.polyval, ...).

JAX's dtypes differ from numpy's in places (integer coefficients give floats for
polyval/polymul/polyder/polyint, a square matrix gives complex ``poly`` coefficients); the
remainder of ``polydiv`` keeps the dividend's length (numpy trims its leading zeros), so
the numpy references are adapted here, as documented by each.
"""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import F32, I32, OpSpec, uniform

C64 = np.dtype(np.complex64)


def _float(*_):
    return F32


def lead_nonzero(lo=-2.0, hi=2.0):
    """Coefficients whose leading one is away from zero (a well-defined degree)."""
    base = uniform(lo, hi)

    def gen(rng, shape, dtype):
        x = np.asarray(base(rng, shape, dtype))
        x[..., :1] = np.where(np.abs(x[..., :1]) < 0.5, np.asarray(1, x.dtype), x[..., :1])
        return x.astype(dtype)
    return gen


def real_roots(rng, shape, dtype):
    """Coefficients of a polynomial with distinct real roots in [-2, 2] (well separated)."""
    n = shape[0] - 1
    r = (rng.permutation(4 * n) / (4 * n) * 4 - 2 + 0.05)[:n]
    return (np.poly(r) * rng.uniform(0.5, 2)).astype(dtype)


def _np_polydiv(u, v):
    """numpy's polydiv with the remainder padded back to ``len(u)`` (as JAX returns it)."""
    q, r = np.polydiv(u, v)
    return q, np.concatenate([np.zeros(len(u) - len(r), r.dtype), r])


def _np_roots_sorted(p):
    return np.sort_complex(np.roots(p))


def _roots_sorted(p):
    r = fnp.roots(p, strip_zeros=False)
    return fnp.sort_complex(r)


SPECS = [
    OpSpec("polyval", fnp.polyval, np.polyval, shapes=(((4,), (5,)), ((3,), ()),
                                                       ((1,), (2, 2))),
           dtypes=(F32, (I32, F32))),
    OpSpec("polyval_int", fnp.polyval, np.polyval, shapes=(((3,), (4,)),), dtypes=(I32,),
           domain=uniform(-3, 3), out_dtype=_float),
    OpSpec("polyadd", fnp.polyadd, np.polyadd, shapes=(((3,), (5,)), ((4,), (2,)),
                                                       ((3,), (3,))),
           dtypes=(F32, I32, (I32, F32))),
    OpSpec("polysub", fnp.polysub, np.polysub, shapes=(((3,), (5,)), ((4,), (1,))),
           dtypes=(F32, I32)),
    OpSpec("polymul", fnp.polymul, np.polymul, shapes=(((3,), (4,)), ((1,), (3,))),
           dtypes=(F32,)),
    # numpy strips leading zeros (JAX only with trim_leading_zeros=True): none here
    OpSpec("polymul_int", fnp.polymul, np.polymul, shapes=(((3,), (2,)),), dtypes=(I32,),
           domain=lead_nonzero(-3, 3), out_dtype=_float),
    OpSpec("polydiv", fnp.polydiv, _np_polydiv, shapes=(((5,), (3,)), ((4,), (1,)),
                                                        ((6,), (4,))),
           domain=(uniform(), lead_nonzero()), atol=1e-4, rtol=1e-4),
    OpSpec("polyder", fnp.polyder, np.polyder, shapes=(((5,),), ((2,),)),
           kwargs=({}, {"m": 2}, {"m": 0})),
    OpSpec("polyder_int", fnp.polyder, np.polyder, shapes=(((4,),),), dtypes=(I32,),
           kwargs=({}, {"m": 3}), out_dtype=_float),
    OpSpec("polyint", fnp.polyint, np.polyint, shapes=(((4,),), ((1,),)),
           kwargs=({}, {"m": 2}, {"m": 2, "k": np.array([1.0, 2.0], np.float32)},
                   {"k": 3.0})),
    OpSpec("polyfit", fnp.polyfit, np.polyfit, shapes=(((8,), (8,)), ((6,), (6, 2))),
           kwargs=({"deg": 2}, {"deg": 1}), atol=1e-4, rtol=1e-3),
    OpSpec("polyfit_weighted", lambda x, y, w: fnp.polyfit(x, y, 2, w=w),
           lambda x, y, w: np.polyfit(x, y, 2, w=w), shapes=(((7,), (7,), (7,)),),
           domain=(uniform(), uniform(), uniform(0.5, 2)), atol=1e-4, rtol=1e-3),
    OpSpec("polyfit_cov", lambda x, y: fnp.polyfit(x, y, 1, cov=True),
           lambda x, y: np.polyfit(x, y, 1, cov=True), shapes=(((9,), (9,)),),
           atol=1e-4, rtol=1e-3),
    OpSpec("vander", fnp.vander, np.vander, shapes=(((4,),), ((0,),)), dtypes=(F32, I32),
           kwargs=({}, {"N": 2}, {"N": 3, "increasing": True})),
    OpSpec("poly", fnp.poly, np.poly, shapes=(((3,),), ((0,),)), atol=1e-4, rtol=1e-4),
    # a square matrix: its characteristic polynomial, complex as JAX's (eigvals-based)
    OpSpec("poly_matrix", fnp.poly, np.poly, shapes=(((3, 3),),), out_dtype=lambda *_: C64,
           atol=1e-4, rtol=1e-4),
    # real, well-separated roots (so that sorting them is stable under rounding)
    OpSpec("roots", _roots_sorted, _np_roots_sorted, shapes=(((4,),), ((2,),), ((6,),)),
           domain=real_roots, atol=1e-4, rtol=1e-4, out_dtype=lambda *_: C64),
]
