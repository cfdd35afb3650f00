"""Canonical terms: backend-independent matching of a computation against a reference
function (used by the attention pattern pass and by the Triton backend's hand-written kernel
patterns, ``functrax/lowering/triton/patterns.py``).

A *canonical term* is the expression tree of a value over chosen inputs, in which the
spellings that do not change values disappear (``expand_dims``/``squeeze``/``reshape`` that
only add or drop size-1 dims, broadcasts of a row result back along the row,
``stop_gradient``, ``max(-inf, r)``), and commutative operations match in either order.
:func:`template_term` traces a reference function at given avals (optimized as ``jit``
optimizes) into such a term; :func:`unify` compares a template's term with a program's up to a
one-to-one mapping of inputs (a template literal equal to :data:`EPS_SENTINEL` matches any
float literal, bound as ``"eps"``).

Templates are written with the primitive-level wrappers (``functrax.primitives``), using the
row helpers below (:func:`row_max`, :func:`row_sum`, :func:`row_mean`, :func:`along_rows`):
they spell a reduction over the last axis the way ``functrax.numpy`` does (float16/bfloat16
sums and means accumulate in float32, ``keepdims`` results broadcast back along the row), so
a template's term equals the one of user code written with ``functrax.numpy``/``nn``.
:func:`softmax_template` is the reference softmax.

>>> t = template_term(softmax_template, [ShapedArray((2, 3), np.float32)])  # doctest: +SKIP
>>> unify(t, canonical_term(eqns, out, [x]), {})                             # doctest: +SKIP
True
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.core import Literal

__all__ = ["EPS_SENTINEL", "canonical_term", "unify", "template_term", "softmax_template",
           "row_max", "row_sum", "row_mean", "along_rows"]

EPS_SENTINEL = 1.2345678e-05  # a template's eps: matches any float literal

_TRANSPARENT = frozenset({P.stop_gradient_p, P.copy_p, P.expand_dims_p, P.squeeze_p,
                          P.reshape_p})
_COMMUTATIVE = frozenset({P.add_p, P.mul_p, P.max_p, P.min_p, P.and_p, P.or_p, P.eq_p, P.ne_p})
_COMMUTATIVE_NAMES = frozenset(p.name for p in _COMMUTATIVE)  # terms name their primitive


def _accumulation_dtype(dtype) -> np.dtype:
    """The dtype ``functrax.numpy`` sums ``dtype`` in: float32 for float16/bfloat16."""
    dtype = np.dtype(dtype)
    if dtype == np.float16 or (dtypes.bfloat16 is not None
                               and dtype == np.dtype(dtypes.bfloat16)):
        return np.dtype(np.float32)
    return dtype


def _last(x) -> int:
    return core.get_aval(x).ndim - 1


def row_max(x):
    """The maximum over the last axis, kept as a size-1 axis (``fnp.max(x, -1, keepdims=True)``)."""
    last = _last(x)
    return P.expand_dims(P.reduce_max(x, (last,)), (last,))


def row_sum(x):
    """The sum over the last axis, kept as a size-1 axis (``fnp.sum(x, -1, keepdims=True)``:
    float16/bfloat16 accumulate in float32)."""
    last, dtype = _last(x), core.get_aval(x).dtype
    acc = P.convert_element_type(x, _accumulation_dtype(dtype))
    return P.convert_element_type(P.expand_dims(P.reduce_sum(acc, (last,)), (last,)), dtype)


def row_mean(x):
    """The mean over the last axis, kept as a size-1 axis (``fnp.mean(x, -1, keepdims=True)``
    of a float ``x``: float16/bfloat16 accumulate in float32)."""
    aval = core.get_aval(x)
    last, acc_dtype = aval.ndim - 1, _accumulation_dtype(aval.dtype)
    acc = P.convert_element_type(x, acc_dtype)
    total = P.expand_dims(P.reduce_sum(acc, (last,)), (last,))
    mean = P.div(total, np.asarray(aval.shape[last], acc_dtype)[()])
    return P.convert_element_type(mean, aval.dtype)


def along_rows(r, like):
    """A row result ``r`` (size-1 last axis) broadcast back along the rows of ``like``."""
    shape = core.get_aval(like).shape
    return P.broadcast_in_dim(r, shape, tuple(range(len(shape))))


def softmax_template(x):
    """The reference softmax over the last axis (what ``nn.softmax(x)`` computes).

    >>> from functrax.core import ShapedArray
    >>> t = template_term(softmax_template, [ShapedArray((2, 3), np.float32)])
    >>> t[0], t[2][0], t[3][0]  # exp(x - max) / sum(exp(x - max)), the sum's row broadcast
    ('div', 'exp', 'reduce_sum')
    """
    e = P.exp(P.sub(x, along_rows(P.stop_gradient(row_max(x)), x)))
    return P.div(e, along_rows(row_sum(e), e))


def _nontrivial(shape):
    return tuple(n for n in shape if n != 1)


def _params_key(eqn):
    p = dict(eqn.params)
    if "axes" in p:
        nd = max(eqn.invars[0].aval.ndim, 1)
        p["axes"] = tuple(sorted(a % nd for a in p["axes"]))
    items = []
    for k in sorted(p):
        v = p[k]
        try:
            hash(v)
        except TypeError:
            v = repr(v)
        items.append((k, v))
    return tuple(items)


def _row_broadcast(eqn) -> bool:
    """A broadcast of a row result back along the last axis: of its keepdims form (trailing
    size-1 dim) or of the reduced form itself (``simplify`` composes an ``expand_dims`` into
    the broadcast that follows it)."""
    x, out = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    dims = tuple(eqn.params["broadcast_dimensions"])
    if not out:
        return False
    if len(x) == len(out) - 1:
        return x == out[:-1] and dims == tuple(range(len(x)))
    if len(x) != len(out) or dims != tuple(range(len(out))):
        return False
    return x[:-1] == out[:-1] and x[-1] == 1


def canonical_term(eqns, outvar, inputs):
    """The canonical term of ``outvar`` computed by ``eqns`` (a sequence of equations, or
    anything with an ``eqns`` attribute such as a fusion group) from ``inputs``: nested tuples
    ``(primitive, params, *operands)``, ``("in", position)`` and ``("lit", value, dtype)``.
    None when a value on the way has no producer among ``eqns`` and is not an input."""
    eqns = getattr(eqns, "eqns", eqns)
    producer = {v: e for e in eqns for v in e.outvars}
    pos = {v: i for i, v in enumerate(inputs)}
    memo = {}

    def term(v):
        if type(v) is Literal:
            return ("lit", float(np.asarray(v.val)), str(v.aval.dtype))
        if v in pos:
            return ("in", pos[v])
        if v in memo:
            return memo[v]
        e = producer.get(v)
        if e is None:
            raise KeyError(v)
        prim, x = e.primitive, e.invars[0] if e.invars else None
        out_shape = e.outvars[0].aval.shape
        if prim in _TRANSPARENT and _nontrivial(x.aval.shape) == _nontrivial(out_shape) and (
                prim is not P.reshape_p or e.params.get("dimensions") is None):
            t = term(x)
        elif prim is P.broadcast_in_dim_p and _row_broadcast(e):
            t = term(x)
        elif prim is P.max_p and any(type(u) is Literal and np.isneginf(u.val) for u in e.invars):
            t = term(next(u for u in e.invars if type(u) is not Literal))
        else:
            args = [term(u) for u in e.invars]
            if prim in _COMMUTATIVE:
                args = sorted(args, key=repr)
            t = (prim.name, _params_key(e), *args)
        memo[v] = t
        return t

    try:
        return term(outvar)
    except (KeyError, RecursionError):
        return None


def unify(t, g, binding) -> bool:
    """``t`` (template term) equals ``g`` (program term) under ``binding`` (template input ->
    program input position, plus ``"eps"``), extended in place."""
    if t[0] == "in":
        if g[0] != "in":
            return False
        prev = binding.get(t[1])
        if prev is None:
            if g[1] in binding.values():
                return False
            binding[t[1]] = g[1]
            return True
        return prev == g[1]
    if t[0] == "lit":
        if g[0] != "lit" or g[2] != t[2]:
            return False
        if np.asarray(t[1]).astype(t[2]) == np.asarray(EPS_SENTINEL).astype(t[2]):
            binding.setdefault("eps", g[1])
            return binding["eps"] == g[1]
        return t[1] == g[1]
    if g[0] != t[0] or g[1] != t[1] or len(g) != len(t):
        return False
    orders = [t[2:]]
    if t[0] in _COMMUTATIVE_NAMES and len(t) == 4:
        orders.append((t[3], t[2]))
    for order in orders:
        trial = dict(binding)
        if all(unify(a, b, trial) for a, b in zip(order, g[2:])):
            binding.clear()
            binding.update(trial)
            return True
    return False


_TEMPLATE_TERMS: dict = {}


def template_term(fn, avals):
    """The canonical term of ``fn`` traced at ``avals`` (one output, no consts; else None),
    memoized per function and avals."""
    key = (fn, tuple((a.shape, str(a.dtype)) for a in avals))
    if key not in _TEMPLATE_TERMS:
        from functrax.passes.pipeline import optimize
        from functrax.core.tracing import make_jaxpr
        args = [np.zeros(a.shape, a.dtype) for a in avals]
        closed = optimize(make_jaxpr(fn)(*args))
        j = closed.jaxpr
        term = None
        if len(j.outvars) == 1 and not j.constvars:
            term = canonical_term(j.eqns, j.outvars[0], j.invars)
        _TEMPLATE_TERMS[key] = term
    return _TEMPLATE_TERMS[key]
