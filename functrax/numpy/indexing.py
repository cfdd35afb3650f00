"""Indexing of ``functrax.numpy``: ``x[idx]``, ``x.at[idx]``, take, take_along_axis (as jax.numpy).

(nonzero, argwhere, compress, select, ix_, indices, ... live in ``index_tricks.py`` and are
re-exported from here.)

An index expression is parsed once (:func:`_parse_index`: Ellipsis expanded, concrete boolean
masks turned into integer arrays, numpy's rule for where advanced dimensions go decided), then

* indexing with only ints, slices, ``None`` and ``...`` becomes static ``slice`` (with
  strides) + ``rev`` + ``squeeze`` + ``expand_dims``, and a traced scalar index a
  ``dynamic_slice``: no gather;
* everything else, and every ``x.at[idx]`` update, goes through :func:`_index_to_gather`, which
  returns the gather dimension numbers, the index array and the slice sizes; ``x[idx]`` binds
  one ``gather`` with them and ``x.at[idx].add(y)`` one ``scatter-add`` (the transposed
  dimension numbers), as ``jax._src.numpy.indexing`` does.

Out-of-bound indices follow JAX: gathers clamp (``mode=None``), scatters drop them; negative
indices wrap once. A static Python int out of bounds in ``x[...]`` raises IndexError (numpy).
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from functrax import core, lax
from functrax.core import Array, Tracer
from functrax.errors import ConcretizationTypeError, NonConcreteBooleanIndexError
from functrax.numpy import array_methods, shape_ops, ufuncs
from functrax.numpy.promotion import (
    asarray_operand, broadcast_shapes_named, broadcast_to_shape, canonicalize_axis,
    check_arraylike, promote_dtypes,
)
from functrax.tree_util import tree_leaves
from functrax.primitives.gather_scatter import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers,
)

__all__ = ["take", "take_along_axis"]  # + the index helpers of index_tricks.py (at the end)

INDEX_DTYPE = np.dtype(np.int32)  # the index dtype of gathers and scatters (JAX: int32 unless x64)
_INT_MAX = np.iinfo(np.int32).max


def _aval(x):
    return core.get_aval(x)


def _is_array(x):
    return isinstance(x, (Array, Tracer, np.ndarray))


def concrete_value(x):
    """The numpy value of a concrete array (Array, numpy, or a tracer that knows it), else None."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, Tracer):
        return x.to_concrete_value()
    if isinstance(x, Array):
        return np.asarray(x)
    return np.asarray(x)


def concrete_or_error(x, context):
    v = concrete_value(x)
    if v is None:
        raise ConcretizationTypeError(x, context)
    return v


# --- parsing an index expression ---


class _Parsed(NamedTuple):
    entries: tuple      # one per output-producing item: None, slice, int, or an int array
    shape: tuple        # the operand shape, with size-1 axes inserted for scalar booleans
    advanced: bool      # numpy advanced (integer-array) indexing
    contiguous: bool    # the advanced indices are adjacent (else their dims go first)
    bool_axes: tuple    # operand axes inserted for scalar boolean indices


_LIST_MSG = ("Using a non-tuple sequence for multidimensional indexing is not allowed; use "
             "`arr[{}]` instead of `arr[seq]`. See https://github.com/jax-ml/jax/issues/4564 "
             "for more information.")


def _index_tuple(idx):
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, (list, range)):
        nested = any(isinstance(i, (list, tuple, slice, range)) or i is None or i is Ellipsis
                     or (_is_array(i) and np.ndim(i) != 0) for i in idx)
        raise TypeError(_LIST_MSG.format("tuple(seq)" if nested else "array(seq)"))
    return (idx,)


def _slice_bound(v, s):
    if v is None:
        return None
    try:
        return operator.index(v)
    except TypeError:
        raise IndexError(f"Array slice indices must have static start/stop/step to be used with "
                         f"NumPy indexing syntax. Found slice({s.start}, {s.stop}, {s.step}). "
                         "To index a statically sized array at a dynamic position, try "
                         "lax.dynamic_slice/dynamic_update_slice (functrax does not support "
                         "dynamically sized arrays within transformed functions).") from None


