"""Collective primitives over named axes (bound by ``vmap(..., axis_name=...)``, later pmap).

Each abstract evaluation checks that every axis name it uses is bound
(``core.axis_frame`` raises ``NameError: unbound axis name: ...`` otherwise) and takes the
named axis size from there. Parameters and names follow JAX: ``psum``/``pmax``/``pmin``
(``axes``), ``all_gather`` (``all_gather_dimension``), ``axis_index``, ``ppermute``
(``perm``), ``all_to_all`` (``split_axis``/``concat_axis``) and ``reduce_scatter`` (the
primitive behind ``lax.psum_scatter``). ``axis_index_groups`` (JAX's: a partition of the
axis' indices into groups; the collective acts within each group) is a tuple of tuples;
under ``pmap`` every collective that takes it honours it, under ``vmap`` over the grouped
axis it raises JAX's NotImplementedError.
"""
from __future__ import annotations

import math

from functrax import core
from functrax.primitives.define import (
    NUMBER, Family, ShapedArray, check_dtype, new_primitive, np,
)
from functrax.tree_util import tree_flatten, tree_map, tree_unflatten
from functrax import dtypes
import operator
from functrax.primitives.elementwise import add, as_operand, convert_element_type, div, mul
from functrax.primitives.shape import expand_dims, full, squeeze
from functrax.primitives.reductions import reduce_max, reduce_min, reduce_sum



def axis_names(axis_name) -> tuple:
    """``axis_name`` as a tuple of names (a single name becomes a 1-tuple)."""
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def axis_size(axis_name) -> int:
    """The size of a named axis, or the product of the sizes of a tuple of names.

    Raises:
      NameError: naming the first unbound axis and listing the bound ones.
    """
    return math.prod(core.axis_frame(n).size for n in axis_names(axis_name))


def canonicalize_groups(fn: str, axis_index_groups):
    """``axis_index_groups`` as a tuple of tuples of ints (None stays None), checked to
    cover ``range(total size)`` exactly once (JAX's ValueError otherwise)."""
    if axis_index_groups is None:
        return None
    try:
        groups = tuple(tuple(operator.index(i) for i in g) for g in axis_index_groups)
    except TypeError:
        raise TypeError(f"{fn}: axis_index_groups must be a sequence of sequences of ints "
                        f"(axis indices), got {axis_index_groups!r}") from None
    if not groups:
        raise ValueError(f"{fn}: axis_index_groups must not be empty; pass None for one "
                         "group of all indices")
    space = range(sum(len(g) for g in groups))
    if {i for g in groups for i in g} != set(space):
        raise ValueError("axis_index_groups must cover all indices exactly once")
    return groups


def group_size(fn: str, groups, size: int, equal: bool = False) -> int:
    """The size of the groups of ``groups`` over an axis of ``size`` (``size`` itself for
    None); ``equal``: the groups must have one size (gathers, scatters, all_to_all)."""
    if groups is None:
        return size
    if equal and any(len(g) != len(groups[0]) for g in groups):
        raise ValueError("axis_index_groups must all be the same size")
    total = sum(len(g) for g in groups)
    if total != size:
        raise ValueError(f"axis_index_groups total size ({total}) must match axis size "
                         f"({size})")
    return len(groups[0])


def _check_groups(prim: str, axis_index_groups, axis_name, equal: bool = False) -> int:
    """Validate a primitive's ``axis_index_groups`` param; returns the group size."""
    if axis_index_groups is not None and canonicalize_groups(
            prim, axis_index_groups) != axis_index_groups:
        raise TypeError(f"{prim}: the axis_index_groups param must be a tuple of tuples of "
                        f"ints, got {axis_index_groups!r}")
    return group_size(prim, axis_index_groups, axis_size(axis_name), equal)


def _check_dim(prim: str, name: str, dim, ndim: int):
    if not isinstance(dim, (int, np.integer)) or not 0 <= dim < ndim:
        raise ValueError(f"{prim}: {name}={dim} is out of range for an operand of rank {ndim} "
                         f"(it must be in [0, {ndim}))")


