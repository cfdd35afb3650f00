"""Op specs: editing and assembling arrays (delete, insert, place, put, put_along_axis,
fill_diagonal, choose, resize, diag, diagflat, mask_indices, block, concat, unstack,
permute_dims, rollaxis), bit packing, sort_complex and dtype conversions / predicates.

numpy's in-place functions (place, put, ...) are compared on a copy; functrax's take
``inplace=False`` and return the result, as JAX's.
"""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import BOOL, F32, I32, U8, OpSpec, uniform

C64 = np.dtype(np.complex64)


def unique_ints(n):
    def gen(rng, shape, dtype):
        return rng.permutation(n)[:int(np.prod(shape))].reshape(shape).astype(dtype)
    return gen


def rows_of_unique(n):
    """Per row (last axis), distinct indices in [0, n)."""
    def gen(rng, shape, dtype):
        rows = [rng.permutation(n)[:shape[-1]] for _ in range(int(np.prod(shape[:-1])))]
        return np.asarray(rows).reshape(shape).astype(dtype)
    return gen


def wrapped_unique(n):
    """Indices with distinct residues modulo ``n``, some out of bounds (for mode='wrap')."""
    def gen(rng, shape, dtype):
        k = int(np.prod(shape))
        return (rng.permutation(n)[:k] + n * rng.randint(-1, 2, k)).reshape(shape).astype(dtype)
    return gen


def cplx_maybe_real(rng, shape, dtype):
    re, im = rng.uniform(-2, 2, shape), rng.uniform(-2, 2, shape)
    return (re + 1j * np.where(rng.random(shape) < 0.5, 0, im)).astype(dtype)


def cplx_distinct(rng, shape, dtype):
    n = int(np.prod(shape))
    re = rng.permutation(n) / max(n, 1) * 4 - 2
    return (re + 1j * rng.uniform(-2, 2, n)).reshape(shape).astype(dtype)


def cplx_ties(rng, shape, dtype):
    return (rng.randint(-2, 3, shape) + 1j * rng.randint(-2, 3, shape)).astype(dtype)


def _inplace(np_fn):
    """numpy's in-place ``np_fn(out, *args)`` on a copy, returning the copy."""
    def ref(a, *args, **kw):
        out = np.array(a, copy=True)
        np_fn(out, *args, **kw)
        return out
    return ref


DEL_OBJ = np.array([0, 2])