def _entry(e, pos):
    """One index item as None, Ellipsis, slice, bool, int, or an integer/boolean array."""
    if e is None or e is Ellipsis:
        return e
    if isinstance(e, slice):
        s = slice(*(_slice_bound(v, e) for v in (e.start, e.stop, e.step)))
        if s.step == 0:
            raise ValueError("slice step cannot be zero")
        return s
    if isinstance(e, (bool, np.bool_)):
        return bool(e)
    if isinstance(e, (int, np.integer)):
        return int(e)
    if isinstance(e, str):
        raise TypeError(f"functrax does not support string indexing; got index {e!r} at "
                        f"position {pos}")
    if isinstance(e, (list, tuple, range)):
        if any(isinstance(v, (Array, Tracer)) for v in tree_leaves(list(e))):
            from functrax.numpy.creation import array
            e = array(e)
        else:
            e = np.asarray(e) if len(e) else np.zeros((0,), INDEX_DTYPE)
    if isinstance(e, (np.generic, float, complex)):
        e = np.asarray(e)
    if _is_array(e):
        kind = e.dtype.kind
        if kind in "iub":
            return e
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{e.dtype.name} at position {pos}, indexer value {e}")
    raise IndexError(f"Indexing mode not yet supported. Got unsupported indexer at position "
                     f"{pos}: {e!r}")


def _consumes(e):
    if e is None or e is Ellipsis or isinstance(e, bool):
        return 0
    if _is_array(e) and e.dtype.kind == "b":
        return e.ndim
    return 1


def _expand_masks(entries, shape):
    """Concrete boolean masks -> integer index arrays (``np.nonzero``); 0-d masks -> bools."""
    ndim = len(shape)
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(_consumes(e) for e in entries)
    if consumed > ndim:
        raise IndexError(f"Too many indices: {ndim}-dimensional array indexed with {consumed} "
                         f"regular {'index' if consumed == 1 else 'indices'}.")
    out, axis = [], 0
    for pos, e in enumerate(entries):
        if e is Ellipsis:
            axis += ndim - consumed
        elif _is_array(e) and e.dtype.kind == "b":
            v = concrete_value(e)
            if v is None:
                raise NonConcreteBooleanIndexError(e)
            if v.ndim == 0:
                out.append(bool(v))
                continue
            expected = tuple(shape[axis:axis + v.ndim])
            if v.shape != expected:
                raise IndexError(f"boolean index did not match shape of indexed array in index "
                                 f"{pos}: got {v.shape}, expected {expected}")
            out.extend(i.astype(INDEX_DTYPE) for i in np.nonzero(v))
            axis += v.ndim
            continue
        else:
            axis += _consumes(e)
        out.append(e)
    return out


def _is_index_value(e):
    return (isinstance(e, int) and not isinstance(e, bool)) or _is_array(e)


def _parse_index(shape, idx) -> _Parsed:
    entries = [_entry(e, pos) for pos, e in enumerate(_index_tuple(idx))]
    entries = _expand_masks(entries, shape)
    advanced = any(isinstance(e, bool) or (_is_array(e) and e.ndim) for e in entries)
    adv_pos = [i for i, e in enumerate(entries) if isinstance(e, bool) or _is_index_value(e)]
    contiguous = bool(np.all(np.diff(adv_pos) == 1))
    # expand the Ellipsis (or pad at the end) with full slices
    ndim = len(shape)
    consumed = sum(_consumes(e) for e in entries)
    fill = [slice(None)] * (ndim - consumed)
    if any(e is Ellipsis for e in entries):
        k = next(i for i, e in enumerate(entries) if e is Ellipsis)
        entries = entries[:k] + fill + entries[k + 1:]
    else:
        entries = entries + fill
    # scalar booleans index a new size-1 axis with arange(0 or 1), as JAX does
    bool_axes, axis, new_shape, src = [], 0, [], iter(shape)
    for i, e in enumerate(entries):
        if isinstance(e, bool):
            bool_axes.append(axis)
            entries[i] = np.arange(int(e), dtype=INDEX_DTYPE)
            new_shape.append(1)
            axis += 1
        elif e is not None:
            new_shape.append(next(src))
            axis += 1
    return _Parsed(tuple(entries), tuple(new_shape), advanced, contiguous, tuple(bool_axes))


