"""Op specs: shape manipulation of functrax.numpy (numpy references)."""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import BOOL, F32, I32, OpSpec

ALL = (F32, I32)
M23, M234 = ((2, 3),), ((2, 3, 4),)


def _seq(fn):
    """A function of a sequence of arrays, called with the arrays as positional arguments."""
    return lambda *xs, **kw: fn(list(xs), **kw)


def _repeat_ref(a, repeats, axis=None, total_repeat_length=None):
    """np.repeat, then truncated / padded with its final value to total_repeat_length."""
    r = np.repeat(a, repeats, axis)
    if total_repeat_length is None:
        return r
    ax = 0 if axis is None else axis
    idx = np.minimum(np.arange(total_repeat_length), r.shape[ax] - 1)
    return np.take(r, idx, axis=ax)


def _queries(mod):
    """ndim, size and shape of an argument packed into one int array."""
    def fn(a, **kw):
        by_axis = [mod.size(a, axis=kw["axis"])] if "axis" in kw else []
        return mod.asarray([mod.ndim(a), mod.size(a)] + by_axis + list(mod.shape(a))
                           + list(mod.broadcast_shapes(mod.shape(a), (1,))), dtype=np.int32)
    return fn


SPECS = [
    OpSpec("reshape", fnp.reshape, np.reshape, shapes=(M23, ((6,),)), dtypes=ALL + (BOOL,),
           kwargs=({"shape": (3, 2)}, {"shape": (-1,)}, {"shape": (1, 6, 1)},
                   {"shape": (3, -1), "order": "F"}), primitives=("reshape", "transpose")),
    OpSpec("ravel", fnp.ravel, np.ravel, shapes=(M234, ((),)), dtypes=ALL,
           kwargs=({}, {"order": "F"}), primitives=("reshape",)),
    OpSpec("transpose", fnp.transpose, np.transpose, shapes=(M234,), dtypes=ALL,
           kwargs=({}, {"axes": (1, 0, 2)}, {"axes": (-1, 0, 1)}), primitives=("transpose",)),
    OpSpec("moveaxis", fnp.moveaxis, np.moveaxis, shapes=(M234,),
           kwargs=({"source": 0, "destination": -1}, {"source": (0, 1), "destination": (2, 0)}),
           primitives=("transpose",)),
    OpSpec("swapaxes", fnp.swapaxes, np.swapaxes, shapes=(M234,),
           kwargs=({"axis1": 0, "axis2": 2}, {"axis1": -1, "axis2": 1}),
           primitives=("transpose",)),
    OpSpec("expand_dims", fnp.expand_dims, np.expand_dims, shapes=(M23, ((),)),
           kwargs=({"axis": 0}, {"axis": -1}, {"axis": (0, -1)}), primitives=("expand_dims",)),
    OpSpec("squeeze", fnp.squeeze, np.squeeze, shapes=(((1, 3, 1),),),
           kwargs=({}, {"axis": 0}, {"axis": (0, -1)}), primitives=("squeeze",)),
    OpSpec("broadcast_to", fnp.broadcast_to, np.broadcast_to, shapes=(((3,),), ((2, 1),)),
           dtypes=ALL, kwargs=({"shape": (2, 3)}, {"shape": (4, 2, 3)}),
           primitives=("broadcast_in_dim",)),
    OpSpec("broadcast_arrays", fnp.broadcast_arrays, np.broadcast_arrays,
           shapes=(((3,), (2, 1)), ((), (2,))), dtypes=(F32, (F32, I32)), broadcasting=True,
           primitives=("broadcast_in_dim",)),
    OpSpec("concatenate", _seq(fnp.concatenate), _seq(np.concatenate),
           shapes=(((2, 3), (1, 3)), ((2, 3), (2, 3), (2, 3))), dtypes=(F32, I32, (F32, I32)),
           kwargs=({}, {"axis": None}), primitives=("concatenate",)),
    OpSpec("concatenate_axis1", _seq(fnp.concatenate), _seq(np.concatenate),
           shapes=(((2, 3), (2, 1)),), dtypes=(F32, (I32, F32)), kwargs=({"axis": 1},
                                                                        {"axis": -1})),
    OpSpec("stack", _seq(fnp.stack), _seq(np.stack), shapes=(((2, 3), (2, 3)), ((), ())),
           dtypes=(F32, (I32, F32)), kwargs=({}, {"axis": -1}), primitives=("concatenate",)),
    OpSpec("hstack", _seq(fnp.hstack), _seq(np.hstack),
           shapes=(((2,), (3,)), ((2, 3), (2, 1)), ((), ())), dtypes=ALL),
    OpSpec("vstack", _seq(fnp.vstack), _seq(np.vstack),
           shapes=(((3,), (3,)), ((2, 3), (1, 3)), ((), ()))),
    OpSpec("dstack", _seq(fnp.dstack), _seq(np.dstack),
           shapes=(((3,), (3,)), ((2, 3), (2, 3)), ((2, 3, 1), (2, 3, 2)))),
    OpSpec("column_stack", _seq(fnp.column_stack), _seq(np.column_stack),
           shapes=(((3,), (3,)), ((3, 2), (3,)), ((), ()))),
    OpSpec("append", fnp.append, np.append, shapes=(((2, 3), (2, 3)), ((2,), ())),
           dtypes=(F32, (I32, F32)), kwargs=({},)),
    OpSpec("append_axis", fnp.append, np.append, shapes=(((2, 3), (1, 3)),),
           kwargs=({"axis": 0},)),
    OpSpec("split", fnp.split, np.split, shapes=(((6, 2),),), dtypes=ALL,
           kwargs=({"indices_or_sections": 3}, {"indices_or_sections": [1, 4]},
                   {"indices_or_sections": [-2]}, {"indices_or_sections": [4, 2, 9]},
                   {"indices_or_sections": []}, {"indices_or_sections": 2, "axis": 1}),
           primitives=("slice",)),
    OpSpec("array_split", fnp.array_split, np.array_split, shapes=(((7, 2),),),
           kwargs=({"indices_or_sections": 3}, {"indices_or_sections": 9},
                   {"indices_or_sections": np.array([2, 5])})),
    OpSpec("hsplit", fnp.hsplit, np.hsplit, shapes=(((2, 4),), ((4,),)),
           kwargs=({"indices_or_sections": 2}, {"indices_or_sections": [1]})),
    OpSpec("vsplit", fnp.vsplit, np.vsplit, shapes=(((4, 2),),),
           kwargs=({"indices_or_sections": 2},)),
    OpSpec("dsplit", fnp.dsplit, np.dsplit, shapes=(((1, 2, 4),),),
           kwargs=({"indices_or_sections": [1, 3]},)),
    OpSpec("tile", fnp.tile, np.tile, shapes=(((3,),), M23, ((),)), dtypes=ALL,
           kwargs=({"reps": 2}, {"reps": (2, 1)}, {"reps": (2, 1, 3)}, {"reps": 0}),
           primitives=("broadcast_in_dim", "reshape")),
    OpSpec("repeat", fnp.repeat, np.repeat, shapes=(((3, 2),),), dtypes=ALL + (BOOL,),
           kwargs=({"repeats": 2}, {"repeats": 2, "axis": 1}, {"repeats": [1, 0, 2], "axis": 0},
                   {"repeats": np.array([3, 1]), "axis": -1}, {"repeats": [2] * 6},
                   {"repeats": 0, "axis": 0}), primitives=("gather",)),
    OpSpec("repeat_total_length", fnp.repeat, _repeat_ref, shapes=(((3, 2),), ((4,),)),
           kwargs=({"repeats": 2, "axis": 0, "total_repeat_length": 4},
                   {"repeats": 3, "total_repeat_length": 5},
                   {"repeats": 1, "axis": 0, "total_repeat_length": 2})),
    OpSpec("repeat_total_length_list", fnp.repeat, _repeat_ref, shapes=(((3, 2),),),
           kwargs=({"repeats": [1, 2, 1], "axis": 0, "total_repeat_length": 6},
                   {"repeats": [2, 1, 2], "axis": 0, "total_repeat_length": 3})),
    OpSpec("flip", fnp.flip, np.flip, shapes=(M234, ((),)), dtypes=ALL,
           kwargs=({},)),
    OpSpec("flip_axis", fnp.flip, np.flip, shapes=(M234,),
           kwargs=({"axis": 0}, {"axis": (0, -1)}), primitives=("rev",)),
    OpSpec("fliplr", fnp.fliplr, np.fliplr, shapes=(M23, M234)),
    OpSpec("flipud", fnp.flipud, np.flipud, shapes=(((3,),), M23)),
    OpSpec("roll", fnp.roll, np.roll, shapes=(M234,), dtypes=ALL,
           kwargs=({"shift": 1}, {"shift": -7}, {"shift": 2, "axis": 1},
                   {"shift": (1, -2), "axis": (0, 2)}, {"shift": (1, 2), "axis": 1},
                   {"shift": 3, "axis": (0, 1)}), primitives=("concatenate", "slice")),
    OpSpec("roll_traced_shift", lambda a, s, **kw: fnp.roll(a, s, **kw),
           lambda a, s, **kw: np.roll(a, int(s), **kw), shapes=(((5, 3), ()),),
           dtypes=((F32, I32),), domain=(lambda rng, s, d: rng.randn(*s).astype(d),
                                         lambda rng, s, d: np.asarray(rng.randint(-9, 9), d)),
           kwargs=({"axis": 0}, {"axis": -1}, {}), primitives=("dynamic_slice",)),
    OpSpec("rot90", fnp.rot90, np.rot90, shapes=(M23, M234), dtypes=ALL,
           kwargs=({}, {"k": 2}, {"k": 3}, {"k": -1}, {"k": 4}, {"k": 1, "axes": (1, 0)}),
           primitives=("rev", "transpose")),
    OpSpec("rot90_3d", fnp.rot90, np.rot90, shapes=(M234,),
           kwargs=({"axes": (1, 2)}, {"k": 3, "axes": (2, 0)})),
    OpSpec("pad_constant", fnp.pad, np.pad, shapes=(M23, ((3,),)), dtypes=ALL + (BOOL,),
           kwargs=({"pad_width": 1}, {"pad_width": (1, 2)}, {"pad_width": (0, 3)},
                   {"pad_width": ((2, 1),)}), primitives=("pad",)),
    OpSpec("pad_constant_values", fnp.pad, np.pad, shapes=(M23,), dtypes=ALL,
           kwargs=({"pad_width": ((1, 0), (2, 1)), "constant_values": 7},
                   {"pad_width": 1, "constant_values": (-1, 5)},
                   {"pad_width": ((1, 2), (1, 1)), "constant_values": ((1, 2), (3, 4))},
                   {"pad_width": 2, "constant_values": 2.5},
                   {"pad_width": 0})),
    OpSpec("pad_edge", fnp.pad, np.pad, shapes=(M23, ((1,),)), dtypes=ALL,
           kwargs=({"pad_width": 2, "mode": "edge"}, {"pad_width": (0, 3), "mode": "edge"})),
    OpSpec("pad_reflect", fnp.pad, np.pad, shapes=(((3,),), ((4, 1),), ((2, 3),)), dtypes=ALL,
           kwargs=({"pad_width": 2, "mode": "reflect"}, {"pad_width": (7, 5), "mode": "reflect"},
                   {"pad_width": (4, 1), "mode": "reflect", "reflect_type": "odd"})),
    OpSpec("pad_symmetric", fnp.pad, np.pad, shapes=(((3,),), ((2, 3),)), dtypes=ALL,
           kwargs=({"pad_width": 2, "mode": "symmetric"},
                   {"pad_width": (7, 4), "mode": "symmetric"},
                   {"pad_width": (5, 2), "mode": "symmetric", "reflect_type": "odd"})),
    OpSpec("pad_wrap", fnp.pad, np.pad, shapes=(((3,),), ((2, 3),)), dtypes=ALL,
           kwargs=({"pad_width": 1, "mode": "wrap"}, {"pad_width": (7, 4), "mode": "wrap"},
                   {"pad_width": (3, 0), "mode": "wrap"})),
    # statistic modes: the whole axis by default, stat_length clamped to the axis, per-axis
    # (before, after) pairs; ints round half to even (numpy and JAX agree)
    OpSpec("pad_maximum", fnp.pad, np.pad, shapes=(M23, ((4,),)), dtypes=ALL,
           kwargs=({"pad_width": 2, "mode": "maximum"},
                   {"pad_width": (1, 3), "mode": "maximum", "stat_length": 2},
                   {"pad_width": ((1, 2),), "mode": "maximum", "stat_length": ((1, 9),)}),
           primitives=("reduce_max", "concatenate")),
    OpSpec("pad_minimum", fnp.pad, np.pad, shapes=(M23, ((4,),)), dtypes=ALL,
           kwargs=({"pad_width": (2, 1), "mode": "minimum"},
                   {"pad_width": 1, "mode": "minimum", "stat_length": (3, 1)}),
           primitives=("reduce_min",)),
    OpSpec("pad_mean", fnp.pad, np.pad, shapes=(M23, ((5,),)), dtypes=ALL,
           kwargs=({"pad_width": 2, "mode": "mean"},
                   {"pad_width": (0, 3), "mode": "mean", "stat_length": 2},
                   {"pad_width": ((2, 1),), "mode": "mean", "stat_length": (3, 2)})),
    OpSpec("pad_mean_per_axis", fnp.pad, np.pad, shapes=(((3, 4),),), dtypes=ALL,
           kwargs=({"pad_width": ((1, 0), (2, 3)), "mode": "mean",
                    "stat_length": ((2, 1), (3, 4))},)),
    OpSpec("pad_median", fnp.pad, np.pad, shapes=(M23, ((5,),)), dtypes=ALL,
           kwargs=({"pad_width": (1, 2), "mode": "median"},
                   {"pad_width": 2, "mode": "median", "stat_length": (2, 3)}),
           primitives=("sort",)),
    # linear_ramp: widths 1, 2, 4 keep the int ramps exact in float32 (JAX computes in float32,
    # numpy in float64; both floor), so ints compare exactly
    OpSpec("pad_linear_ramp", fnp.pad, np.pad, shapes=(M23, ((3,),)), dtypes=ALL,
           kwargs=({"pad_width": 2, "mode": "linear_ramp"},
                   {"pad_width": (4, 1), "mode": "linear_ramp", "end_values": (-2, 3)},
                   {"pad_width": ((1, 2),), "mode": "linear_ramp", "end_values": 1.5})),
    OpSpec("pad_linear_ramp_per_axis", fnp.pad, np.pad, shapes=(M23,), dtypes=ALL,
           kwargs=({"pad_width": ((2, 0), (1, 4)), "mode": "linear_ramp",
                    "end_values": ((5, -1), (0, 2))},)),
    OpSpec("meshgrid", fnp.meshgrid, np.meshgrid, shapes=(((3,), (2,)), ((2,), (3,), (4,))),
           dtypes=ALL,
           kwargs=({}, {"indexing": "ij"}, {"sparse": True}, {"sparse": True, "indexing": "ij"}),
           primitives=("broadcast_in_dim",)),
    OpSpec("meshgrid_1", fnp.meshgrid, np.meshgrid, shapes=(((3,),), ((2,), (3,))),
           dtypes=(I32,), kwargs=({}, {"indexing": "ij"})),
    OpSpec("atleast_1d", fnp.atleast_1d, np.atleast_1d, shapes=(((),), ((3,),), M23, ((), (2,))),
           dtypes=ALL),
    OpSpec("atleast_2d", fnp.atleast_2d, np.atleast_2d, shapes=(((),), ((3,),), M234,
                                                              ((), (2,)))),
    OpSpec("atleast_3d", fnp.atleast_3d, np.atleast_3d,
           shapes=(((),), ((3,),), M23, ((2, 3, 4, 1),), ((3,), (2, 3)))),
    OpSpec("shape_queries", _queries(fnp), _queries(np), shapes=(M234, ((),), ((3,),)),
           dtypes=ALL),
    OpSpec("shape_queries_axis", _queries(fnp), _queries(np), shapes=(M234,),
           kwargs=({"axis": -1}, {"axis": (0, -1)})),
]
