"""``vmap``: automatic batching over pytrees, with in_axes/out_axes prefixes, axis names for
collectives, and ``chunk_size`` to bound peak memory."""
from __future__ import annotations

import collections
import functools
import inspect
import operator

from functrax import core
from functrax import primitives as P
from functrax.transforms.batching import AxisData, BatchTrace, BatchTracer, matchaxis
from functrax.tree_util import (
    broadcast_prefix, keystr, tree_flatten, tree_flatten_with_path, tree_unflatten,
)


def _check_axes_spec(spec, what):
    if what == "in_axes" and isinstance(spec, dict):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                        "to the positional arguments passed to the function, but got "
                        f"{spec}.")
    leaves, _ = tree_flatten(spec, is_leaf=lambda x: x is None)
    for leaf in leaves:
        if leaf is not None and (not isinstance(leaf, int) or isinstance(leaf, bool)):
            raise TypeError(f"vmap {what} must be an int, None, or (nested) container with those "
                            f"types as leaves, but got {spec}.")


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, chunk_size=None,
         spmd_axis_name=None):
    """Vectorize ``fun`` over a mapped axis of its arguments.

    Args:
      fun: function of arrays (pytrees allowed).
      in_axes: an int, None, or a tuple with one entry per positional argument, each a
        pytree prefix of its argument (int: the mapped axis, None: not mapped). Keyword
        arguments are mapped over axis 0.
      out_axes: like ``in_axes`` for the outputs (None: the output must not be batched).
      axis_name: a name for collectives (``lax.psum(x, axis_name)``, ...).
      axis_size: the batch size, needed when nothing is mapped.
      chunk_size: evaluate the batch ``chunk_size`` rows at a time (bounds peak memory;
        results are identical).

    Raises:
      ValueError: for inconsistent mapped sizes (naming each argument and axis), axes out
        of range, or a batched output whose out_axes is None.

    >>> import functrax.numpy as fnp
    >>> vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(fnp.arange(4.0))
    Array([-1.5, -0.5,  0.5,  1.5], dtype=float32)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap chunk_size must be a positive int, got {chunk_size!r}")

    @functools.wraps(fun)
    def vmap_f(*args, **kwargs):
        if not args and not kwargs and axis_size is None:
            raise ValueError("vmap wrapped function must be passed at least one argument "
                             "containing an array, got empty *args=() and **kwargs={}")
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                             "corresponding to the positional arguments passed to the function, "
                             f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
        spec = (in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args),
                {k: 0 for k in kwargs})
        tree = (args, kwargs)
        flat, in_tree = tree_flatten(tree)
        try:
            flat_axes = broadcast_prefix(spec, tree, is_leaf=lambda x: x is None)
        except ValueError:
            raise ValueError(f"vmap in_axes specification must be a tree prefix of the "
                             f"corresponding value, got specification {in_axes} for value tree "
                             f"{tree_flatten(args)[1]}.") from None
        names = _leaf_names(fun, args, kwargs)
        flat_axes = [_normalize_in_axis(ax, x, n) for ax, x, n in zip(flat_axes, flat, names)]
        size = _batch_size(fun, flat, flat_axes, names, axis_size)
        call = functools.partial(_vmap_call, fun, in_tree, axis_name, out_axes)
        if chunk_size is not None and chunk_size < size:
            return _chunked(call, flat, flat_axes, size, chunk_size, axis_name)
        return call(flat, flat_axes, size)[0]

    return vmap_f


def _leaf_names(fun, args, kwargs):
    """One name per flattened leaf, as JAX words them: ``argument x['w']``, ``kwargs['b']``
    (leaves are flattened positional arguments first, then keyword arguments by key)."""
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = f"argument {params[i]}" if i < len(params) else f"argument args[{i}]"
        names.extend(base + keystr(p) for p, _ in tree_flatten_with_path(a)[0])
    for k in sorted(kwargs):
        names.extend(f"kwargs[{k!r}]" + keystr(p)
                     for p, _ in tree_flatten_with_path(kwargs[k])[0])
    return names


def _normalize_in_axis(ax, x, name):
    if ax is None:
        return None
    if not core.is_arraylike(x):
        raise ValueError(f"vmap was asked to map {name} of type {type(x).__name__} "
                         "along an axis, but only arrays can be mapped; use in_axes=None for it")
    shape = core.get_aval(x).shape
    if not -len(shape) <= ax < len(shape):
        raise ValueError(f"vmap was requested to map its argument along axis {ax}, which "
                         f"implies that its rank should be at least {max(ax + 1, -ax)}, but is "
                         f"only {len(shape)} (its shape is {shape})")
    return ax % len(shape)


def _batch_size(fun, flat, flat_axes, names, axis_size):
    sizes = {core.get_aval(x).shape[ax] for x, ax in zip(flat, flat_axes) if ax is not None}
    if axis_size is not None:
        sizes.add(operator.index(axis_size))
    if not sizes:
        raise ValueError("vmap must have at least one non-None value in in_axes (or be given "
                         "axis_size)")
    if len(sizes) > 1:
        raise ValueError(inconsistent_sizes_msg(flat, flat_axes, names, axis_size))
    return sizes.pop()


def inconsistent_sizes_msg(flat, flat_axes, names, axis_size):
    """JAX's text: the most common size first ("most axes (N of them) had size ...")."""
    mapped = [(core.get_aval(x).shape[ax], ax,
               f"{n} of type {core.get_aval(x).str_short(short_dtypes=False)}")
              for x, ax, n in zip(flat, flat_axes, names) if ax is not None]
    counts = collections.Counter(sz for sz, _, _ in mapped).most_common()
    lines = []
    for k, (sz, ct) in enumerate(counts):
        _, ax, where = next(m for m in mapped if m[0] == sz)
        if ct == 1:
            lines.append(f"  * one axis had size {sz}: axis {ax} of {where}")
        else:
            many = "most" if k == 0 else "some"
            lines.append(f"  * {many} axes ({ct} of them) had size {sz}, e.g. axis {ax} of "
                         f"{where}")
    if axis_size is not None:
        lines.append(f"  * axis_size was given as {axis_size}")
    return "vmap got inconsistent sizes for array axes to be mapped:\n" + ";\n".join(lines)


