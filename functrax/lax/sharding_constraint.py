"""``lax.with_sharding_constraint`` (as ``jax.lax.with_sharding_constraint``): ask for the
layout of values over the devices of a mesh.

Inside ``jit`` (and under ``grad`` / ``vmap``) it binds the identity primitive
``sharding_constraint`` (``functrax/primitives/sharding_constraint.py``): the program
computes on global arrays, so no number changes, and an output the constraint makes comes
back from ``jit`` laid out by it. Called eagerly it returns the value placed by the
sharding (a ``MeshShardedArray``), as ``device_put``.
"""
from __future__ import annotations

from functrax import core, dtypes
from functrax.primitives.sharding_constraint import NO_DIMS, sharding_constraint_p
from functrax.runtime.devices import put_rules
from functrax.runtime.mesh_array import MeshShardedArray
from functrax.transforms.jit_shardings import (
    broadcast_shardings, check_sharding_tree, resolve_leaf,
)
from functrax.tree_util import keystr, tree_flatten_with_path, tree_unflatten

__all__ = ["with_sharding_constraint"]

_FN = "with_sharding_constraint"


def with_sharding_constraint(x, shardings):
    """``x`` (an array or a pytree of them) constrained to be laid out by ``shardings``.

    Args:
      x: an array or a pytree of arrays.
      shardings: a pytree prefix of ``x`` whose leaves are Shardings
        (``NamedSharding(mesh, P(...))``), PartitionSpecs (over the mesh in scope,
        ``functrax.set_mesh``) or None (no constraint).

    Returns:
      ``x`` unchanged in value; eagerly, each constrained leaf is a ``MeshShardedArray``
      with its sharding.

    Raises:
      TypeError: a leaf of ``shardings`` that is not a sharding.
      ValueError: ``shardings`` not a prefix of ``x``; a spec longer than a value's rank, or
        a mesh axis whose size does not divide the dimension it splits (naming the value,
        dimension, axis and sizes); a PartitionSpec with no mesh in scope.

    >>> import functrax, functrax.numpy as fnp
    >>> from functrax.sharding import NamedSharding, PartitionSpec as P
    >>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
    >>> with_sharding_constraint(fnp.arange(4.0), NamedSharding(m, P("x"))).sharding.spec
    P('x',)
    """
    check_sharding_tree(_FN, "shardings", shardings)
    path_leaves, tree = tree_flatten_with_path(x)
    shs = broadcast_shardings(_FN, "shardings", shardings, x, "the value x")
    eager = type(core.current_trace()) is core.EvalTrace
    out = []
    for (path, leaf), s in zip(path_leaves, shs):
        if not (isinstance(leaf, core.Tracer) or core.is_arraylike(leaf)):
            raise TypeError(f"{_FN}: x{keystr(path)} is {leaf!r} of type "
                            f"{type(leaf).__name__}, not an array")
        aval = core.get_aval(leaf)
        s = resolve_leaf(_FN, f"x{keystr(path)}", s, aval)
        out.append(_constrain(leaf, s, aval, eager))
    return tree_unflatten(tree, out)


def _constrain(leaf, sharding, aval, eager):
    if sharding is None:
        return leaf
    if eager and not isinstance(leaf, core.Tracer):
        if dtypes.is_extended(aval.dtype) or (isinstance(leaf, MeshShardedArray)
                                              and leaf.sharding == sharding):
            return leaf
        return put_rules[type(sharding)](leaf, sharding)
    if not isinstance(leaf, core.Tracer):
        leaf = core.as_array(leaf)
    return sharding_constraint_p.bind(leaf, sharding=sharding, layout=None,
                                      unconstrained_dims=NO_DIMS)
