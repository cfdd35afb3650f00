"""Algebraic simplification: a table of local rewrite rules keyed by primitive.

``rules[prim](eqn, ctx)`` looks at one equation (its inputs already rewritten) and returns

* ``None``: keep the equation;
* an atom (a Var or Literal already in scope): the equation's single output *is* that atom;
* a new :class:`JaxprEqn` binding the same output variables: use it instead.

The driver (:func:`simplify`) keeps types exactly: a forwarded atom is used only when it has
the *same* aval as the output it replaces (shape, dtype and weak type; otherwise the equation
is kept), and a replacement equation must abstractly evaluate to the outputs' avals: one that
does not (or does not type-check at all) is a bug in its rule and raises ``JaxprTypeError``
naming the rule's primitive and the types, so rules check types before proposing one. So
scalar promotion (``mul a:f32[] 1.0`` with an ``f32[3]`` result) is never "simplified" away,
and weak types (which decide the result types of later re-tracing) are never changed anywhere.

Rules see through *splat constants*: an operand made by ``broadcast_in_dim`` of a literal
counts as that scalar (``fnp.zeros(3) + x`` simplifies like ``x + 0``). As XLA's algebraic
simplifier does, ``x + 0`` becomes ``x`` for floats too, which differs only for ``x = -0.0``
(``-0.0 + 0.0`` is ``+0.0``); every other rewrite is exact.
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.core import Jaxpr, JaxprEqn, Literal
from functrax.errors import JaxprTypeError
from functrax.passes.substitution import Substitution

# primitive -> rule(eqn, ctx) -> None | atom | JaxprEqn
rules: dict = {}


class Context:
    """What rules may ask about operands: their producing equation and splat values."""

    __slots__ = ("producer", "uses")

    def __init__(self, jaxpr=None):
        self.producer: dict = {}  # Var -> the (rewritten) equation that binds it
        self.uses: dict = {}  # Var -> how many equations (or outputs) of the input read it
        if jaxpr is not None:
            for v in [u for e in jaxpr.eqns for u in e.invars] + list(jaxpr.outvars):
                if type(v) is not Literal:
                    self.uses[v] = self.uses.get(v, 0) + 1

    def made_by(self, atom, prim):
        """The equation of primitive ``prim`` that binds ``atom``, or None."""
        if type(atom) is Literal:
            return None
        eqn = self.producer.get(atom)
        return eqn if eqn is not None and eqn.primitive is prim else None

    def scalar(self, atom):
        """The value of a literal, or of a ``broadcast_in_dim`` of a literal; else None."""
        if type(atom) is Literal:
            return atom.val
        b = self.made_by(atom, P.broadcast_in_dim_p)
        if b is not None and type(b.invars[0]) is Literal:
            return b.invars[0].val
        return None


def _is(val, target) -> bool:
    """``val`` (a numpy scalar or None) equals ``target`` (NaN never does)."""
    if val is None:
        return False
    try:
        return bool(val == target)
    except (TypeError, ValueError):
        return False


def simplify(jaxpr: Jaxpr) -> Jaxpr:
    """Apply the rewrite ``rules`` in one forward sweep (rewrites chain within the sweep).

    Returns ``jaxpr`` itself when nothing changed. Replaced equations are left for DCE
    when something else still reads their outputs and dropped otherwise by DCE later.

    >>> import functrax, functrax.numpy as fnp
    >>> j = functrax.make_jaxpr(lambda x: -(-(x * 1.0)) + 0.0)(fnp.ones(3)).jaxpr
    >>> s = simplify(j)
    >>> s.outvars[0] is s.invars[0]
    True
    """
    ctx = Context(jaxpr)
    subst = Substitution()
    eqns = []
    changed = False
    for eqn in jaxpr.eqns:
        renamed = subst.apply(eqn)
        changed = changed or renamed is not eqn
        eqn = renamed
        rule = rules.get(eqn.primitive)
        res = rule(eqn, ctx) if rule is not None else None
        if isinstance(res, JaxprEqn):
            _check_rewrite(res, eqn)
            eqn, changed = res, True
        elif res is not None and res.aval == eqn.outvars[0].aval:
            subst[eqn.outvars[0]] = res
            changed = True
            continue  # the equation is now dead; drop it here
        eqns.append(eqn)
        for v in eqn.outvars:
            ctx.producer[v] = eqn
    return subst.rebuild(jaxpr, eqns) if changed else jaxpr


def _types(avals) -> str:
    return "(" + ", ".join(f"{a.str_short()}{'{weak}' if a.weak_type else ''}"
                           for a in avals) + ")"


def _check_rewrite(new: JaxprEqn, old: JaxprEqn) -> None:
    """Raise unless the rewrite ``new`` that the rule for ``old.primitive`` proposed is well
    typed and binds ``old``'s outputs with exactly their avals (weak types included).

    An ill-typed rewrite is a bug in a rule (rules must check shapes, dtypes and weak types
    before proposing an equation), so it fails loudly instead of being skipped.
    """
    in_avals = [v.aval for v in new.invars]
    want = [v.aval for v in old.outvars]

    def what():
        return (f"simplify: the rule for '{old.primitive}' rewrote {old!r} (operands "
                f"{_types(v.aval for v in old.invars)} -> {_types(want)}) into "
                f"'{new.primitive}' on operands {_types(in_avals)}")
    try:
        out = core.abstract_eval(new.primitive, in_avals, new.params)
    except (TypeError, ValueError) as e:
        raise JaxprTypeError(f"{what()}, which is ill-typed: {e}") from e
    outs = list(out) if new.primitive.multiple_results else [out]
    if outs != want:
        raise JaxprTypeError(f"{what()}, which gives {_types(outs)} instead of {_types(want)}")


# --- arithmetic identities ---


def _identity_operand(unit, commutative):
    """Rule for ``x op unit -> x`` (and ``unit op x -> x`` when ``commutative``)."""
    def rule(eqn, ctx):
        x, y = eqn.invars
        if _is(ctx.scalar(y), unit):
            return x
        if commutative and _is(ctx.scalar(x), unit):
            return y
        return None
    return rule


rules[P.mul_p] = _identity_operand(1, commutative=True)
rules[P.add_p] = _identity_operand(0, commutative=True)
rules[P.sub_p] = _identity_operand(0, commutative=False)
rules[P.div_p] = _identity_operand(1, commutative=False)


def _involution(eqn, ctx):
    """``f(f(x)) -> x`` for self-inverse elementwise ops (neg, conj, not)."""
    inner = ctx.made_by(eqn.invars[0], eqn.primitive)
    return inner.invars[0] if inner is not None else None


for _p in (P.neg_p, P.conj_p, P.not_p):
    rules[_p] = _involution


def _integer_pow(eqn, ctx):
    return eqn.invars[0] if eqn.params["y"] == 1 else None


rules[P.integer_pow_p] = _integer_pow


def _select_n(eqn, ctx):
    """Constant predicate -> the chosen case; one case, or all cases the same -> that case."""
    which, *cases = eqn.invars
    if len(cases) == 1 or all(c is cases[0] for c in cases):
        return cases[0]
    w = ctx.scalar(which)
    if w is None:
        return None
    return cases[min(max(int(w), 0), len(cases) - 1)]  # the numpy rule clips, as XLA does


rules[P.select_n_p] = _select_n


# --- conversions ---


def _float_range(dt):
    fi = dtypes.finfo(dt)
    return int(fi.nmant), int(fi.maxexp), int(fi.minexp)


def lossless(src, dst) -> bool:
    """Whether every value of dtype ``src`` is exactly representable in dtype ``dst``.

    >>> import numpy as np
    >>> lossless(np.int16, np.float32), lossless(np.int32, np.float32)
    (True, False)
    """
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst or src.kind == "b":
        return True
    if dst.kind == "b" or (src.kind == "c" and dst.kind != "c"):
        return False
    if dst.kind == "c":  # a real or complex source goes into the real (and imaginary) part
        dst = np.dtype(np.float32 if dst == np.complex64 else np.float64)
        src = src if src.kind != "c" else np.dtype(
            np.float32 if src == np.complex64 else np.float64)
    if src.kind in "iu" and dst.kind in "iu":
        s, d = dtypes.iinfo(src), dtypes.iinfo(dst)
        return d.min <= s.min and s.max <= d.max
    if src.kind in "iu" and dtypes.is_float(dst):
        s = dtypes.iinfo(src)
        magnitude_bits = max(int(s.max).bit_length(), int(-s.min).bit_length() - 1)
        return _float_range(dst)[0] + 1 >= magnitude_bits
    if dtypes.is_float(src) and dtypes.is_float(dst):
        (sm, sx, sn), (dm, dx, dn) = _float_range(src), _float_range(dst)
        # the smallest subnormal of src (2**(sn - sm)) must be representable too
        return dm >= sm and dx >= sx and dn - dm <= sn - sm
    return False


def _convert(eqn, ctx):
    x = eqn.invars[0]
    if x.aval == eqn.outvars[0].aval:
        return x
    inner = ctx.made_by(x, P.convert_element_type_p)
    if inner is None:
        return None
    src = inner.invars[0]
    if not lossless(src.aval.dtype, x.aval.dtype):
        return None
    if src.aval == eqn.outvars[0].aval:  # a lossless round trip
        return src
    return eqn.replace(invars=[src])


rules[P.convert_element_type_p] = _convert


# --- shape ops ---


def _transpose(eqn, ctx):
    """Identity permutation -> x; transpose of transpose -> one composed transpose; the
    transpose that swaps a dot_general's free blocks -> the dot_general of the swapped
    operands (what JAX's transpose rule of dot_general stages for a weight gradient)."""
    perm = tuple(eqn.params["permutation"])
    x = eqn.invars[0]
    if perm == tuple(range(len(perm))):
        return x
    inner = ctx.made_by(x, P.transpose_p)
    if inner is None:
        return _swapped_dot(eqn, perm, ctx)
    composed = tuple(inner.params["permutation"][i] for i in perm)
    if composed == tuple(range(len(composed))):
        return inner.invars[0]
    return eqn.replace(invars=[inner.invars[0]], params=dict(eqn.params, permutation=composed))


rules[P.transpose_p] = _transpose


def _swapped_dot(eqn, perm, ctx):
    """``transpose(dot_general(a, b))`` whose permutation keeps the batch dims and swaps the
    free dims of ``a`` with those of ``b`` -> ``dot_general(b, a)`` (only when the transpose is
    the dot's single reader: no product is computed twice)."""
    x = eqn.invars[0]
    dot = ctx.made_by(x, P.dot_general_p)
    if dot is None or ctx.uses.get(x, 0) != 1:
        return None
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    a, b = dot.invars
    nb, na = len(lb), a.aval.ndim - len(lc) - len(lb)
    nf = b.aval.ndim - len(rc) - len(rb)
    want = (tuple(range(nb)) + tuple(range(nb + na, nb + na + nf)) +
            tuple(range(nb, nb + na)))
    if perm != want or na == 0 or nf == 0:
        return None
    prec = dot.params.get("precision")
    params = dict(dot.params, dimension_numbers=((rc, lc), (rb, lb)),
                  precision=tuple(reversed(prec)) if type(prec) is tuple else prec)
    return JaxprEqn([b, a], eqn.outvars, P.dot_general_p, params)


def _reshape_source(x, ctx):
    """Follow a chain of order-preserving reshapes (reshape without ``dimensions``, squeeze,
    expand_dims) back to its start: all of them keep the row-major order of elements."""
    while True:
        eqn = ctx.producer.get(x) if type(x) is not Literal else None
        if eqn is None or eqn.primitive not in _RESHAPE_LIKE or (
                eqn.primitive is P.reshape_p and eqn.params.get("dimensions") is not None):
            return x
        x = eqn.invars[0]


def _reshape_like(eqn, ctx):
    """A no-op reshape/squeeze/expand_dims -> x; reshape-like chains -> their source (when
    shapes round-trip) or, for a reshape, one reshape of the source (keep the last)."""
    if eqn.primitive is P.reshape_p and eqn.params.get("dimensions") is not None:
        return None
    x = eqn.invars[0]
    out = eqn.outvars[0].aval
    if x.aval == out:
        return x
    src = _reshape_source(x, ctx)
    if src is x:
        return None
    if src.aval == out:
        return src
    if eqn.primitive is P.reshape_p:
        return eqn.replace(invars=[src])
    return None


_RESHAPE_LIKE = (P.reshape_p, P.squeeze_p, P.expand_dims_p)
for _p in _RESHAPE_LIKE:
    rules[_p] = _reshape_like


def _broadcast_in_dim(eqn, ctx):
    """A no-op broadcast -> x; a broadcast of a broadcast (or of an expand_dims) -> one
    broadcast of the source (operand axis i lands where the inner then the outer put it)."""
    x = eqn.invars[0]
    dims = tuple(eqn.params["broadcast_dimensions"])
    if x.aval == eqn.outvars[0].aval and dims == tuple(range(x.aval.ndim)):
        return x
    inner = ctx.made_by(x, P.broadcast_in_dim_p)
    if inner is not None and set(inner.params) == {"shape", "broadcast_dimensions"}:
        inner_dims = inner.params["broadcast_dimensions"]
    else:  # expand_dims: a broadcast keeping every axis but the new ones
        inner = ctx.made_by(x, P.expand_dims_p)
        if inner is None:
            return None
        inner_dims = [i for i in range(x.aval.ndim) if i not in inner.params["dimensions"]]
    composed = tuple(dims[d] for d in inner_dims)
    return eqn.replace(invars=[inner.invars[0]],
                       params=dict(eqn.params, broadcast_dimensions=composed))


rules[P.broadcast_in_dim_p] = _broadcast_in_dim


def _reduce_unit_axes(eqn, ctx):
    """A reduction over size-1 axes only (the cotangent of a size-1 operand) -> a reshape."""
    x = eqn.invars[0]
    out = eqn.outvars[0].aval
    if not all(x.aval.shape[a] == 1 for a in eqn.params["axes"]) or (
            out.dtype, out.weak_type) != (x.aval.dtype, x.aval.weak_type):
        return None
    return JaxprEqn([x], eqn.outvars, P.reshape_p,
                    dict(new_sizes=tuple(out.shape), dimensions=None))


for _p in (P.reduce_sum_p, P.reduce_max_p, P.reduce_min_p, P.reduce_prod_p, P.reduce_and_p,
           P.reduce_or_p):
    rules[_p] = _reduce_unit_axes


def _rev(eqn, ctx):
    x = eqn.invars[0]
    dims = tuple(eqn.params["dimensions"])
    if not dims or all(x.aval.shape[d] <= 1 for d in dims):
        return x
    inner = ctx.made_by(x, P.rev_p)
    if inner is not None and sorted(inner.params["dimensions"]) == sorted(dims):
        return inner.invars[0]
    return None


rules[P.rev_p] = _rev