# --- psum / pmax / pmin ---


def _allreduce(name, accepted):
    p = new_primitive(name, multiple_results=True, family=Family.COLLECTIVE)

    def abstract_eval(*args, axes, axis_index_groups):
        if not isinstance(axes, tuple):
            raise TypeError(f"{name}: axes must be a tuple of axis names, got {axes!r}")
        for a in axes:
            if isinstance(a, (int, np.integer)):
                raise TypeError(f"{name}: the primitive takes named axes only, got the "
                                f"positional axis {a} in axes={axes}; lax.{name} reduces "
                                "positional axes before binding it")
            core.axis_frame(a)
        _check_groups(name, axis_index_groups, axes)
        for x in args:
            check_dtype(name, x.dtype, accepted)
        return [ShapedArray(x.shape, x.dtype) for x in args]

    p.def_abstract_eval(abstract_eval)
    return p


# pvary: the identity, typing its operands as varying over ``axes`` (manual mesh axes of a
# shard_map body with check_vma, as JAX's pvary); inserted by bind where an operand that is
# the same on every device of an axis meets one that varies. Its transpose is psum.
pvary_p = new_primitive("pvary", multiple_results=True, family=Family.COLLECTIVE)
pvary_p.def_abstract_eval(lambda *args, axes, axis_index_groups=None: [
    x.update(vma=getattr(x, "vma", frozenset()) | frozenset(axes)) for x in args])


