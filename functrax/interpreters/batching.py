"""``functrax.interpreters.batching``: vmap rules (JAX's ``jax.interpreters.batching``).

:data:`primitive_batchers` is a live view of functrax's ``vmap_rules`` table in JAX's
calling convention: a rule is ``rule(batched_args, batch_dims, **params) -> (out,
out_dim)`` (``not_mapped``, i.e. None, for an unbatched value; lists for
``multiple_results``). Setting an entry stores the rule adapted to functrax's convention
(``rule(axis, vals, dims, **params)``, ``axis`` giving the size and name); reading one
returns the JAX-convention rule (adapting a built-in rule, the batch size taken from its
batched arguments). This is the one place the two conventions meet.

>>> from functrax.extend.core import Primitive
>>> p = Primitive("my_neg")
>>> defvectorized(p)
>>> p in primitive_batchers
True
"""
from __future__ import annotations

from collections.abc import MutableMapping

from functrax import core
from functrax.transforms.batching import (  # noqa: F401
    AxisData, bdim_at_front, broadcast_batch, matchaxis, moveaxis, not_mapped, vmap_rules,
)


class _JaxRule:
    """A JAX-convention rule stored in ``vmap_rules`` (functrax's convention)."""

    def __init__(self, rule):
        self.rule = rule

    def __call__(self, axis, vals, dims, **params):
        return self.rule(vals, dims, **params)


def _batch_size(vals, dims):
    for v, d in zip(vals, dims):
        if d is not None:
            return core.get_aval(v).shape[d]
    raise ValueError("a batching rule was called with no batched argument")


def _as_jax_rule(rule):
    if isinstance(rule, _JaxRule):
        return rule.rule

    def jax_rule(batched_args, batch_dims, **params):
        axis = AxisData(None, _batch_size(batched_args, batch_dims))
        return rule(axis, list(batched_args), list(batch_dims), **params)
    return jax_rule


class _PrimitiveBatchers(MutableMapping):
    """``vmap_rules`` seen with JAX's batching-rule convention."""

    def __getitem__(self, prim):
        return _as_jax_rule(vmap_rules[prim])

    def __setitem__(self, prim, rule):
        vmap_rules[prim] = _JaxRule(rule)

    def __delitem__(self, prim):
        del vmap_rules[prim]

    def __iter__(self):
        return iter(vmap_rules)

    def __len__(self):
        return len(vmap_rules)

    def __contains__(self, prim):
        return prim in vmap_rules


primitive_batchers = _PrimitiveBatchers()


def defvectorized(prim):
    """``prim`` acts on each element of its (single) operand independently: the output is
    batched like the operand."""
    def rule(batched_args, batch_dims, **params):
        (x,), (d,) = batched_args, batch_dims
        return prim.bind(x, **params), d
    primitive_batchers[prim] = rule


def defbroadcasting(prim):
    """``prim`` is elementwise over operands of equal shapes: batched operands get their
    batch axis first, unbatched ones are broadcast along it."""
    def rule(batched_args, batch_dims, **params):
        size = _batch_size(batched_args, batch_dims)
        dims = {d for d in batch_dims if d is not None}
        shapes = {core.get_aval(x).shape for x, d in zip(batched_args, batch_dims)
                  if d is not None}
        if len(dims) == 1 and len(shapes) == 1 and all(d is not None for d in batch_dims):
            return prim.bind(*batched_args, **params), dims.pop()
        args = [bdim_at_front(x, d, size) for x, d in zip(batched_args, batch_dims)]
        out = prim.bind(*args, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    primitive_batchers[prim] = rule


__all__ = ["primitive_batchers", "defvectorized", "defbroadcasting", "not_mapped"]
