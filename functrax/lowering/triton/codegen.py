"""Render a :class:`FusionGroup` as the deterministic source of one ``@triton.jit`` kernel.

Every value of the group is computed *at an index*: a tuple of index expressions, one per
dimension of its shape, over the kernel's root ranges (``offs`` for an elementwise kernel,
``row`` and ``col`` for a row reduction). Layout primitives never move data; they transform
the index (``index_rules``): a broadcast reads its operand with zero strides, a transpose
permutes the index, a reshape re-linearizes it. Elementwise primitives apply a template of
``rules.triton_rules`` to their operands computed at the same index. Inputs are loaded from
contiguous buffers at the linear address of their index, with the mask of the roots it uses.

Index expressions are kept symbolic (:func:`digit`: ``(base // stride) % extent``) so that
equal indices reached along different paths compare equal and adjacent digits merge: the
contiguous read of a ``[2, 3]`` input in a ``[2, 3]`` kernel is ``in0 + offs``.

The source is deterministic: names are numbered in emission order, emission follows the
group's outputs and operands in order, and identical expressions are emitted once (CSE).
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import re

from functrax import primitives as P
from functrax.core import Literal
from functrax.lowering.fusion_types import FusionGroup, GroupKind
from functrax.lowering.triton import rules
from functrax.lowering.triton.rules import UnsupportedError

__all__ = ["KernelConfig", "KernelSource", "generate", "index_rules", "INTERPRETER_CONFIG",
           "GPU_CONFIG", "UnsupportedError"]

# --- kernel configuration ---


@dataclasses.dataclass(frozen=True)
class KernelConfig:
    """Block-size caps and launch options.

    Attributes:
      max_block: elements per program of an elementwise kernel (a power of two).
      max_block_r: columns of a reduction row held at once; longer rows loop over chunks.
      max_tile: rows * columns of a reduction tile.
      num_warps: warps per program (GPU only).
    """

    max_block: int = 4096
    max_block_r: int = 4096
    max_tile: int = 16384
    num_warps: int = 4


# The interpreter pays per operation per program: big blocks, few programs.
INTERPRETER_CONFIG = KernelConfig()
# Register-sized tiles for a GPU (one program per 1024 elements or a few rows).
GPU_CONFIG = KernelConfig(max_block=1024, max_block_r=4096, max_tile=4096, num_warps=4)
BLOCK_CANDIDATES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def _pow2_at_least(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def choose_block(n: int, cap: int) -> int:
    """The smallest candidate covering ``n``, or the largest candidate within ``cap``."""
    fitting = [c for c in BLOCK_CANDIDATES if c <= cap]
    for c in fitting:
        if c >= n:
            return c
    return fitting[-1]


@dataclasses.dataclass(frozen=True)
class KernelSource:
    """A generated kernel: its text and what launching it needs.

    Attributes:
      name: the kernel function's name.
      text: the module source (imports + one ``@triton.jit`` function).
      kind: the group kind.
      in_avals, out_avals: the buffers, in parameter order (inputs, then outputs).
      constexprs: block sizes passed as ``tl.constexpr`` parameters.
      grid: the launch grid.
      num_warps: warps per program (GPU).
      signature: parameter name -> Triton type (``"*fp32"``, ``"constexpr"``) for compiling.
    """

    name: str
    text: str
    kind: GroupKind
    in_avals: tuple
    out_avals: tuple
    constexprs: dict
    grid: tuple
    num_warps: int
    signature: dict

    @property
    def key(self) -> str:
        """Content hash of the text: the cache key of the module."""
        return hashlib.sha256(self.text.encode()).hexdigest()


# --- index expressions ---
# ("c", value) | ("d", base, stride, extent): (base // stride) % extent | ("e", text, bases)


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
REDUCTIONS = frozenset((P.reduce_sum_p, P.reduce_max_p, P.reduce_min_p, P.reduce_prod_p,
                        P.reduce_and_p, P.reduce_or_p, P.reduce_xor_p, P.argmax_p, P.argmin_p))


# --- the emitter: an indented buffer with scoped CSE ---

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$|^[0-9]+$")
_NAMES = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


class Emitter:
    """Lines of a function body; ``bind`` names an expression once per scope (CSE).

    Inside a block (a loop over row chunks), an expression that reads no name defined in the
    block is loop-invariant: ``bind`` emits it before the block instead (hoisting), where
    later passes find it again.
    """

    def __init__(self, depth: int = 1):
        self.lines: list = []
        self.depth = depth
        self.count = 0
        self.scopes: list = [{}]   # per level: expression or value key -> name
        self.local: list = [set()]  # per level: names defined at that level
        self.inserts: list = []    # per open block: the line index before its header

    def emit(self, line: str, level: int | None = None):
        level = len(self.scopes) - 1 if level is None else level
        text = "    " * (self.depth - (len(self.scopes) - 1 - level)) + line
        if level == len(self.scopes) - 1:
            self.lines.append(text)
        else:  # before the header of the block opened at level + 1
            at = self.inserts[level]
            self.lines.insert(at, text)
            for k in range(level, len(self.inserts)):
                self.inserts[k] += 1

    def define(self, name: str):
        """Declare ``name`` (emitted by hand) as defined at the current level."""
        self.local[-1].add(name)

    def fresh(self, prefix: str = "v") -> str:
        name = f"{prefix}{self.count}"
        self.count += 1
        return name

    def get(self, key):
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        return None

    def level_of(self, expr: str) -> int:
        """The outermost level at which every name ``expr`` reads is defined."""
        names = set(_NAMES.findall(expr))
        for level in range(len(self.scopes) - 1, 0, -1):
            if names & self.local[level]:
                return level
        return 0

    def put(self, key, name):
        self.scopes[self.level_of(name)][key] = name

    def bind(self, expr: str) -> str:
        if _IDENT.match(expr):
            return expr
        name = self.get(expr)
        if name is None:
            name = self.fresh()
            level = self.level_of(expr)
            self.emit(f"{name} = {expr}", level)
            self.scopes[level][expr] = name
            self.local[level].add(name)
        return name

    def open(self, header: str, defines=()):
        """Start a block (a loop) whose header defines ``defines``; names bound inside are
        forgotten when it closes."""
        self.inserts.append(len(self.lines))
        self.emit(header)
        self.depth += 1
        self.scopes.append({})
        self.local.append(set(defines))

    def close(self):
        self.depth -= 1
        self.scopes.pop()
        self.local.pop()
        self.inserts.pop()


# --- lowering ---


class _Lowering:
    """Shared machinery: computing a group's values at an index."""

    def __init__(self, group: FusionGroup, config: KernelConfig):
        self.group = group
        self.config = config
        self.em = Emitter()
        self.producer = {}
        for eqn in group.eqns:
            if eqn.primitive.multiple_results:
                raise UnsupportedError(f"'{eqn.primitive}' has several results; the Triton "
                                       "backend lowers single-result primitives only")
            self.producer[eqn.outvars[0]] = eqn
        self.inputs = {v: i for i, v in enumerate(group.inputs)}
        self.totals: dict = {}   # root name -> extent
        # the shape of rank-0 loads and literals: blocks from the start, since the interpreter
        # mistypes splats of scalar comparisons (a float32 array where int1 is due)
        self.scalar_block = "[BLOCK]"
        self.masks: dict = {}    # frozenset of roots -> mask name

    # -- rendering --
    def render(self, ix) -> str:
        if ix[0] == "c":
            return str(ix[1])
        if ix[0] == "e":
            return f"({ix[1]})"
        _, base, stride, extent = ix
        text = base if stride == 1 else f"{base} // {stride}"
        if stride * extent < self.totals[base]:
            text = f"{base} % {extent}" if stride == 1 else f"({text}) % {extent}"
        return text

    def render_linear(self, terms, c) -> str:
        parts = [self.em.bind(self.render(ix)) + (f" * {m}" if m != 1 else "")
                 for ix, m in terms]
        if c or not parts:
            parts.append(str(c))
        return " + ".join(parts)

    def address(self, index, shape):
        """(address text, roots used) of element ``index`` of a contiguous ``shape``."""
        terms, c = linear_terms(index, row_major_strides(shape))
        bases = frozenset().union(*(ix_bases(ix) for ix, _ in terms)) if terms else frozenset()
        return self.em.bind(self.render_linear(terms, c)), bases

    # -- values --
    def value(self, var, index) -> str:
        """The name of ``var`` computed at ``index`` (emitting whatever it needs)."""
        stack = [(var, index, False)]
        while stack:
            v, ix, ready = stack.pop()
            if self.em.get((v, ix)) is not None:
                continue
            if type(v) is Literal:
                self.em.put((v, ix), self.em.bind(
                    rules.literal(v.val, v.aval.dtype, self.scalar_block)))
                continue
            if v in self.inputs:
                self.em.put((v, ix), self.load(v, ix))
                continue
            eqn = self.producer.get(v)
            if eqn is None:
                raise UnsupportedError(f"group value {v} is neither an input of the group nor "
                                       "produced by one of its equations")
            reqs = self.operand_requests(eqn, ix)
            if not ready:
                stack.append((v, ix, True))
                stack.extend((o, oix, False) for o, oix in reversed(reqs))
                continue
            self.em.put((v, ix), self.apply(eqn, ix, [self.em.get(r) for r in reqs]))
        return self.em.get((var, index))

    def operand_requests(self, eqn, index):
        prim = eqn.primitive
        if prim in index_rules:
            return list(zip(eqn.invars[:1], index_rules[prim](self, eqn, index)))
        if prim in REDUCTIONS:
            raise UnsupportedError(self.reduction_error(eqn))
        out_shape = eqn.outvars[0].aval.shape
        reqs = []
        for x in eqn.invars:
            if x.aval.shape == out_shape:
                reqs.append((x, index))
            elif x.aval.shape == ():
                reqs.append((x, ()))
            else:
                raise UnsupportedError(f"'{prim}' operand of shape {x.aval.shape} does not "
                                       f"match its output shape {out_shape}")
        return reqs

    def reduction_error(self, eqn) -> str:
        return (f"'{eqn.primitive}' cannot be lowered inside a "
                f"{self.group.kind.value} group at this index")

    def apply(self, eqn, index, operands) -> str:
        prim = eqn.primitive
        if prim in index_rules:
            return operands[0]
        out = eqn.outvars[0].aval
        if prim is P.iota_p:
            ix = index[eqn.params["dimension"]]
            if ix[0] == "c":
                return self.em.bind(rules.literal(ix[1], out.dtype, self.scalar_block))
            return self.em.bind(f"({self.render(ix)}).to({rules.reg_dtype(out.dtype)})")
        ctx = rules.RuleContext(prim, tuple(x.aval for x in eqn.invars), out, eqn.params)
        return self.expand(rules.lookup(prim, ctx), operands, ctx.fields())

    def expand(self, template, operands, fields) -> str:
        steps = (template,) if isinstance(template, str) else tuple(template)
        temps: dict = {}
        for i, step in enumerate(steps):
            name = self.em.bind(step.format(*operands, **fields, **temps))
            temps[f"t{i}"] = name
        return name

    def load(self, var, index) -> str:
        i = self.inputs[var]
        addr, bases = self.address(index, var.aval.shape)
        if bases:
            expr = f"tl.load(in{i} + {addr}, mask={self.masks[bases]})"
        else:
            ptr = f"in{i}" if addr == "0" else f"in{i} + {addr}"
            expr = f"tl.broadcast_to(tl.load({ptr}), {self.scalar_block})"
        dt = var.aval.dtype
        if rules.reg_dtype(dt) != rules.tl_dtype(dt):
            expr += f".to({rules.reg_dtype(dt)})"
        return self.em.bind(expr)

    def store(self, j, var, index, addr, mask):
        v = self.value(var, index)
        dt = var.aval.dtype
        if rules.tl_dtype(dt) == "tl.bfloat16":  # round to nearest even (see rules.BF16_ROUND)
            v = self.expand(rules.BF16_ROUND, [v], {})
        if rules.reg_dtype(dt) != rules.tl_dtype(dt):
            v = f"{v}.to({rules.tl_dtype(dt)})"
        self.em.emit(f"tl.store(out{j} + {addr}, {v}, mask={mask})")

    def wide(self, size: int) -> str:
        """``tl.program_id(0)``, widened to int64 where offsets may pass 2**31."""
        return "tl.program_id(0).to(tl.int64)" if size >= 2 ** 31 - 2 * 16384 else \
            "tl.program_id(0)"


