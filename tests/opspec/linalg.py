"""Op specs: products, contractions, einsum and norms (functrax.numpy and functrax.numpy.linalg).

Every name starts with ``linalg_`` (select them with ``-k linalg_``).
"""
import numpy as np

import functrax.numpy as fnp
from tests.opspec.spec import F32, I8, I32, OpSpec

DG = ("dot_general",)
NUM = (F32, I32)


def _vecdot_ref(a, b, axis=-1):
    return np.sum(np.moveaxis(np.conj(a), axis, -1) * np.moveaxis(b, axis, -1), axis=-1)


def _einsum_name(subscripts):
    s = subscripts.replace("->", "_to_").replace("...", "ell").replace(",", "_")
    return "linalg_einsum_" + (s or "scalar")


# (subscripts, operand shapes): several shape sets per string where useful
EINSUM_TABLE = [
    ("ii->i", (((3, 3),), ((1, 1),))),
    ("ii", (((3, 3),),)),
    ("ij,jk->ik", (((2, 3), (3, 4)),)),
    ("bij,bjk->bik", (((2, 2, 3), (2, 3, 4)),)),
    ("...ij,...jk", (((2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4)), ((2, 1, 2, 3), (3, 3, 4)))),
    ("i,i", (((3,), (3,)),)),
    ("i,j->ij", (((2,), (3,)),)),
    ("ijk->kji", (((2, 3, 4),),)),
    ("ij->", (((2, 3),),)),
    ("ij", (((2, 3),),)),
    ("ji", (((2, 3),),)),
    ("ij,jk,kl->il", (((2, 3), (3, 4), (4, 2)),)),
    ("iij->ji", (((3, 3, 2),),)),
    ("iji->j", (((2, 3, 2),),)),
    ("ij,ij->ij", (((2, 3), (2, 3)), ((1, 3), (2, 3)))),
    ("ij,ij->", (((2, 3), (2, 3)),)),
    ("ij,j->i", (((2, 3), (3,)),)),
    ("i,i->", (((3,), (3,)), ((1,), (3,)))),
    ("bi,bj->bij", (((2, 3), (2, 4)),)),
    ("ab,bc,cd,de->ae", (((2, 3), (3, 2), (2, 4), (4, 2)),)),
    ("...,...->...", (((2, 3), (3,)), ((), (2,)))),
    ("i...->...", (((3, 2, 2),),)),
    (",ij->ij", (((), (2, 3)),)),
    ("Ab,bA->A", (((2, 3), (3, 2)),)),
]


def _einsum_spec(subscripts, shapes):
    return OpSpec(_einsum_name(subscripts),
                  lambda *xs, _s=subscripts: fnp.einsum(_s, *xs),
                  lambda *xs, _s=subscripts: np.einsum(_s, *xs),
                  shapes=shapes, dtypes=NUM, primitives=DG)


