"""``lax.associative_scan``: inclusive prefix combination with an associative function in
O(log n) levels of whole-array operations (the Blelloch-style odd/even recursion), and
``lax.platform_dependent``: the branch for the platform of the default device.

>>> import functrax.numpy as fnp
>>> from functrax import lax
>>> associative_scan(lax.add, fnp.arange(5.0))
Array([ 0.,  1.,  3.,  6., 10.], dtype=float32)
"""
from __future__ import annotations

import operator

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.runtime.devices import default_backend
from functrax.tree_util import tree_flatten, tree_unflatten


def _take(x, axis, start, stop, step=1):
    """``x[start:stop:step]`` along ``axis`` (``stop`` at most the size)."""
    n = core.get_aval(x).shape[axis]
    stop = min(stop, n)
    if start >= stop:
        shape = list(core.get_aval(x).shape)
        shape[axis] = 0
        return P.full(tuple(shape), 0, core.get_aval(x).dtype)
    return P.slice_in_dim(x, start, stop, step, axis)


def _interleave(evens, odds, axis):
    """Elements ``e0 o0 e1 o1 ...`` along ``axis`` (``len(evens)`` is ``len(odds)`` or one
    more): both padded with interior zeros, then added (or-ed for booleans)."""
    ne, no = core.get_aval(evens).shape[axis], core.get_aval(odds).shape[axis]
    nd = core.get_aval(evens).ndim

    def pad(x, lo, hi):
        cfg = [(0, 0, 0)] * nd
        cfg[axis] = (lo, hi, 1)
        return P.pad(x, np.zeros((), core.get_aval(x).dtype)[()], cfg)
    a = pad(evens, 0, 1 if ne == no else 0)
    b = pad(odds, 1, 0 if ne == no else 1)
    dt = core.get_aval(a).dtype
    return P.bitwise_or(a, b) if dt == np.bool_ else P.add(a, b)


def associative_scan(fn, elems, reverse=False, axis=0):
    """The inclusive scan ``[e0, fn(e0, e1), fn(fn(e0, e1), e2), ...]`` along ``axis`` for an
    associative ``fn`` on pytrees of arrays (applied to whole slices at once).

    Args:
      fn: associative, elementwise over the leading ``axis`` (``fn(a, b)`` with ``a`` and
        ``b`` pytrees like ``elems`` whose arrays have equal sizes along ``axis``).
      elems: a pytree of arrays with one size along ``axis``.
      reverse: scan from the end.
      axis: the axis scanned.

    Raises:
      ValueError: when the arrays differ in size along ``axis``.
    """
    flat, tree = tree_flatten(elems)
    if not flat:
        return elems
    flat = [core.as_array(x) if not isinstance(x, core.Tracer) else x for x in flat]
    nd = core.get_aval(flat[0]).ndim
    axis = operator.index(axis)
    if not -nd <= axis < nd:
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for rank {nd}")
    axis %= nd
    sizes = [core.get_aval(x).shape[axis] for x in flat]
    if len(set(sizes)) > 1:
        raise ValueError(f"Array inputs to associative_scan must have the same first "
                         f"dimension. (saw: {[core.get_aval(x).shape for x in flat]})")
    if reverse:
        flat = [P.rev(x, (axis,)) for x in flat]

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        out_flat, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"associative_scan: fn must return the structure of elems "
                            f"{tree}, got {out_tree}")
        return out_flat

    def scan(xs):
        n = core.get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        # pairs (x0, x1), (x2, x3), ... combined, scanned recursively: the odd positions
        pairs = combine([_take(x, axis, 0, n - 1, 2) for x in xs],
                        [_take(x, axis, 1, n, 2) for x in xs])
        odd = scan(pairs)
        # the even positions 2, 4, ...: the previous odd result combined with the element
        tail = [_take(x, axis, 2, n, 2) for x in xs]
        prev = [_take(o, axis, 0, core.get_aval(t).shape[axis]) for o, t in zip(odd, tail)]
        even = combine(prev, tail) if core.get_aval(tail[0]).shape[axis] else tail
        even = [P.concatenate([_take(x, axis, 0, 1), e], axis) for x, e in zip(xs, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(flat)
    if reverse:
        out = [P.rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)


_PLATFORM_ALIASES = {"gpu": ("cuda", "gpu"), "cpu": ("cpu",)}


def platform_dependent(*args, default=None, **per_platform):
    """``per_platform[p](*args)`` for the platform ``p`` of the default device (``"cpu"``, or
    ``"cuda"``/``"gpu"`` with a GPU), else ``default(*args)``.

    Raises:
      NotImplementedError: when neither a branch for the platform nor a default is given.
    """
    platform = default_backend()
    for name in _PLATFORM_ALIASES.get(platform, (platform,)):
        if name in per_platform:
            return per_platform[name](*args)
    if default is None:
        raise NotImplementedError(f"platform_dependent: no branch for platform {platform!r} "
                                  f"(branches: {sorted(per_platform)}) and no default")
    return default(*args)


__all__ = ["associative_scan", "platform_dependent"]
