"""Scatter kernels of the Triton backend (gathers are views: ``indexing._gather_select``).

A scatter (XLA semantics, index vector dim last) is an OPAQUE group of the fusion plan; here
it runs as two generated kernels:

1. a copy of the operand into a fresh output buffer (for ``scatter-max``/``-min`` of floats
   NaNs are made sticky for the atomics, see below);
2. one program per ``BLOCK`` update elements: each loads its update, its scatter indices
   (clamped as XLA clamps them, or for mode ``fill``/``drop`` masked off when the window is
   out of bounds) and combines the update into the output at the computed address:

   - ``scatter-add``: ``tl.atomic_add`` (float32/float16/float64, 32- and 64-bit integers).
     With duplicate indices the float sum's order (so its rounding) is nondeterministic on a
     GPU, as JAX's GPU scatter-add;
   - ``scatter-max``/``scatter-min``: ``tl.atomic_max``/``atomic_min`` (32/64-bit integers,
     float32/float64). Triton orders floats by their sign and integer bits, so a NaN update is
     first given the sign that makes it win (positive for max, negative for min) and the copy
     does the same to NaNs of the operand: NaN propagates as in XLA (its sign bit may differ);
   - ``scatter`` (replace) and ``scatter-mul`` with ``unique_indices=True``: a plain store, or
     load-multiply-store (no other program touches the element).

   Without ``unique_indices`` they are deterministic and match the numpy backend, which
   applies the updates in order of their *position* (the row-major index of the update's
   scatter (batch) coordinates: ``out[idx] = upd`` keeps the last, ``np.multiply.at``
   multiplies in that order). Two updates of one element always differ in position. With an
   int32 scratch per operand element (made by the copy kernel):

   - ``scatter``: a *bid* pass, ``tl.atomic_max(scratch[target], position)``, then a *write*
     pass in which only the update whose position won stores (last write wins);
   - ``scatter-mul``: rounds of one kernel, launched until no update is left: the pending
     update whose position is the smallest for its element (the winner of the previous
     round's ``tl.atomic_min`` bids) multiplies it in and records its position (updates at
     or below it are done); the others bid again for the next round (two bid buffers,
     alternating) and count themselves into a counter the host reads. Rounds = the largest
     number of updates of one element + 1; the products are those of the numpy backend, bit
     for bit.

Unsupported cases raise ``UnsupportedError`` with the reason (the backend falls back to the
numpy rule): 8/16-bit integer and bool atomics, bfloat16 atomics (Triton's interpreter has
none), float16 max/min, complex.
"""
from __future__ import annotations

import math
import re

import numpy as np

from functrax import primitives as P
from functrax.core import Literal, ShapedArray
from functrax.lowering.fusion.types import FusionGroup, GroupKind
from functrax.lowering.triton import rules
from functrax.lowering.triton.codegen import INTERPRETER_CONFIG, KernelConfig, KernelSource, \
    choose_block
from functrax.lowering.triton.indexing import row_major_strides
from functrax.lowering.triton.rules import UnsupportedError
from functrax.primitives.gather_scatter import GatherScatterMode

__all__ = ["SCATTER_KINDS", "scatter_unsupported", "generate_scatter", "build_scatter",
           "ScatterKernel"]

# primitive -> combiner
SCATTER_KINDS = {P.scatter_p: "set", P.scatter_add_p: "add", P.scatter_mul_p: "mul",
                 P.scatter_min_p: "min", P.scatter_max_p: "max"}

_ATOMIC_DTYPES = {
    "add": ("float16", "float32", "float64", "int32", "uint32", "int64", "uint64"),
    "max": ("float32", "float64", "int32", "uint32", "int64", "uint64"),
    "min": ("float32", "float64", "int32", "uint32", "int64", "uint64"),
}


def scatter_unsupported(eqn) -> str | None:
    """Why a scatter equation is not lowered to Triton (None when it is)."""
    kind = SCATTER_KINDS[eqn.primitive]
    operand, indices, updates = eqn.invars
    dt = np.dtype(operand.aval.dtype)
    rules.dtype_class(dt)  # raises for complex
    if kind in _ATOMIC_DTYPES:
        if dt.name not in _ATOMIC_DTYPES[kind]:
            return (f"'{eqn.primitive}' of {dt.name}: Triton has no atomic {kind} for it "
                    f"(supported: {', '.join(_ATOMIC_DTYPES[kind])})")
    elif kind == "mul" and rules.reg_dtype(dt) != rules.tl_dtype(dt):
        return f"'{eqn.primitive}' of {dt.name} (computed in float32: one rounding differs)"
    if np.dtype(indices.aval.dtype).itemsize > 8:
        return f"indices of dtype {indices.aval.dtype}"
    if _ordered(eqn) and (math.prod(indices.aval.shape[:-1]) >= 2 ** 31 - 1 or
                          operand.aval.size >= 2 ** 31):
        return (f"'{eqn.primitive}' without unique_indices=True of more than 2**31 - 2 "
                "updates or operand elements (positions are int32)")
    return None


