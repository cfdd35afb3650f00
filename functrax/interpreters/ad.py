"""``functrax.interpreters.ad``: JVP and transpose rules (JAX's ``jax.interpreters.ad``).

:data:`primitive_jvps` and :data:`primitive_transposes` ARE functrax's tables
(``functrax.transforms.jvp.jvp_rules`` / ``functrax.transforms.transpose.transpose_rules``):
their conventions are JAX's already.

- JVP rule: ``rule(primals, tangents, **params) -> (primal_out, tangent_out)``; tangents may
  be :class:`Zero` (a symbolic zero, ``.aval``), lists for ``multiple_results``.
- Transpose rule: ``rule(cotangent, *args, **params) ->`` one cotangent per argument
  (``None`` or a ``Zero`` for arguments that are not linear); the linear arguments are
  :class:`UndefinedPrimal` (test with :func:`is_undefined_primal`; ``.aval``).

>>> from functrax.extend.core import Primitive
>>> p = Primitive("scale3")
>>> deflinear2(p, lambda ct, x: [3.0 * ct])
>>> p in primitive_jvps and p in primitive_transposes
True
"""
from __future__ import annotations

from functrax import core
from functrax.transforms.jvp import (  # noqa: F401
    Zero, instantiate, jvp_rules, tangent_aval, zeros_like_aval,
)
from functrax.transforms.jvp import defjvp as _defjvp
from functrax.transforms.jvp import defjvp2 as _defjvp2
from functrax.transforms.jvp import deflinear as _deflinear
from functrax.transforms.transpose import UndefinedPrimal, is_undefined, transpose_rules

primitive_jvps = jvp_rules
primitive_transposes = transpose_rules


def is_undefined_primal(x) -> bool:
    """Whether ``x`` is a linear (undefined) argument of a transpose rule."""
    return is_undefined(x)


def instantiate_zeros(tangent):
    """``tangent`` with a symbolic :class:`Zero` made an array of zeros."""
    return instantiate(tangent)


def defjvp(primitive, *jvprules):
    """One rule per argument, ``rule(g, *primals, **params) ->`` its tangent contribution
    (None: the output does not depend on that argument); contributions are summed."""
    _defjvp(primitive, *jvprules)


def defjvp2(primitive, *jvprules):
    """As :func:`defjvp`, each rule also getting the primal output:
    ``rule(g, ans, *primals, **params)``."""
    _defjvp2(primitive, *jvprules)


def _linear_transpose_rule(transpose_rule, with_args):
    def rule(cotangent, *args, **params):
        if type(cotangent) is Zero:
            return [Zero(a.aval) if is_undefined(a) else None for a in args]
        return transpose_rule(cotangent, *args, **params) if with_args else \
            transpose_rule(cotangent, **params)
    return rule


def deflinear(primitive, transpose_rule):
    """``primitive`` is linear in all its arguments; ``transpose_rule(cotangent, **params)``
    returns one cotangent per argument."""
    _deflinear(primitive)
    primitive_transposes[primitive] = _linear_transpose_rule(transpose_rule, False)


def deflinear2(primitive, transpose_rule):
    """As :func:`deflinear`, the rule getting the arguments too:
    ``transpose_rule(cotangent, *args, **params)``."""
    _deflinear(primitive)
    primitive_transposes[primitive] = _linear_transpose_rule(transpose_rule, True)


def defbilinear(prim, lhs_rule, rhs_rule):
    """``prim(x, y)`` is linear in each argument: its JVP is ``prim(dx, y) + prim(x, dy)``;
    ``lhs_rule(ct, x, y, **params)`` / ``rhs_rule(ct, x, y, **params)`` transpose it in
    ``x`` (undefined) / ``y`` (a ``None`` result: a zero cotangent)."""
    _defjvp(prim, lambda g, x, y, **kw: prim.bind(g, y, **kw),
            lambda g, x, y, **kw: prim.bind(x, g, **kw))

    def transpose(cotangent, x, y, **params):
        if type(cotangent) is Zero:
            return [Zero(a.aval) if is_undefined(a) else None for a in (x, y)]
        if is_undefined(x):
            out = lhs_rule(cotangent, x, y, **params)
            return [Zero(x.aval) if out is None else out, None]
        out = rhs_rule(cotangent, x, y, **params)
        return [None, Zero(y.aval) if out is None else out]
    primitive_transposes[prim] = transpose


def zeros_like_jaxval(val):
    """An array of zeros of ``val``'s tangent type."""
    return zeros_like_aval(tangent_aval(core.get_aval(val)))


__all__ = ["defjvp", "defjvp2", "deflinear", "deflinear2", "defbilinear", "primitive_jvps",
           "primitive_transposes", "Zero", "zeros_like_aval", "instantiate_zeros",
           "is_undefined_primal", "UndefinedPrimal", "zeros_like_jaxval"]