# --- index normalization ---


def _normalize_index(i, n):
    """An int32 index (or index array) with negative values wrapped once by ``n``."""
    if isinstance(i, int):
        return np.asarray(i + n if i < 0 else i, INDEX_DTYPE)
    if not isinstance(i, Tracer):  # concrete: computed here, a constant in the jaxpr
        v = np.asarray(i)
        if v.dtype.kind != "u":
            v = np.where(v < 0, v.astype(np.int64) + n, v)
        return np.clip(v, -_INT_MAX - 1, _INT_MAX).astype(INDEX_DTYPE)
    unsigned = i.dtype.kind == "u"
    if i.dtype != INDEX_DTYPE:
        i = lax.convert_element_type(i, INDEX_DTYPE)
    if unsigned:
        return i
    return lax.select(lax.lt(i, 0), lax.add(i, np.int32(n)), i)


# --- the static path: slice / rev / dynamic_slice / squeeze / expand_dims ---


def _static_ok(p: _Parsed, mode) -> bool:
    if p.advanced or p.bool_axes:
        return False
    axis = 0
    for e in p.entries:
        if e is None:
            continue
        n = p.shape[axis]
        axis += 1
        if isinstance(e, int) and not -n <= e < n:
            return False
        if _is_array(e) and (n == 0 or (mode is not None and GatherScatterMode.from_any(mode)
                                        == GatherScatterMode.FILL_OR_DROP)):
            return False
    return True


def _static_take(x, p: _Parsed):
    starts, limits, strides, revs, squeeze, dynamic, newaxes = [], [], [], [], [], {}, []
    axis = out = 0
    for e in p.entries:
        if e is None:
            newaxes.append(out)
            out += 1
            continue
        n = p.shape[axis]
        if isinstance(e, slice):
            start, stop, step = e.indices(n)
            m = len(range(start, stop, step))
            if m == 0:
                s, lim, st = 0, 0, 1
            elif step > 0:
                s, lim, st = start, start + (m - 1) * step + 1, step
            else:
                s, lim, st = start + (m - 1) * step, start + 1, -step
                if m > 1:
                    revs.append(axis)
            out += 1
        elif isinstance(e, int):
            s = e + n if e < 0 else e
            lim, st = s + 1, 1
            squeeze.append(axis)
        else:  # a scalar integer array: dynamic_slice on this axis
            s, lim, st = 0, n, 1
            dynamic[axis] = _normalize_index(e, n)
            squeeze.append(axis)
        starts.append(s)
        limits.append(lim)
        strides.append(st)
        axis += 1
    if tuple(starts) != (0,) * len(starts) or tuple(limits) != p.shape or any(
            st != 1 for st in strides):
        x = lax.slice(x, starts, limits, strides if any(st != 1 for st in strides) else None)
    if revs:
        x = lax.rev(x, revs)
    if dynamic:
        shape = _aval(x).shape
        x = lax.dynamic_slice(x, [dynamic.get(d, np.int32(0)) for d in range(len(shape))],
                              [1 if d in dynamic else s for d, s in enumerate(shape)])
    x = lax.squeeze(x, squeeze)
    return lax.expand_dims(x, newaxes) if newaxes else x


# --- the general path: one gather / scatter ---


class _Indexer(NamedTuple):
    slice_shape: tuple          # the shape of x[idx]
    gather_slice_shape: tuple   # slice_sizes of the gather
    gather_indices: object      # int32 array of shape batch + (k,)
    dnums: GatherDimensionNumbers
    unique_indices: bool        # no advanced indices: nothing can repeat
    indices_are_sorted: bool
    reversed_y_dims: tuple      # output dims of negative-step slices (reversed after gather)
    newaxis_dims: tuple         # output dims made by None (inserted after the gather)


