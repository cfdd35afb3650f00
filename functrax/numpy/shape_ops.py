"""Shape manipulation of ``functrax.numpy``: reshape, transpose, stack, split, pad, tile, ...

Every function here is traceable: shapes and other static arguments are Python values, the
data flows through ``functrax.lax`` (slices, reversals, concatenations, broadcasts, pads).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.errors import ConcretizationTypeError
from functrax.numpy.promotion import (
    array_operand, asarray_operand, broadcast_shapes_named, broadcast_to_shape,
    canonicalize_axes, canonicalize_axis, check_arraylike, promote_dtypes, static_value,
)

_ARRAY_TYPES = (core.Array, core.Tracer)


def _aval(x):
    return core.get_aval(x)


def _index_tuple(x, fun_name, argname):
    """A static int or sequence of ints as a tuple of Python ints."""
    if type(x) is int:
        return (x,)
    if type(x) is tuple and all(type(i) is int for i in x):
        return x
    x = static_value(x, fun_name, argname)
    many = isinstance(x, (list, np.ndarray)) or core.is_concrete_array(x)
    seq = list(np.asarray(x).ravel()) if many else [x]
    try:
        return tuple(operator.index(i) for i in seq)
    except TypeError:
        raise TypeError(f"{fun_name}: `{argname}` must be an integer or a sequence of integers, "
                        f"got {x!r}") from None


# --- reshaping and permuting ---


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Reshape ``a``; one dimension may be -1 (inferred).

    >>> import functrax.numpy as fnp
    >>> fnp.arange(6).reshape(2, 3).shape
    (2, 3)
    """
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape: missing the required argument `shape`")
    a = asarray_operand(a)
    if order == "F":
        shape = _index_tuple(shape, "reshape", "shape")
        return transpose(reshape(transpose(a), shape[::-1]))
    if order != "C":
        raise NotImplementedError(f"functrax.numpy.reshape: order={order!r} is not supported; "
                                  "use 'C' or 'F'")
    size = _aval(a).size
    shape = _index_tuple(shape, "reshape", "shape")
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: can only specify one unknown dimension, got {shape}")
    if any(d < -1 for d in shape):
        raise ValueError(f"reshape: negative dimensions are not allowed, got {shape}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise TypeError(f"reshape: cannot reshape array of shape {_aval(a).shape} (size "
                            f"{size}) into shape {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise TypeError(f"reshape: cannot reshape array of shape {_aval(a).shape} (size {size}) "
                        f"into shape {shape} (size {math.prod(shape)})")
    return lax.reshape(a, shape)


def ravel(a, order="C"):
    """Flatten ``a`` into one dimension (row-major for 'C', column-major for 'F')."""
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    """Permute the axes of ``a`` (reverse them when ``axes`` is None)."""
    a = asarray_operand(a)
    nd = _aval(a).ndim
    axes = tuple(range(nd))[::-1] if axes is None else tuple(
        canonicalize_axis(i, nd, "transpose") for i in _index_tuple(axes, "transpose", "axes"))
    if sorted(axes) != list(range(nd)):
        raise ValueError(f"transpose: axes {axes} don't match array of shape {_aval(a).shape}; "
                         f"give a permutation of range({nd})")
    return lax.transpose(a, axes)


def moveaxis(a, source, destination):
    """Move axes ``source`` of ``a`` to positions ``destination`` (others keep their order)."""
    a = asarray_operand(a)
    nd = _aval(a).ndim
    src = canonicalize_axes(_index_tuple(source, "moveaxis", "source"), nd, "moveaxis")
    dst = canonicalize_axes(_index_tuple(destination, "moveaxis", "destination"), nd,
                            "moveaxis")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must have "
                         "the same number of elements")
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(a, perm)


def permute_dims(a, /, axes):
    """The array API's :func:`transpose`: ``a`` with its axes permuted to ``axes``.

    >>> import functrax.numpy as fnp
    >>> fnp.permute_dims(fnp.ones((2, 3)), (1, 0)).shape
    (3, 2)
    """
    return transpose(a, axes)


