"""``functrax.numpy.pad``: every numpy/JAX padding mode (constant, edge, wrap, reflect,
symmetric, and the statistic and ramp modes), composed from lax slices, reductions,
broadcasts and concatenations so that it works on tracers and is differentiable.
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy.promotion import array_operand, static_value

_PAD_KWARGS = {"constant": {"constant_values"}, "edge": set(), "wrap": set(), "empty": set(),
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "linear_ramp": {"end_values"}, "maximum": {"stat_length"},
               "minimum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"}}


def _pad_pairs(pad_width, nd):
    pw = static_value(pad_width, "pad", "pad_width")
    try:
        arr = np.asarray(pw)
    except ValueError:
        arr = np.empty(0, object)
    if arr.dtype.kind == "O":
        raise TypeError(f"pad: `pad_width` entries must be the same shape, got {pad_width!r}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"pad: `pad_width` must be of integral type, got {pad_width!r}")
    arr = arr.astype(np.int64)
    if arr.shape not in ((nd, 2), (1, 2), (2,), (1,), ()):
        raise ValueError(f"pad: pad_width with nd={nd} has unsupported shape {arr.shape}. Valid "
                         f"shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")
    if (arr < 0).any():
        raise ValueError(f"pad: pad_width can't contain negative values, got {pad_width!r}")
    return [tuple(int(v) for v in p) for p in np.broadcast_to(arr.reshape(-1)[:2] if arr.shape
                                                              != (nd, 2) else arr, (nd, 2))]


def _scalar_at(x, i, j):
    return lax.reshape(lax.slice(x, (i, j), (i + 1, j + 1)), ())


def _pad_constant(a, pw, constant_values):
    from functrax.numpy.creation import asarray
    aval = core.get_aval(a)
    nd = aval.ndim
    cv = lax.convert_element_type(asarray(constant_values), aval.dtype, aval.weak_type)
    cshape = core.get_aval(cv).shape
    if cshape == ():
        return lax.pad(a, cv, [(lo, hi, 0) for lo, hi in pw])
    try:
        cv = lax.broadcast_in_dim(cv, (nd, 2), tuple(range(2 - len(cshape), 2)))
    except TypeError:
        raise ValueError(f"pad: constant_values of shape {cshape} do not broadcast to ({nd}, 2) "
                         "(one (before, after) pair per axis)") from None
    for i, (lo, hi) in enumerate(pw):
        widths = [(0, 0, 0)] * nd
        widths[i] = (lo, 0, 0)
        a = lax.pad(a, _scalar_at(cv, i, 0), widths)
        widths[i] = (0, hi, 0)
        a = lax.pad(a, _scalar_at(cv, i, 1), widths)
    return a


def _slice_ax(a, start, stop, ax):
    n = core.get_aval(a).shape[ax]
    start, stop, _ = slice(start, stop).indices(n)
    return lax.slice_in_dim(a, start, max(start, stop), 1, ax)


def _edge_block(a, ax, n_pad, before):
    edge = _slice_ax(a, 0, 1, ax) if before else _slice_ax(a, -1, None, ax)
    shape = list(core.get_aval(a).shape)
    shape[ax] = n_pad
    return lax.broadcast_in_dim(edge, shape, tuple(range(len(shape))))


def _edge_axis(a, i, lo, hi, n):
    return lax.concatenate([_edge_block(a, i, lo, True), a, _edge_block(a, i, hi, False)], i)


def _wrap_axis(a, i, lo, hi, n):
    (lrep, lrem), (rrep, rrem) = divmod(lo, n), divmod(hi, n)
    parts = [_slice_ax(a, n - lrem, n, i)] if lrem else []
    parts += [a] * (lrep + rrep + 1)
    parts += [_slice_ax(a, 0, rrem, i)] if rrem else []
    return lax.concatenate(parts, i)


def _reflect_side(a, ax, padding, before, n, mode, odd):
    offset = 1 if mode == "reflect" else 0
    edge = _slice_ax(a, 0, 1, ax) if before else _slice_ax(a, -1, None, ax)
    while padding > 0:
        cur = min(padding, n - offset)
        padding -= cur
        if before:
            x = _slice_ax(a, offset, offset + cur, ax)
        else:
            x = _slice_ax(a, -(cur + offset), None if offset == 0 else -offset, ax)
        x = lax.rev(x, (ax,))
        if odd:
            shape = core.get_aval(x).shape
            e = lax.broadcast_in_dim(edge, shape, tuple(range(len(shape))))
            x = lax.sub(lax.mul(e, 2), x)
        if n > 1:
            edge = _slice_ax(x, 0, 1, ax) if before else _slice_ax(x, -1, None, ax)
        a = lax.concatenate([x, a] if before else [a, x], ax)
    return a


def _reflect_axis(mode, reflect_type):
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")

    def pad_axis(a, i, lo, hi, n):
        if n == 1 and mode == "reflect":  # nothing to reflect: numpy repeats the edge
            return _edge_axis(a, i, lo, hi, n)
        a = _reflect_side(a, i, lo, True, n, mode, reflect_type == "odd")
        return _reflect_side(a, i, hi, False, n, mode, reflect_type == "odd")
    return pad_axis


def _pad_each_axis(a, pw, mode, pad_axis):
    for i, (lo, hi) in enumerate(pw):
        n = core.get_aval(a).shape[i]
        if n == 0:
            if lo > 0 or hi > 0:
                raise ValueError(f"pad: cannot apply '{mode}' padding to an empty axis (axis "
                                 f"{i} of shape {core.get_aval(a).shape}); use mode='constant'")
            continue
        a = pad_axis(a, i, lo, hi, n)
    return a


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad ``array``; ``pad_width`` is an int, a ``(before, after)`` pair, or one pair per axis.

    Modes: ``'constant'`` (``constant_values``: a scalar, a pair or one pair per axis),
    ``'edge'``, ``'reflect'`` and ``'symmetric'`` (``reflect_type`` 'even' or 'odd'),
    ``'wrap'``, ``'empty'`` (zeros), ``'maximum'``/``'minimum'``/``'mean'``/``'median'``
    (static ``stat_length``: the statistic of that many edge entries, the whole axis by
    default; rounded half to even for ints) and ``'linear_ramp'`` (static ``end_values``,
    default 0; floored for ints, as JAX). ``pad_width`` must be static.

    >>> import functrax.numpy as fnp
    >>> fnp.pad(fnp.array([1, 2, 3]), (1, 2), mode="reflect")
    Array([2, 1, 2, 3, 2, 1], dtype=int32)
    """
    array = array_operand("pad", array)
    if not isinstance(mode, str):
        raise NotImplementedError("pad: a callable `mode` is not supported; use one of "
                                  f"{sorted(_PAD_KWARGS)}")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"pad: unimplemented padding mode '{mode}'; supported modes: "
                         f"{sorted(_PAD_KWARGS)}")
    extra = set(kwargs) - _PAD_KWARGS[mode]
    if extra:
        raise ValueError(f"pad: unsupported keyword arguments for mode '{mode}': "
                         f"{sorted(extra)}")
    nd = core.get_aval(array).ndim
    pw = _pad_pairs(pad_width, nd)
    if mode in ("constant", "empty"):
        return _pad_constant(array, pw, kwargs.get("constant_values", 0))
    return _pad_each_axis(array, pw, mode, _pad_axis_fn(mode, nd, kwargs))


