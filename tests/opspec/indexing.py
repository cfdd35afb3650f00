"""Op specs: indexing (``x[idx]``, ``x.at[idx]``) and the index functions of functrax.numpy.

``fn``/``ref`` are lambdas doing the same indexing on functrax and numpy arrays. Index
arguments come from the domains below, so traced runs index with traced integer arrays.
"""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import BOOL, F32, I32, OpSpec, uniform

M = np.array([True, False, True, True])  # a constant (concrete) boolean mask


def indices(n):
    """Integer indices in [-n, n) (negative ones count from the end)."""
    def gen(rng, shape, dtype):
        return rng.randint(-n, n, size=shape).astype(dtype)
    return gen


def unique_indices(n):
    """Distinct integer indices in [0, n) (the last dimension of ``shape`` of them)."""
    def gen(rng, shape, dtype):
        return rng.permutation(n)[:int(np.prod(shape))].reshape(shape).astype(dtype)
    return gen


def oob_indices(n):
    """Indices in [-n - 2, n + 2): some out of bounds."""
    return indices(n + 2)


def _np_at(ufunc):
    def ref(x, i, y):
        out = np.array(x, copy=True)
        ufunc.at(out, i, y)
        return out
    return ref


def _np_set(x, i, y):
    out = np.array(x, copy=True)
    out[i] = y
    return out


def _np_get_fill(x, i, fill):
    n = x.shape[0]
    j = np.where(i < 0, i + n, i)
    ok = (j >= 0) & (j < n)
    return np.where(ok.reshape(ok.shape + (1,) * (x.ndim - 1)), x[np.clip(j, 0, n - 1)], fill)


def _np_take_along_axis_fill(x, i, axis, fill):
    n = x.shape[axis]
    j = np.where(i < 0, i + n, i)
    ok = (j >= 0) & (j < n)
    return np.where(ok, np.take_along_axis(x, np.clip(j, 0, n - 1), axis), fill)


def _np_nonzero_padded(x, size, fill):
    return tuple(np.concatenate([i, np.full(max(size - len(i), 0), fill)])[:size]
                 for i in np.nonzero(x))


