"""The values custom derivative rules see with ``symbolic_zeros=True`` (as JAX's):

- :class:`SymbolicZero`: a zero tangent or cotangent that is not materialized (``.aval``,
  ``.shape``, ``.dtype``; falsy). ``custom_jvp`` rules get one for each input that is not
  differentiated and may return one; ``custom_vjp`` ``bwd`` rules get one for each output
  cotangent that is zero and may return one (or None).
- :class:`CustomVJPPrimal`: what a ``custom_vjp`` ``fwd`` rule gets per input leaf:
  ``value`` (the primal) and ``perturbed`` (whether it is differentiated);
  :func:`custom_vjp_primal_tree_values` strips them.
- :func:`zero_from_primal`: zeros (symbolic or not) shaped like a primal pytree.

Internally, transformations use :class:`~functrax.transforms.jvp.Zero`; these helpers convert
at the boundary of the user's rules.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from functrax import core
from functrax.transforms.jvp import Zero, instantiate, tangent_aval, zeros_like_aval
from functrax.tree_util import tree_map


class SymbolicZero:
    """A symbolic zero tangent/cotangent of type ``aval`` (shape and dtype attributes).

    >>> import numpy as np
    >>> z = SymbolicZero(core.ShapedArray((2,), np.float32))
    >>> z.shape, bool(z)
    ((2,), False)
    """

    def __init__(self, aval):
        self.aval = aval

    def __bool__(self):
        return False

    def __getattr__(self, name):
        if name == "aval":
            raise AttributeError(name)
        return getattr(self.aval, name)

    @staticmethod
    def from_primal_value(val) -> SymbolicZero:
        return SymbolicZero(tangent_aval(core.get_aval(val)))

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short(short_dtypes=False)})"


def zero_from_primal(val, symbolic_zeros=False):
    """Zero tangents with the structure, shapes and tangent dtypes of pytree ``val``:
    :class:`SymbolicZero` objects with ``symbolic_zeros=True``, else arrays of zeros.

    >>> zero_from_primal(1.0)
    Array(0., dtype=float32)
    """
    def f(x):
        aval = tangent_aval(core.get_aval(x))
        return SymbolicZero(aval) if symbolic_zeros else zeros_like_aval(aval)
    return tree_map(f, val)


@dataclasses.dataclass
class CustomVJPPrimal:
    """Primal to a ``custom_vjp``'s forward rule when ``symbolic_zeros`` is set."""
    value: Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree):
    """Strips the perturbation information from a ``fwd`` rule's arguments: each
    :class:`CustomVJPPrimal` leaf becomes its ``value``.

    Raises:
      TypeError: for a leaf that is not a ``CustomVJPPrimal``.

    >>> custom_vjp_primal_tree_values((CustomVJPPrimal(1.0, True),))
    (1.0,)
    """
    def value(leaf):
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value
    return tree_map(value, tree)


# --- conversions at the boundary of the user's rules ---

def to_user(t, symbolic: bool):
    """An internal (co)tangent as a rule sees it: a ``Zero`` becomes a ``SymbolicZero`` (with
    ``symbolic_zeros``) or an array of zeros."""
    if type(t) is Zero:
        return SymbolicZero(t.aval) if symbolic else instantiate(t)
    return t


def from_user(t):
    """A (co)tangent a rule returned, internally: ``SymbolicZero`` becomes ``Zero``."""
    return Zero(t.aval) if type(t) is SymbolicZero else t