def _assemble_indices(components, gshape):
    """Broadcast each (index, first dim) into ``gshape`` and stack them on a last axis."""
    if not components:
        return Array(np.zeros((0,), INDEX_DTYPE))
    gshape = tuple(gshape)
    if all(not isinstance(a, Tracer) for a, _ in components):
        cols = []
        for a, start in components:
            a = np.asarray(a)
            shape = [1] * len(gshape)
            shape[start:start + a.ndim] = a.shape
            cols.append(np.broadcast_to(a.reshape(shape), gshape))
        return Array(np.stack(cols, axis=-1).astype(INDEX_DTYPE))
    cols = []
    for a, start in components:
        a = a if isinstance(a, Tracer) else Array(np.asarray(a, INDEX_DTYPE))
        a = lax.broadcast_in_dim(a, gshape, tuple(range(start, start + _aval(a).ndim)))
        cols.append(lax.expand_dims(a, (len(gshape),)))
    return lax.concatenate(cols, len(gshape))


def _advanced_block(p: _Parsed):
    """The advanced indices: their entry positions, operand axes and broadcast arrays."""
    positions, axes, arrays, axis = [], [], [], 0
    for pos, e in enumerate(p.entries):
        if e is None:
            continue
        if _is_index_value(e):
            positions.append(pos)
            axes.append(axis)
            arrays.append(_normalize_index(e, p.shape[axis]))
        axis += 1
    shapes = [np.shape(a) if not isinstance(a, Tracer) else _aval(a).shape for a in arrays]
    try:
        bshape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with "
                         f"shapes {' '.join(str(tuple(s)) for s in shapes)}") from None
    arrays = [broadcast_to_shape(a, bshape) if isinstance(a, Tracer) else
              np.broadcast_to(a, bshape) for a in arrays]
    return positions, axes, arrays, tuple(bshape)


def _index_to_gather(p: _Parsed) -> _Indexer:
    shape = p.shape
    if p.advanced:
        adv_pos, adv_axes, adv_arrays, bshape = _advanced_block(p)
        first = adv_pos[0] if p.contiguous else 0
    else:
        adv_pos, first = [], -1
    components, gshape = [], []
    offset_dims, collapsed, start_index_map = [], [], []
    slice_shape, gather_slice_shape, newaxis_dims, reversed_dims = [], [], [], []
    axis = y_axis = cy_axis = 0
    for pos, e in enumerate(p.entries):
        if p.advanced and pos == first:
            components.extend((a, len(gshape)) for a in adv_arrays)
            gshape.extend(bshape)
            start_index_map.extend(adv_axes)
            collapsed.extend(adv_axes)
            slice_shape.extend(bshape)
            y_axis += len(bshape)
            cy_axis += len(bshape)
        if pos in adv_pos:
            axis += 1
            gather_slice_shape.append(1)
            continue
        if e is None:
            slice_shape.append(1)
            newaxis_dims.append(y_axis)
            y_axis += 1
            continue
        n = shape[axis]
        if isinstance(e, slice):
            start, stop, step = e.indices(n)
            size = len(range(start, stop, step))
            slice_shape.append(size)
            if step == 1:
                if size != n:
                    components.append((np.asarray(start, INDEX_DTYPE), len(gshape)))
                    start_index_map.append(axis)
                gather_slice_shape.append(size)
                offset_dims.append(cy_axis)
            else:
                idx = start + step * np.arange(size, dtype=np.int64)
                if step < 0:
                    reversed_dims.append(cy_axis)
                    idx = idx[::-1]
                components.append((idx.astype(INDEX_DTYPE), len(gshape)))
                gshape.append(size)
                start_index_map.append(axis)
                collapsed.append(axis)
                gather_slice_shape.append(1)
            cy_axis += 1
            y_axis += 1
        else:  # a scalar index outside advanced indexing
            if n == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0")
            components.append((_normalize_index(e, n), len(gshape)))
            start_index_map.append(axis)
            collapsed.append(axis)
            gather_slice_shape.append(1)
        axis += 1
    if 0 not in slice_shape:
        for d in collapsed:
            if shape[d] == 0:
                raise IndexError(f"index is out of bounds for axis {d} with size 0")
    dnums = GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                   collapsed_slice_dims=tuple(sorted(collapsed)),
                                   start_index_map=tuple(start_index_map))
    return _Indexer(tuple(slice_shape), tuple(gather_slice_shape),
                    _assemble_indices(components, gshape), dnums, not p.advanced,
                    not p.advanced, tuple(reversed_dims), tuple(newaxis_dims))


