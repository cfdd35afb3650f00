"""Index-expression helpers: ``mgrid``, ``ogrid``, ``r_``, ``c_`` (instances indexed with
slices, as numpy's and JAX's) and numpy's ``index_exp`` / ``s_``.

A slice ``start:stop:step`` stands for ``arange(start, stop, step)``, or for
``linspace(start, stop, n)`` when the step is the complex number ``nj``. Slice bounds must
be concrete (they fix the shapes).

>>> import functrax.numpy as fnp
>>> fnp.mgrid[0:2, 0:3].shape
(2, 2, 3)
>>> fnp.r_[fnp.array([1, 2]), 0, 4:6]
Array([1, 2, 0, 4, 5], dtype=int32)
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax.numpy import shape_ops
from functrax.numpy.creation import arange, array, linspace
from functrax.numpy.indexing import concrete_or_error
from functrax.numpy.promotion import promote_dtypes

__all__ = ["mgrid", "ogrid", "r_", "c_", "index_exp", "s_"]

index_exp = np.index_exp
s_ = np.s_


def _bound(v, what, op_name):
    if v is None:
        return None
    v = concrete_or_error(v, f"The error arose for the slice {what} of functrax.numpy."
                             f"{op_name}, which must be static (it fixes the shape). ")
    return v.item() if isinstance(v, np.ndarray) else v


def _grid_1d(s, op_name):
    """``arange`` for a real step, ``linspace`` for an imaginary one (``0:1:5j``)."""
    start = _bound(s.start, "start", op_name) or 0
    stop = _bound(s.stop, "stop", op_name)
    step = _bound(s.step, "step", op_name) or 1
    if np.iscomplex(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


class _Mgrid:
    """``mgrid[s0, s1, ...]``: the dense coordinate grids of the 1-D ranges, stacked
    (shape ``(len(key),) + lengths``).

    >>> import functrax.numpy as fnp
    >>> fnp.mgrid[0:2, 0:2]
    Array([[[0, 0],
            [1, 1]],
    <BLANKLINE>
           [[0, 1],
            [0, 1]]], dtype=int32)
    """

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "mgrid")
        grids = promote_dtypes(*[_grid_1d(k, "mgrid") for k in key])
        if not grids:
            return arange(0)
        return shape_ops.stack(shape_ops.meshgrid(*grids, indexing="ij"), 0)


class _Ogrid:
    """``ogrid[s0, s1, ...]``: open (sparse, broadcastable) coordinate grids, a list.

    >>> import functrax.numpy as fnp
    >>> [g.shape for g in fnp.ogrid[0:2, 0:3]]
    [(2, 1), (1, 3)]
    """

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "ogrid")
        grids = promote_dtypes(*[_grid_1d(k, "ogrid") for k in key])
        return list(shape_ops.meshgrid(*grids, indexing="ij", sparse=True))


def _directive(text, params):
    """``(axis, ndmin, trans1d, matrix)`` from a string directive (``"r"``, ``"c"`` or
    ``"axis,ndmin,trans1d"``)."""
    if text == "r":
        return params[:3] + [0]
    if text == "c":
        return params[:3] + [1]
    vec = text.split(",")
    vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
    try:
        return [int(v) for v in vec]
    except ValueError:
        raise ValueError(f"could not understand directive {text!r}") from None


class _AxisConcat:
    """Concatenation of slices (as ranges), scalars and arrays along an axis."""

    axis = 0
    ndmin = 1
    trans1d = -1
    op_name = ""

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if items and isinstance(items[0], str):
            params, items = _directive(items[0], params), items[1:]
        axis, ndmin, trans1d, matrix = params
        out = [self._item(it, ndmin, trans1d) for it in items]
        res = shape_ops.concatenate(out, axis=axis)
        if matrix != -1 and core.get_aval(res).ndim == 1:
            res = shape_ops.expand_dims(res, matrix)
        return res

    def _item(self, item, ndmin, trans1d):
        if isinstance(item, slice):
            obj, item_nd = _grid_1d(item, self.op_name), 0
        elif isinstance(item, str):
            raise ValueError(f"{self.op_name}: string directive must be placed at the "
                             "beginning")
        else:
            obj = array(item, copy=False)
            item_nd = core.get_aval(obj).ndim
        obj = array(obj, copy=False, ndmin=ndmin)
        if trans1d != -1 and ndmin - item_nd > 0:
            order = tuple(range(ndmin))
            shifts = ndmin - abs(ndmin + trans1d + 1) % ndmin
            obj = shape_ops.transpose(obj, order[shifts:] + order[:shifts])
        return obj

    def __len__(self):
        return 0


class RClass(_AxisConcat):
    """``r_[...]``: concatenate along the first axis (numpy's ``r_``; a leading string
    ``"axis,ndmin,trans1d"`` changes the axis and the promotion of 1-D items).

    >>> import functrax.numpy as fnp
    >>> fnp.r_["0,2", fnp.array([1, 2]), fnp.array([3, 4])]
    Array([[1, 2],
           [3, 4]], dtype=int32)
    """

    axis, ndmin, trans1d, op_name = 0, 1, -1, "r_"


class CClass(_AxisConcat):
    """``c_[...]``: stack 1-D items as columns (concatenate along the last axis of
    arrays promoted to 2-D).

    >>> import functrax.numpy as fnp
    >>> fnp.c_[fnp.array([1, 2]), fnp.array([3, 4])]
    Array([[1, 3],
           [2, 4]], dtype=int32)
    """

    axis, ndmin, trans1d, op_name = -1, 2, 0, "c_"


mgrid = _Mgrid()
ogrid = _Ogrid()
r_ = RClass()
c_ = CClass()
