"""``functrax.extend.core``: user-defined primitives and the jaxpr IR (JAX's
``jax.extend.core``).

A :class:`Primitive` defined here works as in JAX's "How JAX primitives work": ``def_impl``
(eager evaluation and the numpy backend: the impl gets numpy arrays), ``def_abstract_eval``
(avals in, aval(s) out), and the rules registered through :mod:`functrax.interpreters.ad`
(``primitive_jvps``, ``primitive_transposes``, ``defjvp``, ...) and
:mod:`functrax.interpreters.batching` (``primitive_batchers``). Under ``jit`` on the Triton
backend a user primitive runs as a numpy step between kernels.

The jaxpr classes (``Jaxpr``, ``ClosedJaxpr``, ``JaxprEqn``, ``Var``, ``Literal``) are
functrax's own; :class:`DropVar` is an output variable nothing reads (printed ``_``).

Note: as in JAX, :func:`mapped_aval` drops the mapped axis and :func:`unmapped_aval` inserts
it (``functrax.primitives.calls`` has the same functions under the opposite names, with
other argument orders).

>>> import numpy as np
>>> p = Primitive("twice")
>>> p.def_impl(lambda x: 2 * x)  # doctest: +ELLIPSIS
<function <lambda> at ...>
>>> p.def_abstract_eval(lambda x: x)  # doctest: +ELLIPSIS
<function <lambda> at ...>
>>> p.bind(np.float32(3.0))
Array(6., dtype=float32)
"""
from __future__ import annotations

import numpy as np

from functrax import core as _core
from functrax import dtypes
from functrax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, jaxpr_as_fun  # noqa: F401
from functrax.core import check_jaxpr as _check_jaxpr
from functrax.core.tracing import trace_to_jaxpr
from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives import calls as _calls
from functrax.transforms.ad import jvp_jaxpr
from functrax.transforms.batching import batch_jaxpr, vmap_rules
from functrax.transforms.call_util import closure_convert
from functrax.transforms.jvp import Zero, jvp_rules
from functrax.tree_util import tree_flatten


def _as_numpy(x):
    return np.asarray(x)


class Primitive(_core.Primitive):
    """A user-defined primitive: ``Primitive(name)``, then ``def_impl`` /
    ``def_abstract_eval``; set ``multiple_results = True`` for a list of outputs.

    Raises:
      MissingRuleError: (from ``bind``) evaluated without an impl, or transformed without
        the transformation's rule.
    """

    def __init__(self, name: str):
        super().__init__(name, multiple_results=False, family=None)
        self.impl = None

    def def_impl(self, impl):
        """Set the evaluation rule ``impl(*args, **params)`` (numpy arrays in; arrays or a
        list of them out). Returns ``impl``."""
        self.impl = impl

        def rule(*args, **params):
            out = impl(*args, **params)
            if self.multiple_results:
                return [_as_numpy(o) for o in out]
            return _as_numpy(out)
        numpy_rules[self] = rule
        return impl

    def def_abstract_eval(self, abstract_eval):
        """Set ``abstract_eval(*avals, **params) -> aval`` (a list with
        ``multiple_results``). Returns it."""
        def rule(*avals, **params):
            out = abstract_eval(*avals, **params)
            if self.multiple_results:
                return [_shaped(o) for o in out]
            return _shaped(out)
        super().def_abstract_eval(rule)
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful_abstract_eval):
        """As ``def_abstract_eval`` for a rule returning ``(aval, effects)`` (functrax has
        no effect system here: the effects are dropped)."""
        return self.def_abstract_eval(lambda *a, **p: effectful_abstract_eval(*a, **p)[0])

    def __repr__(self):
        return self.name


def _shaped(a):
    if isinstance(a, _core.ShapedArray):
        return a
    return _core.ShapedArray(tuple(a.shape), a.dtype, bool(getattr(a, "weak_type", False)))