def pvary(x, axis_name):
    """``x`` typed as varying over the manual mesh axes ``axis_name`` (a name or a tuple of
    names) inside a shard_map body: the same values, as ``jax.lax.pvary``. Outside a body
    with check_vma it returns ``x``."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    leaves, tree = tree_flatten(x)
    if not core.VMA.axes or not leaves:
        return x
    out = [_pvary_leaf(v, names) for v in leaves]
    return tree_unflatten(tree, out)


def _pvary_leaf(v, axes):
    missing = tuple(a for a in axes if a not in core.vma_of(v))
    if not missing:
        return v
    return pvary_p.bind(_leafas_operand(v), axes=missing, axis_index_groups=None)[0]


core.pvary_hook[0] = lambda x, axes: _pvary_leaf(x, tuple(sorted(axes, key=str)))


def vary_like(vals, out_avals):
    """Loop carries (``vals``) made varying over the axes their loop body's outputs vary
    over (inside a shard_map body with check_vma): a carry that starts the same on every
    device but comes back varying is varying from the first iteration on. Returns (vals,
    changed); the caller traces the body again when changed."""
    if not core.VMA.axes or len(vals) != len(out_avals):
        return list(vals), False
    out, changed = [], False
    for x, o in zip(vals, out_avals):
        missing = getattr(o, "vma", frozenset()) - core.vma_of(x)
        if missing and isinstance(x, core.Tracer):
            x, changed = _pvary_leaf(x, tuple(sorted(missing, key=str))), True
        out.append(x)
    return out, changed

psum_p = _allreduce("psum", NUMBER)
pmax_p = _allreduce("pmax", NUMBER + ("bool",))
pmin_p = _allreduce("pmin", NUMBER + ("bool",))


# --- all_gather / reduce_scatter ---


def _check_size(prim, axis_name, size, groups=None):
    actual = _check_groups(prim, groups, axis_name, equal=True)
    if size != actual:
        what = "the size of the axis_index_groups" if groups is not None else "the size"
        raise ValueError(f"{prim}: axis_size={size} does not match {what} {actual} of the "
                         f"named axis {axis_name}")


all_gather_p = new_primitive("all_gather", family=Family.COLLECTIVE)


@all_gather_p.def_abstract_eval
def _all_gather_abstract(x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                         tiled):
    _check_size("all_gather", axis_name, axis_size, axis_index_groups)
    shape = list(x.shape)
    if tiled:
        _check_dim("all_gather", "all_gather_dimension", all_gather_dimension, x.ndim)
        shape[all_gather_dimension] *= axis_size
    else:
        _check_dim("all_gather", "all_gather_dimension", all_gather_dimension, x.ndim + 1)
        shape.insert(all_gather_dimension, axis_size)
    return x.update(shape=tuple(shape))


reduce_scatter_p = new_primitive("reduce_scatter", family=Family.COLLECTIVE)


@reduce_scatter_p.def_abstract_eval
def _reduce_scatter_abstract(x, *, scatter_dimension, axis_name, axis_index_groups, axis_size,
                             tiled):
    _check_size("reduce_scatter", axis_name, axis_size, axis_index_groups)
    check_dtype("reduce_scatter", x.dtype, NUMBER)
    _check_dim("reduce_scatter", "scatter_dimension", scatter_dimension, x.ndim)
    shape = list(x.shape)
    n = shape[scatter_dimension]
    if tiled:
        if n % axis_size:
            raise ValueError(f"tiled reduce_scatter operand scatter dimension size {n} must be "
                             f"divisible by shard_count {axis_size} (operand shape {x.shape})")
        shape[scatter_dimension] = n // axis_size
    else:
        if n != axis_size:
            raise ValueError(f"reduce_scatter operand scatter dimension size {n} must match "
                             f"shard count {axis_size} (operand shape {x.shape}); use "
                             "tiled=True to scatter chunks of a longer dimension")
        del shape[scatter_dimension]
    return x.update(shape=tuple(shape))


# --- axis_index / ppermute / all_to_all ---


axis_index_p = new_primitive("axis_index", family=Family.COLLECTIVE)


@axis_index_p.def_abstract_eval
def _axis_index_abstract(*, axis_name):
    core.axis_frame(axis_name)
    return ShapedArray((), np.int32)


ppermute_p = new_primitive("ppermute", family=Family.COLLECTIVE)


def check_perm(perm, size: int, axis_name) -> None:
    """A ppermute ``perm``: (src, dst) pairs in range(size), sources and destinations unique."""
    if not isinstance(perm, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and all(isinstance(i, (int, np.integer))
                                                         for i in p) for p in perm):
        raise TypeError(f"ppermute: perm must be a sequence of (source, destination) pairs of "
                        f"ints, got {perm!r}")
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
    bad = [i for i in srcs + dsts if not 0 <= i < size]
    if bad:
        raise ValueError(f"ppermute: perm {perm} refers to index {bad[0]}, out of range for "
                         f"the named axis {axis_name} of size {size}")


@ppermute_p.def_abstract_eval
def _ppermute_abstract(x, *, axis_name, perm):
    check_perm(perm, axis_size(axis_name), axis_name)
    return x


all_to_all_p = new_primitive("all_to_all", family=Family.COLLECTIVE)


@all_to_all_p.def_abstract_eval
def _all_to_all_abstract(x, *, split_axis, concat_axis, axis_name, axis_index_groups, tiled):
    del tiled  # the wrapper inserts / removes the axis of an untiled all_to_all
    size = _check_groups("all_to_all", axis_index_groups, axis_name, equal=True)
    _check_dim("all_to_all", "split_axis", split_axis, x.ndim)
    _check_dim("all_to_all", "concat_axis", concat_axis, x.ndim)
    shape = list(x.shape)
    if shape[split_axis] % size:
        raise ValueError(f"The size of all_to_all's split_axis ({shape[split_axis]}) has to be "
                         f"divisible by the size of the named axis {axis_name} ({size})")
    shape[split_axis] //= size
    shape[concat_axis] *= size
    return ShapedArray(tuple(shape), x.dtype)


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---

def _reduce_groups(axis_name, axis_index_groups, fn):
    """A reduction's canonical groups (JAX's checks: named axes only, full cover)."""
    if axis_index_groups is not None and any(map(_is_positional, axis_names(axis_name))):
        raise ValueError("axis_index_groups only supported for sums over just named axes")
    return canonicalize_groups(fn, axis_index_groups)


def _is_positional(a) -> bool:
    return isinstance(a, (int, np.integer)) and not isinstance(a, bool)


def _split_axes(axis_name):
    """(named axes, positional int axes) of a collective's ``axis_name``."""
    names = axis_names(axis_name)
    return (tuple(a for a in names if not _is_positional(a)),
            [int(a) for a in names if _is_positional(a)])


