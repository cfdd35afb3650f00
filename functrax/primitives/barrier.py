"""``lax.optimization_barrier``: the identity on a pytree of arrays that the compiler must
not look through (no fusion, CSE or reordering across it), as XLA's OptimizationBarrier.

>>> import functrax.numpy as fnp
>>> optimization_barrier((fnp.ones(2), 3.0))
(Array([1., 1.], dtype=float32), Array(3., dtype=float32, weak_type=True))
"""
from __future__ import annotations

from functrax import core
from functrax.primitives.define import Family, new_primitive
from functrax.tree_util import tree_flatten, tree_unflatten

optimization_barrier_p = new_primitive("optimization_barrier", multiple_results=True,
                                       family=Family.BARRIER)
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))


def optimization_barrier(operand):
    """``operand`` (a pytree of arrays) unchanged, behind a barrier."""
    leaves, tree = tree_flatten(operand)
    leaves = [core.as_array(x) if not isinstance(x, core.Tracer) else x for x in leaves]
    return tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


__all__ = ["optimization_barrier_p", "optimization_barrier"]
