"""``sharding_constraint``: the identity that asks for a value's layout over the devices
(``lax.with_sharding_constraint``, whose public wrapper lives in
``functrax/lax/sharding_constraint.py``). Inside a program every value is one numpy array,
so the constraint changes no number; it is kept in the jaxpr (printed as JAX prints it) and
read by ``jit`` to lay out an output it produces.

Its params are hashable: ``sharding`` (a ``NamedSharding`` or ``SingleDeviceSharding``),
``layout`` (always ``None``) and ``unconstrained_dims`` (a :class:`DimSet`, printed as JAX
prints a Python set).
"""
from __future__ import annotations

from functrax.core import ShapedArray
from functrax.primitives.define import Family, new_primitive

__all__ = ["sharding_constraint_p", "DimSet", "NO_DIMS"]

# an identity on the values: elementwise (it fuses as ``{0}`` and costs nothing)
sharding_constraint_p = new_primitive("sharding_constraint", family=Family.ELEMENTWISE)


class DimSet(frozenset):
    """A frozenset of dimensions printed as a Python set (``set()``, ``{0, 1}``), as JAX
    prints ``unconstrained_dims``.

    >>> str(DimSet()), str(DimSet({1, 0}))
    ('set()', '{0, 1}')
    """

    def __repr__(self):
        return "{" + ", ".join(map(str, sorted(self))) + "}" if self else "set()"

    __str__ = __repr__


NO_DIMS = DimSet()


@sharding_constraint_p.def_abstract_eval
def _sharding_constraint_abstract_eval(x, *, sharding, layout, unconstrained_dims):
    del sharding, layout, unconstrained_dims
    return ShapedArray(x.shape, x.dtype, x.weak_type)