def _vmap_call(fun, in_tree, axis_name, out_axes, flat, flat_axes, size):
    trace = BatchTrace(core.current_trace(), AxisData(axis_name, size))
    with core.extend_axis_env(axis_name, size), core.new_trace(trace):
        ins = [x if ax is None else BatchTracer(trace, x, ax) for x, ax in zip(flat, flat_axes)]
        args, kwargs = tree_unflatten(in_tree, ins)
        out = fun(*args, **kwargs)
        out_flat, out_tree = tree_flatten(out)
        pairs = [trace.lift(o) for o in out_flat]
    del ins, args, kwargs
    out = tree_unflatten(out_tree, [v for v, _ in pairs])  # the structure, without tracers
    del out_flat
    core.ensure_no_leaks(trace)
    try:
        flat_out_axes = broadcast_prefix(out_axes, out, is_leaf=lambda x: x is None)
        spec_paths, spec_tree = tree_flatten_with_path(out_axes, is_leaf=lambda x: x is None)
        which = broadcast_prefix(tree_unflatten(spec_tree, list(range(len(spec_paths)))), out,
                                 is_leaf=lambda x: x is None)
    except ValueError:
        raise ValueError(f"vmap out_axes specification must be a tree prefix of the "
                         f"corresponding value, got specification {out_axes} for value tree "
                         f"{out_tree}.") from None
    outs, norm_axes = [], []
    for (val, bdim), ax, w in zip(pairs, flat_out_axes, which):
        if ax is None and bdim is not None:
            if axis_name is not None:
                raise ValueError(f"vmap has mapped output (axis_name={axis_name!r}) but "
                                 "out_axes is None")
            raise ValueError(f"at vmap out_axes{keystr(spec_paths[w][0])}, got axis spec None "
                             f"but output was batched on axis {bdim}")
        if ax is not None:
            nd = core.get_aval(val).ndim + (bdim is None)
            if not -nd <= ax < nd:
                raise ValueError(f"vmap out_axes={ax} is out of range for an output of rank "
                                 f"{nd} (with the mapped axis)")
            ax %= nd
            if not core.is_arraylike(val):
                val = core.Array(val)
        outs.append(matchaxis(size, bdim, ax, val) if ax is not None else val)
        norm_axes.append(ax)
    return tree_unflatten(out_tree, outs), norm_axes


def _chunked(call, flat, flat_axes, size, chunk, axis_name):
    if axis_name is not None:
        raise NotImplementedError("vmap chunk_size cannot be combined with axis_name: "
                                  "collectives would only see one chunk of the batch")
    results = []
    for start in range(0, size, chunk):
        stop = min(start + chunk, size)
        part = [x if ax is None else P.slice_in_dim(x, start, stop, axis=ax)
                for x, ax in zip(flat, flat_axes)]
        results.append(call(part, flat_axes, stop - start))
    return _concat_chunks(results)


def _concat_chunks(results):
    """Join per-chunk outputs along each output's mapped axis."""
    _, tree = tree_flatten(results[0][0])
    per_chunk = [tree_flatten(r)[0] for r, _ in results]
    axes = results[0][1]
    out = [per_chunk[0][i] if ax is None else P.concatenate([p[i] for p in per_chunk], ax)
           for i, ax in enumerate(axes)]
    return tree_unflatten(tree, out)
