"""Op specs: reductions, statistics and cumulative reductions of functrax.numpy."""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import BOOL, F32, I8, I32, OpSpec, distinct, positive, uniform

S = (((2, 3),), ((4,),))            # shapes for which axis 0, -1, () and None all make sense
S2 = (((2, 3),),)
NUM, ALL3 = (F32, I32), (F32, I32, BOOL)
AXES = ({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": ()})
W23 = np.array([[True, False, True], [False, False, True]])
W3 = np.array([True, False, True])


def unitish():
    """Values whose products neither overflow nor vanish: ints in {-1, 0, 1}, floats near 1."""
    ints, floats = uniform(-1, 1), uniform(0.8, 1.25)

    def gen(rng, shape, dtype):
        return (floats if np.dtype(dtype).kind == "f" else ints)(rng, shape, dtype)
    return gen


def sparse(base=uniform()):
    """About half the elements zero (for all/any/count_nonzero)."""
    def gen(rng, shape, dtype):
        x = np.asarray(base(rng, shape, dtype))
        return np.where(rng.random_sample(shape) < 0.5, np.zeros((), x.dtype), x)
    return gen


def nan_checker(base=uniform()):
    """NaN at odd flat indices (floats), so most slices of a 2-D array keep a number."""
    def gen(rng, shape, dtype):
        x = np.array(base(rng, shape, dtype))
        if x.dtype.kind == "f" and x.size:
            flat = x.reshape(-1)
            flat[1::2] = np.nan
        return x
    return gen


def with_nans(base=uniform(), p=0.3):
    def gen(rng, shape, dtype):
        x = np.array(base(rng, shape, dtype))
        if x.dtype.kind == "f":
            x[rng.random_sample(shape) < p] = np.nan
        return x
    return gen


def _weighted(fn):
    return lambda a, w, **kw: fn(a, weights=w, **kw)


SPECS = [
    # --- sum / prod ---
    OpSpec("sum", fnp.sum, np.sum, shapes=S, dtypes=ALL3 + (I8,), reduces=True, kwargs=AXES,
           primitives=("reduce_sum",)),
    OpSpec("sum_where", fnp.sum, np.sum, shapes=S2, dtypes=ALL3, kwargs=(
        {"where": W23}, {"where": W3, "axis": 1}, {"where": W3, "axis": 0, "keepdims": True},
        {"where": False}), primitives=("reduce_sum", "select_n")),
    OpSpec("sum_dtype_initial", fnp.sum, np.sum, shapes=S, dtypes=NUM, kwargs=(
        {"dtype": np.float32}, {"dtype": np.int32}, {"initial": 2}, {"initial": 3, "axis": 0},
        {"dtype": np.bool_})),
    OpSpec("prod", fnp.prod, np.prod, shapes=S, dtypes=ALL3 + (I8,), domain=unitish(),
           reduces=True, kwargs=AXES + ({"initial": 2, "axis": 0},),
           primitives=("reduce_prod",)),
    OpSpec("prod_where", fnp.prod, np.prod, shapes=S2, dtypes=NUM, domain=unitish(), kwargs=(
        {"where": W23, "axis": 1},)),
    # --- max / min ---
    OpSpec("max", fnp.max, np.max, shapes=S, dtypes=ALL3, reduces=True,
           kwargs=AXES + ({"initial": 1},), primitives=("reduce_max",)),
    OpSpec("min", fnp.min, np.min, shapes=S, dtypes=ALL3, reduces=True,
           kwargs=AXES + ({"initial": 1},), primitives=("reduce_min",)),
    OpSpec("max_nan", fnp.max, np.max, shapes=S, domain=with_nans(), kwargs=AXES[:3]),
    OpSpec("min_where", fnp.min, np.min, shapes=S2, dtypes=NUM, kwargs=(
        {"where": W23, "initial": 5}, {"where": W3, "initial": 0, "axis": 1})),
    OpSpec("amax", fnp.amax, np.amax, shapes=S, dtypes=NUM, kwargs=AXES[:2]),
    # --- all / any ---
    OpSpec("all", fnp.all, np.all, shapes=S, dtypes=ALL3, domain=sparse(), reduces=True,
           kwargs=AXES, primitives=("reduce_and",)),
    OpSpec("any", fnp.any, np.any, shapes=S, dtypes=ALL3, domain=sparse(), reduces=True,
           kwargs=AXES, primitives=("reduce_or",)),
    OpSpec("all_any_where", lambda a, **kw: (fnp.all(a, **kw), fnp.any(a, **kw)),
           lambda a, **kw: (np.all(a, **kw), np.any(a, **kw)), shapes=S2, dtypes=ALL3,
           domain=sparse(), kwargs=({"where": W3, "axis": -1}, {"where": W23})),
    OpSpec("count_nonzero", fnp.count_nonzero, np.count_nonzero, shapes=S, dtypes=ALL3,
           domain=sparse(), reduces=True, kwargs=AXES[:3]),
    # --- statistics ---
    OpSpec("mean", fnp.mean, np.mean, shapes=S, dtypes=ALL3, reduces=True, kwargs=AXES),
    OpSpec("mean_where", fnp.mean, np.mean, shapes=S2, dtypes=NUM, kwargs=(
        {"where": W23}, {"where": W3, "axis": 1, "keepdims": True})),
    OpSpec("var", fnp.var, np.var, shapes=S, dtypes=NUM, reduces=True,
           kwargs=AXES + ({"ddof": 1}, {"axis": 0, "correction": 1})),
    OpSpec("var_where", fnp.var, np.var, shapes=S2, dtypes=NUM, kwargs=(
        {"where": W23}, {"where": W3, "axis": 1})),
    OpSpec("std", fnp.std, np.std, shapes=S, dtypes=NUM, reduces=True,
           kwargs=AXES + ({"ddof": 1, "axis": -1},)),
    OpSpec("ptp", fnp.ptp, np.ptp, shapes=S, dtypes=NUM, reduces=True, kwargs=AXES[:3]),
    OpSpec("average", fnp.average, np.average, shapes=S, dtypes=NUM, reduces=True,
           kwargs=AXES[:3]),
    OpSpec("average_weighted", _weighted(fnp.average), _weighted(np.average),
           shapes=(((2, 3), (2, 3)),), dtypes=NUM, domain=positive(),
           kwargs=({}, {"axis": 0}, {"axis": 1, "returned": True},
                   {"axis": (0, 1), "keepdims": True})),
    OpSpec("average_weights_1d", _weighted(fnp.average), _weighted(np.average),
           shapes=(((2, 3), (3,)),), dtypes=NUM, domain=positive(),
           kwargs=({"axis": 1}, {"axis": -1, "returned": True})),
    # --- index reductions (no tuple axes: not `reduces`) ---
    OpSpec("argmax", fnp.argmax, np.argmax, shapes=S, dtypes=NUM, domain=distinct(),
           kwargs=({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"keepdims": True}),
           primitives=("argmax",)),
    OpSpec("argmin", fnp.argmin, np.argmin, shapes=S, dtypes=NUM, domain=distinct(),
           kwargs=({}, {"axis": 0}, {"axis": -1, "keepdims": True}), primitives=("argmin",)),
    OpSpec("argmax_bool", fnp.argmax, np.argmax, shapes=S, dtypes=(BOOL,),
           kwargs=({}, {"axis": 0})),
    OpSpec("argmax_nan", fnp.argmax, np.argmax, shapes=S, domain=with_nans(distinct()),
           kwargs=({}, {"axis": 0}, {"axis": -1})),
    OpSpec("argmin_nan", fnp.argmin, np.argmin, shapes=S, domain=with_nans(distinct()),
           kwargs=({}, {"axis": 0}, {"axis": -1})),
    OpSpec("nanargmax", fnp.nanargmax, np.nanargmax, shapes=S, dtypes=NUM,
           domain=nan_checker(distinct()), kwargs=({}, {"axis": 0}, {"axis": -1})),
    OpSpec("nanargmin", fnp.nanargmin, np.nanargmin, shapes=S, dtypes=NUM,
           domain=nan_checker(distinct()), kwargs=({}, {"axis": 0}, {"axis": -1})),
    # --- NaN-ignoring reductions ---
    OpSpec("nansum", fnp.nansum, np.nansum, shapes=S, dtypes=NUM, domain=nan_checker(),
           reduces=True, kwargs=AXES),
    OpSpec("nanprod", fnp.nanprod, np.nanprod, shapes=S, dtypes=NUM,
           domain=nan_checker(unitish()), reduces=True, kwargs=AXES),
    OpSpec("nanmax", fnp.nanmax, np.nanmax, shapes=S, dtypes=NUM, domain=nan_checker(),
           reduces=True, kwargs=AXES),
    OpSpec("nanmin", fnp.nanmin, np.nanmin, shapes=S, dtypes=NUM, domain=nan_checker(),
           reduces=True, kwargs=AXES),
    OpSpec("nanmean", fnp.nanmean, np.nanmean, shapes=S, dtypes=NUM, domain=nan_checker(),
           reduces=True, kwargs=AXES),
    OpSpec("nanvar", fnp.nanvar, np.nanvar, shapes=S, dtypes=NUM, domain=nan_checker(),
           reduces=True, kwargs=AXES + ({"ddof": 1, "axis": -1},)),
    OpSpec("nanstd", fnp.nanstd, np.nanstd, shapes=S, dtypes=NUM, domain=nan_checker(),
           reduces=True, kwargs=AXES[:3]),
    # --- cumulative ---
    OpSpec("cumsum", fnp.cumsum, np.cumsum, shapes=S, dtypes=ALL3,
           kwargs=({}, {"axis": 0}, {"axis": -1}, {"dtype": np.float32}),
           primitives=("cumsum",)),
    OpSpec("cumprod", fnp.cumprod, np.cumprod, shapes=S, dtypes=ALL3, domain=unitish(),
           kwargs=({}, {"axis": 0}, {"axis": -1}), primitives=("cumprod",)),
    OpSpec("nancumsum", fnp.nancumsum, np.nancumsum, shapes=S, dtypes=NUM,
           domain=nan_checker(), kwargs=({}, {"axis": 0}, {"axis": -1})),
    OpSpec("nancumprod", fnp.nancumprod, np.nancumprod, shapes=S, dtypes=NUM,
           domain=nan_checker(unitish()), kwargs=({}, {"axis": 0}, {"axis": -1})),
    OpSpec("cumulative_sum", fnp.cumulative_sum, np.cumulative_sum, shapes=S2,
           dtypes=ALL3 + (I8,), kwargs=({"axis": 0}, {"axis": -1, "include_initial": True})),
    OpSpec("cumulative_prod", fnp.cumulative_prod, np.cumulative_prod, shapes=S2,
           dtypes=NUM, domain=unitish(), kwargs=({"axis": 1},
                                                 {"axis": 0, "include_initial": True})),
]