def _static_fill_value(fill_value):
    if fill_value is None:
        return None
    v = concrete_or_error(fill_value, "The fill_value argument to an indexed get() must be "
                                       "concrete. ")
    if np.ndim(v) != 0:
        raise ValueError(f"fill_value argument to indexed get() must be a scalar, got shape "
                         f"{np.shape(v)}")
    return np.asarray(v).item()


def _rewriting_take(arr, idx, *, indices_are_sorted=False, unique_indices=False, mode=None,
                    fill_value=None):
    """``arr[idx]``: static slicing when it can, else one gather (JAX's ``rewriting_take``)."""
    arr = asarray_operand(arr)
    if mode is not None:
        GatherScatterMode.from_any(mode)  # validates
    p = _parse_index(_aval(arr).shape, idx)
    if _static_ok(p, mode):  # an out-of-bounds static index is clamped by the gather (JAX)
        return _static_take(arr, p)
    fill_value = _static_fill_value(fill_value)
    y = lax.expand_dims(arr, p.bool_axes) if p.bool_axes else arr
    indexer = _index_to_gather(p)
    if 0 in indexer.slice_shape:
        return lax.full(indexer.slice_shape, 0, _aval(arr).dtype)
    if _aval(indexer.gather_indices).size:
        y = lax.gather(y, indexer.gather_indices, indexer.dnums, indexer.gather_slice_shape,
                       unique_indices=unique_indices or indexer.unique_indices,
                       indices_are_sorted=indices_are_sorted or indexer.indices_are_sorted,
                       mode=mode, fill_value=fill_value)
    if indexer.reversed_y_dims:
        y = lax.rev(y, indexer.reversed_y_dims)
    return lax.expand_dims(y, indexer.newaxis_dims) if indexer.newaxis_dims else y


def _getitem(self, idx):
    """``x[idx]`` with numpy's indexing rules (basic, advanced, boolean masks), as jax.numpy.

    Out-of-bound traced or array indices are clamped (JAX's semantics); a static int out of
    bounds raises IndexError. Boolean masks must be concrete.

    >>> import functrax.numpy as fnp
    >>> x = fnp.arange(6).reshape(2, 3)
    >>> x[1, ::-1]
    Array([5, 4, 3], dtype=int32)
    >>> x[:, fnp.array([0, 2])]
    Array([[0, 2],
           [3, 5]], dtype=int32)
    """
    return _rewriting_take(self, idx)


_SCATTERS = {"set": lax.scatter, "add": lax.scatter_add, "multiply": lax.scatter_mul,
             "min": lax.scatter_min, "max": lax.scatter_max}


def _scatter_update(x, idx, y, kind, indices_are_sorted=False, unique_indices=False, mode=None):
    """``x[idx] <kind>= y`` without mutation: one scatter (JAX's ``_scatter_impl``)."""
    x = asarray_operand(x)
    if not core.is_arraylike(y) and not isinstance(y, (list, tuple)):
        raise TypeError(f"x.at[idx].{kind}: values must be an array or a scalar, got "
                        f"{type(y).__name__}")
    if isinstance(y, (list, tuple)):
        y = asarray_operand(y)
    aval = _aval(x)
    p = _parse_index(aval.shape, idx)
    xe = lax.expand_dims(x, p.bool_axes) if p.bool_axes else x
    indexer = _index_to_gather(p)
    if 0 in indexer.slice_shape:
        return x
    xe, y = promote_dtypes(xe, y)  # as JAX: compute in the promoted type, cast back after
    dtype = _aval(xe).dtype
    if not isinstance(y, (Array, Tracer)):
        y = Array(np.asarray(y, dtype))
    try:
        y = broadcast_to_shape(y, indexer.slice_shape)
    except ValueError:
        raise ValueError(f"x.at[idx].{kind}: cannot broadcast values of shape {_aval(y).shape} "
                         f"to the indexed shape {indexer.slice_shape} (operand shape "
                         f"{aval.shape})") from None
    if indexer.newaxis_dims:
        y = lax.squeeze(y, indexer.newaxis_dims)
    if indexer.reversed_y_dims:
        y = lax.rev(y, indexer.reversed_y_dims)
    d = indexer.dnums
    dnums = ScatterDimensionNumbers(update_window_dims=d.offset_dims,
                                    inserted_window_dims=d.collapsed_slice_dims,
                                    scatter_dims_to_operand_dims=d.start_index_map)
    out = _SCATTERS[kind](xe, indexer.gather_indices, y, dnums,
                          indices_are_sorted=indexer.indices_are_sorted or indices_are_sorted,
                          unique_indices=indexer.unique_indices or unique_indices, mode=mode)
    out = lax.convert_element_type(out, aval.dtype, aval.weak_type)
    return lax.squeeze(out, p.bool_axes) if p.bool_axes else out


