"""Collective primitives over named axes (bound by ``vmap(..., axis_name=...)``, later pmap).

Each abstract evaluation checks that every axis name it uses is bound
(``core.axis_frame`` raises ``NameError: unbound axis name: ...`` otherwise) and takes the
named axis size from there. Parameters and names follow JAX: ``psum``/``pmax``/``pmin``
(``axes``), ``all_gather`` (``all_gather_dimension``), ``axis_index``, ``ppermute``
(``perm``), ``all_to_all`` (``split_axis``/``concat_axis``) and ``reduce_scatter`` (the
primitive behind ``lax.psum_scatter``). ``axis_index_groups`` is accepted only as None.
"""
from __future__ import annotations

import math

from functrax import core
from functrax.primitives.define import NUMBER, ShapedArray, check_dtype, new_primitive, np

__all__ = ["psum_p", "pmax_p", "pmin_p", "all_gather_p", "axis_index_p", "ppermute_p",
           "all_to_all_p", "reduce_scatter_p"]


def axis_names(axis_name) -> tuple:
    """``axis_name`` as a tuple of names (a single name becomes a 1-tuple)."""
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def axis_size(axis_name) -> int:
    """The size of a named axis, or the product of the sizes of a tuple of names.

    Raises:
      NameError: naming the first unbound axis and listing the bound ones.
    """
    return math.prod(core.axis_frame(n).size for n in axis_names(axis_name))


def _check_groups(prim: str, axis_index_groups):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{prim}: axis_index_groups is not supported (only None); "
                                  "split the axis with nested vmaps and name the inner one")


def _check_dim(prim: str, name: str, dim, ndim: int):
    if not isinstance(dim, (int, np.integer)) or not 0 <= dim < ndim:
        raise ValueError(f"{prim}: {name}={dim} is out of range for an operand of rank {ndim} "
                         f"(it must be in [0, {ndim}))")


# --- psum / pmax / pmin ---


def _allreduce(name, accepted):
    p = new_primitive(name, multiple_results=True)

    def abstract_eval(*args, axes, axis_index_groups):
        _check_groups(name, axis_index_groups)
        if not isinstance(axes, tuple):
            raise TypeError(f"{name}: axes must be a tuple of axis names, got {axes!r}")
        for a in axes:
            if isinstance(a, (int, np.integer)):
                raise TypeError(f"{name}: the primitive takes named axes only, got the "
                                f"positional axis {a} in axes={axes}; lax.{name} reduces "
                                "positional axes before binding it")
            core.axis_frame(a)
        for x in args:
            check_dtype(name, x.dtype, accepted)
        return [ShapedArray(x.shape, x.dtype) for x in args]

    p.def_abstract_eval(abstract_eval)
    return p


psum_p = _allreduce("psum", NUMBER)
pmax_p = _allreduce("pmax", NUMBER + ("bool",))
pmin_p = _allreduce("pmin", NUMBER + ("bool",))


# --- all_gather / reduce_scatter ---


def _check_size(prim, axis_name, size):
    actual = axis_size(axis_name)
    if size != actual:
        raise ValueError(f"{prim}: axis_size={size} does not match the size {actual} of the "
                         f"named axis {axis_name}")


all_gather_p = new_primitive("all_gather")


@all_gather_p.def_abstract_eval
def _all_gather_abstract(x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                         tiled):
    _check_groups("all_gather", axis_index_groups)
    _check_size("all_gather", axis_name, axis_size)
    shape = list(x.shape)
    if tiled:
        _check_dim("all_gather", "all_gather_dimension", all_gather_dimension, x.ndim)
        shape[all_gather_dimension] *= axis_size
    else:
        _check_dim("all_gather", "all_gather_dimension", all_gather_dimension, x.ndim + 1)
        shape.insert(all_gather_dimension, axis_size)
    return x.update(shape=tuple(shape))


reduce_scatter_p = new_primitive("reduce_scatter")


@reduce_scatter_p.def_abstract_eval
def _reduce_scatter_abstract(x, *, scatter_dimension, axis_name, axis_index_groups, axis_size,
                             tiled):
    _check_groups("reduce_scatter", axis_index_groups)
    _check_size("reduce_scatter", axis_name, axis_size)
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


axis_index_p = new_primitive("axis_index")


@axis_index_p.def_abstract_eval
def _axis_index_abstract(*, axis_name):
    core.axis_frame(axis_name)
    return ShapedArray((), np.int32)


ppermute_p = new_primitive("ppermute")


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


all_to_all_p = new_primitive("all_to_all")


@all_to_all_p.def_abstract_eval
def _all_to_all_abstract(x, *, split_axis, concat_axis, axis_name, axis_index_groups, tiled):
    del tiled  # the wrapper inserts / removes the axis of an untiled all_to_all
    _check_groups("all_to_all", axis_index_groups)
    size = axis_size(axis_name)
    _check_dim("all_to_all", "split_axis", split_axis, x.ndim)
    _check_dim("all_to_all", "concat_axis", concat_axis, x.ndim)
    shape = list(x.shape)
    if shape[split_axis] % size:
        raise ValueError(f"The size of all_to_all's split_axis ({shape[split_axis]}) has to be "
                         f"divisible by the size of the named axis {axis_name} ({size})")
    shape[split_axis] //= size
    shape[concat_axis] *= size
    return ShapedArray(tuple(shape), x.dtype)
