"""The attention pattern pass: ``softmax(q @ k^T * scale [+ causal mask]) @ v`` as one equation.

Scaled dot-product attention spans three fusion groups (a matmul, a row-softmax reduction,
a matmul) and stores the ``Lq x Lk`` score matrix between them. :func:`find_attention`
recognises the subgraph in an optimized, first-order jaxpr and :func:`rewrite_attention`
replaces it by one ``fused_attention`` equation (:data:`attention_p`, defined in
``functrax/primitives/attention.py``), which the planner makes an OPAQUE group of its own and
a backend maps to a flash-style kernel (the Triton backend: ``kernels/attention.py``, when
``KernelConfig.hand_written`` names ``"attention"``). Detection is backend-independent and a
pure function of the closed jaxpr; a mask computed from constants is evaluated now with the
eager rules (``core.eager_rule``).

What matches, from the second ``dot_general`` backwards:

- ``o = dot_general(p, v)`` contracting ``p``'s last axis, ``p``'s leading dims as batch
  dims, one free dim on each side (``p @ v``, ``einsum('...qk,...kd->...qd')``);
- ``p`` is a softmax of ``x`` over the last axis (compared with the reference softmax as a
  canonical term, see ``pattern_terms``: ``nn.softmax`` and the hand-written spelling);
- from ``x`` back to ``s = dot_general(a, b)`` (one contracting dim, the batch dims first,
  one free dim each: ``q @ k.swapaxes(-1, -2)``, ``einsum('...qd,...kd->...qk')``) only:
  ``mul``/``div`` by a positive scalar literal (the scale; several multiply), widening float
  conversions, and at most one mask: ``select_n(pred, fill, s)`` (``fnp.where(mask, s,
  -inf)``) or ``s + bias``, where ``pred``/``fill``/``bias`` are computed from constants
  only (literals, consts, ``iota``) and evaluate to *exactly* the top-left-aligned causal
  mask (query ``i`` sees keys ``j <= i``) with ``-inf`` elsewhere; a mask that keeps
  everything is no mask;
- ``q``, ``k`` and ``v`` (seen through ``transpose`` equations; a widening conversion of
  ``v`` is read through) have one dtype, float16 or float32, ``Lk >= 1``;
- every batch dim has size > 1 or is absent (the optimizer turns a size-1 batch dim into a
  ``squeeze`` / unbatched ``dot_general`` / ``transpose``, which is not matched);
- no value computed between the two matmuls (the score matrix, the softmax's temporaries,
  ``p``) is used anywhere else or returned (the forward pass of a gradient keeps ``p`` as a
  residual: no match there, its groups run as usual).

The rewritten equation reads ``q (..., Lq, D)``, ``k (..., Lk, D)``, ``v (..., Lk, Dv)``
(``transpose`` equations are added when the operands have another layout) and has params
``causal``, ``scale``, ``precision`` (of the matmuls) and ``out_dtype``.

>>> import functrax, functrax.numpy as fnp, numpy as np
>>> f = lambda q, k, v: functrax.nn.softmax(q @ k.swapaxes(-1, -2) / 4.0) @ v
>>> x = np.ones((2, 5, 16), np.float32)
>>> print(rewrite_attention(functrax.jit(f).lower(x, x, x).jaxpr))
{ lambda ; a:f32[2,5,16] b:f32[2,5,16] c:f32[2,5,16]. let
    d:f32[2,5,16] = fused_attention[
      causal=False
      out_dtype=float32
      precision=None
      scale=0.25
    ] a b c
  in (d,) }
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from functrax.passes.def_use import def_use
from functrax.passes.pattern_terms import (
    canonical_term, softmax_template, template_term, unify,
)
from functrax.primitives.attention import attention_p

__all__ = ["attention_p", "AttentionMatch", "find_attention", "rewrite_attention"]

_FLOATS = ("float16", "float32")
_MAX_SOFTMAX_EQNS = 48   # equations between the softmax's input and output
_MAX_CONST_EQNS = 32     # equations computing a mask from constants
_MAX_CONST_ELEMENTS = 1 << 24  # the largest mask evaluated at compile time

# --- the match ---


@dataclasses.dataclass(frozen=True)
class AttentionMatch:
    """One attention subgraph of a jaxpr.

    Attributes:
      eqns: positions of the equations it replaces (two matmuls, the score chain, the
        softmax), ascending; the last is the output matmul.
      q, k, v: ``(var, permutation)``: the operand read and the transpose that brings it
        to ``(..., L, D)`` layout (None: already there).
      out: the output var (the second matmul's result).
      causal, scale, precision: the kernel's parameters.
    """

    eqns: tuple
    q: tuple
    k: tuple
    v: tuple
    out: Var
    causal: bool
    scale: float
    precision: object = None

    def shapes(self) -> tuple:
        """``(q, k, v)`` shapes in ``(..., L, D)`` layout."""
        return tuple(_permuted(var.aval.shape, perm) for var, perm in (self.q, self.k, self.v))

    @property
    def dtype(self):
        """The dtype of ``q``, ``k`` and ``v``."""
        return self.q[0].aval.dtype


def _permuted(shape, perm):
    return tuple(shape) if perm is None else tuple(shape[i] for i in perm)


class _Graph:
    """Producers, uses and constant values of one jaxpr."""

    def __init__(self, jaxpr: Jaxpr, consts):
        self.jaxpr, self.eqns = jaxpr, jaxpr.eqns
        self.prod, self.uses, self.outs = def_use(jaxpr)
        self.known = {}
        if consts is not None:
            for v, c in zip(jaxpr.constvars, consts):
                self.known[v] = np.asarray(c._value if type(c) is core.Array else c)
        self._memo = {}

    def producer(self, v):
        j = self.prod.get(v) if type(v) is Var else None
        return (j, self.eqns[j]) if j is not None else (None, None)

    def const_value(self, v):
        """The value of ``v`` when it is computed from constants only (else None)."""
        if type(v) is Literal:
            return np.asarray(v.val, v.aval.dtype)
        if v in self.known:
            return self.known[v]
        if v not in self._memo:
            self._memo[v] = self._evaluate(v)
        return self._memo[v]

    def _evaluate(self, v):
        """Evaluate ``v`` now with the eager (numpy backend) rules, when it is computed from
        constants by a few equations that all have one."""
        if v.aval.size > _MAX_CONST_ELEMENTS:
            return None
        seen, stack = set(), [v]
        while stack:  # the equations computing v, all from constants
            u = stack.pop()
            if type(u) is Literal or u in self.known:
                continue
            j = self.prod.get(u)
            if j is None or len(seen) >= _MAX_CONST_EQNS:
                return None
            if j in seen:
                continue
            e = self.eqns[j]
            if any(core.sub_jaxprs(e.params)) or core.eager_rule(e.primitive) is None:
                return None
            seen.add(j)
            stack.extend(e.invars)
        env = dict(self.known)
        for j in sorted(seen):
            e = self.eqns[j]
            args = [np.asarray(u.val, u.aval.dtype) if type(u) is Literal else env[u]
                    for u in e.invars]
            try:
                with np.errstate(all="ignore"):
                    res = core.eager_rule(e.primitive)(*args, **e.params)
            except Exception:  # noqa: BLE001 - not evaluable now: no match
                return None
            res = res if e.primitive.multiple_results else [res]
            for o, r in zip(e.outvars, res):
                env[o] = np.asarray(r)
        out = env[v]
        return out if out.shape == v.aval.shape else None


def _is_scalar_literal(v) -> bool:
    return type(v) is Literal and np.ndim(v.val) == 0


def _dot_layout(eqn):
    """``(lhs perm, rhs perm, batch)`` bringing a 3-part ``dot_general`` (batch dims, one
    contracting dim, one free dim per side) to ``(batch..., free, contract)`` layouts."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    a, b = eqn.invars
    nb = len(lb)
    if len(lc) != 1 or a.aval.ndim != nb + 2 or b.aval.ndim != nb + 2:
        return None
    fa = [d for d in range(nb + 2) if d not in lc and d not in lb]
    fb = [d for d in range(nb + 2) if d not in rc and d not in rb]
    return tuple(lb) + (fa[0], lc[0]), tuple(rb) + (fb[0], rc[0]), nb


def _through_transposes(g, var, perm):
    """``(source, permutation or None)``: ``transpose(var, perm)`` read from before any
    transposes producing ``var``."""
    while True:
        _, e = g.producer(var)
        if e is None or e.primitive is not P.transpose_p:
            break
        p0 = e.params["permutation"]
        perm = tuple(p0[i] for i in perm)
        var = e.invars[0]
    return var, (None if perm == tuple(range(len(perm))) else perm)


def _softmax_input(g, p):
    """``(x, equation positions)`` when ``p`` is the softmax of ``x`` over its last axis."""
    last = p.aval.ndim - 1
    cands, seen, stack = [], set(), [p]
    while stack and len(seen) < _MAX_SOFTMAX_EQNS:  # reduce_max over the last axis
        j, e = g.producer(stack.pop())
        if e is None or j in seen or e.primitive is P.dot_general_p:
            continue
        seen.add(j)
        x = e.invars[0] if e.invars else None
        if (e.primitive is P.reduce_max_p and type(x) is Var
                and x.aval.shape == p.aval.shape and x.aval.dtype == p.aval.dtype
                and tuple(a % max(x.aval.ndim, 1) for a in e.params["axes"]) == (last,)
                and x not in cands):
            cands.append(x)
        stack.extend(u for u in e.invars if type(u) is Var)
    for x in cands:
        region = _region(g, p, x)
        if region is None:
            continue
        gterm = canonical_term([g.eqns[j] for j in region], p, [x])
        tterm = template_term(softmax_template, [x.aval])
        if gterm is not None and tterm is not None and unify(tterm, gterm, {}):
            return x, region
    return None


def _region(g, out, src):
    """Positions of the equations computing ``out`` from ``src`` (and literals) only."""
    seen, stack = set(), [out]
    while stack:
        v = stack.pop()
        if type(v) is Literal or v is src:
            continue
        j, e = g.producer(v)
        if e is None or len(seen) >= _MAX_SOFTMAX_EQNS:
            return None
        if j not in seen:
            seen.add(j)
            stack.extend(e.invars)
    return seen


def _causal_mask(keep, shape) -> bool | None:
    """True: ``keep`` is exactly the causal mask; False: it keeps everything; else None."""
    try:
        keep = np.broadcast_to(np.asarray(keep, bool), shape)
    except ValueError:
        return None
    if keep.all():
        return False
    lq, lk = shape[-2:]
    tril = np.broadcast_to(np.tril(np.ones((lq, lk), bool)), shape)
    return True if np.array_equal(keep, tril) else None


def _score_chain(g, x):
    """From the softmax input back to the score matmul: ``(matmul position, scale, keep
    mask or None, chain positions)`` or None."""
    v, scale, keep, chain = x, 1.0, None, []
    while True:
        j, e = g.producer(v)
        if e is None:
            return None
        prim = e.primitive
        if prim is P.dot_general_p:
            return j, scale, keep, chain
        chain.append(j)
        ins = e.invars
        if prim is P.mul_p and len(ins) == 2 and any(_is_scalar_literal(u) for u in ins):
            lit, v = (ins[0], ins[1]) if _is_scalar_literal(ins[0]) else (ins[1], ins[0])
            c = float(np.asarray(lit.val))
        elif prim is P.div_p and len(ins) == 2 and _is_scalar_literal(ins[1]):
            v, d = ins[0], float(np.asarray(ins[1].val))
            c = 1.0 / d if d else math.inf
        elif prim is P.convert_element_type_p:
            src, out = ins[0].aval.dtype, e.outvars[0].aval.dtype
            if str(src) not in _FLOATS or str(out) not in _FLOATS or out.itemsize < src.itemsize:
                return None
            v, c = ins[0], 1.0
        elif prim in (P.select_n_p, P.add_p) and keep is None and len(ins) in (2, 3):
            got = _mask(g, e)
            if got is None:
                return None
            v, keep, c = got[0], got[1], 1.0
        else:
            return None
        if type(v) is not Var or not (math.isfinite(c) and c > 0):
            return None
        scale *= c


def _mask(g, e):
    """``(score var, keep)`` of ``select_n(pred, fill, s)`` / ``s + bias`` with constant
    ``pred``/``fill``/``bias`` that mask out with ``-inf``; None otherwise."""
    shape = e.outvars[0].aval.shape
    if e.primitive is P.select_n_p:
        if len(e.invars) != 3:
            return None
        pred, c0, c1 = e.invars
        f0, f1 = g.const_value(c0), g.const_value(c1)
        if (f0 is None) == (f1 is None):
            return None
        p = g.const_value(pred)
        if p is None:
            return None
        p = np.broadcast_to(np.asarray(p) != 0, shape)  # which case: 1 where true
        keep = p if f0 is not None else ~p
        score, fill = (c1, f0) if f0 is not None else (c0, f1)
    else:
        a, b = e.invars
        fa, fb = g.const_value(a), g.const_value(b)
        if (fa is None) == (fb is None):
            return None
        score, bias = (b, fa) if fa is not None else (a, fb)
        bias = np.broadcast_to(bias, shape)
        if not np.all((bias == 0) | np.isneginf(bias)):
            return None
        keep, fill = bias == 0, bias
    fill = np.broadcast_to(fill, shape)
    if not np.all(_masks_out(fill[~keep])):
        return None
    return score, keep


def _masks_out(fill):
    """Whether masked-out scores become -inf or a finite value so negative that its
    exponential after the row maximum is subtracted is 0 (``nn.dot_product_attention`` fills
    with ``-0.7 * finfo.max``): for a causal mask every row keeps a finite score."""
    fill = np.asarray(fill)
    if fill.size == 0:
        return np.ones(0, bool)
    big = np.finfo(fill.dtype).max if fill.dtype.kind == "f" else np.inf
    return np.isneginf(fill) | (fill <= -0.5 * big)


def _match_at(g, i2):
    """The attention match whose output matmul is equation ``i2``, or None."""
    e2 = g.eqns[i2]
    p, vop = e2.invars
    out = e2.outvars[0]
    lay2 = _dot_layout(e2) if type(p) is Var and type(vop) is Var else None
    if lay2 is None or str(out.aval.dtype) not in _FLOATS:
        return None
    p_perm, v_perm, nb = lay2
    if p_perm != tuple(range(nb + 2)):  # p (batch..., Lq, Lk) contracted over Lk
        return None
    v_perm = v_perm[:nb] + (v_perm[nb + 1], v_perm[nb])  # v as (batch..., Lk, Dv)
    soft = _softmax_input(g, p)
    if soft is None:
        return None
    x, soft_eqns = soft
    chain = _score_chain(g, x)
    if chain is None:
        return None
    i1, scale, keep, chain_eqns = chain
    e1 = g.eqns[i1]
    lay1 = _dot_layout(e1)
    if lay1 is None or lay1[2] != nb or e1.outvars[0].aval.shape != p.aval.shape:
        return None
    causal = False
    if keep is not None:
        causal = _causal_mask(keep, p.aval.shape)
        if causal is None:
            return None
    a, b = e1.invars
    q = _through_transposes(g, a, lay1[0])
    k = _through_transposes(g, b, lay1[1])
    vsrc = vop
    _, ve = g.producer(vop)
    if ve is not None and ve.primitive is P.convert_element_type_p and (
            ve.invars[0].aval.dtype == a.aval.dtype):
        vsrc = ve.invars[0]  # v widened to the softmax's dtype: the kernel reads it as is
    v = _through_transposes(g, vsrc, v_perm)
    dtypes = {str(t[0].aval.dtype) for t in (q, k, v)}
    if len(dtypes) != 1 or dtypes.pop() not in _FLOATS:
        return None
    if str(e1.outvars[0].aval.dtype) not in _FLOATS or p.aval.shape[-1] < 1 or (
            a.aval.shape[lay1[0][-1]] < 1 or vop.aval.shape[v_perm[-1]] < 1):
        return None
    eqns = {i1, i2, *chain_eqns, *soft_eqns}
    for j in eqns - {i2}:  # the score matrix and everything after it stay inside
        for o in g.eqns[j].outvars:
            if o in g.outs or any(u not in eqns for u in g.uses.get(o, ())):
                return None
    precision = e1.params.get("precision") or e2.params.get("precision")
    return AttentionMatch(tuple(sorted(eqns)), q, k, v, out, bool(causal), float(scale),
                          precision)


def find_attention(closed) -> list:
    """The :class:`AttentionMatch` es of an optimized, first-order jaxpr (a ``ClosedJaxpr``;
    a bare ``Jaxpr`` has no const values, so a mask held in a const never matches), in
    program order and disjoint."""
    if isinstance(closed, ClosedJaxpr):
        jaxpr, consts = closed.jaxpr, closed.consts
    elif isinstance(closed, Jaxpr):
        jaxpr, consts = closed, None
    else:
        raise TypeError(f"find_attention: expected a ClosedJaxpr or a Jaxpr, got "
                        f"{type(closed).__name__}")
    if sum(e.primitive is P.dot_general_p for e in jaxpr.eqns) < 2:
        return []
    g = _Graph(jaxpr, consts)
    matches, taken = [], set()
    for i, e in enumerate(jaxpr.eqns):
        if e.primitive is P.dot_general_p:
            m = _match_at(g, i)
            if m is not None and not taken.intersection(m.eqns):
                matches.append(m)
                taken.update(m.eqns)
    return matches


def _operand(var, perm, eqns):
    if perm is None:
        return var
    out = Var(ShapedArray(_permuted(var.aval.shape, perm), var.aval.dtype))
    eqns.append(JaxprEqn([var], [out], P.transpose_p,
                         {"permutation": tuple(perm)}))
    return out


def _fused_eqns(m: AttentionMatch) -> list:
    eqns = []
    ops = [_operand(var, perm, eqns) for var, perm in (m.q, m.k, m.v)]
    params = {"causal": m.causal, "scale": m.scale, "precision": m.precision,
              "out_dtype": np.dtype(m.out.aval.dtype)}
    eqns.append(JaxprEqn(ops, [m.out], attention_p, params))
    return eqns


def rewrite_attention(closed: ClosedJaxpr, accept=None) -> ClosedJaxpr:
    """``closed`` with every attention subgraph (:func:`find_attention`; only those for which
    ``accept(match)`` is true, when given) replaced by one ``fused_attention`` equation; the
    constvars and their values are unchanged, equations left dead are dropped. Returns
    ``closed`` itself when nothing matches."""
    matches = [m for m in find_attention(closed) if accept is None or accept(m)]
    if not matches:
        return closed
    from functrax.passes.dce import dce
    j = closed.jaxpr
    at = {m.eqns[-1]: m for m in matches}
    drop = set().union(*(m.eqns for m in matches))
    eqns = []
    for i, e in enumerate(j.eqns):
        if i in at:
            eqns += _fused_eqns(at[i])
        elif i not in drop:
            eqns.append(e)
    return ClosedJaxpr(dce(Jaxpr(j.constvars, j.invars, j.outvars, eqns, j.debug_info)),
                       closed.consts)
