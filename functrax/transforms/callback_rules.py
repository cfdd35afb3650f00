"""Transformation rules of the host callbacks (``functrax/primitives/callbacks.py``).

- ``debug_callback`` / ``debug_print``: under ``jvp`` (so ``grad``) the callback sees the
  primal values and produces no tangent; its transpose is a no-op; under ``vmap`` it runs
  once per lane, lanes in order (one line per example), as JAX's rule unrolls it.
- ``pure_callback``: ``vmap`` follows ``vmap_method`` (JAX's five methods; None raises);
  differentiating it is JAX's ``ValueError`` (use ``custom_jvp`` / ``custom_vjp``).
- ``io_callback``: ``vmap`` maps it sequentially (a ``scan``), an ordered one cannot be
  batched; differentiating it is JAX's ``ValueError``.
"""
from __future__ import annotations

from functrax import core
from functrax import primitives as P
from functrax.core.tracing import trace_to_jaxpr
from functrax.primitives.callbacks import (
    VMAP_METHODS, debug_callback_p, debug_print_p, io_callback_p, pure_callback_p,
)
from functrax.transforms.batching import moveaxis, vmap_rules
from functrax.transforms.jvp import jvp_rules
from functrax.transforms.transpose import transpose_rules


# --- debug_callback / debug_print: seen by primal values, once per lane ---

def _debug_jvp(prim):
    def rule(primals, tangents, **params):
        prim.bind(*primals, **params)
        return [], []
    return rule


def _debug_transpose(cts, *args, **params):
    return [None] * len(args)


def _debug_vmap(prim):
    def rule(axis, vals, dims, **params):
        for i in range(axis.size):
            prim.bind(*[v if d is None else P.index_in_dim(v, i, d, keepdims=False)
                        for v, d in zip(vals, dims)], **params)
        return [], []
    return rule


for _p in (debug_callback_p, debug_print_p):
    jvp_rules[_p] = _debug_jvp(_p)
    transpose_rules[_p] = _debug_transpose
    vmap_rules[_p] = _debug_vmap(_p)


# --- pure_callback / io_callback ---

def _batched_avals(avals, size):
    return tuple(a.update(shape=(size,) + a.shape) for a in avals)


def _sequential(prim, vals, dims, size, params, unroll=False):
    """``prim`` once per example: a ``scan`` over the batched operands (unbatched ones are
    its consts), stacking the results (as JAX's ``lax.map``)."""
    batched = [d is not None for d in dims]
    consts = [v for v, b in zip(vals, batched) if not b]
    xs = [moveaxis(v, d, 0) for v, d in zip(vals, dims) if d is not None]
    c_avals = [core.get_aval(c) for c in consts]
    x_avals = [core.get_aval(x).update(shape=core.get_aval(x).shape[1:]) for x in xs]

    def body(*args):
        it_c, it_x = iter(args[:len(consts)]), iter(args[len(consts):])
        return prim.bind(*[next(it_x) if b else next(it_c) for b in batched], **params)

    closed = trace_to_jaxpr(body, c_avals + x_avals)
    outs = P.scan_p.bind(*consts, *xs, jaxpr=closed, length=size, reverse=False,
                         unroll=size if unroll else 1, num_consts=len(consts), num_carry=0)
    return outs, [0] * len(outs)


def _pure_callback_vmap(axis, vals, dims, *, callback, result_avals, sharding, vmap_method):
    params = dict(callback=callback, result_avals=result_avals, sharding=sharding,
                  vmap_method=vmap_method)
    size = axis.size
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(pure_callback_p, vals, dims, size, params,
                           unroll=vmap_method == "sequential_unrolled")
    if vmap_method not in VMAP_METHODS:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    args = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    if vmap_method in ("expand_dims", "broadcast_all"):
        n = size if vmap_method == "broadcast_all" else 1
        args = [_lead(a, n) if d is None else a for a, d in zip(args, dims)]
    params["result_avals"] = _batched_avals(result_avals, size)
    outs = pure_callback_p.bind(*args, **params)
    return outs, [0] * len(outs)


def _lead(x, n):
    aval = core.get_aval(x)
    return P.broadcast_in_dim(x, (n,) + aval.shape, tuple(range(1, aval.ndim + 1)))


def _io_callback_vmap(axis, vals, dims, *, callback, result_avals, sharding, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    params = dict(callback=callback, result_avals=result_avals, sharding=sharding,
                  ordered=False)
    return _sequential(io_callback_p, vals, dims, axis.size, params)


def _raise(msg):
    def rule(*args, **params):
        raise ValueError(msg)
    return rule


vmap_rules[pure_callback_p] = _pure_callback_vmap
vmap_rules[io_callback_p] = _io_callback_vmap
jvp_rules[pure_callback_p] = _raise(
    "Pure callbacks do not support JVP. Please use `functrax.custom_jvp` to use callbacks "
    "while taking gradients.")
transpose_rules[pure_callback_p] = _raise(
    "Pure callbacks do not support transpose. Please use `functrax.custom_vjp` to use "
    "callbacks while taking gradients.")
jvp_rules[io_callback_p] = _raise("IO callbacks do not support JVP.")
transpose_rules[io_callback_p] = _raise("IO callbacks do not support transpose.")
