"""jvp and vmap rules of the PRNG primitives (``threefry2x32``, ``bitcast_convert_type``, the
typed-key primitives).

All are piecewise constant in their inputs (random bits; reinterpreted bits; keys), so
their tangents are zero (float0 for keys and integers), as in JAX. ``threefry2x32`` batches
like an n-ary elementwise primitive; ``bitcast_convert_type`` is elementwise except that it
may add or drop a trailing axis, so its batch axis goes first.

The key primitives batch as JAX's: ``random_bits`` and ``random_split`` put the keys' batch
axis first (their results lead with the keys' shape); ``random_fold_in`` broadcasts like an
elementwise binary op; ``random_seed``, ``random_unwrap`` and ``random_clone`` keep the batch
axis where it is (a key axis is a leading axis of the data); ``random_wrap`` moves it first
(it may sit after the data's trailing key axis).
"""
from __future__ import annotations

from functrax.primitives.prng import (
    bitcast_convert_type_p, random_bits_p, random_clone_p, random_fold_in_p, random_seed_p,
    random_split_p, random_unwrap_p, random_wrap_p, threefry2x32_p,
)
from functrax.transforms import batching_rules
from functrax.transforms.batching import moveaxis, vmap_rules
from functrax.transforms.jvp import defjvp_zero

for _prim in (threefry2x32_p, bitcast_convert_type_p, random_seed_p, random_bits_p,
              random_split_p, random_fold_in_p, random_wrap_p, random_unwrap_p,
              random_clone_p):
    defjvp_zero(_prim)


def _multiple_results(rule):
    """A single-output elementwise vmap rule made to answer for every output."""
    def multi(axis, vals, dims, **params):
        outs, out_dim = rule(axis, vals, dims, **params)
        return outs, [out_dim] * len(outs)
    return multi


batching_rules.defbroadcasting(threefry2x32_p)
vmap_rules[threefry2x32_p] = _multiple_results(vmap_rules[threefry2x32_p])
batching_rules.defbroadcasting(random_fold_in_p)


def _bitcast_convert_type_vmap(axis, vals, dims, *, new_dtype):
    (x,), (bdim,) = vals, dims
    return bitcast_convert_type_p.bind(moveaxis(x, bdim, 0), new_dtype=new_dtype), 0


def _batch_first(prim):
    """The batch axis moved first (the result leads with the operand's leading axes)."""
    def rule(axis, vals, dims, **params):
        (x,), (bdim,) = vals, dims
        return prim.bind(moveaxis(x, bdim, 0), **params), 0
    return rule


def _batch_in_place(prim):
    """The batch axis stays where it is (a leading axis of operand and result alike)."""
    def rule(axis, vals, dims, **params):
        (x,), (bdim,) = vals, dims
        return prim.bind(x, **params), bdim
    return rule


vmap_rules[bitcast_convert_type_p] = _bitcast_convert_type_vmap
vmap_rules.update({p: _batch_first(p) for p in (random_bits_p, random_split_p, random_wrap_p)})
vmap_rules.update({p: _batch_in_place(p) for p in (random_seed_p, random_unwrap_p,
                                                   random_clone_p)})