class _Elementwise(_Lowering):

    def run(self):
        g = self.group
        n = math.prod(g.shape)
        self.totals = {"offs": n}
        self.masks = {frozenset({"offs"}): "mask"}
        block = choose_block(n, self.config.max_block)
        em = self.em
        em.emit(f"pid = {self.wide(n)}")
        em.emit("offs = pid * BLOCK + tl.arange(0, BLOCK)")
        em.emit(f"mask = offs < {n}")
        for j, out in enumerate(g.outputs):
            if math.prod(out.aval.shape) != n:
                raise UnsupportedError(f"elementwise group of shape {list(g.shape)} writes an "
                                       f"output of shape {list(out.aval.shape)}")
            self.store(j, out, delinearize("offs", out.aval.shape), "offs", "mask")
        return {"BLOCK": block}, (max(1, -(-n // block)),)


class _Reduction(_Lowering):

    def run(self):
        g = self.group
        shape, axes = tuple(g.shape), tuple(sorted(a % max(len(g.shape), 1)
                                                   for a in g.reduce_axes))
        kept = [d for d in range(len(shape)) if d not in axes]
        self.kept_shape = tuple(shape[d] for d in kept)
        red_shape = tuple(shape[d] for d in axes)
        m, r = math.prod(self.kept_shape), math.prod(red_shape)
        self.shape, self.axes = shape, axes
        self.totals = {"row": m, "col": r}
        self.scalar_block = "[BLOCK_M, 1]"
        self.masks = {frozenset({"row"}): "row_mask", frozenset({"col"}): "col_mask",
                      frozenset({"row", "col"}): "mask"}
        self.full = self.split_index(shape, axes)
        cfg = self.config
        self.fits = r <= cfg.max_block_r
        block_r = _pow2_at_least(r) if self.fits else cfg.max_block_r
        block_m = max(1, min(_pow2_at_least(m), _pow2_at_least(cfg.max_tile // block_r + 1) // 2))
        em = self.em
        em.emit(f"pid = {self.wide(m * r)}")
        em.emit("row = pid * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
        em.emit(f"row_mask = row < {m}")
        if self.fits:
            em.emit(f"tl.static_assert(BLOCK_R >= {r})")
            self.emit_cols("tl.arange(0, BLOCK_R)[None, :]")
        for eqn in g.eqns:
            if eqn.primitive in REDUCTIONS:
                self.reduce(eqn)
        full_outs, kept_outs = [], []
        for j, out in enumerate(g.outputs):
            size = math.prod(out.aval.shape)
            index = self.output_index(out.aval.shape) if out.aval.shape == shape or (
                size == m * r and size != m) else None
            if index is not None:
                full_outs.append((j, out, index))
            elif size == m:
                kept_outs.append((j, out))
            else:
                raise UnsupportedError(f"reduction group of shape {list(shape)} (reducing axes "
                                       f"{list(axes)}) writes an output of shape "
                                       f"{list(out.aval.shape)}")
        for j, out in kept_outs:
            self.store(j, out, delinearize("row", out.aval.shape), "row", "row_mask")
        if full_outs:
            self.open_cols()
            for j, out, index in full_outs:
                addr, bases = self.address(index, out.aval.shape)
                for missing in sorted({"row", "col"} - bases):  # keep the pointer a block
                    addr = f"{addr} + 0 * {missing}"
                self.store(j, out, index, addr, "mask")
            self.close_cols()
        return {"BLOCK_M": block_m, "BLOCK_R": block_r}, (max(1, -(-m // block_m)),)

    def emit_cols(self, col):
        self.em.emit(f"col = {col}")
        self.em.emit(f"col_mask = col < {self.totals['col']}")
        self.em.emit("mask = row_mask & col_mask")
        for name in ("col", "col_mask", "mask"):
            self.em.define(name)

    def open_cols(self):
        if not self.fits:
            self.em.open(f"for k in range(0, {self.totals['col']}, BLOCK_R):", defines=("k",))
            self.emit_cols("k + tl.arange(0, BLOCK_R)[None, :]")

    def close_cols(self):
        if not self.fits:
            self.em.close()

    def split_index(self, shape, axes):
        """The index of a value of ``shape`` whose ``axes`` run along the row (the rest along
        the rows): kept dims delinearize ``row``, reduced dims ``col``."""
        kept = [d for d in range(len(shape)) if d not in axes]
        kshape, rshape = [shape[d] for d in kept], [shape[d] for d in axes]
        if math.prod(kshape) != self.totals["row"] or math.prod(rshape) != self.totals["col"]:
            return None
        ix = dict(zip(kept, delinearize("row", kshape)))
        ix.update(zip(axes, delinearize("col", rshape)))
        return tuple(ix[d] for d in range(len(shape)))

    def output_index(self, shape):
        """The index of an output of ``shape`` laid out as (rows..., row elements...)."""
        if tuple(shape) == self.shape:
            return self.full
        for k in range(len(shape) + 1):
            if math.prod(shape[:k]) == self.totals["row"] and \
                    math.prod(shape[k:]) == self.totals["col"]:
                return self.split_index(shape, tuple(range(k, len(shape))))
        return None

    def reduce(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        axes = tuple(sorted(a % x.aval.ndim for a in eqn.params["axes"])) if x.aval.ndim else ()
        index = self.split_index(x.aval.shape, axes)
        if index is None:
            raise UnsupportedError(
                f"'{eqn.primitive}' reduces axes {list(axes)} of a {x.aval.str_short()} operand;"
                f" this reduction group has {self.totals['row']} rows of {self.totals['col']} "
                f"elements (shape {list(self.shape)}, reducing axes {list(self.axes)})")
        rule = rules.lookup_reduce(eqn.primitive, x.aval.dtype)
        ctx = rules.RuleContext(eqn.primitive, (x.aval,), out.aval, eqn.params)
        fields = ctx.fields()
        ident = rule.identity.format(**fields)
        em = self.em
        if self.fits:
            masked = em.bind(f"tl.where(mask, {self.value(x, index)}, {ident})")
            res = self.expand(rule.finish, [masked], fields)
        else:
            acc = em.fresh("acc")
            em.emit(f"{acc} = tl.full([BLOCK_M, BLOCK_R], {ident}, {fields['R']})")
            self.open_cols()
            masked = em.bind(f"tl.where(mask, {self.value(x, index)}, {ident})")
            em.emit(f"{acc} = {rule.accumulate.format(masked, acc=acc, **fields)}")
            self.close_cols()
            res = self.expand(rule.finish, [acc], fields)
        em.put((out, delinearize("row", out.aval.shape)), res)

    def reduction_error(self, eqn) -> str:
        return (f"the result of '{eqn.primitive}' is read at an index other than its row "
                "(only broadcasts of a row result along the reduced axes are lowered)")


def _kernel_name(group: FusionGroup) -> str:
    names = []
    for e in group.eqns:
        n = e.primitive.name
        if e.primitive not in index_rules and n not in names:
            names.append(n)
    return re.sub(r"[^A-Za-z0-9_]", "_", "_".join(["fused"] + names[:4]))[:60]


def generate(group: FusionGroup, config: KernelConfig | None = None) -> KernelSource:
    """The Triton source of ``group`` (ELEMENTWISE or REDUCTION).

    Args:
      group: the equations, inputs and outputs of one kernel.
      config: block-size caps (default: ``INTERPRETER_CONFIG``).

    Returns:
      a :class:`KernelSource`; equal groups (same equations on the same avals) give the
      same text.

    Raises:
      UnsupportedError: for a group kind, primitive, dtype or layout not lowered yet.
    """
    config = config or INTERPRETER_CONFIG
    if group.kind is GroupKind.ELEMENTWISE:
        low = _Elementwise(group, config)
    elif group.kind is GroupKind.REDUCTION:
        low = _Reduction(group, config)
    else:
        raise UnsupportedError(f"the Triton code generator does not lower {group.kind.value} "
                               "groups yet (only elementwise and reduction)")
    for v in tuple(group.inputs) + tuple(group.outputs):
        if type(v) is not Literal:
            rules.dtype_class(v.aval.dtype)  # raises for unsupported dtypes
    constexprs, grid = low.run()
    name = _kernel_name(group)
    params = [f"in{i}" for i in range(len(group.inputs))] + \
        [f"out{j}" for j in range(len(group.outputs))]
    cparams = [f"{c}: tl.constexpr" for c in constexprs]
    head = [
        "# Generated by functrax.lowering.triton.codegen; do not edit.",
        f"# {group.describe()}",
        *(f"# in{i}: {v.aval.str_short()}" for i, v in enumerate(group.inputs)),
        *(f"# out{j}: {v.aval.str_short()}" for j, v in enumerate(group.outputs)),
        "import triton",
        "import triton.language as tl",
        "",
        "",
        "@triton.jit",
        f"def {name}({', '.join(params + cparams)}):",
    ]
    text = "\n".join(head + low.em.lines) + "\n"
    in_avals = tuple(v.aval for v in group.inputs)
    out_avals = tuple(v.aval for v in group.outputs)
    signature = {p: rules.signature_type(a.dtype)
                 for p, a in zip(params, in_avals + out_avals)}
    signature.update({c: "constexpr" for c in constexprs})
    return KernelSource(name, text, group.kind, in_avals, out_avals, dict(constexprs),
                        tuple(grid), config.num_warps, signature)