def rollaxis(a, axis, start=0):
    """Move ``axis`` of ``a`` to just before position ``start`` (numpy's older
    :func:`moveaxis`).

    >>> import functrax.numpy as fnp
    >>> fnp.rollaxis(fnp.ones((2, 3, 4)), 2).shape
    (4, 2, 3)
    """
    a = asarray_operand(a)
    nd = _aval(a).ndim
    axis = canonicalize_axis(axis, nd, "rollaxis")
    start = operator.index(start)
    if not -nd <= start <= nd:
        raise ValueError(f"rollaxis: start={start} must satisfy {-nd}<=start<={nd}")
    start = start + nd if start < 0 else start
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start)


def swapaxes(a, axis1, axis2):
    """Interchange two axes of ``a``."""
    a = asarray_operand(a)
    nd = _aval(a).ndim
    perm = list(range(nd))
    i, j = canonicalize_axis(axis1, nd, "swapaxes"), canonicalize_axis(axis2, nd, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def expand_dims(a, axis):
    """Insert size-1 axes at positions ``axis`` (an int or a tuple) of the result."""
    a = asarray_operand(a)
    axes = _index_tuple(axis, "expand_dims", "axis")
    nd = _aval(a).ndim + len(axes)
    return lax.expand_dims(a, canonicalize_axes(axes, nd, "expand_dims"))


def squeeze(a, axis=None):
    """Remove size-1 axes (all of them, or those named by ``axis``)."""
    a = asarray_operand(a)
    shape = _aval(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = canonicalize_axes(_index_tuple(axis, "squeeze", "axis"), len(shape), "squeeze")
        for i in axes:
            if shape[i] != 1:
                raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size "
                                 f"not equal to one, got shape={shape} and dimensions={axes}")
    return lax.squeeze(a, axes)


def broadcast_to(array, shape):
    """Broadcast ``array`` to ``shape`` (numpy rules).

    >>> import functrax.numpy as fnp
    >>> fnp.broadcast_to(fnp.arange(3), (2, 3)).shape
    (2, 3)
    """
    array = array_operand("broadcast_to", array)
    shape = _index_tuple(shape, "broadcast_to", "shape")
    try:
        return broadcast_to_shape(array, shape)
    except ValueError:
        raise ValueError(f"broadcast_to: incompatible shapes for broadcasting: "
                         f"{_aval(array).shape} -> {shape}") from None


def broadcast_arrays(*args):
    """Broadcast all arguments to their common shape; returns a list."""
    check_arraylike("broadcast_arrays", *args)
    shape = broadcast_shapes_named("broadcast_arrays", *[_aval(a).shape for a in args])
    return [broadcast_to(a, shape) for a in args]


def broadcast_shapes(*shapes):
    """The shape that all ``shapes`` broadcast to (a tuple)."""
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    return tuple(broadcast_shapes_named("broadcast_shapes", *shapes))


# --- joining ---


def _seq(fun_name, arrays):
    """A list of operands from a sequence, or the rows of an array."""
    if isinstance(arrays, (np.ndarray, *_ARRAY_TYPES)):
        arrays = asarray_operand(arrays)
        if _aval(arrays).ndim == 0:
            raise TypeError(f"{fun_name}: expected a sequence of arrays, got a 0-d array")
        return [lax.index_in_dim(arrays, i, 0, keepdims=False)
                for i in range(_aval(arrays).shape[0])]
    if not isinstance(arrays, (list, tuple)):
        try:
            arrays = list(arrays)
        except TypeError:
            raise TypeError(f"{fun_name}: expected a sequence of arrays, got "
                            f"{type(arrays).__name__}") from None
    if not len(arrays):
        raise ValueError(f"{fun_name}: need at least one array to concatenate")
    check_arraylike(fun_name, *arrays)
    return [asarray_operand(a) for a in arrays]


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing ``axis`` (None: flatten first).

    >>> import functrax.numpy as fnp
    >>> fnp.concatenate([fnp.zeros(2), fnp.ones(1)])
    Array([0., 0., 1.], dtype=float32)
    """
    arrays = _seq("concatenate", arrays)
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = promote_dtypes(*arrays)
    if dtype is not None:
        arrays = [lax.convert_element_type(a, dtype) for a in arrays]
    arrays = [asarray_operand(a) for a in arrays]
    shapes = [_aval(a).shape for a in arrays]
    nd = len(shapes[0])
    if nd == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated; use "
                         "stack, or atleast_1d first")
    if any(len(s) != nd for s in shapes):
        raise ValueError(f"concatenate: all input arrays must have the same number of "
                         f"dimensions, got shapes {shapes}")
    axis = canonicalize_axis(axis, nd, "concatenate")
    if any(s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:] for s in shapes):
        raise ValueError(f"concatenate: all input array dimensions except for the "
                         f"concatenation axis {axis} must match exactly, got shapes {shapes}")
    return lax.concatenate(arrays, axis)


def stack(arrays, axis=0, dtype=None):
    """Join arrays of equal shape along a new ``axis``.

    >>> import functrax.numpy as fnp
    >>> fnp.stack([fnp.zeros(2), fnp.ones(2)], axis=1).shape
    (2, 2)
    """
    if isinstance(arrays, (np.ndarray, *_ARRAY_TYPES)):
        arrays = asarray_operand(arrays)
        out = moveaxis(arrays, 0, canonicalize_axis(axis, _aval(arrays).ndim, "stack"))
        return out if dtype is None else lax.convert_element_type(out, dtype)
    arrays = _seq("stack", arrays)
    shapes = [_aval(a).shape for a in arrays]
    if len(set(shapes)) > 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got {shapes}")
    axis = canonicalize_axis(axis, len(shapes[0]) + 1, "stack")
    return concatenate([lax.expand_dims(a, (axis,)) for a in arrays], axis, dtype)


def hstack(tup, dtype=None):
    """Stack horizontally: along axis 1, or axis 0 for 1-D inputs."""
    arrs = [atleast_1d(a) for a in _seq("hstack", tup)]
    return concatenate(arrs, 0 if _aval(arrs[0]).ndim == 1 else 1, dtype)


def vstack(tup, dtype=None):
    """Stack vertically (along axis 0), after making every input at least 2-D."""
    return concatenate([atleast_2d(a) for a in _seq("vstack", tup)], 0, dtype)


def dstack(tup, dtype=None):
    """Stack depth-wise (along axis 2), after making every input at least 3-D."""
    return concatenate([atleast_3d(a) for a in _seq("dstack", tup)], 2, dtype)


def column_stack(tup):
    """Stack 1-D arrays as columns of a 2-D array (2-D inputs are joined along axis 1)."""
    arrs = [lax.reshape(a, (_aval(a).size, 1)) if _aval(a).ndim < 2 else a
            for a in _seq("column_stack", tup)]
    return concatenate(arrs, 1)


def append(arr, values, axis=None):
    """``arr`` with ``values`` appended along ``axis`` (both flattened when it is None)."""
    check_arraylike("append", arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def atleast_1d(*arys):
    """Each input as an array of at least one dimension (a list for several inputs)."""
    return _atleast("atleast_1d", arys, {0: (0,)})


def atleast_2d(*arys):
    """Each input as an array of at least two dimensions (new axes are leading)."""
    return _atleast("atleast_2d", arys, {0: (0, 1), 1: (0,)})


def atleast_3d(*arys):
    """Each input with at least three dimensions: ``(N,) -> (1, N, 1)``, ``(M, N) -> (M, N, 1)``.
    """
    return _atleast("atleast_3d", arys, {0: (0, 1, 2), 1: (0, 2), 2: (2,)})


def _atleast(fun_name, arys, new_dims):
    check_arraylike(fun_name, *arys)
    out = []
    for a in map(asarray_operand, arys):
        dims = new_dims.get(_aval(a).ndim)
        out.append(lax.expand_dims(a, dims) if dims else a)
    return out[0] if len(out) == 1 else out


# --- splitting ---


def _split(fun_name, ary, indices_or_sections, axis):
    ary = array_operand(fun_name, ary)
    shape = _aval(ary).shape
    if not shape:
        raise ValueError(f"{fun_name}: cannot split a 0-d array")
    axis = canonicalize_axis(static_value(axis, fun_name, "axis"), len(shape), fun_name)
    size = shape[axis]
    ios = static_value(indices_or_sections, fun_name, "indices_or_sections")
    if isinstance(ios, (list, tuple)) or np.ndim(ios) > 0:
        if np.ndim(ios) != 1:
            raise ValueError(f"{fun_name}: indices_or_sections must be an integer or a 1-D "
                             f"sequence of indices, got {indices_or_sections!r}")
        idx = list(_index_tuple(list(np.asarray(ios)) if len(ios) else [], fun_name,
                                "indices_or_sections"))
        bounds = []
        for st, en in zip([0] + idx, idx + [size]):  # Python slice semantics, as numpy
            r = range(size)[st:en]
            bounds.append((r.start, max(r.start, r.stop)))
    else:
        try:
            n = operator.index(ios)
        except TypeError:
            raise TypeError(f"{fun_name}: indices_or_sections must be an integer or a sequence "
                            f"of integers, got {ios!r}") from None
        if n <= 0:
            raise ValueError(f"{fun_name}: number sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        if r and fun_name != "array_split":
            raise ValueError(f"array split does not result in an equal division: {fun_name} of "
                             f"axis {axis} (size {size}) into {n} sections leaves a rest of "
                             f"{r}. Use array_split for unequal sections, or pass indices.")
        sizes = [q + 1] * r + [q] * (n - r)
        starts = np.cumsum([0] + sizes)
        bounds = list(zip(starts[:-1].tolist(), starts[1:].tolist()))
    return [lax.slice_in_dim(ary, s, e, 1, axis) for s, e in bounds]


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections (an int) or at the given indices (a sequence); a list.

    >>> import functrax.numpy as fnp
    >>> [p.shape for p in fnp.split(fnp.arange(6), [1, 4])]
    [(1,), (3,), (2,)]
    """
    return _split("split", ary, indices_or_sections, axis)


def array_split(ary, indices_or_sections, axis=0):
    """Like ``split`` but an int may leave unequal sections (the first ones one longer)."""
    return _split("array_split", ary, indices_or_sections, axis)


def _split_nd(fun_name, ary, ios, min_nd, axis_fn):
    ary = array_operand(fun_name, ary)
    if _aval(ary).ndim < min_nd:
        raise ValueError(f"{fun_name} only works on arrays of {min_nd} or more dimensions, got "
                         f"shape {_aval(ary).shape}")
    return _split("split", ary, ios, axis_fn(_aval(ary).ndim))


def hsplit(ary, indices_or_sections):
    """``split`` along axis 1 (axis 0 for 1-D arrays)."""
    return _split_nd("hsplit", ary, indices_or_sections, 1, lambda nd: int(nd > 1))


def vsplit(ary, indices_or_sections):
    """``split`` along axis 0 of an array of at least 2 dimensions."""
    return _split_nd("vsplit", ary, indices_or_sections, 2, lambda nd: 0)


def dsplit(ary, indices_or_sections):
    """``split`` along axis 2 of an array of at least 3 dimensions."""
    return _split_nd("dsplit", ary, indices_or_sections, 3, lambda nd: 2)


# --- tiling and repeating ---


def tile(A, reps):
    """Repeat the whole array ``A`` ``reps`` times (per axis when ``reps`` is a sequence).

    >>> import functrax.numpy as fnp
    >>> fnp.tile(fnp.arange(2), (2, 2))
    Array([[0, 1, 0, 1],
           [0, 1, 0, 1]], dtype=int32)
    """
    A = array_operand("tile", A)
    reps = _index_tuple(reps, "tile", "reps")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative integers, got {reps}")
    shape = (1,) * (len(reps) - _aval(A).ndim) + _aval(A).shape
    reps = (1,) * (len(shape) - len(reps)) + reps
    a = lax.reshape(A, [k for d in shape for k in (1, d)])
    a = lax.broadcast_in_dim(a, [k for pair in zip(reps, shape) for k in pair],
                             tuple(range(2 * len(shape))))
    return lax.reshape(a, [r * d for r, d in zip(reps, shape)])


def _gather_axis(a, indices, axis):
    """``a`` indexed along ``axis`` by the in-bounds int32 ``indices`` of shape (L,)."""
    shape = _aval(a).shape
    nd = len(shape)
    dn = lax.GatherDimensionNumbers(
        offset_dims=tuple(i for i in range(nd) if i != axis), collapsed_slice_dims=(axis,),
        start_index_map=(axis,))
    idx = lax.reshape(indices, (_aval(indices).shape[0], 1))
    return lax.gather_p.bind(a, idx, dimension_numbers=dn,
                             slice_sizes=tuple(1 if i == axis else d for i, d in enumerate(shape)),
                             indices_are_sorted=True, unique_indices=False,
                             mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)


def _repeat_traced(a, repeats, axis, total):
    """Repeat with traced ``repeats``: out[j] = a[#{i: exclusive_cumsum(repeats)[i] <= j} - 1]."""
    n = _aval(a).shape[axis]
    i32 = dtypes.canonicalize_dtype(np.int32)
    if _aval(repeats).dtype.kind not in "iu":
        raise TypeError(f"repeat: repeats must be integers, got {_aval(repeats).dtype.name}")
    if _aval(repeats).shape not in ((), (1,), (n,)):
        raise ValueError(f"repeat: repeats of shape {_aval(repeats).shape} do not match axis "
                         f"{axis} of size {n}; give an int or {n} ints")
    reps = broadcast_to(lax.convert_element_type(repeats, i32), (n,))
    excl = lax.sub(lax.cumsum(reps, 0), reps)
    pos = lax.broadcasted_iota(i32, (total, n), 0)
    hits = lax.convert_element_type(lax.le(lax.broadcast_in_dim(excl, (total, n), (1,)), pos),
                                    i32)
    return _gather_axis(a, lax.sub(lax.reduce_sum(hits, (1,)), np.int32(1)), axis)


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element of ``a`` ``repeats`` times along ``axis`` (flattened when None).

    ``repeats`` is an int or one int per element of the axis, and must be concrete unless the
    static ``total_repeat_length`` is given. With ``total_repeat_length``, extra elements are
    dropped and a shortfall repeats the final value (as JAX).

    >>> import functrax.numpy as fnp
    >>> fnp.repeat(fnp.array([1, 2]), fnp.array([1, 2]))
    Array([1, 2, 2], dtype=int32)
    """
    a = array_operand("repeat", a)
    if axis is None:
        a, axis = ravel(a), 0
    elif _aval(a).ndim == 0:
        raise ValueError(f"repeat: axis {axis} is out of bounds for a 0-d array; use axis=None")
    axis = canonicalize_axis(static_value(axis, "repeat", "axis"), _aval(a).ndim, "repeat")
    n = _aval(a).shape[axis]
    if total_repeat_length is not None:
        total_repeat_length = operator.index(static_value(total_repeat_length, "repeat",
                                                     "total_repeat_length"))
        if total_repeat_length < 0:
            raise ValueError(f"repeat: total_repeat_length must be non-negative, got "
                             f"{total_repeat_length}")
    if isinstance(repeats, core.Tracer) and repeats.to_concrete_value() is None:
        if total_repeat_length is None:
            raise ConcretizationTypeError(
                repeats, "functrax.numpy.repeat: traced `repeats` need a static "
                         "`total_repeat_length` (the output size must be known). ")
        if n == 0 or total_repeat_length == 0:
            return lax.slice_in_dim(a, 0, 0, 1, axis) if total_repeat_length == 0 else a
        return _repeat_traced(a, repeats, axis, total_repeat_length)
    reps = np.asarray(static_value(repeats, "repeat", "repeats"))
    if reps.dtype.kind not in "iub":
        raise TypeError(f"repeat: repeats must be integers, got {repeats!r}")
    if reps.ndim > 1 or reps.size not in (1, n):
        raise ValueError(f"repeat: repeats of shape {reps.shape} do not match axis {axis} of "
                         f"size {n} (array shape {_aval(a).shape}); give an int or {n} ints")
    reps = reps.astype(np.int64).ravel()
    if (reps < 0).any():
        raise ValueError(f"repeat: repeats may not contain negative values, got {reps.tolist()}")
    if reps.size == 1 and total_repeat_length in (None, int(reps[0]) * n):
        r = int(reps[0])
        shape = _aval(a).shape
        b = lax.broadcast_in_dim(lax.expand_dims(a, (axis + 1,)),
                                 shape[:axis + 1] + (r,) + shape[axis + 1:],
                                 tuple(range(len(shape) + 1)))
        return lax.reshape(b, shape[:axis] + (n * r,) + shape[axis + 1:])
    if n == 0:
        return a
    reps = np.broadcast_to(reps, (n,))
    total = int(reps.sum()) if total_repeat_length is None else total_repeat_length
    if total == 0:
        return lax.slice_in_dim(a, 0, 0, 1, axis)
    excl = np.cumsum(reps) - reps
    idx = np.searchsorted(excl, np.arange(total), side="right") - 1
    return _gather_axis(a, core.Array(idx.astype(np.int32)), axis)


# --- flipping and rolling ---


def flip(m, axis=None):
    """Reverse the order of elements along ``axis`` (all axes when None)."""
    m = array_operand("flip", m)
    nd = _aval(m).ndim
    axes = tuple(range(nd)) if axis is None else canonicalize_axes(
        _index_tuple(axis, "flip", "axis"), nd, "flip")
    return lax.rev(m, axes) if axes else m


def fliplr(m):
    """Reverse the order of columns (axis 1); needs at least 2 dimensions."""
    m = array_operand("fliplr", m)
    if _aval(m).ndim < 2:
        raise ValueError(f"fliplr: input must be >= 2-d, got shape {_aval(m).shape}")
    return lax.rev(m, (1,))


def flipud(m):
    """Reverse the order of rows (axis 0); needs at least 1 dimension."""
    m = array_operand("flipud", m)
    if _aval(m).ndim < 1:
        raise ValueError("flipud: input must be >= 1-d, got a 0-d array")
    return lax.rev(m, (0,))


def roll(a, shift, axis=None):
    """Roll elements along ``axis`` (flattened when None); ``shift`` may be traced.

    >>> import functrax.numpy as fnp
    >>> fnp.roll(fnp.arange(4), 1)
    Array([3, 0, 1, 2], dtype=int32)
    """
    a = array_operand("roll", a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), _aval(a).shape)
    nd = _aval(a).ndim
    axes = tuple(canonicalize_axis(i, nd, "roll") for i in _index_tuple(axis, "roll", "axis"))
    if isinstance(shift, core.Tracer) and shift.to_concrete_value() is None:
        return _roll_dynamic(a, shift, axes)
    shifts = _index_tuple(shift, "roll", "shift")
    try:
        pairs = zip(*np.broadcast_arrays(np.asarray(axes), np.asarray(shifts)))
    except ValueError:
        raise ValueError(f"roll: shift {shifts} and axis {axes} must have the same length (or "
                         "one of them length 1)") from None
    for ax, s in pairs:
        n = _aval(a).shape[ax]
        i = int(-s) % n if n else 0
        if i:
            a = lax.concatenate([lax.slice_in_dim(a, i, n, 1, ax),
                                 lax.slice_in_dim(a, 0, i, 1, ax)], int(ax))
    return a


def _roll_dynamic(a, shift, axes):
    if _aval(shift).dtype.kind not in "iu":
        raise TypeError(f"roll: shift must be an integer, got {_aval(shift).dtype.name}")
    if _aval(shift).ndim > 1:
        raise ValueError(f"roll: shift must be a scalar or 1-D, got shape {_aval(shift).shape}")
    k = max(len(axes), _aval(shift).shape[0] if _aval(shift).ndim else 1)
    if len(axes) not in (1, k):
        raise ValueError(f"roll: shift of shape {_aval(shift).shape} and axis {axes} must have "
                         "the same length (or one of them length 1)")
    i32 = dtypes.canonicalize_dtype(np.int32)
    shift = broadcast_to(lax.convert_element_type(shift, i32), (k,))
    for j, ax in enumerate(axes * k if len(axes) == 1 else axes):
        n = _aval(a).shape[ax]
        if n == 0:
            continue
        s = lax.index_in_dim(shift, j, 0, keepdims=False)
        s = lax.rem(lax.add(lax.rem(s, np.int32(n)), np.int32(n)), np.int32(n))
        doubled = lax.concatenate([a, a], ax)
        a = lax.dynamic_slice_in_dim(doubled, lax.sub(np.int32(n), s), n, ax)
    return a


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (from the first towards the
    second axis)."""
    m = array_operand("rot90", m)
    nd = _aval(m).ndim
    axes = _index_tuple(axes, "rot90", "axes")
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got axes={axes}")
    if nd < 2:
        raise ValueError(f"rot90 requires an array of at least 2 dimensions, got shape "
                         f"{_aval(m).shape}")
    a0, a1 = (canonicalize_axis(ax, nd, "rot90") for ax in axes)
    if a0 == a1:
        raise ValueError(f"rot90: axes must be different, got axes={axes}")
    k = operator.index(static_value(k, "rot90", "k")) % 4
    if k == 0:
        return m
    if k == 2:
        return lax.rev(m, (a0, a1))
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return lax.transpose(lax.rev(m, (a1,)), perm)
    return lax.rev(lax.transpose(m, perm), (a1,))


# --- grids ---


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-D coordinate vectors; a list.

    ``indexing='xy'`` (Cartesian) swaps the first two output axes, ``'ij'`` (matrix) does not;
    ``sparse=True`` returns arrays with size-1 axes instead of full grids.

    >>> import functrax.numpy as fnp
    >>> [g.shape for g in fnp.meshgrid(fnp.arange(3), fnp.arange(2))]
    [(2, 3), (2, 3)]
    """
    check_arraylike("meshgrid", *xi)
    args = [asarray_operand(x) for x in xi]
    if any(_aval(a).ndim != 1 for a in args):
        raise ValueError(f"meshgrid: arguments must be 1-D, got shapes "
                         f"{[_aval(a).shape for a in args]}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: valid values for indexing are 'xy' and 'ij', got "
                         f"{indexing!r}")
    n = len(args)
    pos = list(range(n))
    if indexing == "xy" and n >= 2:
        pos[0], pos[1] = 1, 0
    full = [0] * n
    for a, p in zip(args, pos):
        full[p] = _aval(a).shape[0]
    out = []
    for a, p in zip(args, pos):
        shape = [1] * n if sparse else list(full)
        shape[p] = full[p]
        out.append(lax.broadcast_in_dim(a, shape, (p,)))
    return out


# --- shape queries ---


def ndim(a):
    """The number of dimensions of an array, scalar or (nested) sequence."""
    return len(shape(a))


def shape(a):
    """The shape of an array, scalar or (nested) sequence, as a tuple."""
    if isinstance(a, _ARRAY_TYPES):
        return _aval(a).shape
    return tuple(np.shape(a))


def size(a, axis=None):
    """The number of elements (along ``axis``, an int or a tuple, when given)."""
    s = shape(a)
    if axis is None:
        return int(np.prod(s, dtype=np.int64))
    axes = canonicalize_axes(_index_tuple(axis, "size", "axis"), len(s), "size")
    return int(np.prod([s[i] for i in axes], dtype=np.int64))


__all__ = [
    "append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays",
    "broadcast_shapes", "broadcast_to", "column_stack", "concatenate", "dsplit", "dstack",
    "expand_dims", "flip", "fliplr", "flipud", "hsplit", "hstack", "meshgrid", "moveaxis",
    "ndim", "permute_dims", "ravel", "repeat", "reshape", "roll", "rollaxis", "rot90", "shape",
    "size", "split",
    "squeeze", "stack", "swapaxes", "tile", "transpose", "vsplit", "vstack",
]
