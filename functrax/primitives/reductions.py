"""Reductions, index reductions, cumulative scans and sort."""
from __future__ import annotations

from functrax.primitives.define import (
    ANY, BOOL_OR_INT, NUMBER, Family, ShapedArray, check_axes, check_dtype, new_primitive, np,
)
import builtins
import operator
from functrax import core
from functrax import dtypes


def _reducer(name, accepted, keep_weak=True):
    p = new_primitive(name, family=Family.REDUCTION)

    def abstract_eval(x, *, axes):
        check_dtype(name, x.dtype, accepted)
        axes = check_axes(name, axes, x.ndim)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type and keep_weak)

    p.def_abstract_eval(abstract_eval)
    return p


reduce_sum_p = _reducer("reduce_sum", NUMBER + ("bool",))
reduce_prod_p = _reducer("reduce_prod", NUMBER + ("bool",))
reduce_max_p = _reducer("reduce_max", ANY)
reduce_min_p = _reducer("reduce_min", ANY)
reduce_and_p = _reducer("reduce_and", BOOL_OR_INT)
reduce_or_p = _reducer("reduce_or", BOOL_OR_INT)
reduce_xor_p = _reducer("reduce_xor", BOOL_OR_INT)


def _argreducer(name):
    p = new_primitive(name, family=Family.REDUCTION)

    def abstract_eval(x, *, axes, index_dtype):
        check_dtype(name, x.dtype, ANY)
        axes = check_axes(name, axes, x.ndim)
        if len(axes) != 1:
            raise ValueError(f"{name} takes exactly one axis, got axes={axes}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name}: cannot reduce over an empty axis {axes[0]} of shape "
                             f"{x.shape}")
        if np.dtype(index_dtype).kind not in "iu":
            raise TypeError(f"{name}: index_dtype must be an integer type, got {index_dtype}")
        shape = tuple(d for i, d in enumerate(x.shape) if i != axes[0])
        return ShapedArray(shape, index_dtype)

    p.def_abstract_eval(abstract_eval)
    return p


argmax_p = _argreducer("argmax")
argmin_p = _argreducer("argmin")


def _cumulative(name, accepted):
    p = new_primitive(name, family=Family.CUMULATIVE)

    def abstract_eval(x, *, axis, reverse=False):
        check_dtype(name, x.dtype, accepted)
        check_axes(name, (axis,), x.ndim, "axis")
        return x

    p.def_abstract_eval(abstract_eval)
    return p


cumsum_p = _cumulative("cumsum", NUMBER)
cumprod_p = _cumulative("cumprod", NUMBER)
cummax_p = _cumulative("cummax", NUMBER)
cummin_p = _cumulative("cummin", NUMBER)
cumlogsumexp_p = _cumulative("cumlogsumexp", ("floating",))

sort_p = new_primitive("sort", multiple_results=True, family=Family.SORT)


@sort_p.def_abstract_eval
def _sort_abstract(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort needs at least one operand")
    shapes = {o.shape for o in operands}
    if len(shapes) > 1:
        raise TypeError(f"sort: all operands must have the same shape, got "
                        f"{[o.shape for o in operands]}")
    check_axes("sort", (dimension,), operands[0].ndim, "dimension")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                         f"operands ({len(operands)})")
    return list(operands)


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---

def _reduce_op(prim):
    def op(operand, axes):
        return prim.bind(operand, axes=tuple(int(a) for a in axes))
    op.__name__ = prim.name
    op.__doc__ = f"``{prim.name}`` of ``operand`` over ``axes`` (binds the primitive)."
    return op


reduce_sum, reduce_prod, reduce_max, reduce_min = map(_reduce_op, (
    reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p))
reduce_and, reduce_or, reduce_xor = map(_reduce_op, (reduce_and_p, reduce_or_p, reduce_xor_p))


def _arg_reduce_op(prim):
    def op(operand, axis: int, index_dtype=np.int32):
        return prim.bind(operand, axes=(int(axis),),
                         index_dtype=dtypes.canonicalize_dtype(index_dtype))
    op.__name__ = prim.name
    op.__doc__ = f"The index of the ``{prim.name[3:]}`` of ``operand`` along ``axis``."
    return op


argmax, argmin = _arg_reduce_op(argmax_p), _arg_reduce_op(argmin_p)


def _cum(prim):
    def op(operand, axis: int = 0, reverse: bool = False):
        nd = core.get_aval(operand).ndim
        return prim.bind(operand, axis=int(axis) % builtins.max(nd, 1), reverse=bool(reverse))
    op.__name__ = prim.name
    return op


cumsum, cumprod, cummax, cummin, cumlogsumexp = builtins.map(_cum, (
    cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p))


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort one array, or a sequence of arrays by the first ``num_keys`` of them."""
    single = not isinstance(operand, (tuple, list))
    ops = [operand] if single else list(operand)
    nd = core.get_aval(ops[0]).ndim
    out = sort_p.bind(*ops, dimension=int(dimension) % builtins.max(nd, 1),
                      is_stable=bool(is_stable), num_keys=int(num_keys))
    return out[0] if single else tuple(out)


top_k_p = new_primitive("top_k", family=Family.SORT)
top_k_p.multiple_results = True


@top_k_p.def_abstract_eval
def _top_k_abstract(x, *, k):
    if not x.shape:
        raise TypeError("top_k operand must have >= 1 dimension, got ()")
    check_dtype("top_k", x.dtype, ANY)
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"k argument to top_k must be nonnegative and at most the size of "
                         f"the last axis {x.shape[-1]}, got {k}")
    shape = x.shape[:-1] + (k,)
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.dtype(np.int32))]


def top_k(operand, k, *, axis=-1):
    """The ``k`` largest elements along ``axis`` (the last by default), in descending order,
    and their indices (int32; the lower index first among equal values, NaN largest).

    >>> import functrax.numpy as fnp
    >>> top_k(fnp.array([1.0, 4.0, 3.0]), 2)
    (Array([4., 3.], dtype=float32), Array([1, 2], dtype=int32))
    """
    from functrax.primitives.shape import transpose
    k = operator.index(k)
    nd = core.get_aval(operand).ndim
    if nd and not -nd <= axis < nd:
        raise ValueError(f"top_k: axis {axis} is out of bounds for an operand of rank {nd}")
    ax = axis % builtins.max(nd, 1)
    if nd and ax != nd - 1:  # the primitive works on the last axis
        perm = tuple(i for i in range(nd) if i != ax) + (ax,)
        inv = tuple(int(i) for i in np.argsort(perm))
        vals, idx = top_k_p.bind(transpose(operand, perm), k=k)
        return transpose(vals, inv), transpose(idx, inv)
    return tuple(top_k_p.bind(operand, k=k))


__all__ = [
    "top_k_p", "top_k",
    "reduce_sum_p", "reduce_prod_p", "reduce_max_p", "reduce_min_p", "reduce_and_p",
    "reduce_or_p", "reduce_xor_p", "argmax_p", "argmin_p", "cumsum_p", "cumprod_p", "cummax_p",
    "cummin_p", "cumlogsumexp_p", "sort_p", "reduce_sum", "reduce_prod", "reduce_max",
    "reduce_min", "reduce_and", "reduce_or", "reduce_xor", "argmax", "argmin", "cumsum",
    "cumprod", "cummax", "cummin", "cumlogsumexp", "sort",
]
