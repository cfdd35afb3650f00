"""MATMUL fusion groups as generated Triton kernels: ``tl.dot`` tiles and a fused epilogue.

A MATMUL group (see ``functrax.lowering.fusion.planner``) holds one ``dot_general``, the elementwise
epilogue computed from its output (bias, activation, masks such as ``select(x > 0, g, 0)``,
scaling, transposes and several outputs) and *side reductions* of one operand over its
contracting dims (a dense layer's bias gradient ``sum(g, 0)`` beside ``x.T @ g``).
:func:`generate_matmul` renders it as one kernel:

- the dot's output is flattened to ``[B, M, N]`` (batch dims, lhs free dims, rhs free dims)
  and its contraction to ``K``; the grid is ``(cdiv(M, BLOCK_M), cdiv(N, BLOCK_N), B)`` (the
  batch is the third grid axis), each program owning one ``BLOCK_M x BLOCK_N`` tile of one
  batch element;
- operand tiles ``a [BLOCK_M, BLOCK_K]`` and ``b [BLOCK_K, BLOCK_N]`` are loaded in a loop
  over ``K`` at addresses computed from the operands' strides: transposed operands (by the
  dimension numbers or by an absorbed ``transpose`` of a group input) and several free,
  contracting or batch dims are index arithmetic, never copies; an operand without free or
  contracting dims (a dot of vectors, an outer product with ``K == 1``, batch dims only) is
  a row, column or element broadcast to the tile, zeroed outside ``k < K``;
- float operands use ``tl.dot`` with a float32 accumulator (``input_precision`` from
  ``KernelConfig.dot_precision`` for float32, or the equation's ``precision``); integer,
  bool and float64 operands use an exact multiply-and-sum of the tiles instead;
- side reductions accumulate the operand tiles already loaded for the dot (a [tile] add per
  step: cheap, so they are *fused*, not a separate kernel); every program along the other
  output axis computes them, only the first stores them;
- the epilogue is rendered by the same machinery as ELEMENTWISE groups
  (``codegen.Lowering``: ``rules.triton_rules`` templates, ``indexing`` rules for views)
  at the tile's index, and every group output is stored at its own index, masked.

Integer dots wrap like XLA's; bool dots are "any of ands".

The hand-written ``kernels/matmul.py`` (``relu?(x @ w + b?)`` of row-major 2-D operands) is
matched by :func:`match_matmul` and launched by :func:`build_dense` when the ``"dense"``
pattern of ``patterns.py`` is enabled (``KernelConfig.hand_written``, the default).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from functrax import primitives as P
from functrax.core import Family
from functrax.core import Literal
from functrax.lowering.fusion.types import FusionGroup, GroupKind
from functrax.lowering.triton import rules
from functrax.lowering.triton.codegen import (
    INTERPRETER_CONFIG, REDUCTIONS, KernelConfig, KernelSource, Lowering, assemble,
)
from functrax.lowering.triton.indexing import delinearize, index_rules
from functrax.lowering.triton.rules import UnsupportedError

__all__ = ["generate_matmul", "build_matmul", "dot_precision", "matmul_blocks", "MatmulMatch",
           "match_matmul", "build_dense", "TileEpilogue"]

_TL_DOT = ("float16", "bfloat16", "float32")
_PRECISIONS = ("ieee", "tf32", "tf32x3")


def _pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def matmul_blocks(m: int, n: int, k: int, config: KernelConfig, tensor_core: bool) -> tuple:
    """``(BLOCK_M, BLOCK_N, BLOCK_K)`` for a ``[M, N]`` output contracting ``K``.

    ``tl.dot`` wants every block dim >= 16. The tile holds at most ``config.max_tile``
    elements (the interpreter's default config gives 128 x 128 tiles and ``BLOCK_K`` up to
    128; the GPU config 64 x 64 and 32). The exact multiply-and-sum of integer tiles holds a
    ``[BLOCK_M, BLOCK_K, BLOCK_N]`` product, so its ``BLOCK_K`` is smaller.
    """
    lo = 16 if tensor_core else 1
    bm = max(lo, min(_pow2(m), 128 if config.max_tile >= 16384 else 64))
    bn = max(lo, min(_pow2(n), max(16, config.max_tile // bm), 128))
    cap_k = 128 if config.max_tile >= 16384 else 32
    if not tensor_core:
        cap_k = max(1, min(cap_k, config.max_tile * 4 // (bm * bn)))
    bk = max(lo, min(_pow2(k), _pow2(cap_k + 1) // 2))
    return bm, bn, bk


def dot_precision(eqn, config: KernelConfig) -> str:
    """The ``input_precision`` of a float32 ``tl.dot`` for ``eqn`` (see
    ``KernelConfig.dot_precision``): an explicit ``precision`` of the equation wins."""
    p = eqn.params.get("precision")
    names = [str(getattr(x, "name", x)).lower() for x in
             (p if isinstance(p, (tuple, list)) else (p,)) if x is not None]
    if any(n in ("highest", "float32") for n in names):
        return "ieee"
    if any(n in ("high", "bfloat16_3x", "tensorfloat32_3x") for n in names):
        return "tf32x3"
    if config.dot_precision not in _PRECISIONS:
        raise ValueError(f"KernelConfig.dot_precision must be one of {_PRECISIONS}, got "
                         f"{config.dot_precision!r}")
    return config.dot_precision


class TileEpilogue(Lowering):
    """What the lowerings of MATMUL and CONV groups share: one anchor equation (the
    ``dot_general`` / ``conv_general_dilated``) whose result is a ``[BLOCK_M, BLOCK_N]``
    tile over the roots ``row`` and ``col`` (and a grid axis ``grid_root``), at the index
    ``out_ix``; the elementwise epilogue is computed and every group output stored at its
    index in that tile, masked."""

    grid_root = "bat"

    def __init__(self, group: FusionGroup, config: KernelConfig, anchor):
        super().__init__(group, config)
        anchors = [e for e in group.eqns if e.primitive is anchor]
        if len(anchors) != 1:
            raise UnsupportedError(f"a {group.kind.value} group needs exactly one {anchor}, "
                                   f"got {len(anchors)}")
        self.anchor = anchors[0]
        self.scalar_block = "[1, 1]"
        self.out_ix = ()

    def mask_for(self, bases):
        """The mask of a block over ``bases`` (None when only the grid axis, always in
        range)."""
        names = [f"{b}_mask" for b in ("row", "col", "ka", "kb") if b in bases]
        if not names:
            return None
        return self.em.bind(" & ".join(names)) if len(names) > 1 else names[0]

    def load(self, var, index, other=False, raw=False) -> str:
        i = self.inputs[var]
        addr, bases = self.address(index, var.aval.shape)
        ptr = f"in{i}" if addr == "0" else f"in{i} + {addr}"
        mask = self.mask_for(bases)
        if mask is None:
            expr = f"tl.broadcast_to(tl.load({ptr}), {self.scalar_block})"
        else:
            expr = f"tl.load({ptr}, mask={mask}{', other=0' if other else ''})"
        dt = var.aval.dtype
        if not raw and rules.reg_dtype(dt) != rules.tl_dtype(dt):
            expr += f".to({rules.reg_dtype(dt)})"
        return self.em.bind(expr)

    def operand_requests(self, eqn, index):
        if eqn is self.anchor:
            raise UnsupportedError(f"the {eqn.primitive} result is read at an index other "
                                   f"than its output tile (re-indexing a computed "
                                   f"{self.group.kind.value} result)")
        return super().operand_requests(eqn, index)

    def acc_dtype(self, names) -> str:
        """The accumulator of products of operands of dtypes ``names``."""
        if names <= set(_TL_DOT):
            return "tl.float32"
        for n in names:
            rules.dtype_class(n)  # unsupported dtypes raise
        if "float64" in names:
            return "tl.float64"
        if names & {"int64", "uint64"}:
            return "tl.int64" if "int64" in names else "tl.uint64"
        if any(n.startswith("uint") for n in names) and not any(
                n.startswith("int") for n in names):
            return "tl.uint32"
        return "tl.int32"

    def dot_line(self, a: str, b: str, dtype: str, eqn) -> str:
        """``acc = tl.dot(a, b, acc, ...)`` for tiles of one float ``dtype`` (float16,
        bfloat16 or float32), accumulating in float32.

        bfloat16 tiles are widened to float32 and multiplied with ``input_precision="tf32"``,
        which is exact for them (TensorFloat-32 keeps 10 mantissa bits, bfloat16 has 7): the
        products and the float32 accumulation are those of a bfloat16 ``tl.dot``, and
        Triton's interpreter (3.x), which multiplies bfloat16 tiles as their raw uint16
        bits, computes them right too. float32 tiles use ``dot_precision``.
        """
        if dtype == "bfloat16":
            a, b = (self.em.bind(f"{t}.to(tl.float32)") for t in (a, b))
            return f"acc = tl.dot({a}, {b}, acc, input_precision=\"tf32\")"
        if dtype == "float32":
            return (f"acc = tl.dot({a}, {b}, acc, "
                    f"input_precision=\"{dot_precision(eqn, self.config)}\")")
        return f"acc = tl.dot({a}, {b}, acc)"

    def put_result(self, acc_t: str):
        """The accumulator ``acc`` as the anchor's result (its dtype) at ``out_ix``."""
        out = self.anchor.outvars[0]
        res, out_r = "acc", rules.reg_dtype(out.aval.dtype)
        if out.aval.dtype.name == "bool":
            res = self.em.bind("acc != 0")
        elif out_r != acc_t:
            res = self.em.bind(f"acc.to({out_r})")
        self.em.put((out, self.out_ix), res)

    def program_id(self, wide: bool):
        """``tl.program_id`` (widened to int64 where offsets may pass 2**31)."""
        return (lambda a: f"tl.program_id({a}).to(tl.int64)") if wide else (
            lambda a: f"tl.program_id({a})")

    def is_wide(self) -> bool:
        return max(v.aval.size for v in (*self.group.inputs, *self.group.outputs)
                   if type(v) is not Literal) >= 2 ** 31 - 2 * 16384

    def root_index(self, var):
        if var is self.anchor.outvars[0]:
            return self.out_ix
        return None

    def store_outputs(self):
        g, later = self.group, []
        for j, out in enumerate(g.outputs):
            index = self.natural_index(out, use_seen=False)
            if index is None:
                later.append((j, out))
            else:
                self.store_at(j, out, index)
        for j, out in later:
            index = self.natural_index(out, use_seen=True)
            if index is None:
                raise UnsupportedError(f"{g.kind.value} group output {out.aval.str_short()} "
                                       "has no index in the output tile")
            self.store_at(j, out, index)

    def store_at(self, j, out, index):
        # the pointer is a [BLOCK_M, BLOCK_N] block: lanes outside the output tile never
        # store, and a smaller output is written once (its missing digits are 0)
        mask = self.partial_mask(index, self.mask_for({"row", "col"}),
                                 ("row", "col", self.grid_root))
        self.store(j, out, index, self.block_address(index, out.aval.shape, ("row", "col")),
                   mask)


