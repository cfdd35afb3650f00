"""``shard_map``: a call primitive running its sub-jaxpr once per device of a mesh, on each
device's block of the operands (as JAX's ``shard_map``).

Params: ``jaxpr`` (the per-device program, a ClosedJaxpr without consts, traced with every
mesh axis bound as a named axis), ``mesh`` (a ``functrax.sharding.Mesh``), ``in_specs`` /
``out_specs`` (one ``PartitionSpec`` per operand / result: the mesh axes each dimension is
split over), ``check_vma`` (whether the replication of outputs was checked statically) and
``manual_axes`` (the mesh axes the body sees as named axes, in mesh order). Only the
abstract evaluation lives here: the global shape of an operand is its block's shape with
each dimension multiplied by the sizes of the mesh axes its spec entry names. The
transforms and the numpy rule are in ``functrax/transforms/shard_map.py``.
"""
from __future__ import annotations

import math

from functrax import core
from functrax.primitives.define import Family, Primitive, primitive_registry

# the eager rule of shard_map on the ORIGINAL arguments (filled by
# functrax/transforms/shard_map.py) lives in core's table: a mesh-sharded operand's blocks go
# to their devices as they are (no gather, no re-split), which a mesh spanning processes needs
eager_array_rules = core.eager_array_rules


shard_map_p = primitive_registry["shard_map"] = Primitive(
    "shard_map", multiple_results=True, family=Family.CALL)


def entry_names(entry) -> tuple:
    """A PartitionSpec entry as a tuple of mesh axis names (``()`` for None)."""
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def spec_factors(spec, ndim: int, mesh_shape) -> tuple:
    """Per dimension, how many blocks ``spec`` cuts it into on a mesh of ``mesh_shape``."""
    entries = tuple(spec) + (None,) * (ndim - len(spec))
    return tuple(math.prod(mesh_shape[n] for n in entry_names(e)) for e in entries[:ndim])


def global_aval(aval, spec, mesh_shape):
    """The global aval of a per-device block ``aval`` laid out by ``spec``."""
    f = spec_factors(spec, aval.ndim, mesh_shape)
    return aval.update(shape=tuple(s * k for s, k in zip(aval.shape, f)))


def block_aval(aval, spec, mesh_shape):
    """The per-device block aval of a global ``aval`` laid out by ``spec``."""
    f = spec_factors(spec, aval.ndim, mesh_shape)
    return aval.update(shape=tuple(s // k for s, k in zip(aval.shape, f)))


@shard_map_p.def_abstract_eval
def _shard_map_abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, check_vma,
                             manual_axes):
    inner = jaxpr.in_avals
    if len(avals) != len(inner) or len(in_specs) != len(avals):
        raise TypeError(f"shard_map: {len(avals)} operands for a jaxpr of {len(inner)} inputs "
                        f"and {len(in_specs)} in_specs")
    shape = mesh.shape
    for i, (a, spec, b) in enumerate(zip(avals, in_specs, inner)):
        f = spec_factors(spec, a.ndim, shape)
        blk = block_aval(a, spec, shape)
        if len(spec) > a.ndim or any(s % k for s, k in zip(a.shape, f)) or \
                (blk.shape, blk.dtype) != (b.shape, b.dtype):
            raise TypeError(f"shard_map: operand {i} of type {a.str_short()} with spec {spec} "
                            f"has blocks {blk.str_short()} on the mesh {mesh}, but the inner "
                            f"jaxpr takes {b.str_short()}")
    return [global_aval(a, spec, shape) for a, spec in zip(jaxpr.out_avals, out_specs)]


__all__ = ["shard_map_p", "eager_array_rules", "entry_names", "spec_factors", "global_aval",
           "block_aval"]