X = uniform()
IDX_T = ((F32, I32), (I32, I32))  # operand dtype, index dtype
SPECS = [
    # --- basic indexing: static slice / rev / squeeze / expand_dims ---
    OpSpec("getitem_int", lambda x: x[1], lambda x: x[1], shapes=(((3,),), ((2, 4),)),
           dtypes=(F32, I32), primitives=("slice", "squeeze")),
    OpSpec("getitem_negative_int", lambda x: x[-1, ..., -2], lambda x: x[-1, ..., -2],
           shapes=(((3, 2),), ((2, 3, 4),))),
    OpSpec("getitem_slices", lambda x: x[1:, ::-2], lambda x: x[1:, ::-2],
           shapes=(((3, 4),), ((4, 5, 2),)), dtypes=(F32, I32), primitives=("slice", "rev")),
    OpSpec("getitem_strided", lambda x: x[-1:0:-2, 1::3], lambda x: x[-1:0:-2, 1::3],
           shapes=(((5, 7),), ((6, 4, 1),))),
    OpSpec("getitem_newaxis_ellipsis", lambda x: x[None, ..., 0, None],
           lambda x: x[None, ..., 0, None], shapes=(((3,),), ((2, 3, 4),)),
           primitives=("expand_dims",)),
    OpSpec("getitem_empty_slice", lambda x: x[3:1], lambda x: x[3:1], shapes=(((4, 2),),)),
    # --- traced scalar index: dynamic_slice ---
    OpSpec("getitem_scalar_index", lambda x, i: x[i], lambda x, i: x[i],
           shapes=(((5,), ()), ((5, 3), ())), dtypes=IDX_T, domain=(X, indices(5)),
           primitives=("dynamic_slice",)),
    OpSpec("getitem_scalar_index_slice", lambda x, i: x[1:, i], lambda x, i: x[1:, i],
           shapes=(((4, 3), ()), ((4, 3, 2), ())), dtypes=IDX_T, domain=(X, indices(3))),
    # --- advanced indexing: one gather ---
    OpSpec("getitem_int_array", lambda x, i: x[i], lambda x, i: x[i],
           shapes=(((5,), (3,)), ((5, 3), (2, 2)), ((5, 2), ())), dtypes=IDX_T,
           domain=(X, indices(5)), primitives=("gather",)),
    OpSpec("getitem_int_array_axis1", lambda x, i: x[:, i], lambda x, i: x[:, i],
           shapes=(((2, 4), (3,)), ((3, 4, 2), (2, 3))), dtypes=IDX_T, domain=(X, indices(4))),
    OpSpec("getitem_adjacent_arrays", lambda x, i, j: x[:, i, j], lambda x, i, j: x[:, i, j],
           shapes=(((2, 3, 3), (2,), (2,)), ((2, 3, 3, 2), (2, 1), (4,))),
           dtypes=((F32, I32, I32),), domain=(X, indices(3), indices(3))),
    OpSpec("getitem_nonadjacent_arrays", lambda x, i, j: x[i, :, j],
           lambda x, i, j: x[i, :, j],
           shapes=(((3, 4, 3), (2,), (2,)), ((3, 2, 3, 2), (2, 1), (3,))),
           dtypes=((F32, I32, I32), (I32, I32, I32)), domain=(X, indices(3), indices(3))),
    OpSpec("getitem_int_and_array_nonadjacent", lambda x, i: x[1, :, i],
           lambda x, i: x[1, :, i], shapes=(((3, 4, 3), (2,)), ((2, 2, 3), (2, 2))),
           dtypes=((F32, I32),), domain=(X, indices(3))),
    OpSpec("getitem_mixed", lambda x, i: x[None, ::-1, i, 1:],
           lambda x, i: x[None, ::-1, i, 1:], shapes=(((3, 4, 3), (2,)), ((2, 4, 2), (3, 1))),
           dtypes=((F32, I32),), domain=(X, indices(4))),
    OpSpec("getitem_list", lambda x: x[:, [0, 2, -1]], lambda x: x[:, [0, 2, -1]],
           shapes=(((2, 3),), ((1, 4, 2),))),
    OpSpec("getitem_bool_mask", lambda x: x[M], lambda x: x[M], shapes=(((4,),), ((4, 2),)),
           dtypes=(F32, I32)),
    OpSpec("getitem_bool_mask_2d", lambda x: x[1:, M.reshape(2, 2)],
           lambda x: x[1:, M.reshape(2, 2)], shapes=(((3, 2, 2),), ((2, 2, 2, 3),))),
    # --- x.at[idx] ---
    OpSpec("at_set", lambda x, i, y: x.at[i].set(y), _np_set,
           shapes=(((5,), (3,), (3,)), ((5, 2), (4,), (2,)), ((5, 2), (2,), ())),
           dtypes=((F32, I32, F32), (I32, I32, I32)), domain=(X, unique_indices(5), X),
           primitives=("scatter",)),
    OpSpec("at_set_slice", lambda x, y: x.at[1::2, None].set(y),
           lambda x, y: _np_set(x, (slice(1, None, 2), None), y),
           shapes=(((5,), (2, 1)), ((5, 2), (2,)), ((4, 3), ()))),
    OpSpec("at_set_scalar_index", lambda x, i, y: x.at[i].set(y), _np_set,
           shapes=(((5,), (), ()), ((5, 3), (), (3,))), dtypes=((F32, I32, F32),),
           domain=(X, indices(5), X)),
    OpSpec("at_add", lambda x, i, y: x.at[i].add(y), _np_at(np.add),
           shapes=(((5,), (6,), (6,)), ((4, 3), (2, 3), (3,)), ((4, 3), (2,), ())),
           dtypes=((F32, I32, F32), (I32, I32, I32)), domain=(X, indices(4), X),
           primitives=("scatter-add",)),
    OpSpec("at_add_nonadjacent", lambda x, i, j, y: x.at[i, :, j].add(y),
           lambda x, i, j, y: _np_at(np.add)(x, (i, slice(None), j), y),
           shapes=(((3, 2, 3), (4,), (4,), (4, 2)), ((3, 2, 3), (2, 1), (3,), ())),
           dtypes=((F32, I32, I32, F32),), domain=(X, indices(3), indices(3), X)),
    OpSpec("at_multiply", lambda x, i, y: x.at[i].multiply(y), _np_at(np.multiply),
           shapes=(((5,), (6,), (6,)), ((4, 3), (2,), (3,))),
           dtypes=((F32, I32, F32), (I32, I32, I32)), domain=(X, indices(4), X),
           primitives=("scatter-mul",)),
    OpSpec("at_min", lambda x, i, y: x.at[i].min(y), _np_at(np.minimum),
           shapes=(((5,), (6,), (6,)), ((4, 3), (2,), (3,))),
           dtypes=((F32, I32, F32), (I32, I32, I32)), domain=(X, indices(4), X),
           primitives=("scatter-min",)),
    OpSpec("at_max", lambda x, i, y: x.at[i].max(y), _np_at(np.maximum),
           shapes=(((5,), (6,), (6,)), ((4, 3), (2,), (3,))),
           dtypes=((F32, I32, F32), (I32, I32, I32)), domain=(X, indices(4), X),
           primitives=("scatter-max",)),
    OpSpec("at_get_fill", lambda x, i: x.at[i].get(mode="fill", fill_value=-7),
           lambda x, i: _np_get_fill(x, i, -7), shapes=(((4,), (6,)), ((4, 2), (3, 2))),
           dtypes=IDX_T, domain=(X, oob_indices(4))),
    # --- take, take_along_axis ---
    OpSpec("take", lambda x, i, **kw: fnp.take(x, i, mode="clip", **kw),
           lambda x, i, **kw: np.take(x, i, mode="clip", **kw),
           shapes=(((5,), (3,)), ((3, 4), (2, 3))), dtypes=IDX_T, domain=(X, oob_indices(3)),
           kwargs=({}, {"axis": 0}, {"axis": -1})),
    OpSpec("take_fill", lambda x, i: fnp.take(x, i, axis=1, fill_value=0),
           lambda x, i: np.moveaxis(_np_get_fill(np.moveaxis(x, 1, 0), i, 0), 0, 1),
           shapes=(((2, 4), (5,)), ((3, 4, 2), (3,))),
           dtypes=IDX_T, domain=(X, oob_indices(4))),
    OpSpec("take_along_axis", lambda x, i: fnp.take_along_axis(x, i, axis=1),
           lambda x, i: np.take_along_axis(x, i, axis=1),
           shapes=(((3, 4), (3, 2)), ((3, 4), (1, 5)), ((1, 4), (3, 4)), ((2, 3, 2), (2, 5, 1))),
           dtypes=IDX_T, domain=(X, indices(3))),
    OpSpec("take_along_axis0", lambda x, i, **kw: fnp.take_along_axis(x, i, **kw),
           lambda x, i, **kw: np.take_along_axis(x, i, **kw),
           shapes=(((3, 3), (2, 3)), ((3, 2), (5, 1))), dtypes=IDX_T, domain=(X, indices(3)),
           kwargs=({"axis": 0}, {"axis": -2})),
    OpSpec("take_along_axis_fill", lambda x, i: fnp.take_along_axis(x, i, 1, fill_value=5),
           lambda x, i: _np_take_along_axis_fill(x, i, 1, 5),
           shapes=(((3, 4), (3, 6)), ((2, 3, 2), (2, 4, 2))), dtypes=IDX_T,
           domain=(X, oob_indices(3))),
    # --- nonzero family (traced use needs a static size) ---
    OpSpec("nonzero_size", lambda x: fnp.nonzero(x, size=5, fill_value=-1),
           lambda x: _np_nonzero_padded(x, 5, -1), shapes=(((6,),), ((2, 3),), ((3, 1, 2),)),
           dtypes=(F32, I32), domain=uniform(-1, 1)),
    OpSpec("flatnonzero_size", lambda x: fnp.flatnonzero(x, size=3),
           lambda x: _np_nonzero_padded(x.ravel(), 3, 0)[0], shapes=(((6,),), ((2, 3),)),
           dtypes=(I32,), domain=uniform(-1, 1)),
    OpSpec("argwhere_size", lambda x: fnp.argwhere(x, size=7),
           lambda x: np.stack(_np_nonzero_padded(x, 7, 0), axis=1), shapes=(((2, 3),),),
           dtypes=(I32,), domain=uniform(-1, 1)),
    OpSpec("compress_size", lambda c, x: fnp.compress(c, x, axis=1, size=3, fill_value=9),
           lambda c, x: np.concatenate([np.compress(c, x, axis=1), np.full(
               (x.shape[0], 3), 9, x.dtype)], axis=1)[:, :3],
           shapes=(((4,), (2, 4)),), dtypes=((BOOL, F32),)),
    OpSpec("select", lambda a, b, x, y: fnp.select([a > 0, b > 0], [x, y], -1.5),
           lambda a, b, x, y: np.select([a > 0, b > 0], [x, y], -1.5),
           shapes=(((3,), (3,), (3,), (3,)), ((2, 3), (3,), (2, 1), ()))),
    OpSpec("unravel_index", lambda i: fnp.unravel_index(i, (3, 4)),
           lambda i: np.unravel_index(i, (3, 4)), shapes=(((5,),), ((2, 3),)),
           dtypes=(I32,), domain=uniform(0, 11)),
    OpSpec("ravel_multi_index_clip",
           lambda i, j: fnp.ravel_multi_index((i, j), (3, 4), mode="clip"),
           lambda i, j: np.ravel_multi_index((i, j), (3, 4), mode="clip"),
           shapes=(((5,), (5,)), ((2, 3), (3,))), dtypes=(I32,), domain=uniform(-2, 5)),
]
