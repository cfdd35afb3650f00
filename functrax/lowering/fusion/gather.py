"""Fusion planning of data-dependent views: ``gather`` and ``dynamic_slice`` with traced starts.

Both read their operand at an index computed from *values* (the gather's ``indices``, the
dynamic_slice's start scalars): a load at a clamped, data-dependent index. They are views
(index arithmetic, never copies) when the operand is read from outside the group (a group
input or a view of one); the index values may be group inputs or computed in the group:

- ``gather`` with computed ``indices``: the output's batch dims run along the index array's
  dims (one-to-one), its offset (window) dims are fresh loops; the index vector dim must have
  one entry (several entries are read at constant positions of a dim that no output spans);
- ``dynamic_slice`` with computed starts: the starts are scalars, every output dim is fresh.

A gather (or dynamic_slice) of a value computed in the same group would recompute that value
at data-dependent positions: it is illegal (the producer stays a separate kernel). Scatters
stay OPAQUE (see ``SCATTER_REASON``): each is its own kernel on backends that lower it
(``functrax.lowering.triton.gather_scatter``), a numpy fallback elsewhere.
"""
from __future__ import annotations

from functrax import primitives as P
from functrax.lowering.fusion.config import IllegalGroup

__all__ = ["SCATTER_REASON", "gather_unfusible", "dynamic_slice_unfusible",
           "data_dependent_view_rules"]

SCATTER_REASON = "scatter: data-dependent writes with a combiner (its own kernel)"


def gather_unfusible(eqn):
    """Why a gather cannot be a view (None when it can)."""
    operand = eqn.invars[0]
    if operand.aval.size == 0:
        return "gather from an empty operand: no element to load"
    return None


def dynamic_slice_unfusible(eqn):
    """dynamic_slice is always a view (literal or traced starts)."""
    return None


def _dynamic_slice_axes(analysis, eqn) -> tuple:
    """Computed starts are scalars: every output dim is a fresh loop."""
    return tuple(analysis.fresh_axis(n) for n in eqn.outvars[0].aval.shape)


def _gather_axes(analysis, eqn) -> tuple:
    """The output's batch dims run along the index array's dims, its offset dims are fresh.

    Raises:
      IllegalGroup: a computed gather index vector with several entries.
    """
    out_shape = eqn.outvars[0].aval.shape
    indices = eqn.invars[1]
    t = analysis.use(indices)
    if t[-1] is not None:
        raise IllegalGroup(f"gather with a computed index array {indices.aval.str_short()} of "
                           "several entries per index vector (read at constant positions of a "
                           "dim no output spans)")
    offset_dims = set(eqn.params["dimension_numbers"].offset_dims)
    batch = iter(t[:-1])
    return tuple(analysis.fresh_axis(n) if i in offset_dims else next(batch)
                 for i, n in enumerate(out_shape))


# primitive -> rule(analysis, eqn) -> the axes of a load at data-dependent indices, for a view
# whose operand is read from outside the group and whose index values are (partly) computed
# in it
data_dependent_view_rules = {P.gather_p: _gather_axes, P.dynamic_slice_p: _dynamic_slice_axes}
