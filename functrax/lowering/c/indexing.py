"""How layout primitives transform the index a value is computed at, in C.

The index representation is the Triton backend's (``functrax.lowering.triton.indexing``:
constants, *digits* ``(base / stride) % extent`` of a loop variable, and other expressions
with the loop variables they read), and the rules of the views whose index arithmetic is
language-neutral text (``broadcast_in_dim``, ``transpose``, ``expand_dims``, ``squeeze``,
``rev``, ``slice``) are that module's. This module adds the rules that emit C: ``reshape``
(re-linearization with ``/`` and ``%``), ``dynamic_slice`` (starts loaded and clamped), and
the *select* rules (``pad``, ``concatenate``, ``dynamic_update_slice`` with literal starts):
each operand is read at a shifted index clamped into range and a C conditional selects.

``low`` is the C lowering (``codegen.Lowering``): ``render``/``render_linear`` for
expressions, ``bind`` for CSE, ``value`` to load data-dependent starts.
"""
from __future__ import annotations

import math

from functrax import primitives as P
from functrax.core import Literal
from functrax.lowering.c.rules import UnsupportedError
from functrax.lowering.triton import indexing as _neutral
from functrax.lowering.triton.indexing import (
    const, delinearize, digit, ix_bases, linear_terms, opaque, row_major_strides,
)

__all__ = ["const", "digit", "opaque", "ix_bases", "row_major_strides", "delinearize",
           "linear_terms", "reindex", "index_rules", "forward_rules", "select_rules"]


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
    lin = low.bind(low.render_linear(terms, c))
    bases = frozenset().union(*(ix_bases(ix) for ix, _ in terms))
    out = []
    for j, (s, d) in enumerate(zip(in_strides, in_shape)):
        if d == 1:
            out.append(const(0))
            continue
        e = lin if s == 1 else f"({lin} / {s})"
        out.append(opaque(e if j == 0 else f"({e} % {d})", bases))
    return tuple(out)


def _reshape_index(low, eqn, index):
    out_shape, in_shape = eqn.outvars[0].aval.shape, eqn.invars[0].aval.shape
    dims = eqn.params.get("dimensions")
    if dims is None:
        return [reindex(low, index, out_shape, in_shape)]
    t_index = reindex(low, index, out_shape, tuple(in_shape[d] for d in dims))
    out = [None] * len(dims)
    for i, d in enumerate(dims):
        out[d] = t_index[i]
    return [tuple(out)]


def _clamp(text: str, lo: int | None, hi: int | None) -> str:
    if lo is not None:
        text = f"ft_imax({text}, {lo})"
    if hi is not None:
        text = f"ft_imin({text}, {hi})"
    return text


def _dynamic_slice_index(low, eqn, index):
    """Literal starts (clamped as XLA clamps them) make a slice; a traced start is loaded,
    clamped into ``[0, d - n]`` and added."""
    x, starts = eqn.invars[0], eqn.invars[1:]
    out = []
    for ix, v, d, n in zip(index, starts, x.aval.shape, eqn.params["slice_sizes"]):
        if type(v) is not Literal:
            s = low.value(v, ())
            s = f"(int64_t){s}" if v.aval.dtype.kind != "u" else f"(int64_t)ft_umin({s}, {d - n})"
            st = low.bind(_clamp(s, 0, d - n))
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


# prim -> fn(lowering, eqn, output index) -> [operand index]; the value passes through
index_rules: dict = {p: _neutral.index_rules[p] for p in (
    P.broadcast_in_dim_p, P.transpose_p, P.expand_dims_p, P.squeeze_p, P.rev_p, P.slice_p)}
index_rules.update({P.reshape_p: _reshape_index, P.dynamic_slice_p: _dynamic_slice_index})


def _reshape_forward(low, eqn, index):
    if eqn.params.get("dimensions") is not None:
        return None
    return reindex(low, index, eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape)


forward_rules: dict = {p: _neutral.forward_rules[p] for p in (
    P.transpose_p, P.expand_dims_p, P.squeeze_p)}
forward_rules[P.reshape_p] = _reshape_forward


# --- select rules: views that pick, per element, one of several loads ---


def _shifted(low, ix, shift: int, size: int, lo_ok: bool = False, hi_ok: bool = False):
    """The index ``ix - shift`` into a dim of ``size``, clamped into range (so a load that
    is not selected stays in bounds)."""
    if ix[0] == "c":
        return const(min(max(ix[1] - shift, 0), size - 1))
    if shift == 0 and hi_ok:
        return ix
    r = low.bind(low.render(ix))
    text = f"{r} - {shift}" if shift > 0 else (f"{r} + {-shift}" if shift else r)
    return opaque(_clamp(text, None if lo_ok or shift == 0 else 0, None if hi_ok else size - 1),
                  ix_bases(ix))