def _coll_axis(fn: str, what: str, axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{fn}: {what} {axis} is out of bounds: it must be in "
                         f"[{-ndim}, {ndim}) here")
    return axis % ndim


def _leafas_operand(x):
    """Python scalars become rank-0 Arrays (weak-typed) so every operand has an array type."""
    return full((), x) if type(x) in (bool, int, float, complex) else x


def _reduce_positional(fn, reduce_fn, leaf, pos):
    if not pos:
        return leaf
    nd = core.get_aval(leaf).ndim
    axes = sorted({_coll_axis(fn, "positional axis", a, nd) for a in pos})
    return reduce_fn(leaf, axes)


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum ``x`` over the named axis ``axis_name``: every lane gets the same total.

    Args:
      x: an array or a pytree of arrays (booleans are summed as int32).
      axis_name: a name bound by ``vmap(..., axis_name=...)``, or a tuple of names (ints in
        the tuple are positional axes of ``x``, reduced too).
      axis_index_groups: None (one group: all lanes), or a partition of the lanes of the
        named axis into groups (e.g. ``[[0, 1], [2, 3]]`` on an axis of size 4): each lane
        gets the sum over its own group (under ``pmap``; ``vmap`` over the grouped axis
        raises NotImplementedError, as JAX).

    Returns:
      A pytree like ``x``; a value that is the same in every lane is multiplied by the size
      (of the groups, with ``axis_index_groups``).

    Raises:
      NameError: for an unbound axis name.
      ValueError: for groups that do not cover the lanes exactly once, or with positional
        axes in ``axis_name``.

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: psum(v, "i"), axis_name="i")(fnp.arange(4.0))
    Array([6., 6., 6., 6.], dtype=float32)
    """
    groups = _reduce_groups(axis_name, axis_index_groups, "psum")
    named, pos = _split_axes(axis_name)
    size = axis_size(named) if groups is None else len(groups[0])
    leaves, tree = tree_flatten(x)
    leaves = [convert_element_type(v, np.int32) if core.get_aval(v).dtype == np.bool_ else v
              for v in leaves]
    leaves = [_reduce_positional("psum", reduce_sum, v, pos) for v in leaves]
    if not named or not leaves:
        return tree_unflatten(tree, leaves)
    if not any(isinstance(v, core.Tracer) for v in leaves):  # the same value in every lane
        out = [size * v if type(v) in (int, float, complex) else mul(v, as_operand(size, v))
               for v in leaves]
    else:
        out = psum_p.bind(*[_leafas_operand(v) for v in leaves], axes=named,
                          axis_index_groups=groups)
    return tree_unflatten(tree, out)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of ``x`` over the named axis ``axis_name`` (``psum(x) / size``, as JAX).

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: v - pmean(v, "i"), axis_name="i")(fnp.arange(4.0))
    Array([-1.5, -0.5,  0.5,  1.5], dtype=float32)
    """
    groups = _reduce_groups(axis_name, axis_index_groups, "pmean")
    named, pos = _split_axes(axis_name)
    leaves, tree = tree_flatten(x)
    sums = tree_flatten(psum(x, axis_name, axis_index_groups=groups))[0]
    if groups is not None and any(len(g) != len(groups[0]) for g in groups):
        # groups of different sizes: each lane divides by the size of its own group
        size, = psum_p.bind(full((), 1.0), axes=named, axis_index_groups=groups)
        return tree_unflatten(tree, [s / size for s in sums])
    size = axis_size(named) if groups is None else len(groups[0])
    out = []
    for v, s in zip(leaves, sums):
        nd = core.get_aval(v).ndim
        shape = core.get_aval(v).shape
        n = size * math.prod(shape[_coll_axis("pmean", "positional axis", a, nd)]
                              for a in set(pos))
        if type(s) in (int, float, complex):
            out.append(s / n)
        elif dtypes.is_inexact(core.get_aval(s).dtype):
            out.append(div(s, as_operand(n, s)))  # JAX's ``v / n``: ``div v 4.0``
        else:  # integer sums: true division promotes to the default float type
            out.append(s / full((), float(n)))
    return tree_unflatten(tree, out)


