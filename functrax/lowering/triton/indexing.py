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
re-linearizes); ``forward_rules`` go the other way for one-to-one views. ``select_rules`` are
the views that pick, per element, one of several loads (``pad``, also with interior or
negative padding, ``concatenate``,
``dynamic_update_slice`` with literal starts): each operand is read at a shifted index clamped
into range, and ``tl.where`` on the element's position selects among them. ``low`` is the
lowering (for ``render``/``render_linear`` of non-digit expressions, and ``value`` to load
the index values of data-dependent views).

Data-dependent views (``DATA_DEPENDENT``; the planner's ``fusion_gather``): ``gather`` (a
select rule: the operand at ``clamp(indices[batch, k]) + window``, or the fill value where
mode ``fill`` finds the window out of bounds) and ``dynamic_slice`` with traced starts (the
start scalars loaded and clamped as XLA clamps them). Their index values are computed in the
kernel (loads of group inputs or values of the group) and the operand is loaded at the result.
"""
from __future__ import annotations

import math

from functrax import primitives as P
from functrax.core import Literal
from functrax.lowering.triton.rules import UnsupportedError

__all__ = ["const", "digit", "opaque", "ix_bases", "row_major_strides", "delinearize",
           "linear_terms", "reindex", "index_rules", "forward_rules", "select_rules",
           "DATA_DEPENDENT", "clamped_start"]


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
    out_shape, in_shape = eqn.outvars[0].aval.shape, eqn.invars[0].aval.shape
    dims = eqn.params.get("dimensions")
    if dims is None:
        return [reindex(low, index, out_shape, in_shape)]
    # reshape(x, dimensions=d) is reshape(transpose(x, d)): re-linearize, then permute back
    t_index = reindex(low, index, out_shape, tuple(in_shape[d] for d in dims))
    out = [None] * len(dims)
    for i, d in enumerate(dims):
        out[d] = t_index[i]
    return [tuple(out)]


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


def _dynamic_slice_index(low, eqn, index):
    """A dynamic_slice with literal start indices (clamped as XLA clamps them) is a slice;
    a traced start is loaded (a scalar of the group), clamped into ``[0, d - n]`` and added
    (a data-dependent index, see ``gather_index``)."""
    x, starts = eqn.invars[0], eqn.invars[1:]
    out = []
    for ix, v, d, n in zip(index, starts, x.aval.shape, eqn.params["slice_sizes"]):
        if type(v) is not Literal:
            st = clamped_start(low, low.value(v, ()), 0, d - n, x.aval.size)
            out.append(opaque(f"{st} + {low.render(ix)}", ix_bases(ix)))
            continue
        st = min(max(int(v.val), 0), d - n)
        if ix[0] == "c":
            out.append(const(ix[1] + st))
        elif st == 0:
            out.append(ix)
        else:
            out.append(opaque(f"{low.render(ix)} + {st}", ix_bases(ix)))
    return [tuple(out)]


# prim -> fn(lowering, eqn, output index) -> [operand index, ...]; the value passes through
index_rules: dict = {
    P.dynamic_slice_p: _dynamic_slice_index,
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


# --- select rules: views that pick, per element, one of several loads ---


def _clamp(text: str, lo: int | None, hi: int | None) -> str:
    if lo is not None:
        text = f"tl.maximum({text}, {lo})"
    if hi is not None:
        text = f"tl.minimum({text}, {hi})"
    return text


def _shifted(low, ix, shift: int, size: int, lo_ok: bool = False, hi_ok: bool = False):
    """The index ``ix - shift`` into a dim of ``size``, clamped into range (so a load that
    is not selected stays in bounds); ``lo_ok``/``hi_ok``: that side needs no clamp."""
    if ix[0] == "c":
        return const(min(max(ix[1] - shift, 0), size - 1))
    if shift == 0 and hi_ok:
        return ix
    r = low.em.bind(low.render(ix))
    text = f"{r} - {shift}" if shift > 0 else (f"{r} + {-shift}" if shift else r)
    return opaque(_clamp(text, None if lo_ok or shift == 0 else 0, None if hi_ok else size - 1),
                  ix_bases(ix))


def _pad_select(low, eqn, index):
    """``pad``: element ``i`` of a dim padded by ``(lo, hi, interior)`` is operand element
    ``(i - lo) // (interior + 1)`` where ``i - lo`` is a non-negative multiple of
    ``interior + 1`` inside the operand, else the padding value (negative padding crops)."""
    x, pad_value = eqn.invars
    if x.aval.size == 0:
        return [(pad_value, ())], []
    conds, x_index = [], []
    for ix, (lo, hi, interior), d in zip(index, eqn.params["padding_config"], x.aval.shape):
        step = interior + 1
        if lo == 0 and hi == 0 and interior == 0:
            x_index.append(ix)
        elif ix[0] == "c":
            j = ix[1] - lo
            if j < 0 or j % step or j // step >= d:
                return [(pad_value, ())], []
            x_index.append(const(j // step))
        elif interior == 0:
            r = low.em.bind(low.render(ix))
            if lo > 0:
                conds.append(f"({r} >= {lo})")
            if hi > 0:
                conds.append(f"({r} < {lo + d})")
            x_index.append(_shifted(low, ix, lo, d, lo_ok=lo <= 0, hi_ok=hi <= 0))
        else:
            r = low.em.bind(low.render(ix))
            j = low.em.bind(f"{r} - {lo}" if lo > 0 else f"{r} + {-lo}" if lo else r)
            if lo > 0:
                conds.append(f"({j} >= 0)")
            if d > 1:
                conds.append(f"({j} % {step} == 0)")
            if hi > 0:
                conds.append(f"({j} <= {(d - 1) * step})")
            q = f"tl.maximum({j}, 0) // {step}" if lo > 0 else f"{j} // {step}"
            x_index.append(opaque(f"tl.minimum({q}, {d - 1})" if hi > 0 else q, ix_bases(ix)))
    if not conds:
        return [(x, tuple(x_index))], []
    return [(x, tuple(x_index)), (pad_value, ())], [" & ".join(conds)]


def _concatenate_select(low, eqn, index):
    """``concatenate``: element ``i`` along the axis comes from the operand ``k`` with
    ``offset_k <= i < offset_k + size_k``, at ``i - offset_k``."""
    dim = eqn.params["dimension"]
    ix, parts, off = index[dim], [], 0
    for x in eqn.invars:
        n = x.aval.shape[dim]
        if n:
            parts.append((x, off, n))
        off += n
    if ix[0] == "c":
        x, o, n = next(p for p in parts if p[1] <= ix[1] < p[1] + p[2])
        parts = [(x, o, n)]
    reqs, conds = [], []
    for k, (x, o, n) in enumerate(parts):
        first, last = k == 0, k == len(parts) - 1
        sub = list(index)
        sub[dim] = _shifted(low, ix, o, n, lo_ok=first, hi_ok=last)
        reqs.append((x, tuple(sub)))
        if not last:
            conds.append(f"{low.em.bind(low.render(ix))} < {o + n}")
    return reqs, conds


def _dynamic_update_slice_select(low, eqn, index):
    """``dynamic_update_slice`` with literal start indices (clamped as XLA clamps them): the
    update inside its window, the operand elsewhere."""
    x, update, *starts = eqn.invars
    if any(type(v) is not Literal for v in starts):
        raise UnsupportedError("dynamic_update_slice with traced start indices writes at a "
                               "data-dependent position (not lowered to Triton)")
    if update.aval.size == 0:
        return [(x, index)], []
    conds, u_index = [], []
    for ix, v, d, n in zip(index, starts, x.aval.shape, update.aval.shape):
        st = min(max(int(v.val), 0), d - n)
        if n == d:
            u_index.append(ix)
        elif ix[0] == "c":
            if not st <= ix[1] < st + n:
                return [(x, index)], []
            u_index.append(const(ix[1] - st))
        else:
            r = low.em.bind(low.render(ix))
            if st:
                conds.append(f"({r} >= {st})")
            if st + n < d:
                conds.append(f"({r} < {st + n})")
            u_index.append(_shifted(low, ix, st, n))
    if not conds:
        return [(update, tuple(u_index))], []
    return [(update, tuple(u_index)), (x, index)], [" & ".join(conds)]


def clamped_start(low, s: str, lo: int, hi: int, size: int) -> str:
    """The loaded start index ``s`` clamped into ``[lo, hi]``, as the offset type (int32, or
    int64 when the operand has ``size >= 2**31`` elements); clamped before the cast, so
    64-bit and unsigned indices never wrap."""
    ty = "tl.int64" if size >= 2 ** 31 else "tl.int32"
    return low.em.bind(f"tl.minimum(tl.maximum({s}, {lo}), {hi}).to({ty})")


def _gather_select(low, eqn, index):
    """``gather`` (XLA semantics, index vector dim last): output element ``index`` splits into
    batch positions (the non-offset dims, in order: the index array's leading dims) and window
    positions (the offset dims: the operand dims neither collapsed nor batching). Operand dim
    ``d = start_index_map[k]`` is read at ``clamp(indices[batch, k], 0, size_d - window_d) +
    window``; an operand batching dim at its paired batch position; other dims at the window
    position. Mode ``fill`` selects the fill value (NaN for inexact dtypes, as JAX) where a
    start is out of ``[0, size_d - window_d]``; ``clip`` and ``promise_in_bounds`` clamp."""
    from functrax.core import ShapedArray
    from functrax.primitives.gather_scatter import GatherScatterMode, default_fill_value
    operand, indices = eqn.invars
    p = eqn.params
    dn, sizes = p["dimension_numbers"], p["slice_sizes"]
    shape, rank = operand.aval.shape, operand.aval.ndim
    fill = GatherScatterMode.from_any(p["mode"]) == GatherScatterMode.FILL_OR_DROP
    offset = set(dn.offset_dims)
    batch = [ix for i, ix in enumerate(index) if i not in offset]
    window_dims = [d for d in range(rank)
                   if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    op_index = [const(0)] * rank
    for d, ix in zip(window_dims, (ix for i, ix in enumerate(index) if i in offset)):
        op_index[d] = ix
    for od, idd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
        op_index[od] = batch[idd]
    batch_bases = frozenset().union(*(ix_bases(ix) for ix in batch)) if batch else frozenset()
    conds = []
    fill_value = None
    if fill:
        fv = p.get("fill_value")
        fill_value = default_fill_value(operand.aval.dtype) if fv is None else fv
        # one Literal per equation: the lowering asks for the requests twice (keyed by var)
        fills = low.__dict__.setdefault("gather_fill_literals", {})
        if id(eqn) not in fills:
            fills[id(eqn)] = Literal(fill_value, ShapedArray((), operand.aval.dtype))
        fill_value = fills[id(eqn)]
    for k, d in enumerate(dn.start_index_map):
        hi = shape[d] - (sizes[d] if d in window_dims else 1)
        if fill and hi < 0:  # no window fits: every element is the fill value
            return [(fill_value, ())], []
        s = low.value(indices, tuple(batch) + (const(k),))
        if fill:
            conds.append(f"({s} >= 0) & ({s} <= {hi})")
        st = clamped_start(low, s, 0, max(hi, 0), operand.aval.size)
        w = op_index[d]
        op_index[d] = opaque(st if w[0] == "c" and w[1] == 0 else f"{st} + {low.render(w)}",
                             batch_bases | ix_bases(w))
    reqs = [(operand, tuple(op_index))]
    if not conds:
        return reqs, []
    return reqs + [(fill_value, ())], [" & ".join(low.em.bind(c) for c in conds)]


# data-dependent views: the operand's index depends on loaded values; a partial output's index
# is never derived through them
DATA_DEPENDENT = frozenset((P.gather_p,))

# prim -> fn(lowering, eqn, output index) -> ([(operand, index), ...], conditions): the value
# is ``where(conditions[0], operand 0, where(conditions[1], operand 1, ... operand n-1))``
# (one condition less than operands; a single request passes its value through)
select_rules: dict = {
    P.pad_p: _pad_select, P.concatenate_p: _concatenate_select,
    P.dynamic_update_slice_p: _dynamic_update_slice_select, P.gather_p: _gather_select,
}