class _IndexUpdateHelper:
    """``x.at``: index it (``x.at[idx]``) to get an :class:`_IndexUpdateRef`."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """``x.at[idx]``: functional updates of ``x`` at ``idx`` (as ``jax.numpy.ndarray.at``).

    Every method returns a new array. ``mode``: ``None`` (gets clamp, updates drop
    out-of-bound indices), ``"clip"``, ``"fill"``/``"drop"`` or ``"promise_in_bounds"``.

    >>> import functrax.numpy as fnp
    >>> fnp.zeros(4).at[fnp.array([1, 1, 3])].add(1.0)
    Array([0., 2., 0., 1.], dtype=float32)
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None):
        """``x[idx]``; ``mode="fill"`` gives ``fill_value`` for out-of-bound indices."""
        return _rewriting_take(self.array, self.index, indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode, fill_value=fill_value)

    def _update(self, kind, values, indices_are_sorted, unique_indices, mode):
        return _scatter_update(self.array, self.index, values, kind, indices_are_sorted,
                               unique_indices, mode)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = values`` (with duplicate indices, one of the values wins)."""
        return self._update("set", values, indices_are_sorted, unique_indices, mode)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] += values``, accumulating over duplicate indices."""
        return self._update("add", values, indices_are_sorted, unique_indices, mode)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] *= values``, accumulating over duplicate indices."""
        return self._update("multiply", values, indices_are_sorted, unique_indices, mode)

    mul = multiply

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = minimum(x[idx], values)``."""
        return self._update("min", values, indices_are_sorted, unique_indices, mode)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = maximum(x[idx], values)``."""
        return self._update("max", values, indices_are_sorted, unique_indices, mode)


array_methods.install_extra("__getitem__", _getitem)
array_methods.install_extra("at", property(_IndexUpdateHelper, doc=_IndexUpdateRef.__doc__))


# --- take / take_along_axis ---


def int_operand(fun_name, x, argname):
    x = asarray_operand(x)
    if _aval(x).dtype.kind not in "iu":
        raise TypeError(f"{fun_name}: {argname} must have an integer dtype, got "
                        f"{_aval(x).dtype.name} (shape {_aval(x).shape})")
    return x


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """Take elements of ``a`` at ``indices`` along ``axis`` (the flattened array if None).

    Args:
      mode: ``None``/``"fill"`` (out-of-bound indices give ``fill_value``: NaN for floats,
        the minimum for signed ints, ...), ``"clip"`` or ``"wrap"``. Negative indices wrap.

    >>> import functrax.numpy as fnp
    >>> fnp.take(fnp.array([[1., 2.], [3., 4.]]), fnp.array([3, 0, 7]))
    Array([ 4.,  1., nan], dtype=float32)
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to functrax.numpy.take is not supported.")
    check_arraylike("take", a, indices)
    a = asarray_operand(a)
    indices = int_operand("take", indices, "indices")
    if axis is None:
        a = shape_ops.ravel(a)
        axis = 0
    else:
        axis = canonicalize_axis(operator.index(axis), _aval(a).ndim, "take")
    shape, ishape = _aval(a).shape, _aval(indices).shape
    n = shape[axis]
    if mode is None or mode == "fill":
        gather_mode = GatherScatterMode.FILL_OR_DROP
        indices = _normalize_index(indices, n)
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to functrax.numpy.take is not supported.")
    elif mode == "wrap":
        indices = ufuncs.remainder(indices, max(n, 1))
        gather_mode = GatherScatterMode.PROMISE_IN_BOUNDS
    elif mode == "clip":
        gather_mode = GatherScatterMode.CLIP
    else:
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    out_shape = shape[:axis] + ishape + shape[axis + 1:]
    if n == 0 and int(np.prod(ishape)):
        raise IndexError("Cannot do a non-empty functrax.numpy.take() from an empty axis.")
    if 0 in out_shape:
        return lax.full(out_shape, 0, _aval(a).dtype)
    if not isinstance(indices, (Array, Tracer)):
        indices = Array(indices)
    nd = len(ishape)
    dnums = GatherDimensionNumbers(
        offset_dims=tuple(range(axis)) + tuple(range(axis + nd, len(shape) + nd - 1)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    sizes = shape[:axis] + (1,) + shape[axis + 1:]
    return lax.gather(a, lax.expand_dims(indices, (nd,)), dnums, sizes, mode=gather_mode,
                      unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                      fill_value=_static_fill_value(fill_value))


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None):
    """Take values of ``arr`` at ``indices`` along ``axis``; other dimensions broadcast.

    ``mode=None`` means ``"fill"`` (out-of-bound indices give ``fill_value``, as JAX);
    negative indices wrap (except with ``mode="promise_in_bounds"``).

    >>> import functrax.numpy as fnp
    >>> x = fnp.array([[5, 3, 4], [2, 7, 6]])
    >>> fnp.take_along_axis(x, fnp.array([[1], [0]]), axis=1)
    Array([[3],
           [2]], dtype=int32)
    """
    check_arraylike("take_along_axis", arr, indices)
    a = asarray_operand(arr)
    indices = int_operand("take_along_axis", indices, "indices")
    if axis is None:
        if _aval(indices).ndim != 1:
            raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape "
                             f"{_aval(indices).shape}")
        a, axis = shape_ops.ravel(a), 0
    rank, idx_shape = _aval(a).ndim, _aval(indices).shape
    if rank != len(idx_shape):
        raise ValueError(f"take_along_axis: indices and arr must have the same number of "
                         f"dimensions; {len(idx_shape)} vs. {rank}")
    axis = canonicalize_axis(axis, rank, "take_along_axis")
    arr_shape = list(_aval(a).shape)
    n = arr_shape[axis]
    arr_shape[axis] = 1
    out_shape = broadcast_shapes_named("take_along_axis", idx_shape, tuple(arr_shape))
    if n == 0:
        return lax.full(out_shape, 0, _aval(a).dtype)
    if mode != "promise_in_bounds":
        indices = _normalize_index(indices, n)
    elif not isinstance(indices, Tracer):
        indices = np.asarray(indices, INDEX_DTYPE)
    index_dims = [i for i, s in enumerate(idx_shape) if i == axis or s != 1]
    slice_sizes, offset_dims, start_index_map, collapsed = [], [], [], []
    obd, ibd, squeeze = [], [], []
    new_i = j = 0
    for i in range(rank):
        if i == axis:
            slice_sizes.append(1)
            start_index_map.append(new_i)
            collapsed.append(new_i)
            new_i, j = new_i + 1, j + 1
        elif idx_shape[i] == 1:
            offset_dims.append(i)
            slice_sizes.append(arr_shape[i])
            new_i += 1
        elif arr_shape[i] == 1:
            squeeze.append(i)
            j += 1
        else:
            slice_sizes.append(0 if arr_shape[i] == 0 else 1)
            obd.append(new_i)
            ibd.append(j)
            new_i, j = new_i + 1, j + 1
    gshape = tuple(out_shape[i] for i in index_dims) + (1,)
    gidx = (np.reshape(indices, gshape) if not isinstance(indices, Tracer)
            else lax.reshape(indices, gshape))
    dnums = GatherDimensionNumbers(tuple(offset_dims), tuple(collapsed), tuple(start_index_map),
                                   tuple(obd), tuple(ibd))
    gidx = gidx if isinstance(gidx, Tracer) else Array(gidx)
    return lax.gather(lax.squeeze(a, squeeze), gidx, dnums, slice_sizes,
                      mode="fill" if mode is None else mode,
                      fill_value=_static_fill_value(fill_value))


from functrax.numpy import index_tricks as _index_tricks  # noqa: E402
from functrax.numpy.index_tricks import *  # noqa: F401,F403,E402

__all__ += _index_tricks.__all__