class CallPrimitive(Primitive):
    """A primitive calling a function: ``bind(fun, *args, **params)`` traces ``fun`` to a
    jaxpr held in its ``call_jaxpr`` param (printed in jaxprs), evaluated by
    :func:`call_impl`. It gets JVP and batching rules that transform the inner jaxpr
    (reverse mode of a ``CallPrimitive`` is not supported).

    >>> import functrax
    >>> my_call = CallPrimitive("my_call")
    >>> my_call.bind(lambda x: x + 1.0, 1.0)
    [Array(2., dtype=float32, weak_type=True)]
    """

    def __init__(self, name: str):
        super().__init__(name)
        self.multiple_results = True
        super().def_abstract_eval(lambda *avals, call_jaxpr, **_: list(call_jaxpr.out_avals))
        numpy_rules[self] = self._numpy
        jvp_rules[self] = self._jvp
        vmap_rules[self] = self._vmap

    def bind(self, fun, *args, **params):
        leaves = [x if isinstance(x, _core.Tracer) else _core.as_array(x) for x in args]
        closed = trace_to_jaxpr(lambda *a: tree_flatten(fun(*a))[0],
                                [_core.get_aval(x) for x in leaves])
        closed, consts = closure_convert(closed)
        return _core.Primitive.bind(self, *consts, *leaves, call_jaxpr=closed, **params)

    @staticmethod
    def _numpy(*args, call_jaxpr, **_):
        outs = _core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)
        return [np.asarray(o) for o in outs]

    def _jvp(self, primals, tangents, *, call_jaxpr, **params):
        nonzero = [type(t) is not Zero for t in tangents]
        j = jvp_jaxpr(call_jaxpr, nonzero)
        outs = _core.Primitive.bind(self, *primals, *[t for t in tangents if type(t) is not Zero],
                                    call_jaxpr=j, **params)
        n = len(call_jaxpr.out_avals)
        return outs[:n], outs[n:]

    def _vmap(self, axis, vals, dims, *, call_jaxpr, **params):
        j, out_dims = batch_jaxpr(call_jaxpr, axis, dims)
        return _core.Primitive.bind(self, *vals, call_jaxpr=j, **params), out_dims


def call_impl(f, *args, **params):
    """Evaluate a call: ``f(*args)`` for a function, or the jaxpr of a ``ClosedJaxpr``."""
    del params
    if isinstance(f, ClosedJaxpr):
        return _core.eval_jaxpr(f.jaxpr, f.consts, *args)
    return f(*args)


class DropVar(Var):
    """An equation output that nothing reads (printed ``_``)."""

    __slots__ = ()

    def __repr__(self):
        return "_"


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None,
                  ctx=None) -> JaxprEqn:
    """A :class:`JaxprEqn` (``effects``, ``source_info`` and ``ctx`` are accepted for JAX
    compatibility; functrax's equations do not carry them)."""
    del effects, source_info, ctx
    return JaxprEqn(invars, outvars, primitive, params)


def check_jaxpr(jaxpr) -> None:
    """Type-check a jaxpr (or closed jaxpr).

    Raises:
      JaxprTypeError: naming the offending equation.
    """
    _check_jaxpr(jaxpr)


def mapped_aval(size: int, axis, aval):
    """The aval of one element of a value mapped along ``axis`` (the axis removed; None:
    unchanged).

    Raises:
      ValueError: when the axis does not have length ``size``.
    """
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} does not have "
                         f"size {size}")
    return _calls.unmapped_aval(aval, axis)


def unmapped_aval(size: int, axis, aval, explicit_mesh_axis=None):
    """The aval of a mapped value from one element's: an axis of ``size`` inserted at
    ``axis`` (None: unchanged)."""
    del explicit_mesh_axis
    return _calls.mapped_aval(aval, size, axis)


def primal_dtype_to_tangent_dtype(primal_dtype):
    """The tangent dtype of a primal dtype: itself for inexact dtypes, float0 otherwise."""
    dt = np.dtype(primal_dtype)
    return dt if dtypes.is_inexact(dt) else dtypes.float0


def valid_jaxtype(x) -> bool:
    """Whether ``x`` is a value functrax can trace (an array or a Python/numpy scalar)."""
    try:
        _core.get_aval(x)
    except TypeError:
        return False
    return True


__all__ = ["CallPrimitive", "ClosedJaxpr", "DropVar", "Jaxpr", "JaxprEqn", "Literal",
           "Primitive", "Var", "call_impl", "check_jaxpr", "jaxpr_as_fun", "mapped_aval",
           "new_jaxpr_eqn", "primal_dtype_to_tangent_dtype", "unmapped_aval", "valid_jaxtype"]
