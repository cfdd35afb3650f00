"""Symbolic index expressions, and how layout primitives transform them.

A value of a fusion group is computed *at an index*: one expression per dimension of its
shape, over the kernel's root ranges (``offs``; ``row`` and ``col``). Expressions are tuples:

- ``("c", value)``: a constant;
- ``("d", base, stride, extent)``: a *digit* ``(base // stride) % extent`` of a root;
- ``("e", text, bases)``: any other expression (its text, the roots it reads).

Digits keep equal indices equal along different paths and let adjacent digits merge
(``((o // 3) % 2) * 3 + o % 3`` is ``o % 6``), so contiguous reads need no arithmetic.

``index_rules[prim](low, eqn, index)`` gives the operand index of a layout primitive whose
output is read at ``index`` (a broadcast reads zero strides, a transpose permutes, a reshape
re-linearizes); ``forward_rules`` go the other way for one-to-one views. ``low`` is the
lowering (for ``render``/``render_linear`` of non-digit expressions).
"""
from __future__ import annotations

import math

from functrax import primitives as P
from functrax.lowering.triton.rules import UnsupportedError

__all__ = ["const", "digit", "opaque", "ix_bases", "row_major_strides", "delinearize",
           "linear_terms", "reindex", "index_rules", "forward_rules"]


def const(v: int) -> tuple:
    return ("c", int(v))


def digit(base: str, stride: int, extent: int) -> tuple:
    return ("c", 0) if extent == 1 else ("d", base, int(stride), int(extent))


def opaque(text: str, bases) -> tuple:
    return ("e", text, frozenset(bases))


def ix_bases(ix) -> frozenset:
    return frozenset() if ix[0] == "c" else (frozenset((ix[1],)) if ix[0] == "d" else ix[2])


def row_major_strides(shape) -> tuple:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def delinearize(base: str, shape, stride: int = 1) -> tuple:
    """The index of element ``base // stride`` of a row-major array of ``shape``."""
    return tuple(digit(base, stride * s, d) for s, d in zip(row_major_strides(shape), shape))


def linear_terms(index, strides):
    """``sum(index[d] * strides[d])`` as ([(ix, multiplier)], constant), adjacent digits
    of one base merged: ((o // 3) % 2) * 3 + o % 3 is o % 6."""
    terms, c = [], 0
    for ix, st in zip(index, strides):
        if ix[0] == "c":
            c += ix[1] * st
            continue
        if ix[0] == "d" and terms and terms[-1][0][0] == "d":
            (_, base, pstride, pext), pm = terms[-1]
            _, b, s, e = ix
            if base == b and pstride == s * e and pm == st * e:
                terms[-1] = (digit(b, s, pext * e), st)
                continue
        terms.append((ix, st))
    return terms, c


# --- index rules: how a layout primitive maps its output index to its operands' ---


def _broadcast_index(low, eqn, index):
    x = eqn.invars[0]
    return [tuple(const(0) if x.aval.shape[i] == 1 else index[d]
                  for i, d in enumerate(eqn.params["broadcast_dimensions"]))]


def _transpose_index(low, eqn, index):
    perm = eqn.params["permutation"]
    out = [None] * len(perm)
    for i, p in enumerate(perm):
        out[p] = index[i]
    return [tuple(out)]


def _reshape_index(low, eqn, index):
    if eqn.params.get("dimensions") is not None:
        raise UnsupportedError("reshape with dimensions (a fused transpose) is not lowered to "
                               "Triton; the jaxpr should carry a separate transpose")
    out_shape, in_shape = eqn.outvars[0].aval.shape, eqn.invars[0].aval.shape
    return [reindex(low, index, out_shape, in_shape)]


def reindex(low, index, out_shape, in_shape) -> tuple:
    """The index into ``in_shape`` of the element at ``index`` of a reshape to ``out_shape``."""
    terms, c = linear_terms(index, row_major_strides(out_shape))
    in_strides = row_major_strides(in_shape)
    if not terms:
        return tuple(const((c // s) % d) for s, d in zip(in_strides, in_shape))
    size = math.prod(in_shape)
    if len(terms) == 1 and c == 0 and terms[0][1] == 1 and terms[0][0][0] == "d" \
            and terms[0][0][3] == size:
        _, base, stride, _ = terms[0][0]
        return delinearize(base, in_shape, stride)
    lin = low.render_linear(terms, c)
    bases = frozenset().union(*(ix_bases(ix) for ix, _ in terms))
    out = []
    for j, (s, d) in enumerate(zip(in_strides, in_shape)):
        if d == 1:
            out.append(const(0))
            continue
        e = lin if s == 1 else f"({lin}) // {s}"
        out.append(opaque(e if j == 0 else f"({e}) % {d}", bases))
    return tuple(out)


def _expand_dims_index(low, eqn, index):
    dims = set(eqn.params["dimensions"])
    return [tuple(ix for d, ix in enumerate(index) if d not in dims)]


def _squeeze_index(low, eqn, index):
    dims = {d % eqn.invars[0].aval.ndim for d in eqn.params["dimensions"]}
    it = iter(index)
    return [tuple(const(0) if d in dims else next(it) for d in range(eqn.invars[0].aval.ndim))]


def _rev_index(low, eqn, index):
    dims, shape = set(eqn.params["dimensions"]), eqn.invars[0].aval.shape
    return [tuple(opaque(f"{shape[d] - 1} - {low.render(ix)}", ix_bases(ix))
                  if d in dims and ix[0] != "c" else
                  (const(shape[d] - 1 - ix[1]) if d in dims else ix)
                  for d, ix in enumerate(index))]


def _slice_index(low, eqn, index):
    starts = eqn.params["start_indices"]
    strides = eqn.params.get("strides") or (1,) * len(starts)
    out = []
    for ix, st, step in zip(index, starts, strides):
        if ix[0] == "c":
            out.append(const(st + ix[1] * step))
        elif st == 0 and step == 1:
            out.append(ix)
        else:
            scaled = low.render(ix) if step == 1 else f"{low.render(ix)} * {step}"
            out.append(opaque(f"{scaled} + {st}" if st else scaled, ix_bases(ix)))
    return [tuple(out)]


# prim -> fn(lowering, eqn, output index) -> [operand index, ...]; the value passes through
index_rules: dict = {
    P.broadcast_in_dim_p: _broadcast_index, P.transpose_p: _transpose_index,
    P.reshape_p: _reshape_index, P.expand_dims_p: _expand_dims_index,
    P.squeeze_p: _squeeze_index, P.rev_p: _rev_index, P.slice_p: _slice_index,
}
def _transpose_forward(low, eqn, index):
    return tuple(index[p] for p in eqn.params["permutation"])


def _expand_dims_forward(low, eqn, index):
    dims, it = set(eqn.params["dimensions"]), iter(index)
    return tuple(const(0) if d in dims else next(it) for d in range(eqn.outvars[0].aval.ndim))


def _squeeze_forward(low, eqn, index):
    dims = {d % eqn.invars[0].aval.ndim for d in eqn.params["dimensions"]}
    return tuple(ix for d, ix in enumerate(index) if d not in dims)


def _reshape_forward(low, eqn, index):
    if eqn.params.get("dimensions") is not None:
        return None
    return reindex(low, index, eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape)


# prim -> fn(lowering, eqn, operand index) -> output index: the inverse of index_rules, for
# the one-to-one views (an output's index from where its operand runs in the iteration)
forward_rules: dict = {
    P.transpose_p: _transpose_forward, P.expand_dims_p: _expand_dims_forward,
    P.squeeze_p: _squeeze_forward, P.reshape_p: _reshape_forward,
}
