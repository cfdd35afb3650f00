"""Shape manipulation of ``functrax.numpy``: reshape, transpose, stack, split, pad, tile, ..."""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, lax
from functrax.numpy._util import (
    asarray_operand, broadcast_shapes_named, broadcast_to_shape, canonicalize_axes,
    canonicalize_axis, check_arraylike, promote_dtypes,
)


def _aval(x):
    return core.get_aval(x)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Reshape ``a``; one dimension may be -1 (inferred).

    >>> import functrax.numpy as fnp
    >>> fnp.arange(6).reshape(2, 3).shape
    (2, 3)
    """
    if shape is None:
        shape = newshape
    if order != "C":
        raise NotImplementedError("functrax.numpy.reshape: only order='C' is supported")
    a = asarray_operand(a)
    size = _aval(a).size
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(
        operator.index(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: can only specify one unknown dimension, got {shape}")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        if known == 0 or size % known:
            raise TypeError(f"reshape: cannot reshape array of shape {_aval(a).shape} (size "
                            f"{size}) into shape {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if int(np.prod(shape)) != size:
        raise TypeError(f"reshape: cannot reshape array of shape {_aval(a).shape} (size {size}) "
                        f"into shape {shape} (size {int(np.prod(shape))})")
    return lax.reshape(a, shape)


def ravel(a, order="C"):
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    """Permute the axes of ``a`` (reverse them when ``axes`` is None)."""
    a = asarray_operand(a)
    nd = _aval(a).ndim
    axes = tuple(range(nd))[::-1] if axes is None else tuple(
        canonicalize_axis(i, nd, "transpose") for i in axes)
    if sorted(axes) != list(range(nd)):
        raise ValueError(f"transpose: axes {axes} don't match array of shape {_aval(a).shape}")
    return lax.transpose(a, axes)


def moveaxis(a, source, destination):
    a = asarray_operand(a)
    nd = _aval(a).ndim
    src = canonicalize_axes(source if isinstance(source, (tuple, list)) else (source,), nd,
                            "moveaxis")
    dst = canonicalize_axes(destination if isinstance(destination, (tuple, list))
                            else (destination,), nd, "moveaxis")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of "
                         "elements")
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(a, perm)


def swapaxes(a, axis1, axis2):
    a = asarray_operand(a)
    nd = _aval(a).ndim
    perm = list(range(nd))
    i, j = canonicalize_axis(axis1, nd, "swapaxes"), canonicalize_axis(axis2, nd, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def expand_dims(a, axis):
    a = asarray_operand(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = _aval(a).ndim + len(axes)
    return lax.expand_dims(a, canonicalize_axes(axes, nd, "expand_dims"))


def squeeze(a, axis=None):
    a = asarray_operand(a)
    shape = _aval(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = canonicalize_axes(axis, len(shape), "squeeze")
        for i in axes:
            if shape[i] != 1:
                raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size "
                                 f"not equal to one, got shape={shape} and dimensions={axes}")
    return lax.squeeze(a, axes)


def broadcast_to(array, shape):
    check_arraylike("broadcast_to", array)
    array = asarray_operand(array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        return broadcast_to_shape(array, shape)
    except ValueError:
        raise ValueError(f"broadcast_to: incompatible shapes for broadcasting: "
                         f"{_aval(array).shape} -> {shape}") from None


def broadcast_arrays(*args):
    shape = broadcast_shapes_named("broadcast_arrays", *[np.shape(a) if not isinstance(
        a, (core.Array, core.Tracer)) else a.shape for a in args])
    return [broadcast_to(a, shape) for a in args]


def broadcast_shapes(*shapes):
    return broadcast_shapes_named("broadcast_shapes", *shapes)


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing ``axis`` (None: flatten first)."""
    if not len(arrays):
        raise ValueError("Need at least one array to concatenate.")
    check_arraylike("concatenate", *arrays)
    arrays = [asarray_operand(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = promote_dtypes(*arrays)
    if dtype is not None:
        arrays = [lax.convert_element_type(a, dtype) for a in arrays]
    arrays = [asarray_operand(a) for a in arrays]
    nd = _aval(arrays[0]).ndim
    if nd == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    if any(_aval(a).ndim != nd for a in arrays):
        raise ValueError(f"concatenate: all input arrays must have the same number of dimensions, "
                         f"got shapes {[_aval(a).shape for a in arrays]}")
    return lax.concatenate(arrays, canonicalize_axis(axis, nd, "concatenate"))


def stack(arrays, axis=0, dtype=None):
    """Join arrays along a new ``axis``."""
    if not len(arrays):
        raise ValueError("Need at least one array to stack.")
    arrays = [asarray_operand(a) for a in arrays]
    shapes = {_aval(a).shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got "
                         f"{[_aval(a).shape for a in arrays]}")
    nd = _aval(arrays[0]).ndim + 1
    axis = canonicalize_axis(axis, nd, "stack")
    return concatenate([lax.expand_dims(a, (axis,)) for a in arrays], axis, dtype)
