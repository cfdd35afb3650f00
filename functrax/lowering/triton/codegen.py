"""Render a :class:`FusionGroup` as the deterministic source of one ``@triton.jit`` kernel.

Every value of the group is computed *at an index* over the kernel's root ranges (see
``indexing``): an ELEMENTWISE kernel runs one flat range ``offs`` (masked by
``mask = offs < N``) over the group's shape; a REDUCTION kernel runs a [rows, row elements]
tile, ``row`` ([BLOCK_M, 1]) over the kept dims and ``col`` ([1, BLOCK_R]) over the reduced
ones. Layout primitives only transform indices (``indexing.index_rules``); elementwise
primitives apply a template of ``rules.triton_rules`` to operands computed at the same index;
inputs are loaded from contiguous buffers at the linear address of their index, with the mask
of the roots it reads. float16 / bfloat16 values are computed in float32.

A reduction whose row fits ``max_block_r`` reduces a whole row in registers, so several
reductions and the values computed from their results (softmax, layernorm) share one tile.
Longer rows are streamed: one loop over column chunks per reduction (accumulating
elementwise into a tile, then reducing it), then one more for the full-size outputs;
loop-invariant (row-only) expressions are hoisted out of the loops.

Outputs spanning the iteration space are stored at its index. A smaller output (a value
broadcast into the iteration, a row result) is stored at the index its producers or its
readers give it, masked to write each element once.

The source is deterministic: names are numbered in emission order, emission follows the
group's outputs and operands in order, and identical expressions are emitted once (CSE).
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import re

from functrax import primitives as P
from functrax.core import Family, Literal
from functrax.lowering.fusion.planner import IllegalGroup, group_layout
from functrax.lowering.fusion.types import FusionGroup, GroupKind
from functrax.lowering.triton import rules
from functrax.lowering.triton.indexing import (
    DATA_DEPENDENT, const, delinearize, forward_rules, index_rules, ix_bases, linear_terms,
    row_major_strides, select_rules,
)
from functrax.lowering.triton.rules import UnsupportedError
from functrax.lowering.triton.rules_special_functions import HELPERS, check_argreduce_fits

__all__ = ["KernelConfig", "KernelSource", "generate", "choose_block", "index_rules",
           "INTERPRETER_CONFIG", "GPU_CONFIG", "REDUCTIONS", "UnsupportedError"]

# --- kernel configuration ---


@dataclasses.dataclass(frozen=True)
class KernelConfig:
    """Block-size caps and launch options.

    Attributes:
      max_block: elements per program of an elementwise kernel (a power of two).
      max_block_r: columns of a reduction row held at once; longer rows loop over chunks.
      max_tile: rows * columns of a reduction tile.
      num_warps: warps per program (GPU only).
      dot_precision: ``input_precision`` of float32 ``tl.dot`` in MATMUL kernels: ``"tf32"``
        (JAX's default precision on NVIDIA GPUs: TensorFloat-32 products, float32
        accumulation), ``"tf32x3"`` or ``"ieee"`` (exact float32). A ``dot_general`` with
        ``precision="highest"`` (or ``"float32"``) always uses ``"ieee"``, ``"high"``
        ``"tf32x3"``. The interpreter computes every dot exactly in float32 whatever this
        says; ``INTERPRETER_CONFIG`` says ``"ieee"`` and ``GPU_CONFIG`` ``"tf32"``.
      hand_written: the names of the ``patterns.PATTERNS`` whose groups run their
        hand-written kernel of ``kernels/`` instead of a generated one: ``"dense"``
        (``relu?(x @ w + b?)``, kernels/matmul.py), ``"softmax"``, ``"layernorm"``,
        ``"attention"`` (``softmax(q @ k^T * scale [causal mask]) @ v`` rewritten to one
        equation before planning, kernels/attention.py). The interpreter's default takes
        ``"dense"`` and ``"attention"``; ``GPU_CONFIG`` takes all four.
    """

    max_block: int = 4096
    max_block_r: int = 4096
    max_tile: int = 16384
    num_warps: int = 4
    dot_precision: str = "ieee"
    hand_written: tuple = ("dense", "attention")


# The interpreter pays per operation per program: big blocks, few programs.
INTERPRETER_CONFIG = KernelConfig()
# Register-sized tiles for a GPU (one program per 1024 elements or a few rows).
GPU_CONFIG = KernelConfig(max_block=1024, max_block_r=4096, max_tile=4096, num_warps=4,
                          dot_precision="tf32",
                          hand_written=("dense", "softmax", "layernorm", "attention"))
BLOCK_CANDIDATES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
# What the GPU autotuner times per kernel kind (``functrax.lowering.triton.autotune``): block
# caps and warps around GPU_CONFIG; the first entry is used when tuning is skipped.
GPU_CANDIDATES = {
    GroupKind.ELEMENTWISE: tuple(dataclasses.replace(GPU_CONFIG, max_block=b, num_warps=w)
                                 for b, w in ((1024, 4), (512, 4), (2048, 8), (4096, 8))),
    GroupKind.REDUCTION: tuple(dataclasses.replace(GPU_CONFIG, max_tile=t, num_warps=w)
                               for t, w in ((4096, 4), (2048, 4), (8192, 8), (16384, 8))),
}


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


# the row reductions (family REDUCTION: reduce_* and argmax / argmin)
REDUCTIONS = frozenset(p for p in P.primitive_registry.values() if p.family is Family.REDUCTION)


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


class Lowering:
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
        self.canonical: tuple = ()  # the digits of the iteration space
        self.seen: dict = {}     # var -> indices it was computed at (all scopes)
        self.select_conds: dict = {}  # (id(eqn), index) -> conditions of a select_rules view
        self.var_axes = None       # the planner's layout of the group (computed when needed)
        self.base = None           # the index of the iteration space (group.shape) itself

    # -- rendering --
    def render(self, ix) -> str:
        if ix[0] == "c":
            return str(ix[1])
        if ix[0] == "e":
            return ix[1] if _IDENT.match(ix[1]) else f"({ix[1]})"
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
            seen = self.seen.setdefault(v, [])
            if ix not in seen:
                seen.append(ix)
        return self.em.get((var, index))

    def operand_requests(self, eqn, index):
        prim = eqn.primitive
        if prim in select_rules:
            return self.select_requests(eqn, index)
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

    def select_requests(self, eqn, index):
        """The operands (at their indices) of a view that selects among loads
        (``indexing.select_rules``: pad, concatenate, dynamic_update_slice); ``apply`` combines
        them with ``tl.where`` on the conditions kept here."""
        reqs, conds = select_rules[eqn.primitive](self, eqn, index)
        self.select_conds[(id(eqn), index)] = conds
        return reqs

    def apply_select(self, eqn, index, operands) -> str:
        conds = self.select_conds[(id(eqn), index)]
        val = operands[-1]
        for cond, v in zip(reversed(conds), reversed(operands[:-1])):
            val = self.em.bind(f"tl.where({self.em.bind(cond)}, {v}, {val})")
        return val

    def reduction_error(self, eqn) -> str:
        return (f"'{eqn.primitive}' cannot be lowered inside a "
                f"{self.group.kind.value} group at this index")

    def apply(self, eqn, index, operands) -> str:
        prim = eqn.primitive
        if prim in select_rules:
            return self.apply_select(eqn, index, operands)
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

    # -- outputs that do not span the iteration space --
    def natural_index(self, var, use_seen: bool):
        """An index of ``var`` made of the iteration's digits: from its producers (views and
        elementwise operations pass indices forward), with ``use_seen`` from where it was
        computed for other outputs, or else from the planner's layout of the group (which
        iteration dim each of its dims runs along). None when there is none."""
        ix = self.derived_index(var, use_seen)
        return ix if ix is not None else self.layout_index(var)

    def layout_index(self, var):
        if self.var_axes is None:
            try:
                self.var_axes = group_layout(self.group).var_axes
            except IllegalGroup:
                self.var_axes = {}
        axes, base = self.var_axes.get(var), self.base
        if axes is None or base is None or len(axes) != len(var.aval.shape):
            return None
        if any(p is not None and (p >= len(base) or var.aval.shape[d] != self.group.shape[p])
               for d, p in enumerate(axes)):
            return None
        return tuple(const(0) if p is None else base[p] for p in axes)

    def derived_index(self, var, use_seen: bool):
        ix = self.root_index(var)
        if ix is not None:
            return ix
        if use_seen:
            for ix in self.seen.get(var, ()):
                if all(i[0] != "e" for i in ix):
                    return ix
        eqn = self.producer.get(var)
        if eqn is None or eqn.primitive is P.iota_p:
            return None
        if eqn.primitive in forward_rules:
            ix = self.derived_index(eqn.invars[0], use_seen)
            ix = None if ix is None else forward_rules[eqn.primitive](self, eqn, ix)
            return ix if ix is not None and all(i[0] != "e" for i in ix) else None
        if eqn.primitive in index_rules or eqn.primitive in REDUCTIONS or \
                eqn.primitive in DATA_DEPENDENT:
            return None
        for x in eqn.invars:
            if type(x) is not Literal and x.aval.shape == var.aval.shape:
                ix = self.derived_index(x, use_seen)
                if ix is not None:
                    return ix
        return None

    def root_index(self, var):
        return None

    def partial_mask(self, index, mask: str, roots) -> str:
        """``mask``, and: the iteration digits (of ``roots``) that ``index`` does not use are
        0 (a value smaller than the iteration space is written once)."""
        spans = []  # [base, lo, hi): the stride ranges the index's digits cover, merged
        for _, base, stride, extent in sorted(ix for ix in index if ix[0] == "d"):
            if spans and spans[-1][0] == base and spans[-1][2] >= stride:
                spans[-1][2] = max(spans[-1][2], stride * extent)
            else:
                spans.append([base, stride, stride * extent])
        conds = [mask]
        for d in self.canonical:
            if d[1] in roots and not any(b == d[1] and lo <= d[2] and d[2] * d[3] <= hi
                                         for b, lo, hi in spans):
                conds.append(f"({self.em.bind(self.render(d))} == 0)")
        return self.em.bind(" & ".join(conds)) if len(conds) > 1 else mask

    def block_address(self, index, shape, roots) -> str:
        """The address of ``index`` in a contiguous ``shape``, a block over ``roots``."""
        addr, bases = self.address(index, shape)
        for missing in sorted(set(roots) - bases):  # keep the pointer a block
            addr = f"{addr} + 0 * {missing}"
        return addr

    def wide(self, size: int) -> str:
        """``tl.program_id(0)``, widened to int64 where offsets may pass 2**31."""
        return "tl.program_id(0).to(tl.int64)" if size >= 2 ** 31 - 2 * 16384 else \
            "tl.program_id(0)"


class _Elementwise(Lowering):

    def run(self):
        g = self.group
        n = math.prod(g.shape)
        # the grid covers every output (an empty iteration may still write a scalar output
        # unrelated to it, e.g. a sibling view of a shared input)
        n_grid = max([n] + [math.prod(v.aval.shape) for v in g.outputs])
        self.totals = {"offs": n_grid}
        self.masks = {frozenset({"offs"}): "mask"}
        block = choose_block(n_grid, self.config.max_block)
        em = self.em
        em.emit(f"pid = {self.wide(n_grid)}")
        em.emit("offs = pid * BLOCK + tl.arange(0, BLOCK)")
        em.emit(f"mask = offs < {n_grid}")
        full_mask = "mask" if n == n_grid else em.bind(f"offs < {n}")
        self.canonical = tuple(d for d in delinearize("offs", g.shape) if d[0] == "d")
        self.base = delinearize("offs", g.shape) if n == n_grid else None
        partial = []
        for j, out in enumerate(g.outputs):  # outputs spanning the iteration, in its order
            if math.prod(out.aval.shape) == n:
                self.store(j, out, delinearize("offs", out.aval.shape), "offs", full_mask)
            else:
                partial.append((j, out))
        for j, out in partial:  # smaller outputs: where other outputs read them, once
            index = self.natural_index(out, use_seen=True) if n == n_grid else None
            if index is not None:
                self.store(j, out, index, self.block_address(index, out.aval.shape, ("offs",)),
                           self.partial_mask(index, "mask", ("offs",)))
                continue
            # unrelated to the iteration (e.g. a sibling view of a shared input): computed
            # at its own linear index, by the first programs of the grid
            size = math.prod(out.aval.shape)
            own = "mask" if size == n_grid else em.bind(f"offs < {size}")
            self.store(j, out, delinearize("offs", out.aval.shape), "offs", own)
        return {"BLOCK": block}, (max(1, -(-n_grid // block)),)


class _Reduction(Lowering):

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
        self.full = self.base = self.split_index(shape, axes)
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
        self.canonical = tuple(d for d in self.full if d[0] == "d")
        rows, cols, later = [], [], []
        for j, out in enumerate(g.outputs):
            index = self.natural_index(out, use_seen=False)
            if index is None:
                later.append((j, out))
            else:
                uses_col = any("col" in ix_bases(ix) for ix in index)
                (cols if uses_col else rows).append((j, out, index))
        for j, out, index in rows:  # per row, outside the loop over the row's chunks
            self.store(j, out, index, self.block_address(index, out.aval.shape, ("row",)),
                       self.partial_mask(index, "row_mask", ("row",)))
        if cols or later:
            self.open_cols()
            for j, out, index in cols:
                self.store_full(j, out, index)
            for j, out in later:  # where the outputs above read them
                index = self.natural_index(out, use_seen=True)
                if index is None:
                    raise UnsupportedError(
                        f"reduction group of shape {list(shape)} (reducing axes {list(axes)}) "
                        f"writes an output of shape {list(out.aval.shape)} whose index in the "
                        "iteration is unknown")
                self.store_full(j, out, index)
            self.close_cols()
        return {"BLOCK_M": block_m, "BLOCK_R": block_r}, (max(1, -(-m // block_m)),)

    def store_full(self, j, out, index):
        self.store(j, out, index, self.block_address(index, out.aval.shape, ("row", "col")),
                   self.partial_mask(index, "mask", ("row", "col")))

    def root_index(self, var):
        if var.aval.shape == self.shape:
            return self.full
        eqn = self.producer.get(var)
        if eqn is not None and eqn.primitive in REDUCTIONS:
            return delinearize("row", var.aval.shape)
        return None

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
        if rule.accumulate is None:  # argmax / argmin: whole rows in registers only
            check_argreduce_fits(eqn.primitive, self.fits)
        ctx = rules.RuleContext(eqn.primitive, (x.aval,), out.aval, eqn.params)
        fields = dict(ctx.fields(), col="col")
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


_SHORT_NAMES = {P.dot_general_p: "dot", P.conv_general_dilated_p: "conv"}


def _kernel_name(group: FusionGroup, prefix: str = "fused") -> str:
    """``prefix`` and the group's first four distinct non-index primitives (a readable,
    deterministic kernel name)."""
    names = []
    for e in group.eqns:
        n = _SHORT_NAMES.get(e.primitive, e.primitive.name)
        if e.primitive not in index_rules and n not in names:
            names.append(n)
    return re.sub(r"[^A-Za-z0-9_]", "_", "_".join([prefix] + names[:4]))[:60]


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
    return assemble(group, low, config, "functrax.lowering.triton.codegen")


def assemble(group: FusionGroup, low, config: KernelConfig, origin: str,
             prefix: str = "fused") -> KernelSource:
    """The kernel module of ``group`` from its lowering ``low`` (whose ``run()`` returns the
    constexprs and the grid, and whose emitter holds the body): a header naming the group
    and its avals, the helpers the body uses, and one ``@triton.jit`` function taking the
    inputs, the outputs and the constexprs."""
    constexprs, grid = low.run()
    name = _kernel_name(group, prefix)
    params = [f"in{i}" for i in range(len(group.inputs))] + \
        [f"out{j}" for j in range(len(group.outputs))]
    cparams = [f"{c}: tl.constexpr" for c in constexprs]
    head = [
        f"# Generated by {origin}; do not edit.",
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
    body = "\n".join(low.em.lines)
    helpers = [h for helper, h in HELPERS.items() if re.search(rf"\b{helper}\b", body)]
    head[-2:-2] = [line for h in helpers for line in h.splitlines() + ["", ""]]
    text = "\n".join(head) + "\n" + body + "\n"
    in_avals = tuple(v.aval for v in group.inputs)
    out_avals = tuple(v.aval for v in group.outputs)
    signature = {p: rules.signature_type(a.dtype)
                 for p, a in zip(params, in_avals + out_avals)}
    signature.update({c: "constexpr" for c in constexprs})
    return KernelSource(name, text, group.kind, in_avals, out_avals, dict(constexprs),
                        tuple(grid), config.num_warps, signature)