def _pad_axis_fn(mode, nd, kwargs):
    if mode in STAT_MODES:
        lengths = stat_lengths(kwargs.get("stat_length"), nd, mode)
        return stat_axis(mode, lengths)
    if mode == "linear_ramp":
        return ramp_axis(kwargs.get("end_values", 0), nd)
    if mode in ("edge", "wrap"):
        return _edge_axis if mode == "edge" else _wrap_axis
    return _reflect_axis(mode, kwargs.get("reflect_type", "even"))


# --- statistic and ramp modes ---


STAT_MODES = ("maximum", "minimum", "mean", "median")


def static_pairs(value, nd, name, integral):
    """A static scalar / pair / per-axis pairs as a (nd, 2) numpy array (JAX's shapes)."""
    v = static_value(value, "pad", name)
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
    shape = list(core.get_aval(x).shape)
    shape[ax] = n
    return lax.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape))))


def _join(before, a, after, ax):
    parts = [p for p in (before, a, after) if p is not None and core.get_aval(p).shape[ax] > 0]
    return lax.concatenate(parts, ax) if len(parts) > 1 else a


def _stat_fn(mode):
    from functrax.numpy import reductions, sorting
    return {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean,
            "median": sorting.median}[mode]


def stat_axis(mode, lengths):
    """A ``pad_axis(a, axis, before, after, n)`` for a statistic mode."""
    from functrax.numpy.ufuncs import round as _round
    fn = _stat_fn(mode)

    def stat(x, ax, like):
        s = fn(x, axis=ax, keepdims=True)
        aval = core.get_aval(like)
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
    ends = static_pairs(end_values, nd, "end_values", integral=False)

    def ramp(a, i, end, edge, width):
        aval = core.get_aval(a)
        shape = tuple(d for k, d in enumerate(aval.shape) if k != i)
        stop = lax.reshape(edge, shape)
        r = linspace(end[()], stop, num=width, endpoint=False, dtype=aval.dtype, axis=i)
        return lax.convert_element_type(r, aval.dtype, aval.weak_type)

    def pad_axis(a, i, lo, hi, n):
        before = ramp(a, i, ends[i, 0], _slice_ax(a, 0, 1, i), lo) if lo else None
        after = ramp(a, i, ends[i, 1], _slice_ax(a, n - 1, n, i), hi) if hi else None
        return _join(before, a, None if after is None else lax.rev(after, (i,)), i)
    return pad_axis


__all__ = ["pad"]