SPECS = [
    OpSpec("linalg_dot", fnp.dot, np.dot,
           shapes=(((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                   ((2, 2, 3), (4, 3, 2)), ((2, 3), (2, 3, 4)), ((), (2, 3)), ((2, 3), ()),
                   ((), ())),
           dtypes=(F32, I32, (F32, I32)), primitives=DG),
    OpSpec("linalg_matmul", fnp.matmul, np.matmul,
           shapes=(((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                   ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((2, 1, 2, 3), (4, 3, 2)),
                   ((1, 2, 3), (5, 3, 4)), ((3,), (2, 3, 4)), ((2, 2, 3), (3,)),
                   ((2, 1, 2, 3), (1, 3, 3, 2)), ((1, 1, 2, 3), (1, 3, 2))),
           dtypes=(F32, I32, (I32, F32)), primitives=DG),
    OpSpec("linalg_matmul_operator", lambda a, b: a @ b, np.matmul,
           shapes=(((2, 3), (3, 4)), ((4, 1, 2, 3), (3, 3, 2)), ((3,), (3,))), dtypes=NUM),
    OpSpec("linalg_rmatmul_method", lambda a, b: b.__rmatmul__(a), np.matmul,
           shapes=(((2, 3), (3, 4)), ((3,), (2, 3, 2))), dtypes=NUM),
    OpSpec("linalg_vdot", fnp.vdot, np.vdot,
           shapes=(((3,), (3,)), ((2, 3), (6,)), ((2, 2), (2, 2))), dtypes=NUM, primitives=DG),
    OpSpec("linalg_vecdot", fnp.vecdot, _vecdot_ref,
           shapes=(((3,), (3,)), ((2, 3), (3,)), ((4, 1, 3), (2, 3))), dtypes=NUM, primitives=DG),
    OpSpec("linalg_vecdot_axis", fnp.vecdot, _vecdot_ref,
           shapes=(((3, 2), (3, 2)), ((3, 2), (3, 1))), dtypes=NUM, kwargs=({"axis": 0},)),
    OpSpec("linalg_inner", fnp.inner, np.inner,
           shapes=(((3,), (3,)), ((2, 3), (4, 3)), ((2, 2, 3), (3,)), ((), (2, 3)), ((2, 3), ())),
           dtypes=NUM, primitives=DG),
    OpSpec("linalg_outer", fnp.outer, np.outer,
           shapes=(((3,), (4,)), ((2, 2), (3,)), ((), (2,))), dtypes=(F32, I32, (I32, F32))),
    OpSpec("linalg_tensordot", fnp.tensordot, np.tensordot,
           shapes=(((2, 3, 4), (3, 4, 5)), ((3, 4), (3, 4))), dtypes=NUM,
           kwargs=({}, {"axes": 2}), primitives=DG),
    OpSpec("linalg_tensordot_int_axes", fnp.tensordot, np.tensordot,
           shapes=(((2, 3), (3, 4)),), dtypes=NUM, kwargs=({"axes": 1}, {"axes": 0})),
    OpSpec("linalg_tensordot_pairs", fnp.tensordot, np.tensordot,
           shapes=(((2, 3, 4), (4, 3, 5)),), dtypes=NUM,
           kwargs=({"axes": ((1, 2), (1, 0))}, {"axes": ([2], [0])}, {"axes": (-1, 0)},
                   {"axes": [[1, -1], [-2, 0]]})),
    OpSpec("linalg_kron", fnp.kron, np.kron,
           shapes=(((2, 3), (3, 2)), ((2,), (3,)), ((2, 3), (2,)), ((), (2,)), ((2, 1, 2), (2, 3))),
           dtypes=(F32, I32, (I32, F32))),
    OpSpec("linalg_trace", fnp.trace, np.trace,
           shapes=(((3, 3),), ((3, 4),), ((4, 2),)), dtypes=(F32, I32, I8),
           kwargs=({}, {"offset": 1}, {"offset": -1}, {"offset": 1, "axis1": 1, "axis2": 0},
                   {"offset": 7}, {"axis1": -1, "axis2": -2})),
    OpSpec("linalg_trace_3d", fnp.trace, np.trace, shapes=(((2, 3, 4),),), dtypes=NUM,
           kwargs=({}, {"axis1": 2, "axis2": 0, "offset": -1}, {"axis1": 1, "axis2": 2},
                   {"dtype": np.float32})),
    OpSpec("linalg_diagonal", fnp.diagonal, np.diagonal,
           shapes=(((3, 3),), ((3, 4),), ((4, 2),), ((1, 1),)), dtypes=NUM,
           kwargs=({}, {"offset": 1}, {"offset": -2}, {"offset": 9}, {"axis1": 1, "axis2": 0})),
    OpSpec("linalg_diagonal_3d", fnp.diagonal, np.diagonal, shapes=(((2, 3, 4),),), dtypes=NUM,
           kwargs=({}, {"axis1": 2, "axis2": 0, "offset": 1}, {"axis1": -1, "axis2": 1},
                   {"axis1": 0, "axis2": 2, "offset": -1})),
    OpSpec("linalg_cross", fnp.cross, np.cross,
           shapes=(((3,), (3,)), ((4, 3), (3,)), ((2, 1, 3), (4, 3))), dtypes=NUM),
    OpSpec("linalg_cross_axes", fnp.cross, np.cross, shapes=(((3, 4), (3, 4)), ((3, 4), (3, 1))),
           dtypes=NUM, kwargs=({"axisa": 0, "axisb": 0}, {"axis": 0},
                               {"axisa": 0, "axisb": 0, "axisc": 0})),
    OpSpec("linalg_matrix_transpose", fnp.matrix_transpose, lambda x: np.swapaxes(x, -1, -2),
           shapes=(((2, 3),), ((4, 2, 3),)), dtypes=NUM),
    # --- functrax.numpy.linalg ---
    OpSpec("linalg_norm", fnp.linalg.norm, np.linalg.norm, shapes=(((4,),), ((2, 3),)),
           dtypes=NUM, rtol=1e-5,
           kwargs=({}, {"keepdims": True}, {"axis": 0}, {"axis": -1, "ord": 1},
                   {"axis": -1, "ord": np.inf}, {"axis": -1, "ord": -np.inf},
                   {"axis": -1, "ord": 0}, {"axis": -1, "ord": 3}, {"axis": -1, "ord": 0.5},
                   {"axis": -1, "ord": 2, "keepdims": True})),
    OpSpec("linalg_norm_negative_p", fnp.linalg.norm, np.linalg.norm, shapes=(((4,),), ((2, 3),)),
           kwargs=({"axis": -1, "ord": -2}, {"axis": 0, "ord": -1.5})),
    OpSpec("linalg_norm_matrix", fnp.linalg.norm, np.linalg.norm,
           shapes=(((3, 4),), ((2, 3, 4),)), dtypes=NUM,
           kwargs=tuple({"ord": o, "axis": (-2, -1)} for o in (None, "fro", 1, -1, np.inf,
                                                               -np.inf))
           + ({"ord": 1, "axis": (-1, -2), "keepdims": True},
              {"ord": np.inf, "axis": (0, -1)}, {"ord": -1, "axis": (-1, 0)},
              {"ord": -np.inf, "axis": (-1, -2), "keepdims": True})),
    OpSpec("linalg_norm_2d_default_axes", fnp.linalg.norm, np.linalg.norm,
           shapes=(((3, 4),),), dtypes=NUM,
           kwargs=({"ord": 1}, {"ord": "fro"}, {"ord": -np.inf, "keepdims": True})),
    OpSpec("linalg_norm_flat", fnp.linalg.norm, np.linalg.norm, shapes=(((2, 3, 2),), ((),)),
           dtypes=NUM, kwargs=({}, {"keepdims": True})),
    OpSpec("linalg_vector_norm", fnp.linalg.vector_norm, np.linalg.vector_norm,
           shapes=(((2, 3),), ((4,),)), dtypes=NUM, reduces=True,
           kwargs=({}, {"ord": 1}, {"axis": 0, "ord": np.inf}, {"axis": (0,), "ord": 3},
                   {"ord": 0, "keepdims": True})),
    OpSpec("linalg_matrix_norm", fnp.linalg.matrix_norm, np.linalg.matrix_norm,
           shapes=(((3, 4),), ((2, 3, 4),)), dtypes=NUM,
           kwargs=({}, {"ord": 1}, {"ord": -np.inf, "keepdims": True})),
    OpSpec("linalg_la_matmul", fnp.linalg.matmul, np.linalg.matmul,
           shapes=(((2, 3), (3, 4)), ((3,), (2, 3, 2))), dtypes=NUM, primitives=DG),
    OpSpec("linalg_la_outer", fnp.linalg.outer, np.linalg.outer, shapes=(((3,), (2,)),),
           dtypes=NUM),
    OpSpec("linalg_la_trace", fnp.linalg.trace, np.linalg.trace,
           shapes=(((3, 3),), ((2, 3, 4),)), dtypes=NUM, kwargs=({}, {"offset": 1})),
    OpSpec("linalg_la_diagonal", fnp.linalg.diagonal, np.linalg.diagonal,
           shapes=(((3, 3),), ((2, 3, 4),)), dtypes=NUM, kwargs=({}, {"offset": -1})),
    OpSpec("linalg_la_vecdot", fnp.linalg.vecdot, _vecdot_ref,
           shapes=(((2, 3), (3,)),), dtypes=NUM),
    OpSpec("linalg_la_tensordot", fnp.linalg.tensordot, np.linalg.tensordot,
           shapes=(((2, 3, 4), (4, 3, 2)), ((2, 3), (3, 4))), dtypes=NUM,
           kwargs=({"axes": 1},)),
    OpSpec("linalg_la_cross", fnp.linalg.cross, np.linalg.cross,
           shapes=(((2, 3), (3,)), ((4, 3), (4, 3))), dtypes=NUM),
    OpSpec("linalg_la_matrix_transpose", fnp.linalg.matrix_transpose,
           np.linalg.matrix_transpose, shapes=(((2, 3),), ((4, 2, 3),)), dtypes=NUM),
    OpSpec("linalg_multi_dot", lambda *xs: fnp.linalg.multi_dot(xs),
           lambda *xs: np.linalg.multi_dot(xs),
           shapes=(((3,), (3, 4), (4, 2)), ((2, 3), (3, 4), (4,)), ((2, 3), (3, 2))), dtypes=NUM),
    OpSpec("linalg_matrix_power", fnp.linalg.matrix_power, np.linalg.matrix_power,
           shapes=(((3, 3),), ((2, 2, 2),)), dtypes=NUM, atol=1e-4, rtol=1e-4,
           kwargs=({"n": 0}, {"n": 1}, {"n": 2}, {"n": 5})),
] + [_einsum_spec(s, shapes) for s, shapes in EINSUM_TABLE]