def _ordered(eqn) -> bool:
    """Whether the scatter applies its updates in position order (set / mul, duplicates)."""
    return SCATTER_KINDS[eqn.primitive] in ("set", "mul") and \
        not eqn.params.get("unique_indices", False)


_SCRATCH = {"set": (-1,), "mul": (2 ** 31 - 1, 2 ** 31 - 1, -1)}  # fill of each int32 scratch


def _scratch_avals(eqn) -> tuple:
    """The int32 buffers the copy kernel fills for an ordered scatter: one per operand element
    (set: the bids; mul: two bid buffers and the last applied position), then (mul) the two
    round counters."""
    if not _ordered(eqn):
        return ()
    kind = SCATTER_KINDS[eqn.primitive]
    n = max(eqn.invars[0].aval.size, 1)
    avals = tuple(ShapedArray((n,), np.int32) for _ in _SCRATCH[kind])
    return avals + ((ShapedArray((1,), np.int32),) * 2 if kind == "mul" else ())


class _Text:
    def __init__(self):
        self.lines = []

    def __call__(self, line: str):
        self.lines.append("    " + line)


def _digits(base: str, shape) -> list:
    """``(base // stride) % extent`` per dim of a row-major ``shape`` (as text)."""
    out, total = [], math.prod(shape)
    for s, n in zip(row_major_strides(shape), shape):
        if n == 1:
            out.append("0")
            continue
        t = base if s == 1 else f"({base} // {s})"
        out.append(t if s * n >= total else f"({t} % {n})")
    return out


def _linear(parts, strides) -> str:
    terms = [p if st == 1 else f"{p} * {st}" for p, st in zip(parts, strides) if p != "0"]
    return " + ".join(terms) or "0"


def _block(expr: str) -> str:
    """``expr`` as a block over ``offs`` (a constant address would make a scalar pointer)."""
    return expr if re.search(r"[A-Za-z_]", expr) else f"{expr} + 0 * offs"


def _wide(size: int) -> str:
    return "tl.program_id(0).to(tl.int64)" if size >= 2 ** 31 - 2 * 16384 else \
        "tl.program_id(0)"


def _nan_fix(kind: str, v: str) -> str:
    """A float NaN with the sign that makes it win Triton's float atomic max/min."""
    return f"tl.where({v} == {v}, {v}, {'' if kind == 'max' else '-'}tl.abs({v}))"


def _source(name, text_lines, head_comment, in_avals, out_avals, block, grid, config):
    params = [f"in{i}" for i in range(len(in_avals))] + [f"out{j}" for j in range(len(out_avals))]
    head = ["# Generated by functrax.lowering.triton.gather_scatter; do not edit.",
            f"# {head_comment}",
            *(f"# in{i}: {a.str_short()}" for i, a in enumerate(in_avals)),
            *(f"# out{j}: {a.str_short()}" for j, a in enumerate(out_avals)),
            "import triton", "import triton.language as tl", "", "", "@triton.jit",
            f"def {name}({', '.join(params + ['BLOCK: tl.constexpr'])}):"]
    text = "\n".join(head + text_lines) + "\n"
    signature = {p: rules.signature_type(a.dtype)
                 for p, a in zip(params, tuple(in_avals) + tuple(out_avals))}
    signature["BLOCK"] = "constexpr"
    return KernelSource(name, text, GroupKind.OPAQUE, tuple(in_avals), tuple(out_avals),
                        {"BLOCK": block}, grid, config.num_warps, signature)