class _Matmul(TileEpilogue):
    """The lowering of one MATMUL group (see the module docstring)."""

    def __init__(self, group: FusionGroup, config: KernelConfig):
        super().__init__(group, config, P.dot_general_p)
        self.dot = self.anchor

    # -- the dot's iteration space --
    def setup(self):
        dot = self.dot
        lhs, rhs = dot.invars[:2]
        (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
        ls, rs = lhs.aval.shape, rhs.aval.shape
        lfree = [d for d in range(len(ls)) if d not in lc and d not in lb]
        rfree = [d for d in range(len(rs)) if d not in rc and d not in rb]
        bshape = [ls[d] for d in lb]
        mshape, nshape = [ls[d] for d in lfree], [rs[d] for d in rfree]
        kshape = [ls[d] for d in lc]
        self.b, self.m, self.n, self.k = (math.prod(s) for s in (bshape, mshape, nshape, kshape))
        if self.m == 0 or self.n == 0 or self.b == 0:
            raise UnsupportedError("a matmul with an empty output is not lowered to Triton")
        if self.b > 65535:  # CUDA's limit on grid axes 1 and 2
            raise UnsupportedError(f"a batched matmul of {self.b} batch elements (the batch "
                                   "grid axis holds at most 65535)")
        self.totals = {"bat": self.b, "row": self.m, "col": self.n, "ka": self.k,
                       "kb": self.k}
        bat, row, col = (delinearize(r, s) for r, s in
                         (("bat", bshape), ("row", mshape), ("col", nshape)))

        def operand_index(shape, contract, batch, free, free_ix, kroot):
            ix = [None] * len(shape)
            for d, i in zip(batch, bat):
                ix[d] = i
            for d, i in zip(free, free_ix):
                ix[d] = i
            for d, i in zip(contract, delinearize(kroot, kshape)):
                ix[d] = i
            return tuple(ix)

        self.lhs_ix = operand_index(ls, lc, lb, lfree, row, "ka")
        self.rhs_ix = operand_index(rs, rc, rb, rfree, col, "kb")
        self.out_ix = tuple(bat) + tuple(row) + tuple(col)
        self.canonical = tuple(d for d in self.out_ix if d[0] == "d")
        self.side_ix = {}

    def operand_tile(self, var, index, is_lhs: bool) -> str:
        """The tile of a dot operand (a group input, or a view such as an absorbed transpose
        of one) at ``index``, in its memory dtype, zero where masked.

        An operand without free dims (a vector of a matvec, a dot of vectors) or without
        contracting dims (an outer product: ``K == 1``) or with neither (batch dims only)
        is loaded as a row, a column or a single element and broadcast to the full tile for
        ``tl.dot``; the broadcast tile is zeroed outside ``k < K``, so a broadcast along the
        contraction is not summed ``BLOCK_K`` times."""
        while var not in self.inputs:
            eqn = self.producer.get(var)
            if eqn is None or eqn.primitive not in index_rules:
                raise UnsupportedError("a dot_general operand computed inside the matmul group "
                                       "(only views of group inputs are read as tiles)")
            (index,) = index_rules[eqn.primitive](self, eqn, index)
            var = eqn.invars[0]
        tile = self.load(var, index, other=True, raw=True)
        _, bases = self.address(index, var.aval.shape)
        free, k = ("row", "ka") if is_lhs else ("col", "kb")
        if free not in bases or k not in bases:  # a full tile for tl.dot
            shape = "[BLOCK_M, BLOCK_K]" if is_lhs else "[BLOCK_K, BLOCK_N]"
            tile = self.em.bind(f"tl.broadcast_to({tile}, {shape})")
            if k not in bases:  # broadcast along K: only the lanes k < K count
                tile = self.em.bind(f"tl.where({k}_mask, {tile}, 0)")
        return tile

    def reduction_error(self, eqn) -> str:
        return (f"'{eqn.primitive}' in a matmul group is not a reduction of a dot operand over "
                "its contracting dims")

    # -- the kernel body --
    def run(self):
        self.setup()
        dot, em, cfg = self.dot, self.em, self.config
        lhs, rhs = dot.invars[:2]
        dts = {rules.tl_dtype(lhs.aval.dtype), rules.tl_dtype(rhs.aval.dtype)}
        names = {lhs.aval.dtype.name, rhs.aval.dtype.name}
        tensor_core = names <= set(_TL_DOT)
        bm, bn, bk = matmul_blocks(self.m, self.n, self.k, cfg, tensor_core)
        self.blocks = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}
        pid = self.program_id(self.is_wide())
        em.emit(f"bat = {pid(2)}")
        em.emit(f"row = {pid(0)} * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
        em.emit(f"col = {pid(1)} * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
        em.emit(f"row_mask = row < {self.m}")
        em.emit(f"col_mask = col < {self.n}")
        acc_t = self.acc_dtype(names)
        em.emit(f"acc = tl.zeros([BLOCK_M, BLOCK_N], {acc_t})")
        sides = self.side_reductions()
        for s in sides:
            em.emit(f"{s['acc']} = tl.full({s['tile']}, {s['ident']}, {s['R']})")
        em.open(f"for k0 in range(0, {self.k}, BLOCK_K):", defines=("k0",))
        for line in ("ka = k0 + tl.arange(0, BLOCK_K)[None, :]",
                     "kb = k0 + tl.arange(0, BLOCK_K)[:, None]",
                     f"ka_mask = ka < {self.k}", f"kb_mask = kb < {self.k}"):
            em.emit(line)
            em.define(line.split(" = ")[0])
        a = self.operand_tile(lhs, self.lhs_ix, True)
        b = self.operand_tile(rhs, self.rhs_ix, False)
        if tensor_core:
            if len(dts) > 1:  # one operand dtype: the wider float
                a, b = (em.bind(f"{t}.to(tl.float32)") for t in (a, b))
            em.emit(self.dot_line(a, b, "float32" if len(dts) > 1 else lhs.aval.dtype.name, dot))
        else:
            em.emit(f"acc += tl.sum({a}.to({acc_t})[:, :, None] * "
                    f"{b}.to({acc_t})[None, :, :], axis=1)")
        for s in sides:
            self.accumulate_side(s, a if s["lhs"] else b)
        em.close()
        self.put_result(acc_t)
        for s in sides:
            fields = s["fields"]
            val = self.expand(s["rule"].finish, [s["acc"]], fields)
            if not s["lhs"]:  # reduced along rows of the transposed tile: back to [1, N]
                val = em.bind(f"tl.trans({val})")
            em.put((s["eqn"].outvars[0], s["index"]), val)
            self.side_ix[s["eqn"].outvars[0]] = s["index"]
        self.store_outputs()
        grid = (max(1, -(-self.m // bm)), max(1, -(-self.n // bn)), self.b)
        return self.blocks, grid

    # -- side reductions: an operand reduced over its contracting dims --
    def side_reductions(self):
        lhs, rhs = self.dot.invars[:2]
        (lc, rc), _ = self.dot.params["dimension_numbers"]
        out = []
        for eqn in self.group.eqns:
            if eqn.primitive not in REDUCTIONS:
                continue
            x = eqn.invars[0]
            dims = {d % max(x.aval.ndim, 1) for d in eqn.params["axes"]}
            if x is lhs and dims == set(lc):
                is_lhs, ix = True, self.lhs_ix
            elif x is rhs and dims == set(rc):
                is_lhs, ix = False, self.rhs_ix
            else:
                raise UnsupportedError(self.reduction_error(eqn))
            rule = rules.lookup_reduce(eqn.primitive, x.aval.dtype)
            ctx = rules.RuleContext(eqn.primitive, (x.aval,), eqn.outvars[0].aval, eqn.params)
            fields = ctx.fields()
            index = tuple(i for d, i in enumerate(ix) if d not in dims)
            out.append({"eqn": eqn, "lhs": is_lhs, "rule": rule, "fields": fields,
                        "R": fields["R"], "ident": rule.identity.format(**fields),
                        "acc": self.em.fresh("side"), "index": index,
                        "tile": "[BLOCK_M, BLOCK_K]" if is_lhs else "[BLOCK_N, BLOCK_K]",
                        "dtype": x.aval.dtype})
        return out

    def accumulate_side(self, s, tile):
        em = self.em
        mask = "row_mask & ka_mask" if s["lhs"] else "kb_mask & col_mask"
        val = tile
        if rules.tl_dtype(s["dtype"]) != s["R"]:
            val = f"{tile}.to({s['R']})"
        masked = em.bind(f"tl.where({em.bind(mask)}, {val}, {s['ident']})")
        if not s["lhs"]:
            masked = em.bind(f"tl.trans({masked})")
        em.emit(f"{s['acc']} = {s['rule'].accumulate.format(masked, acc=s['acc'], **s['fields'])}")

    def root_index(self, var):
        if var is self.dot.outvars[0]:
            return self.out_ix
        return self.side_ix.get(var)


def generate_matmul(group: FusionGroup, config: KernelConfig | None = None) -> KernelSource:
    """The Triton source of a MATMUL ``group`` (see the module docstring).

    Args:
      group: a MATMUL group of the fusion plan.
      config: block caps, warps and ``dot_precision`` (default: ``INTERPRETER_CONFIG``).

    Returns:
      a ``codegen.KernelSource`` (deterministic: equal groups give equal text).

    Raises:
      UnsupportedError: for dtypes, epilogue primitives or layouts not lowered.
    """
    config = config or INTERPRETER_CONFIG
    if group.kind is not GroupKind.MATMUL:
        raise UnsupportedError(f"generate_matmul: expected a matmul group, got "
                               f"{group.kind.value}")
    for v in tuple(group.inputs) + tuple(group.outputs):
        if type(v) is not Literal:
            rules.dtype_class(v.aval.dtype)
    return assemble(group, _Matmul(group, config), config,
                    "functrax.lowering.triton.codegen (matmul_groups)", prefix="matmul")


def build_matmul(group: FusionGroup, config: KernelConfig | None = None, cache=None):
    """Generate, cache and import the kernel of a MATMUL ``group``; a ``runtime.TritonKernel``
    taking the group's inputs (literals included) in order."""
    from functrax.lowering.triton.cache import default_cache
    from functrax.lowering.triton.runtime import TritonKernel
    source = generate_matmul(group, config)
    return TritonKernel(source, (cache or default_cache()).load(source))


# --- the hand-written kernels/matmul.py: plain 2-D dense layers (see patterns.py) ---

_MATMUL_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))


@dataclasses.dataclass(frozen=True)
class MatmulMatch:
    """How a MATMUL group maps onto ``kernels/matmul.py``'s ``epilogue(a @ b)``.

    Attributes:
      a, b: ``(position in group.inputs, transpose)``: ``a (M, K)`` is that input, transposed
        before the launch when ``transpose`` is true (likewise ``b (K, N)``).
      bias: the position of the 1-D bias in ``group.inputs`` (None without one).
      epilogue: one of ``kernels.matmul.EPILOGUES``.
    """

    a: tuple
    b: tuple
    bias: int | None
    epilogue: str


def _is_zero(v) -> bool:
    return (v is not None and type(v) is Literal and np.ndim(v.val) == 0 and v.val == 0
            and not np.signbit(v.val))


def _input_index(group, v):
    if type(v) is Literal:
        return None
    return next((i for i, u in enumerate(group.inputs) if u is v), None)


def _dot_operand(group, v, absorbed):
    """``(input position, transposed)`` of a dot operand, or None when it is computed."""
    i = _input_index(group, v)
    if i is not None:
        return i, False
    e = next((e for e in group.eqns if v in e.outvars), None)
    if e is None or e.primitive is not P.transpose_p or tuple(e.params["permutation"]) != (1, 0):
        return None
    i = _input_index(group, e.invars[0])
    if i is None:
        return None
    absorbed.add(id(e))
    return i, True


def _check_dot(dot) -> str | None:
    """Why ``dot`` is no plain 2-D x 2-D product of the kernel (None when it is)."""
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    lhs, rhs = dot.invars[:2]
    if lb or rb:
        return "batched dot_general not supported by kernels/matmul.py"
    if len(lhs.aval.shape) != 2 or len(rhs.aval.shape) != 2:
        return (f"dot_general of rank-{len(lhs.aval.shape)} x rank-{len(rhs.aval.shape)} "
                "operands not supported by kernels/matmul.py (2-D x 2-D only)")
    if len(lc) != 1 or len(rc) != 1:
        return "dot_general with several contracting dims not supported by kernels/matmul.py"
    dtype, out_dtype = lhs.aval.dtype, dot.outvars[0].aval.dtype
    if dtype not in _MATMUL_DTYPES or rhs.aval.dtype != dtype or out_dtype != dtype:
        return (f"dot_general of {lhs.aval.dtype.name} x {rhs.aval.dtype.name} -> "
                f"{out_dtype.name} not supported by kernels/matmul.py (float16/float32 "
                "operands and output of one dtype only)")
    return None


def _other(ins, cur):
    """The operand of a binary equation beside ``cur`` (None unless exactly one is ``cur``)."""
    if len(ins) != 2 or (ins[0] is cur) == (ins[1] is cur):
        return None
    return ins[1] if ins[0] is cur else ins[0]


def _match_epilogue(group, dot, rest):
    """``(epilogue, bias position)`` of the equations after ``dot``; None for an epilogue the
    kernel lacks, a reason string for a group with more outputs than the final value."""
    out = dot.outvars[0]
    m, n = out.aval.shape
    cur, bias, relu, views = out, None, False, {}
    for e in rest:
        prim, ins = e.primitive, e.invars
        if (prim is P.broadcast_in_dim_p and tuple(e.params["broadcast_dimensions"]) == (1,)
                and tuple(e.params["shape"]) == (m, n) and _input_index(group, ins[0]) is not None
                and ins[0].aval.shape == (n,)):
            views[e.outvars[0]] = _input_index(group, ins[0])
        elif (prim is P.add_p and bias is None and not relu and _other(ins, cur) is not None
                and type(_other(ins, cur)) is not Literal and _other(ins, cur) in views):
            bias, cur = views[_other(ins, cur)], e.outvars[0]
        elif prim is P.max_p and not relu and _is_zero(_other(ins, cur)):
            relu, cur = True, e.outvars[0]
        else:
            return None
    if len(group.outputs) != 1 or group.outputs[0] is not cur:
        return (f"matmul group with {len(group.outputs)} outputs (an intermediate value is "
                "used outside the group) not supported by kernels/matmul.py")
    if not set(views.values()) <= ({bias} - {None}):
        return None  # a broadcast the epilogue does not add
    epilogue = {(False, False): "none", (False, True): "relu", (True, False): "bias",
                (True, True): "bias_relu"}[(bias is not None, relu)]
    return epilogue, bias


def match_matmul(group: FusionGroup):
    """A :class:`MatmulMatch` when ``kernels/matmul.py`` computes the MATMUL ``group``, else
    the reason (a string) it does not (the group then runs a generated kernel).

    Supported: one 2-D x 2-D float16/float32 ``dot_general`` without batch dims (any
    contracting dims; an operand transposed by the dimension numbers or by an absorbed
    ``transpose`` of a group input is flagged in the match: :func:`build_dense` refuses it,
    the generated kernel reads it through strides) followed by at
    most ``add`` of a row-broadcast 1-D group input (the bias) and then ``max`` with 0 (relu),
    the group's only output being the last of these values.
    """
    dots = [e for e in group.eqns if e.primitive is P.dot_general_p]
    if len(dots) != 1:
        return f"matmul group with {len(dots)} dot_general equations"
    dot = dots[0]
    reason = _check_dot(dot)
    if reason:
        return reason
    (lc, rc), _ = dot.params["dimension_numbers"]
    absorbed = set()
    a = _dot_operand(group, dot.invars[0], absorbed)
    b = _dot_operand(group, dot.invars[1], absorbed)
    if a is None or b is None:
        return "a dot_general operand computed inside the matmul group"
    a = (a[0], a[1] != (lc[0] == 0))  # a (M, K): contract its dim 1
    b = (b[0], b[1] != (rc[0] == 1))  # b (K, N): contract its dim 0
    rest = [e for e in group.eqns if e is not dot and id(e) not in absorbed]
    sides = [e.primitive.name for e in rest if e.primitive.family is Family.REDUCTION]
    if sides:
        return (f"matmul group with side reductions {' '.join(sides)} not supported by "
                "kernels/matmul.py")
    got = _match_epilogue(group, dot, rest)
    if isinstance(got, str):
        return got
    if got is None:
        prims = " ".join(e.primitive.name for e in rest)
        return f"matmul group with epilogue {prims} not supported by kernels/matmul.py"
    return MatmulMatch(a, b, got[1], got[0])


def build_dense(group: FusionGroup, match: MatmulMatch, config: KernelConfig | None = None):
    """``(kernel, fn)``: ``kernels/matmul.py``'s kernel for a ``group`` that
    :func:`match_matmul` matched with untransposed operands, and the step function taking
    the group's inputs (no host-side copies: a transposed operand raises UnsupportedError,
    the generated kernel reads it through strides instead)."""
    if match.a[1] or match.b[1]:
        raise UnsupportedError("kernels/matmul.py reads row-major a (M, K) and b (K, N) only; "
                               "a transposed operand is read through strides by the "
                               "generated kernel")
    from functrax.lowering.triton.runtime import ensure_triton_env
    ensure_triton_env()
    from kernels import matmul as kmatmul

    config = config or INTERPRETER_CONFIG
    dot = next(e for e in group.eqns if e.primitive is P.dot_general_p)
    dtype = group.outputs[0].aval.dtype
    a0 = np.empty(group.inputs[match.a[0]].aval.shape, dtype)
    b0 = np.empty(group.inputs[match.b[0]].aval.shape, dtype)
    bias0 = None if match.bias is None else np.empty(group.inputs[match.bias].aval.shape, dtype)
    kernel, dummy = kmatmul.build(a0, b0, bias0, match.epilogue,
                                  precision=dot_precision(dot, config))
    ia, ib, ibias = match.a[0], match.b[0], match.bias

    def fn(*vals):
        return kernel(vals[ia], vals[ib], dummy if ibias is None else vals[ibias])

    return kernel, fn