def _pad_select(low, eqn, index):
    """``pad``: element ``i`` of a dim padded by ``(lo, hi, interior)`` is operand element
    ``(i - lo) / (interior + 1)`` where ``i - lo`` is a non-negative multiple of
    ``interior + 1`` inside the operand, else the padding value."""
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
            r = low.bind(low.render(ix))
            if lo > 0:
                conds.append(f"({r} >= {lo})")
            if hi > 0:
                conds.append(f"({r} < {lo + d})")
            x_index.append(_shifted(low, ix, lo, d, lo_ok=lo <= 0, hi_ok=hi <= 0))
        else:
            r = low.bind(low.render(ix))
            j = low.bind(f"{r} - {lo}" if lo > 0 else f"{r} + {-lo}" if lo else r)
            if lo > 0:
                conds.append(f"({j} >= 0)")
            if d > 1:
                conds.append(f"({j} % {step} == 0)")
            if hi > 0:
                conds.append(f"({j} <= {(d - 1) * step})")
            q = f"ft_imax({j}, 0) / {step}" if lo > 0 else f"{j} / {step}"
            x_index.append(opaque(f"ft_imin({q}, {d - 1})" if hi > 0 else q, ix_bases(ix)))
    if not conds:
        return [(x, tuple(x_index))], []
    return [(x, tuple(x_index)), (pad_value, ())], [" && ".join(conds)]


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
        parts = [next(p for p in parts if p[1] <= ix[1] < p[1] + p[2])]
    reqs, conds = [], []
    for k, (x, o, n) in enumerate(parts):
        first, last = k == 0, k == len(parts) - 1
        sub = list(index)
        sub[dim] = _shifted(low, ix, o, n, lo_ok=first, hi_ok=last)
        reqs.append((x, tuple(sub)))
        if not last:
            conds.append(f"{low.bind(low.render(ix))} < {o + n}")
    return reqs, conds


def _dynamic_update_slice_select(low, eqn, index):
    """``dynamic_update_slice`` with literal starts (clamped as XLA clamps them): the update
    inside its window, the operand elsewhere."""
    x, update, *starts = eqn.invars
    if any(type(v) is not Literal for v in starts):
        raise UnsupportedError("dynamic_update_slice with traced start indices writes at a "
                               "data-dependent position (not lowered to C)")
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
            r = low.bind(low.render(ix))
            if st:
                conds.append(f"({r} >= {st})")
            if st + n < d:
                conds.append(f"({r} < {st + n})")
            u_index.append(_shifted(low, ix, st, n))
    if not conds:
        return [(update, tuple(u_index))], []
    return [(update, tuple(u_index)), (x, index)], [" && ".join(conds)]


def _fill_literal(low, eqn):
    """The fill value of a ``fill``-mode gather as one Literal per equation (requests are
    asked for twice and must name the same value)."""
    from functrax.core import ShapedArray
    from functrax.primitives.gather_scatter import default_fill_value
    fills = low.__dict__.setdefault("gather_fill_literals", {})
    if id(eqn) not in fills:
        dt = eqn.invars[0].aval.dtype
        fv = eqn.params.get("fill_value")
        fills[id(eqn)] = Literal(default_fill_value(dt) if fv is None else fv,
                                 ShapedArray((), dt))
    return fills[id(eqn)]


def _gather_select(low, eqn, index):
    """``gather`` (XLA semantics, index vector dim last), as the Triton backend lowers it:
    operand dim ``d = start_index_map[k]`` is read at ``clamp(indices[batch, k], 0,
    size_d - window_d) + window``; an operand batching dim at its paired batch position;
    other dims at the window position. Mode ``fill`` selects the fill value where a start
    is out of ``[0, size_d - window_d]``."""
    from functrax.primitives.gather_scatter import GatherScatterMode
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
    for k, d in enumerate(dn.start_index_map):
        hi = shape[d] - (sizes[d] if d in window_dims else 1)
        if fill and hi < 0:  # no window fits: every element is the fill value
            return [(_fill_literal(low, eqn), ())], []
        s = low.value(indices, tuple(batch) + (const(k),))
        if fill:
            conds.append(f"({s} >= 0) && ({s} <= {hi})")
        st = low.bind(_clamp(f"(int64_t){s}" if indices.aval.dtype.kind == "i" else
                             f"(int64_t)ft_umin({s}, {max(hi, 0)})", 0, max(hi, 0)))
        w = op_index[d]
        op_index[d] = opaque(st if w[0] == "c" and w[1] == 0 else f"{st} + {low.render(w)}",
                             batch_bases | ix_bases(w))
    reqs = [(operand, tuple(op_index))]
    if not conds:
        return reqs, []
    return reqs + [(_fill_literal(low, eqn), ())], [" && ".join(low.bind(c, "int")
                                                              for c in conds)]


# prim -> fn(lowering, eqn, output index) -> ([(operand, index), ...], conditions): the value
# is ``cond0 ? operand0 : (cond1 ? operand1 : ... operand n-1)``
select_rules: dict = {
    P.pad_p: _pad_select, P.concatenate_p: _concatenate_select,
    P.dynamic_update_slice_p: _dynamic_update_slice_select, P.gather_p: _gather_select,
}
