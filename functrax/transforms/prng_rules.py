"""jvp and vmap rules of the PRNG primitives (``threefry2x32``, ``bitcast_convert_type``).

Both are piecewise constant in their inputs (random bits; reinterpreted bits), so their
tangents are zero, as in JAX. ``threefry2x32`` batches like an n-ary elementwise primitive;
``bitcast_convert_type`` is elementwise except that it may add or drop a trailing axis, so
its batch axis goes first.
"""
from __future__ import annotations

from functrax.primitives.prng import bitcast_convert_type_p, threefry2x32_p
from functrax.transforms import batching_rules
from functrax.transforms.batching import moveaxis, vmap_rules
from functrax.transforms.jvp import defjvp_zero

defjvp_zero(threefry2x32_p)
defjvp_zero(bitcast_convert_type_p)


def _multiple_results(rule):
    """A single-output elementwise vmap rule made to answer for every output."""
    def multi(axis, vals, dims, **params):
        outs, out_dim = rule(axis, vals, dims, **params)
        return outs, [out_dim] * len(outs)
    return multi


batching_rules.defbroadcasting(threefry2x32_p)
vmap_rules[threefry2x32_p] = _multiple_results(vmap_rules[threefry2x32_p])


def _bitcast_convert_type_vmap(axis, vals, dims, *, new_dtype):
    (x,), (bdim,) = vals, dims
    return bitcast_convert_type_p.bind(moveaxis(x, bdim, 0), new_dtype=new_dtype), 0


vmap_rules[bitcast_convert_type_p] = _bitcast_convert_type_vmap