SPECS = [
    # --- delete / insert ---
    OpSpec("delete", lambda a, **kw: fnp.delete(a, **kw), lambda a, **kw: np.delete(a, **kw),
           shapes=(((3, 4),), ((5,),)), dtypes=(F32, I32),
           kwargs=({"obj": 1}, {"obj": -1, "axis": 0}, {"obj": slice(0, 3, 2)},
                   {"obj": DEL_OBJ, "axis": -1})),
    OpSpec("delete_traced", lambda a, i: fnp.delete(a, i, axis=1, assume_unique_indices=True),
           lambda a, i: np.delete(a, i, axis=1), shapes=(((2, 5), (2,)),),
           dtypes=((F32, I32),), domain=(uniform(), unique_ints(5))),
    OpSpec("insert", lambda a, v, **kw: fnp.insert(a, values=v, **kw),
           lambda a, v, **kw: np.insert(a, values=v, **kw), shapes=(((3, 4), ()),),
           dtypes=(F32, (I32, F32)),
           kwargs=({"obj": 1}, {"obj": 2, "axis": 1}, {"obj": np.array([0, 2, 2]), "axis": 1},
                   {"obj": slice(1, 3), "axis": 0})),
    OpSpec("insert_traced", lambda a, i, v: fnp.insert(a, i, v, axis=1),
           lambda a, i, v: np.insert(a, i, v, axis=1), shapes=(((2, 4), (3,), (2, 3)),),
           dtypes=((F32, I32, F32),), domain=(uniform(), uniform(-4, 4), uniform())),
    # --- the in-place functions ---
    OpSpec("place", lambda a, m, v: fnp.place(a, m, v, inplace=False), _inplace(np.place),
           shapes=(((6,), (6,), (2,)), ((2, 3), (2, 3), (4,))), dtypes=((F32, BOOL, F32),)),
    OpSpec("put", lambda a, i, v, **kw: fnp.put(a, i, v, inplace=False, **kw),
           _inplace(np.put), shapes=(((2, 3), (3,), (3,)), ((6,), (2,), (1,))),
           dtypes=((F32, I32, F32),), domain=(uniform(), wrapped_unique(6), uniform()),
           kwargs=({"mode": "wrap"},)),
    OpSpec("put_clip", lambda a, i, v: fnp.put(a, i, v, inplace=False, mode="clip"),
           lambda a, i, v: _inplace(np.put)(a, i, v, mode="clip"),
           shapes=(((2, 3), (2,), (2,)),), dtypes=((F32, I32, F32),),
           domain=(uniform(), lambda rng, shape, dtype: np.array([-3, 9], dtype), uniform())),
    OpSpec("put_unique", lambda a, i, v: fnp.put(a, i, v, inplace=False), _inplace(np.put),
           shapes=(((2, 3), (4,), (4,)),), dtypes=((F32, I32, F32),),
           domain=(uniform(), unique_ints(6), uniform())),
    OpSpec("put_along_axis", lambda a, i, v, **kw: fnp.put_along_axis(a, i, v, inplace=False,
                                                                      **kw),
           _inplace(np.put_along_axis), shapes=(((3, 4), (3, 2), (3, 2)),),
           dtypes=((F32, I32, F32),), domain=(uniform(), rows_of_unique(4), uniform()),
           kwargs=({"axis": 1},)),
    OpSpec("fill_diagonal", lambda a, v: fnp.fill_diagonal(a, v, inplace=False),
           _inplace(np.fill_diagonal), shapes=(((3, 4), ()), ((3, 3), (3,)), ((4, 2), (2,)),
                                               ((2, 2, 2), ()))),
    # --- choose / resize / diagonals ---
    OpSpec("choose", lambda a, c0, c1, c2, **kw: fnp.choose(a, [c0, c1, c2], **kw),
           lambda a, c0, c1, c2, **kw: np.choose(a, [c0, c1, c2], **kw),
           shapes=(((5,), (5,), (5,), (5,)), ((2, 3), (3,), (2, 3), ())),
           dtypes=((I32, F32, F32, F32),), domain=(uniform(-4, 6), uniform(), uniform(),
                                                   uniform()),
           kwargs=({"mode": "clip"}, {"mode": "wrap"})),
    OpSpec("resize", lambda a, **kw: fnp.resize(a, **kw), lambda a, **kw: np.resize(a, **kw),
           shapes=(((5,),), ((2, 3),)), dtypes=(F32, I32),
           kwargs=({"new_shape": (3, 4)}, {"new_shape": 2}, {"new_shape": (0,)})),
    OpSpec("diag", fnp.diag, np.diag, shapes=(((4,),), ((3, 5),)), dtypes=(F32, I32),
           kwargs=({}, {"k": 1}, {"k": -2})),
    OpSpec("diagflat", fnp.diagflat, np.diagflat, shapes=(((2, 2),), ((3,),)),
           kwargs=({}, {"k": 2}, {"k": -1})),
    # traced (jit, vmap) it needs a static size, as JAX's: the exact count here
    OpSpec("mask_indices", lambda k, size: fnp.mask_indices(4, fnp.triu, k, size=size),
           lambda k, size: np.mask_indices(4, np.triu, k), shapes=((),),
           kwargs=({"k": 0, "size": 10}, {"k": 1, "size": 6}), out_dtype=lambda *_: I32),
    # --- assembling / splitting ---
    OpSpec("block", lambda a, b, c, d: fnp.block([[a, b], [c, d]]),
           lambda a, b, c, d: np.block([[a, b], [c, d]]),
           shapes=(((2, 2), (2, 3), (1, 2), (1, 3)), ((2,), (1,), (2,), (1,)))),
    OpSpec("concat", lambda a, b, **kw: fnp.concat([a, b], **kw),
           lambda a, b, **kw: np.concat([a, b], **kw), shapes=(((2, 3), (1, 3)),),
           dtypes=(F32, (I32, F32)), kwargs=({}, {"axis": None})),
    OpSpec("unstack", fnp.unstack, np.unstack, shapes=(((3, 2),), ((2, 1, 3),)),
           kwargs=({}, {"axis": -1})),
    OpSpec("permute_dims", fnp.permute_dims, np.permute_dims, shapes=(((2, 3, 4),),),
           kwargs=({"axes": (2, 0, 1)}, {"axes": (0, 2, 1)})),
    OpSpec("rollaxis", fnp.rollaxis, np.rollaxis, shapes=(((2, 3, 4),),),
           kwargs=({"axis": 2}, {"axis": 0, "start": 2}, {"axis": -1, "start": -2},
                   {"axis": 1, "start": 3})),
    # --- bits ---
    OpSpec("packbits", fnp.packbits, np.packbits, shapes=(((11,),), ((3, 10),)),
           dtypes=(I32, BOOL), domain=uniform(0, 1),
           kwargs=({}, {"axis": -1}, {"axis": 0, "bitorder": "little"})),
    OpSpec("unpackbits", fnp.unpackbits, np.unpackbits, shapes=(((3,),), ((2, 2),)),
           dtypes=(U8,), domain=uniform(0, 255),
           kwargs=({}, {"axis": -1}, {"count": 5}, {"count": 20, "bitorder": "little"})),
    # --- sort_complex, dtypes ---
    OpSpec("sort_complex", fnp.sort_complex, np.sort_complex, shapes=(((6,),), ((2, 5),)),
           dtypes=(C64,), domain=cplx_distinct),
    OpSpec("sort_complex_ties", fnp.sort_complex, np.sort_complex, shapes=(((8,),),),
           dtypes=(C64,), domain=cplx_ties),
    OpSpec("sort_complex_real", fnp.sort_complex, np.sort_complex, shapes=(((6,),),),
           dtypes=(F32, I32), out_dtype=lambda *_: C64),
    OpSpec("astype", lambda x: fnp.astype(x, np.float32), lambda x: x.astype(np.float32),
           shapes=(((4,),),), dtypes=(I32, BOOL)),
    OpSpec("astype_complex", lambda x: fnp.astype(x, np.complex64),
           lambda x: x.astype(np.complex64), shapes=(((2, 3),),)),
    OpSpec("iscomplex", fnp.iscomplex, np.iscomplex, shapes=(((6,),),),
           dtypes=(C64, F32), domain=cplx_maybe_real),
    OpSpec("isreal", fnp.isreal, np.isreal, shapes=(((6,),),), dtypes=(C64, I32),
           domain=cplx_maybe_real),
]
