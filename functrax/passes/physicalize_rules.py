"""Physical rules (``physicalize.physical_rules``): each equation over typed PRNG keys
rewritten onto the keys' ``uint32`` data.

- the key primitives: their threefry implementation (``primitives/prng_impl.py``);
  ``random_wrap`` / ``random_unwrap`` / ``random_clone`` are the data itself;
- shape and indexing operations: the same operation on the data, whose trailing element
  axes (``dtype.physical_shape``: ``(2,)``) are carried along untouched: appended to the
  result shape, kept whole by slices, gathers and scatters, never permuted;
- ``select_n``: a selector of the keys' shape is broadcast along the element axes.

Each rule receives the equation (for its avals and params) and the physical operands.
"""
from __future__ import annotations

import numpy as np

from functrax import primitives as P
from functrax.core import is_extended_aval
from functrax.passes.physicalize import physical_rules
from functrax.primitives import prng_impl


def _elem(aval) -> tuple:
    """The trailing element shape of the physical data of ``aval`` (() if not extended)."""
    return aval.dtype.physical_shape if is_extended_aval(aval) else ()


def _trailing(nd: int, k: int) -> tuple:
    return tuple(range(nd, nd + k))


def _bind(eqn, *args, **changes):
    return eqn.primitive.bind(*args, **{**eqn.params, **changes})


# --- the key primitives ---

def _random_seed(eqn, seeds):
    return prng_impl.threefry_seed(seeds)


def _random_bits(eqn, keys):
    return prng_impl.threefry_random_bits(keys, eqn.params["bit_width"], eqn.params["shape"])


def _random_split(eqn, keys):
    return prng_impl.threefry_split(keys, eqn.params["shape"])


def _random_fold_in(eqn, keys, msgs):
    return prng_impl.threefry_fold_in(keys, msgs)


def _identity(eqn, x):
    return x


physical_rules.update({
    P.random_seed_p: _random_seed, P.random_bits_p: _random_bits,
    P.random_split_p: _random_split, P.random_fold_in_p: _random_fold_in,
    P.random_wrap_p: _identity, P.random_unwrap_p: _identity, P.random_clone_p: _identity,
})


# --- shape operations: the element axes trail every shape ---

def _broadcast_in_dim(eqn, x):
    e = _elem(eqn.outvars[0].aval)
    shape, dims = eqn.params["shape"], eqn.params["broadcast_dimensions"]
    return _bind(eqn, x, shape=tuple(shape) + e,
                 broadcast_dimensions=tuple(dims) + _trailing(len(shape), len(e)))


def _reshape(eqn, x):
    e = _elem(eqn.outvars[0].aval)
    dims = eqn.params.get("dimensions")
    if dims is not None:
        dims = tuple(dims) + _trailing(len(dims), len(e))
    return _bind(eqn, x, new_sizes=tuple(eqn.params["new_sizes"]) + e, dimensions=dims)


def _transpose(eqn, x):
    perm = tuple(eqn.params["permutation"])
    return _bind(eqn, x, permutation=perm + _trailing(len(perm), len(_elem(eqn.invars[0].aval))))


def _same_params(eqn, *args):
    """Operations whose params name leading axes only (squeeze, expand_dims, rev,
    concatenate, copy): unchanged on the data."""
    return _bind(eqn, *args)


def _slice(eqn, x):
    e = _elem(eqn.invars[0].aval)
    strides = eqn.params.get("strides")
    return _bind(eqn, x, start_indices=tuple(eqn.params["start_indices"]) + (0,) * len(e),
                 limit_indices=tuple(eqn.params["limit_indices"]) + e,
                 strides=None if strides is None else tuple(strides) + (1,) * len(e))


def _zero_indices(index, k: int) -> list:
    dtype = index.aval.dtype if hasattr(index, "aval") else np.asarray(index).dtype
    return [np.zeros((), dtype)] * k


def _dynamic_slice(eqn, x, *indices):
    e = _elem(eqn.invars[0].aval)
    pad = _zero_indices(indices[0] if indices else np.int32(0), len(e))
    return _bind(eqn, x, *indices, *pad,
                 slice_sizes=tuple(eqn.params["slice_sizes"]) + e)


def _dynamic_update_slice(eqn, x, update, *indices):
    e = _elem(eqn.invars[0].aval)
    pad = _zero_indices(indices[0] if indices else np.int32(0), len(e))
    return _bind(eqn, x, update, *indices, *pad)


def _gather(eqn, x, indices):
    e = _elem(eqn.invars[0].aval)
    dn = eqn.params["dimension_numbers"]
    out_nd = eqn.outvars[0].aval.ndim
    dn = dn._replace(offset_dims=tuple(dn.offset_dims) + _trailing(out_nd, len(e)))
    return _bind(eqn, x, indices, dimension_numbers=dn,
                 slice_sizes=tuple(eqn.params["slice_sizes"]) + e)


def _scatter(eqn, x, indices, updates):
    e = _elem(eqn.invars[0].aval)
    dn = eqn.params["dimension_numbers"]
    upd_nd = eqn.invars[2].aval.ndim
    dn = dn._replace(update_window_dims=tuple(dn.update_window_dims)
                     + _trailing(upd_nd, len(e)))
    return _bind(eqn, x, indices, updates, dimension_numbers=dn)


def _select_n(eqn, which, *cases):
    e = _elem(eqn.outvars[0].aval)
    shape = eqn.invars[0].aval.shape
    if shape:
        which = P.broadcast_in_dim(which, shape + e, tuple(range(len(shape))))
    return _bind(eqn, which, *cases)


physical_rules.update({
    P.broadcast_in_dim_p: _broadcast_in_dim, P.reshape_p: _reshape,
    P.transpose_p: _transpose, P.slice_p: _slice, P.dynamic_slice_p: _dynamic_slice,
    P.dynamic_update_slice_p: _dynamic_update_slice, P.gather_p: _gather,
    P.scatter_p: _scatter, P.select_n_p: _select_n,
    **dict.fromkeys((P.squeeze_p, P.expand_dims_p, P.rev_p, P.concatenate_p, P.copy_p,
                     P.sharding_constraint_p),  # a spec leaves the key data's dims unsplit
                    _same_params),
})
