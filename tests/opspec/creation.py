"""Op specs: array creation of functrax.numpy (numpy references).

Creation functions take no array arguments: ``shapes=NOARGS`` is one case with an empty
argument list, and everything else travels in ``kwargs`` (passed to both fn and ref).
"""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import BOOL, F32, I32, OpSpec

NOARGS = ((),)
I8, U8 = np.dtype(np.int8), np.dtype(np.uint8)


def _list_of(mod):
    """A nested list mixing (traced) arrays with Python scalars, turned into an array."""
    return lambda x, y, **kw: mod.array([[x, y], [y, 2]], **kw)


# JAX promotion of [[x, y], [y, 2]] (the Python int is weak; numpy's differs for int8)
_NESTED_DTYPE = {(F32, F32): F32, (I32, I32): I32, (I8, I8): I8, (BOOL, BOOL): I32,
                 (I32, F32): F32, (I8, U8): np.dtype(np.int16)}


def _arange_ref(start, stop=None, step=None, dtype=None):
    return np.arange(start, stop, step, dtype=dtype)


def _float_out(*dts):
    return np.dtype(np.float32)


SPECS = [
    OpSpec("array_object", fnp.array, np.array, shapes=NOARGS,
           kwargs=({"object": [[1, 2], [3, 4]]}, {"object": [1, 2.5]}, {"object": 3.0},
                   {"object": [True, False]}, {"object": [[True], [1]]}, {"object": []},
                   {"object": [[], []]}, {"object": [1.7, -2.2], "dtype": I32},
                   {"object": [1, 2], "dtype": F32}, {"object": (1, 0), "dtype": BOOL},
                   {"object": [1j, 2]}, {"object": 5, "ndmin": 2},
                   {"object": np.arange(4.0).reshape(2, 2)},
                   {"object": [np.float64(1.5), np.arange(2.0)[0]]})),
    OpSpec("array_nested_arrays", _list_of(fnp), _list_of(np), shapes=(((), ()),),
           dtypes=tuple(_NESTED_DTYPE), out_dtype=lambda a, b: _NESTED_DTYPE[(a, b)]),
    OpSpec("array_nested_arrays_dtype", _list_of(fnp), _list_of(np), shapes=(((), ()),),
           dtypes=(I8, (I32, F32)), kwargs=({"dtype": F32}, {"dtype": I32})),
    OpSpec("array_of_vectors", lambda x, y: fnp.array([x, y, [1, 2]]),
           lambda x, y: np.array([x, y, [1, 2]]), shapes=(((2,), (2,)),), dtypes=(F32, I32)),
    OpSpec("asarray", fnp.asarray, np.asarray, shapes=(((2, 3),),), dtypes=(F32, I32, BOOL),
           kwargs=({}, {"dtype": F32}, {"dtype": I32}, {"dtype": BOOL})),
    OpSpec("copy", fnp.copy, np.copy, shapes=(((2, 3),), ((),)), dtypes=(F32, I32, BOOL)),
    OpSpec("zeros", fnp.zeros, np.zeros, shapes=NOARGS,
           kwargs=({"shape": (2, 3)}, {"shape": 3, "dtype": I32}, {"shape": ()},
                   {"shape": (0, 2), "dtype": BOOL}, {"shape": [2], "dtype": U8}),
           primitives=("broadcast_in_dim",)),
    OpSpec("ones", fnp.ones, np.ones, shapes=NOARGS,
           kwargs=({"shape": (2, 3)}, {"shape": 4, "dtype": I32}, {"shape": (), "dtype": BOOL})),
    OpSpec("empty", fnp.empty, np.zeros, shapes=NOARGS,
           kwargs=({"shape": (2, 3)}, {"shape": 2, "dtype": I32})),
    OpSpec("full", fnp.full, np.full, shapes=NOARGS,
           kwargs=({"shape": (2, 3), "fill_value": 2}, {"shape": 3, "fill_value": 1.5},
                   {"shape": (2,), "fill_value": True}, {"shape": 2, "fill_value": 7, "dtype": F32},
                   {"shape": (2, 3), "fill_value": np.array([1.0, 2.0, 3.0], np.float32)},
                   {"shape": (), "fill_value": -3}, {"shape": 2, "fill_value": 2.9, "dtype": I32})),
    OpSpec("full_array_fill", lambda v, **kw: fnp.full((2, 3), v, **kw),
           lambda v, **kw: np.full((2, 3), v, **kw), shapes=(((3,),), ((),), ((2, 1),)),
           dtypes=(F32, I32), kwargs=({}, {"dtype": F32})),
    OpSpec("zeros_like", fnp.zeros_like, np.zeros_like, shapes=(((2, 3),), ((),)),
           dtypes=(F32, I32, BOOL), kwargs=({}, {"dtype": I32}, {"shape": (4,)})),
    OpSpec("ones_like", fnp.ones_like, np.ones_like, shapes=(((2, 3),),), dtypes=(F32, I32),
           kwargs=({}, {"dtype": BOOL}, {"shape": (1, 2)})),
    OpSpec("empty_like", fnp.empty_like, np.zeros_like, shapes=(((3,),),), dtypes=(F32, I32)),
    OpSpec("full_like", fnp.full_like, np.full_like, shapes=(((2, 3),),), dtypes=(F32, I32),
           kwargs=({"fill_value": 3}, {"fill_value": 2.5, "dtype": F32},
                   {"fill_value": np.array([1, 2, 3], np.int32)},
                   {"fill_value": 1, "shape": (3, 1)})),
    OpSpec("full_like_traced_fill", lambda a, v: fnp.full_like(a, v),
           lambda a, v: np.full_like(a, v), shapes=(((2, 3), ()), ((2,), (2,))),
           dtypes=(F32, (I32, F32))),
    OpSpec("arange", fnp.arange, _arange_ref, shapes=NOARGS,
           kwargs=({"start": 5}, {"start": 2, "stop": 7}, {"start": 1, "stop": 10, "step": 3},
                   {"start": 5, "stop": -3, "step": -2}, {"start": 3.5}, {"start": -2},
                   {"start": 0.0, "stop": 1.0, "step": 0.1}, {"start": 1.0, "stop": -1.0,
                                                               "step": -0.25},
                   {"start": 0, "stop": 2.5, "step": 0.5}, {"start": 4, "dtype": F32},
                   {"start": 1, "stop": 7, "step": 2, "dtype": F32}, {"start": 3, "stop": 1},
                   {"start": 0, "stop": 6}), primitives=("iota",)),
    OpSpec("linspace", fnp.linspace, np.linspace, shapes=NOARGS,
           kwargs=({"start": 0.0, "stop": 1.0, "num": 5}, {"start": 2, "stop": 3, "num": 4},
                   {"start": 0, "stop": 1, "num": 5, "endpoint": False},
                   {"start": -1, "stop": 1, "num": 1}, {"start": 0, "stop": 1, "num": 0},
                   {"start": 0, "stop": 1, "num": 2}, {"start": 1.0, "stop": -1.0},
                   {"start": 0, "stop": 8, "num": 5, "dtype": I32}),
           primitives=("iota",)),
    OpSpec("linspace_retstep", fnp.linspace, np.linspace, shapes=NOARGS,
           kwargs=({"start": 0.0, "stop": 1.0, "num": 5, "retstep": True},
                   {"start": 0, "stop": 2, "num": 4, "endpoint": False, "retstep": True},
                   {"start": 3, "stop": 5, "num": 1, "retstep": True},
                   {"start": 3, "stop": 5, "num": 1, "endpoint": False, "retstep": True},
                   {"start": 3, "stop": 5, "num": 0, "retstep": True})),
    OpSpec("linspace_arrays", lambda s, e, **kw: fnp.linspace(s, e, **kw),
           lambda s, e, **kw: np.linspace(s, e, **kw), shapes=(((3,), (3,)), ((2, 1), (3,))),
           dtypes=(F32, I32), out_dtype=_float_out,
           kwargs=({"num": 4}, {"num": 3, "axis": -1}, {"num": 5, "endpoint": False, "axis": 1},
                   {"num": 1}, {"num": 0, "axis": -1}, {"num": 3, "retstep": True})),
    OpSpec("eye", fnp.eye, np.eye, shapes=NOARGS,
           kwargs=({"N": 3}, {"N": 2, "M": 4}, {"N": 3, "k": 1}, {"N": 3, "M": 2, "k": -1},
                   {"N": 3, "k": 5}, {"N": 0}, {"N": 2, "dtype": I32}, {"N": 2, "dtype": BOOL}),
           primitives=("iota", "eq")),
    OpSpec("eye_traced_k", lambda k: fnp.eye(3, 4, k=k), lambda k: np.eye(3, 4, k=int(k)),
           shapes=(((),),), dtypes=(I32,), domain=lambda rng, s, d: np.asarray(
               rng.randint(-3, 4), d)),
    OpSpec("identity", fnp.identity, np.identity, shapes=NOARGS,
           kwargs=({"n": 3}, {"n": 1, "dtype": I32})),
    OpSpec("tri", fnp.tri, np.tri, shapes=NOARGS,
           kwargs=({"N": 3}, {"N": 2, "M": 4, "k": 1}, {"N": 4, "M": 3, "k": -2},
                   {"N": 3, "dtype": I32}), primitives=("ge",)),
    OpSpec("tril", fnp.tril, np.tril, shapes=(((3, 4),), ((2, 3, 3),)), dtypes=(F32, I32, BOOL),
           kwargs=({}, {"k": 1}, {"k": -1}, {"k": -5}), primitives=("select_n",)),
    OpSpec("triu", fnp.triu, np.triu, shapes=(((3, 4),), ((2, 3, 3),)), dtypes=(F32, I32, BOOL),
           kwargs=({}, {"k": 1}, {"k": -1}, {"k": 7})),
]