def _copy_source(eqn, config) -> KernelSource:
    kind = SCATTER_KINDS[eqn.primitive]
    aval = eqn.invars[0].aval
    n = max(aval.size, 1)
    block = choose_block(n, config.max_block)
    t = _Text()
    t(f"offs = {_wide(n)} * BLOCK + tl.arange(0, BLOCK)")
    t(f"mask = offs < {n}")
    t("v = tl.load(in0 + offs, mask=mask)")
    if kind in ("max", "min") and rules.dtype_class(aval.dtype) == rules.F:
        t(f"v = {_nan_fix(kind, 'v')}")
    t("tl.store(out0 + offs, v, mask=mask)")
    scratch = _scratch_avals(eqn)
    for j, fill in enumerate(_SCRATCH[kind] if scratch else (), start=1):
        t(f"tl.store(out{j} + offs, tl.full([BLOCK], {fill}, tl.int32), mask=mask)")
    for j in range(len(_SCRATCH[kind]) + 1, len(scratch) + 1) if scratch else ():
        t(f"tl.store(out{j} + offs, tl.zeros([BLOCK], tl.int32), mask=offs < 1)")
    name = f"scatter_copy_{np.dtype(aval.dtype).name}" + (f"_{kind}" if scratch else "")
    return _source(name, t.lines, f"operand copy of {eqn.primitive}", (aval,),
                   (aval,) + scratch, block, (max(1, -(-n // block)),), config)


def _scatter_source(eqn, config, phase: str = "") -> KernelSource:
    """An update kernel: inputs (indices, updates), outputs the copied operand and the scratch
    buffers (in place). ``phase``: "" (one pass), "bid" / "write" (ordered set), "round"
    (ordered mul)."""
    kind = SCATTER_KINDS[eqn.primitive]
    operand, indices, updates = (v.aval for v in eqn.invars)
    p = eqn.params
    dn = p["dimension_numbers"]
    mode = GatherScatterMode.from_any(p["mode"])
    rank = operand.ndim
    n = updates.size
    block = choose_block(n, config.max_block)
    t = _Text()
    t(f"offs = {_wide(n + operand.size)} * BLOCK + tl.arange(0, BLOCK)")
    t(f"mask = offs < {n}")
    t("u = tl.load(in1 + offs, mask=mask)")
    if kind in ("max", "min") and rules.dtype_class(operand.dtype) == rules.F:
        t(f"u = {_nan_fix(kind, 'u')}")
    u_ix = _digits("offs", updates.shape)
    for d, e in enumerate(u_ix):
        if e != "0":
            t(f"u{d} = {e}")
            u_ix[d] = f"u{d}"
    uwd = list(dn.update_window_dims)
    batch = [u_ix[d] for d in range(updates.ndim) if d not in uwd]
    window = [u_ix[d] for d in uwd]
    window_dims = [d for d in range(rank)
                   if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    wsize = {d: updates.shape[w] for d, w in zip(window_dims, uwd)}
    op_ix = ["0"] * rank
    for d, w in zip(window_dims, window):
        op_ix[d] = w
    for od, idd in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
        op_ix[od] = batch[idd]
    ibase = _block(_linear(batch, row_major_strides(indices.shape)[:-1]))
    ok = ["mask"]
    ty = "tl.int64" if operand.size >= 2 ** 31 else "tl.int32"
    for k, d in enumerate(dn.scatter_dims_to_operand_dims):
        hi = operand.shape[d] - wsize.get(d, 1)
        addr = ibase if k == 0 else f"{ibase} + {k}"
        t(f"s{k} = tl.load(in0 + {addr}, mask=mask)")
        if mode == GatherScatterMode.FILL_OR_DROP or hi < 0:
            ok.append(f"(s{k} >= 0) & (s{k} <= {hi})")
        t(f"c{k} = tl.minimum(tl.maximum(s{k}, 0), {max(hi, 0)}).to({ty})")
        op_ix[d] = f"c{k}" if op_ix[d] == "0" else f"(c{k} + {op_ix[d]})"
    t(f"addr = {_block(_linear(op_ix, row_major_strides(operand.shape)))}")
    t(f"ok = {' & '.join(ok)}")
    times = "&" if rules.dtype_class(operand.dtype) == rules.B else "*"
    if phase:  # the update's position: row-major over the scatter (batch) coordinates
        t(f"pos = {_block(_linear(batch, row_major_strides(indices.shape[:-1])))}")
    if kind in ("add", "max", "min"):
        t(f"tl.atomic_{kind}(out0 + addr, u, mask=ok, sem='relaxed')")
    elif phase == "bid":
        t("tl.atomic_max(out1 + addr, pos, mask=ok, sem='relaxed')")
    elif phase == "write":
        t("won = tl.load(out1 + addr, mask=ok, other=-1)")
        t("tl.store(out0 + addr, u, mask=ok & (won == pos))")
    elif phase == "round":  # out1: this round's bids, out2: the next's, out3: last applied
        t("pend = ok & (pos > tl.load(out3 + addr, mask=ok, other=2147483647))")
        t("bid = tl.load(out1 + addr, mask=pend, other=-1)")
        t("win = pend & (bid == pos)")
        t("old = tl.load(out0 + addr, mask=win)")
        t(f"tl.store(out0 + addr, old {times} u, mask=win)")
        t("tl.store(out1 + addr, tl.full([BLOCK], 2147483647, tl.int32), mask=win)")
        t("tl.store(out3 + addr, pos, mask=win)")
        t("rest = pend & (bid != pos)")
        t("tl.atomic_min(out2 + addr, pos, mask=rest, sem='relaxed')")
        t("tl.atomic_add(out4, tl.sum(rest.to(tl.int32), axis=0), sem='relaxed')")
        t("tl.store(out5 + offs, tl.zeros([BLOCK], tl.int32), mask=offs < 1)")
    elif kind == "mul":  # unique indices: no other program touches this element
        t("old = tl.load(out0 + addr, mask=ok)")
        t(f"tl.store(out0 + addr, old {times} u, mask=ok)")
    else:
        t("tl.store(out0 + addr, u, mask=ok)")
    name = f"{str(eqn.primitive).replace('-', '_')}_{np.dtype(operand.dtype).name}" + \
        (f"_{phase}" if phase else "")
    return _source(name, t.lines, f"{eqn.primitive} {dn}, mode={mode.name}",
                   (indices, updates), (operand,) + _scratch_avals(eqn), block,
                   (max(1, -(-n // block)),), config)


_PHASES = {"set": ("bid", "write"), "mul": ("round",)}


def generate_scatter(eqn, config: KernelConfig | None = None) -> tuple:
    """``(copy source, update source, ...)`` of a scatter equation (ordered set: a bid and a
    write source; ordered mul: one round source, launched repeatedly).

    Raises:
      UnsupportedError: for the cases ``scatter_unsupported`` names.
    """
    reason = scatter_unsupported(eqn)
    if reason is not None:
        raise UnsupportedError(reason)
    config = config or INTERPRETER_CONFIG
    phases = _PHASES[SCATTER_KINDS[eqn.primitive]] if _ordered(eqn) else ("",)
    return (_copy_source(eqn, config),) + tuple(_scatter_source(eqn, config, p)
                                                for p in phases)


def _host(x) -> np.ndarray:
    """``x`` as a C-contiguous numpy array (``np.ascontiguousarray`` would make 0-d 1-d)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy(order="C")


class ScatterKernel:
    """``(operand, indices, updates) -> [result]``: the copy kernel, then the update kernels
    writing into the copy, in order (on numpy buffers through the interpreter, or on GPU
    buffers); a ``round`` kernel (ordered scatter-mul) is launched until no update is left.

    Attributes:
      copy: the copy ``runtime.TritonKernel``; updates: the update kernels; update: the last,
      whose ``source`` and ``fn`` are this kernel's.
    """

    def __init__(self, copy, *updates):
        self.copy, self.updates, self.update = copy, updates, updates[-1]
        self.source, self.fn = self.update.source, self.update.fn

    @property
    def kernels(self) -> tuple:
        return (self.copy,) + self.updates

    def __call__(self, operand, indices, updates) -> list:
        from functrax.lowering.triton import runtime
        outs = list(self.copy(operand))
        src = self.update.source
        if src.in_avals[1].size == 0 or src.out_avals[0].size == 0:
            return outs[:1]
        if runtime.gpu_active():
            dev = getattr(outs[0], "device_id", 0)
            ins = [runtime._to_device(x, dev) for x in (indices, updates)]
        else:
            ins = [_host(x) for x in (indices, updates)]
        for x, a in zip(ins, src.in_avals):
            if tuple(x.shape) != a.shape or x.dtype != a.dtype:
                raise TypeError(f"Triton kernel '{src.name}': expected {a.str_short()}, got "
                                f"{x.dtype.name}{list(x.shape)}")
        for kernel in self.updates:
            if not kernel.source.name.endswith("_round"):
                runtime.launch(kernel, ins, outs)
                continue
            for _ in range(src.in_avals[1].size + 1):  # rounds: at most one per update, + 1
                runtime.launch(kernel, ins, outs)
                if int(np.asarray(outs[4]).reshape(-1)[0]) == 0:  # no update left
                    break
                outs[1], outs[2], outs[4], outs[5] = outs[2], outs[1], outs[5], outs[4]
        return outs[:1]

    def __repr__(self):
        names = ", ".join(k.source.name for k in self.kernels)
        return f"ScatterKernel({names})"


def build_scatter(group: FusionGroup, config: KernelConfig | None = None, cache=None):
    """``(kernel, fn)`` for a one-scatter OPAQUE group, or None for other groups.

    Raises:
      UnsupportedError: a scatter this module does not lower (the message says why).
    """
    if len(group.eqns) != 1 or group.eqns[0].primitive not in SCATTER_KINDS:
        return None
    from functrax.lowering.triton.cache import default_cache
    from functrax.lowering.triton.runtime import TritonKernel
    eqn = group.eqns[0]
    cache = cache or default_cache()
    kernels = [TritonKernel(s, cache.load(s)) for s in generate_scatter(eqn, config)]
    kernel = ScatterKernel(*kernels)
    pos = {v: i for i, v in enumerate(group.inputs)}
    consts = {i: np.asarray(v.val, v.aval.dtype) for i, v in enumerate(eqn.invars)
              if type(v) is Literal}

    def run(*vals):  # the group's inputs (deduplicated, no literals) -> the three operands
        return kernel(*[consts[i] if i in consts else vals[pos[v]]
                        for i, v in enumerate(eqn.invars)])

    return kernel, run
