"""``pad``'s statistic modes (maximum/minimum/mean/median) and ``linear_ramp``, as JAX's.

Each axis is padded in turn (so later axes see the earlier padding, as numpy and JAX): the
statistic of the first/last ``stat_length`` entries (the whole axis by default), rounded half
to even for integer dtypes, is repeated ``pad_width`` times; ``linear_ramp`` runs from the
``end_values`` towards the edge value (``linspace(..., endpoint=False)``: floored for ints).
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes, lax

STAT_MODES = ("maximum", "minimum", "mean", "median")


def _aval(x):
    return core.get_aval(x)


def static_pairs(value, nd, name, integral):
    """A static scalar / pair / per-axis pairs as a (nd, 2) numpy array (JAX's shapes)."""
    from functrax.numpy.shape_ops import _static
    v = _static(value, "pad", name)
    try:
        arr = np.asarray(v)
    except ValueError:
        arr = np.empty(0, object)
    if arr.dtype.kind == "O":
        raise TypeError(f"pad: `{name}` entries must be the same shape, got {value!r}")
    if arr.dtype.kind not in ("iu" if integral else "biuf"):
        kind = "integers" if integral else "real numbers"
        raise TypeError(f"pad: `{name}` must hold {kind}, got {value!r} (dtype {arr.dtype})")
    if arr.shape not in ((nd, 2), (1, 2), (2,), (1,), ()):
        raise ValueError(f"pad: {name} with nd={nd} has unsupported shape {arr.shape}. Valid "
                         f"shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")
    if arr.shape != (nd, 2):
        arr = np.broadcast_to(arr.reshape(-1)[:2] if arr.size else arr, (nd, 2))
    return arr


def stat_lengths(stat_length, nd, mode):
    """Validated per-axis (before, after) stat lengths, or None (the whole axis)."""
    if stat_length is None:
        return None
    arr = static_pairs(stat_length, nd, "stat_length", integral=True)
    if (arr < 0).any():
        raise ValueError(f"pad: stat_length can't contain negative values, got "
                         f"{stat_length!r}")
    if (arr == 0).any():
        raise ValueError(f"pad: stat_length of 0 yields no value for padding (mode '{mode}', "
                         f"stat_length={stat_length!r}); use positive lengths")
    return [tuple(int(v) for v in p) for p in arr]


def _block(x, ax, n):
    """``x`` (size 1 along ``ax``) repeated ``n`` times along ``ax``."""
    shape = list(_aval(x).shape)
    shape[ax] = n
    return lax.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape))))


def _join(before, a, after, ax):
    parts = [p for p in (before, a, after) if p is not None and _aval(p).shape[ax] > 0]
    return lax.concatenate(parts, ax) if len(parts) > 1 else a


def _stat_fn(mode):
    from functrax.numpy import reductions, sorting
    return {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean,
            "median": sorting.median}[mode]


def stat_axis(mode, lengths):
    """A ``pad_axis(a, axis, before, after, n)`` for a statistic mode."""
    from functrax.numpy.shape_ops import _slice_ax
    from functrax.numpy.ufuncs import round as _round
    fn = _stat_fn(mode)

    def stat(x, ax, like):
        s = fn(x, axis=ax, keepdims=True)
        aval = _aval(like)
        if dtypes.is_int(aval.dtype):
            s = _round(s)
        return lax.convert_element_type(s, aval.dtype, aval.weak_type)

    def pad_axis(a, i, lo, hi, n):
        if lengths is None:
            before = after = stat(a, i, a)
        else:
            lb, la = min(lengths[i][0], n), min(lengths[i][1], n)
            before = stat(_slice_ax(a, 0, lb, i), i, a) if lo else None
            after = stat(_slice_ax(a, n - la, n, i), i, a) if hi else None
        return _join(_block(before, i, lo) if lo else None, a,
                     _block(after, i, hi) if hi else None, i)
    return pad_axis


def ramp_axis(end_values, nd):
    """A ``pad_axis(a, axis, before, after, n)`` for ``linear_ramp``."""
    from functrax.numpy.creation import linspace
    from functrax.numpy.shape_ops import _slice_ax
    ends = static_pairs(end_values, nd, "end_values", integral=False)

    def ramp(a, i, end, edge, width):
        aval = _aval(a)
        shape = tuple(d for k, d in enumerate(aval.shape) if k != i)
        stop = lax.reshape(edge, shape)
        r = linspace(end[()], stop, num=width, endpoint=False, dtype=aval.dtype, axis=i)
        return lax.convert_element_type(r, aval.dtype, aval.weak_type)

    def pad_axis(a, i, lo, hi, n):
        before = ramp(a, i, ends[i, 0], _slice_ax(a, 0, 1, i), lo) if lo else None
        after = ramp(a, i, ends[i, 1], _slice_ax(a, n - 1, n, i), hi) if hi else None
        return _join(before, a, None if after is None else lax.rev(after, (i,)), i)
    return pad_axis
