"""Ahead-of-time stages of ``pmap`` (as ``jit``'s): ``pmap(f).trace(*args)`` ->
:class:`PmapTraced` (``.jaxpr``: the per-device program, ``.out_info``), ``.lower()`` ->
:class:`PmapLowered` (``.as_text(dialect=None)``: the optimized per-device jaxpr),
``.compile()`` -> :class:`PmapCompiled`, callable with arguments of the same types (it runs
the pmapped function, whose program was traced once).

They subclass ``jit``'s ``Traced`` / ``Lowered`` / ``Compiled`` (``functrax.stages``).
"""
from __future__ import annotations

from functrax import core
from functrax.core.tracing import ShapeDtypeStruct
from functrax.passes.pipeline import optimize
from functrax.transforms.jit import Compiled, Lowered, Traced
from functrax.tree_util import tree_flatten, tree_unflatten


def _out_info(pmapped, entry, size):
    from functrax.primitives.calls import mapped_aval
    avals = [mapped_aval(a, size, ax) for a, ax in zip(entry.out_avals, entry.out_axes)]
    return tree_unflatten(entry.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                           for a in avals])


class PmapTraced(Traced):
    """``pmap(f).trace(*args)``: ``.jaxpr`` (the per-device jaxpr), ``.out_info`` (global
    output shapes), ``.lower()``."""

    def __init__(self, pmapped, entry, key, size):
        self._jitted, self._entry, self._key, self._size = pmapped, entry, key, size
        self.jaxpr = entry.closed
        self.out_info = _out_info(pmapped, entry, size)
        self.fun_name = pmapped._name

    def lower(self):
        return PmapLowered(self._jitted, self._entry, self._key, self._size)


class PmapLowered(Lowered):
    """The optimized per-device program of a ``pmap``; ``.compile()`` makes it runnable."""

    def __init__(self, pmapped, entry, key, size):
        self._jitted, self._entry, self._key, self._size = pmapped, entry, key, size
        self.jaxpr = optimize(entry.closed)
        self.out_info = _out_info(pmapped, entry, size)

    def compile(self):
        return PmapCompiled(self._jitted, self._entry, self._key, self._size, self.jaxpr)


class PmapCompiled(Compiled):
    """A compiled ``pmap``: call it with arguments of the types it was lowered for."""

    def __init__(self, pmapped, entry, key, size, jaxpr):
        self._jitted, self._entry, self._key, self._size = pmapped, entry, key, size
        self._jaxpr = jaxpr
        self.out_info = _out_info(pmapped, entry, size)

    def as_text(self):
        return str(self._jaxpr)

    def cost_analysis(self):
        """Estimated ``flops``, ``transcendentals`` and ``bytes accessed`` of one device's
        program (a dict)."""
        from functrax.lowering.cost import cost_analysis
        return cost_analysis(self._jaxpr)

    def __call__(self, *args, **kwargs):
        leaves, _ = tree_flatten((args, kwargs))
        if any(isinstance(x, core.Tracer) for x in leaves):
            raise TypeError("Cannot apply functrax transformations to a function lowered and "
                            "compiled for a particular signature. Transform the pmapped "
                            "function instead of its compiled form.")
        key = self._jitted._key(args, kwargs)[0]
        if key != self._key:
            raise TypeError("Computation was compiled for different input types and called "
                            f"with different ones: compiled for {self._key[2]} (per device), "
                            f"called with {key[2]}")
        return self._jitted(*args, **kwargs)