def _pminmax(prim, reduce_fn, fn):
    def op(x, axis_name, *, axis_index_groups=None):
        groups = _reduce_groups(axis_name, axis_index_groups, fn)
        named, pos = _split_axes(axis_name)
        axis_size(named)
        leaves, tree = tree_flatten(x)
        leaves = [_reduce_positional(fn, reduce_fn, v, pos) for v in leaves]
        if named and leaves:
            leaves = prim.bind(*[_leafas_operand(v) for v in leaves], axes=named,
                               axis_index_groups=groups)
        return tree_unflatten(tree, leaves)
    op.__name__ = fn
    op.__doc__ = (f"Elementwise {fn[1:]}imum of ``x`` (an array or pytree) over the named axis "
                  f"``axis_name`` (a name or a tuple of names); every lane gets the result "
                  f"(of its group, with ``axis_index_groups``, as :func:`psum`).")
    return op


pmax = _pminmax(pmax_p, reduce_max, "pmax")
pmin = _pminmax(pmin_p, reduce_min, "pmin")


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Gather the values of every lane of ``axis_name``; every lane gets all of them.

    Args:
      x: an array or pytree of arrays.
      axis_name: a name (or tuple of names) bound by ``vmap``.
      axis_index_groups: None, or a partition of the lanes into groups of one size: each
        lane gathers the values of its own group, in the group's order.
      axis: where the new axis (of the axis size) goes in the result; with ``tiled=True``
        the lanes' values are concatenated along the existing axis ``axis`` instead.

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: all_gather(v, "i"), axis_name="i")(fnp.arange(2.0))
    Array([[0., 1.],
           [0., 1.]], dtype=float32)
    """
    groups = canonicalize_groups("all_gather", axis_index_groups)
    names = axis_names(axis_name)
    size = group_size("all_gather", groups, axis_size(names), equal=True)

    def bind(leaf):
        leaf = _leafas_operand(leaf)
        nd = core.get_aval(leaf).ndim
        if tiled and nd == 0:
            raise ValueError("all_gather: tiled=True needs an operand of rank >= 1 (it "
                             "concatenates along an existing axis); got a scalar")
        dim = _coll_axis("all_gather", "axis", axis, nd if tiled else nd + 1)
        return all_gather_p.bind(leaf, all_gather_dimension=dim, axis_name=names,
                                 axis_index_groups=groups, axis_size=size, tiled=bool(tiled))
    return tree_map(bind, x)


def axis_index(axis_name):
    """The int32 index of the current lane along ``axis_name`` (a tuple of names: the
    row-major index over them).

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: v + axis_index("i"), axis_name="i")(fnp.zeros(3, "int32"))
    Array([0, 1, 2], dtype=int32)
    """
    if not isinstance(axis_name, (tuple, list)):
        core.axis_frame(axis_name)
        return axis_index_p.bind(axis_name=axis_name)
    index, inner = full((), 0, np.int32), 1
    for name in reversed(tuple(axis_name)):
        index = add(index, mul(axis_index(name), as_operand(inner, index)))
        inner *= axis_size(name)
    return index


def ppermute(x, axis_name, perm):
    """Send each lane's ``x`` along ``perm``, a sequence of (source, destination) lane pairs;
    a lane that is no destination gets zeros.

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: ppermute(v, "i", [(0, 1), (1, 2)]), axis_name="i")(
    ...     fnp.array([1.0, 2.0, 3.0]))
    Array([0., 1., 2.], dtype=float32)
    """
    names = axis_names(axis_name)
    size = axis_size(names)
    try:
        perm = tuple((operator.index(s), operator.index(d)) for s, d in perm)
    except (TypeError, ValueError):
        raise TypeError(f"ppermute: perm must be a sequence of (source, destination) pairs of "
                        f"ints, got {perm!r}") from None
    check_perm(perm, size, names)
    return tree_map(lambda v: ppermute_p.bind(_leafas_operand(v), axis_name=names, perm=perm),
                     x)


def pshuffle(x, axis_name, perm):
    """Lane ``i`` gets the ``x`` of lane ``perm[i]`` (``perm`` a permutation of the lanes)."""
    perm = [operator.index(p) for p in perm]
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Split ``x`` along ``split_axis`` into one chunk per lane, send chunk ``j`` to lane
    ``j``, and stack (``tiled``: concatenate) the received chunks along ``concat_axis``.

    Untiled, ``x.shape[split_axis]`` must equal the axis size: that axis is removed and a
    new axis (over the source lanes) is inserted at ``concat_axis``. With
    ``axis_index_groups`` (groups of one size) the exchange happens within each group, and
    the group size takes the axis size's place.
    """
    groups = canonicalize_groups("all_to_all", axis_index_groups)
    if isinstance(axis_name, list):
        axis_name = tuple(axis_name)
    size = group_size("all_to_all", groups, axis_size(axis_name), equal=True)

    def bind(leaf):
        leaf = _leafas_operand(leaf)
        shape = core.get_aval(leaf).shape
        s = _coll_axis("all_to_all", "split_axis", split_axis, len(shape))
        c = _coll_axis("all_to_all", "concat_axis", concat_axis, len(shape))
        if tiled:
            if shape[s] % size:
                raise ValueError(f"The size of all_to_all's split_axis ({shape[s]}) has to be "
                                 f"divisible by the size of the named axis {axis_name} "
                                 f"({size})")
        else:
            if shape[s] != size:
                raise ValueError("all_to_all requires the size of the mapped axis axis_name "
                                 "to equal x.shape[split_axis], but they are "
                                 f"{size} and {shape[s]} respectively.")
            if s < c:
                c += 1  # concat_axis is a position after split_axis is removed
                leaf = expand_dims(leaf, (c,))
            elif c < s:
                leaf = expand_dims(leaf, (c,))
                s += 1
        out = all_to_all_p.bind(leaf, split_axis=s, concat_axis=c, axis_name=axis_name,
                                axis_index_groups=groups, tiled=bool(tiled))
        return out if tiled or s == c else squeeze(out, (s,))
    return tree_map(bind, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """``psum`` whose result is scattered: lane ``i`` keeps block ``i`` of the sum along
    ``scatter_dimension`` (untiled: that dimension must equal the axis size and is removed).
    With ``axis_index_groups`` (groups of one size) the sum and the blocks are per group.

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.vmap(lambda v: psum_scatter(v, "i"), axis_name="i")(fnp.eye(2))
    Array([1., 1.], dtype=float32)
    """
    groups = canonicalize_groups("psum_scatter", axis_index_groups)
    names = axis_names(axis_name)
    size = group_size("psum_scatter", groups, axis_size(names), equal=True)

    def bind(leaf):
        leaf = _leafas_operand(leaf)
        nd = core.get_aval(leaf).ndim
        dim = _coll_axis("psum_scatter", "scatter_dimension", scatter_dimension, nd)
        return reduce_scatter_p.bind(leaf, scatter_dimension=dim, axis_name=names,
                                     axis_index_groups=groups, axis_size=size,
                                     tiled=bool(tiled))
    return tree_map(bind, x)

def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the mapped axis ``axis_name`` with the positional ``axis`` of ``x`` (whose size
    must equal the named axis' size): ``all_to_all`` with ``split_axis = concat_axis =
    axis``, as JAX."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


__all__ = [
    "pswapaxes", "axis_names", "axis_size", "psum_p", "pmax_p", "pmin_p", "all_gather_p",
    "reduce_scatter_p", "axis_index_p", "ppermute_p", "check_perm", "all_to_all_p", "psum",
    "pmean", "pmax", "pmin", "all_gather", "axis_index", "ppermute", "pshuffle", "all_to_all",
    "psum_scatter", "pvary", "pvary_p", "vary_like",
]
