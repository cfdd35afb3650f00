"""CONV fusion groups as generated Triton kernels: an implicit GEMM with a fused epilogue.

A CONV group (see ``functrax.lowering.fusion.conv``) holds one ``conv_general_dilated`` and
the elementwise epilogue computed from its output (a broadcast bias, an activation, a
scaling, a dtype conversion, masks such as relu's backward ``select(y > 0, g, 0)``, several
outputs). :func:`generate_conv` renders it as one kernel, the convolution seen as a matrix
product that is never materialized (no im2col buffer):

- ``M`` = output batch x output spatial positions (row-major: batch outermost, the spatial
  dims in the rhs spec's order), ``N`` = output features of one group, ``K`` = input
  features of one group x kernel window positions (the input feature innermost when the lhs
  stores features contiguously, e.g. ``NHWC``, else outermost);
- the grid is ``(cdiv(M, BLOCK_M), cdiv(N, BLOCK_N), groups)``; ``groups`` is
  ``feature_group_count`` (group ``g`` reads input features ``[g * C/G, (g + 1) * C/G)``)
  or ``batch_group_count`` (group ``g`` reads input batch ``[g * N/B, (g + 1) * N/B)``, all
  features: the weight gradient of a grouped convolution), and writes output features
  ``[g * O/G, (g + 1) * O/G)``;
- each program owns one ``BLOCK_M x BLOCK_N`` output tile and loops over ``K`` in
  ``BLOCK_K`` chunks. For each ``(m, k)`` it computes, per spatial dim, the position in the
  (lhs-dilated, padded) input ``q = o * stride - pad_lo + w * rhs_dilation`` (``pad_lo`` may
  be negative: cropping) and loads the input at ``q / lhs_dilation`` where ``q`` lies inside
  the dilated input and on a multiple of the lhs dilation; elsewhere (padding, the holes of
  a transposed convolution) the masked load gives 0. The kernel tile is loaded at
  ``(o, c, w)``. Any ``dimension_numbers`` is a choice of strides: operands and the output
  are read and written in their own layouts, never transposed;
- float16 / bfloat16 / float32 operands use ``tl.dot`` with a float32 accumulator
  (``matmul_groups.TileEpilogue.dot_line``: bfloat16 tiles widened, exact tf32 products);
  float64 and integer operands (and integer operands with a float ``preferred_element_type``)
  an exact multiply-and-sum in the dtype the numpy backend computes in
  (``lowering.numpy.convolution.compute_dtype``); booleans count in int32;
- the epilogue is rendered by the machinery MATMUL groups use (``matmul_groups.TileEpilogue``:
  ``rules.triton_rules`` templates and ``indexing`` rules at the tile's index) and every
  group output is stored in its own layout, masked.

Bounds checks that cannot fail for the shapes at hand are left out (a VALID convolution
without lhs dilation loads with the row and K masks only). The source is deterministic.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from functrax import primitives as P
from functrax.core import Literal
from functrax.lowering.fusion.types import FusionGroup, GroupKind
from functrax.lowering.numpy.convolution import compute_dtype
from functrax.lowering.triton import rules
from functrax.lowering.triton.codegen import (
    INTERPRETER_CONFIG, KernelConfig, KernelSource, assemble,
)
from functrax.lowering.triton.indexing import delinearize, digit, opaque, row_major_strides
from functrax.lowering.triton.matmul_groups import TileEpilogue, matmul_blocks
from functrax.lowering.triton.rules import UnsupportedError

__all__ = ["ConvGeometry", "conv_geometry", "generate_conv", "build_conv"]

_TL_DOT = ("float16", "bfloat16", "float32")
MAX_GROUPS = 65535  # CUDA's limit on grid axes 1 and 2


@dataclasses.dataclass(frozen=True)
class ConvGeometry:
    """The implicit-GEMM view of one ``conv_general_dilated`` equation.

    Attributes:
      groups: ``feature_group_count * batch_group_count`` (one of them is 1).
      m, n, k: the GEMM sizes: output batch x output positions, output features per group,
        input features per group x kernel positions.
      batch, out_sp, in_sp, k_sp: output batch, output / input / kernel spatial sizes.
      cg: input features per group (the rhs ``I`` size).
      lhs_strides: element strides of the lhs ``(N, C, spatial...)``; ``rhs_strides`` of the
        rhs ``(O, I, spatial...)``.
      channel_inner: ``K`` runs over (window, channel) with the channel fastest (else
        (channel, window)).
    """

    groups: int
    feature_groups: int
    m: int
    n: int
    k: int
    batch: int
    cg: int
    out_sp: tuple
    in_sp: tuple
    k_sp: tuple
    lhs_strides: tuple
    rhs_strides: tuple
    channel_inner: bool

    @property
    def k_shape(self) -> tuple:
        return self.k_sp + (self.cg,) if self.channel_inner else (self.cg,) + self.k_sp


def conv_geometry(eqn) -> ConvGeometry:
    """The :class:`ConvGeometry` of a ``conv_general_dilated`` equation."""
    p = eqn.params
    lhs, rhs = (v.aval.shape for v in eqn.invars[:2])
    out = eqn.outvars[0].aval.shape
    lspec, rspec, ospec = p["dimension_numbers"]
    fgc, bgc = p["feature_group_count"], p["batch_group_count"]
    groups = fgc * bgc
    ls, rs = row_major_strides(lhs), row_major_strides(rhs)
    out_sp = tuple(out[d] for d in ospec[2:])
    k_sp = tuple(rhs[d] for d in rspec[2:])
    batch, cg = out[ospec[0]], rhs[rspec[1]]
    lhs_strides = tuple(ls[d] for d in lspec)
    return ConvGeometry(
        groups=groups, feature_groups=fgc, m=batch * math.prod(out_sp),
        n=rhs[rspec[0]] // groups, k=cg * math.prod(k_sp), batch=batch, cg=cg,
        out_sp=out_sp, in_sp=tuple(lhs[d] for d in lspec[2:]), k_sp=k_sp,
        lhs_strides=lhs_strides, rhs_strides=tuple(rs[d] for d in rspec),
        channel_inner=lhs_strides[1] == 1 and len(lspec) > 2)


class _Conv(TileEpilogue):
    """The lowering of one CONV group (see the module docstring)."""

    grid_root = "grp"

    def __init__(self, group: FusionGroup, config: KernelConfig):
        super().__init__(group, config, P.conv_general_dilated_p)
        self.conv = self.anchor
        self.geo = conv_geometry(self.conv)

    # -- the output tile's index --
    def setup(self):
        geo, ospec = self.geo, self.conv.params["dimension_numbers"][2]
        if geo.groups > MAX_GROUPS:
            raise UnsupportedError(f"a convolution of {geo.groups} groups (the group grid "
                                   f"axis holds at most {MAX_GROUPS})")
        self.totals = {"grp": geo.groups, "row": geo.m, "col": geo.n, "ka": geo.k,
                       "kb": geo.k}
        self.row_ix = delinearize("row", (geo.batch,) + geo.out_sp)
        feature = digit("col", 1, geo.n) if geo.groups == 1 else opaque(
            f"grp * {geo.n} + col", ("grp", "col"))
        out_ix = [None] * len(ospec)
        out_ix[ospec[0]], out_ix[ospec[1]] = self.row_ix[0], feature
        for d, ix in zip(ospec[2:], self.row_ix[1:]):
            out_ix[d] = ix
        self.out_ix = tuple(out_ix)
        self.base = self.out_ix  # the group's iteration space is the output itself
        self.canonical = tuple(d for d in self.out_ix if d[0] == "d")

    # -- the operand tiles --
    def k_digits(self, root: str):
        """(channel, window positions) of the K index ``root``."""
        ix = delinearize(root, self.geo.k_shape)
        return (ix[-1], ix[:-1]) if self.geo.channel_inner else (ix[0], ix[1:])

    def term(self, ix, stride: int) -> str | None:
        """``ix * stride`` as text (None for 0)."""
        if ix[0] == "c":
            return None if ix[1] == 0 else str(ix[1] * stride)
        r = self.em.bind(self.render(ix))
        return r if stride == 1 else f"{r} * {stride}"

    def pointer(self, var, parts, roots) -> str:
        """``in<i> + sum(parts)``, a block over ``roots``: ``+ 0 * root`` for each root
        (name, index digits) whose digits are all constant (a size-1 extent), so that the
        load has the tile's shape."""
        parts = [p for p in parts if p is not None]
        parts += [f"0 * {r}" for r, ix in roots if all(i[0] == "c" for i in ix)]
        return f"in{self.inputs[var]} + {self.em.bind(' + '.join(parts))}"

    def lhs_tile(self) -> str:
        """The input tile ``[BLOCK_M, BLOCK_K]``, zero outside the (dilated, padded) input."""
        p, geo, em = self.conv.params, self.geo, self.em
        s_n, s_c, s_sp = geo.lhs_strides[0], geo.lhs_strides[1], geo.lhs_strides[2:]
        chan, window = self.k_digits("ka")
        parts = [self.term(self.row_ix[0], s_n), self.term(chan, s_c)]
        if geo.groups > 1:  # the group's first input feature (or batch element)
            step = geo.cg * s_c if geo.feature_groups > 1 else geo.batch * s_n
            parts.append(f"grp * {step}")
        conds = ["row_mask", "ka_mask"]
        for i, (o, w) in enumerate(zip(self.row_ix[1:], window)):
            stride, (lo, _) = p["window_strides"][i], p["padding"][i]
            rd, ld = p["rhs_dilation"][i], p["lhs_dilation"][i]
            size = geo.in_sp[i]
            dilated = 0 if size == 0 else (size - 1) * ld + 1
            # q = o * stride - lo + w * rd: the position in the dilated, padded input
            if o[0] == "c" and w[0] == "c":  # a size-1 output and window: known here
                qv = o[1] * stride - lo + w[1] * rd
                if not (0 <= qv < dilated and qv % ld == 0):
                    return em.bind(f"tl.zeros([BLOCK_M, BLOCK_K], "
                                   f"{rules.tl_dtype(self.conv.invars[0].aval.dtype)})")
                parts.append(str(qv // ld * s_sp[i]) if qv else None)
                continue
            start = [t for t in (self.term(o, stride), str(-lo) if lo else None) if t]
            start = em.bind(" + ".join(start)) if start else None
            q = [t for t in (start, self.term(w, rd)) if t]
            q = em.bind(" + ".join(q)) if q else "0"
            hi = (geo.out_sp[i] - 1) * stride - lo + (geo.k_sp[i] - 1) * rd
            if lo > 0:
                conds.append(f"({q} >= 0)")
            if hi >= dilated:
                conds.append(f"({q} < {dilated})")
            if ld > 1:
                conds.append(f"({q} % {ld} == 0)")
                q = em.bind(f"{q} // {ld}")
            parts.append(None if q == "0" else q if s_sp[i] == 1 else f"{q} * {s_sp[i]}")
        mask = em.bind(" & ".join(conds))
        ptr = self.pointer(self.conv.invars[0], parts,
                           (("row", self.row_ix), ("ka", (chan,) + tuple(window))))
        return em.bind(f"tl.load({ptr}, mask={mask}, other=0)")

    def rhs_tile(self) -> str:
        """The kernel tile ``[BLOCK_K, BLOCK_N]`` of the group's output features."""
        geo, em = self.geo, self.em
        s_o, s_i, s_sp = geo.rhs_strides[0], geo.rhs_strides[1], geo.rhs_strides[2:]
        chan, window = self.k_digits("kb")
        feature = "col" if geo.groups == 1 else em.bind(f"grp * {geo.n} + col")
        parts = [feature if s_o == 1 else f"{feature} * {s_o}", self.term(chan, s_i)]
        parts += [self.term(w, s) for w, s in zip(window, s_sp)]
        ptr = self.pointer(self.conv.invars[1], parts, (("kb", (chan,) + tuple(window)),))
        return em.bind(f"tl.load({ptr}, mask={em.bind('kb_mask & col_mask')}, other=0)")

    # -- the kernel body --
    def run(self):
        self.setup()
        conv, em, geo = self.conv, self.em, self.geo
        lhs, rhs = conv.invars[:2]
        if lhs not in self.inputs or rhs not in self.inputs:
            raise UnsupportedError("a conv_general_dilated operand computed in its own group "
                                   "(operands are read through the window arithmetic)")
        compute = compute_dtype(lhs.aval.dtype, conv.params["preferred_element_type"])
        tensor_core = lhs.aval.dtype.name in _TL_DOT and compute == np.float32
        bm, bn, bk = matmul_blocks(geo.m, geo.n, geo.k, self.config, tensor_core)
        pid = self.program_id(self.is_wide())
        em.emit(f"grp = {pid(2)}")
        em.emit(f"row = {pid(0)} * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
        em.emit(f"col = {pid(1)} * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
        em.emit(f"row_mask = row < {geo.m}")
        em.emit(f"col_mask = col < {geo.n}")
        acc_t = rules.tl_dtype(np.int32 if compute == np.bool_ else compute)
        em.emit(f"acc = tl.zeros([BLOCK_M, BLOCK_N], {acc_t})")
        em.open(f"for k0 in range(0, {geo.k}, BLOCK_K):", defines=("k0",))
        for line in ("ka = k0 + tl.arange(0, BLOCK_K)[None, :]",
                     "kb = k0 + tl.arange(0, BLOCK_K)[:, None]",
                     f"ka_mask = ka < {geo.k}", f"kb_mask = kb < {geo.k}"):
            em.emit(line)
            em.define(line.split(" = ")[0])
        a, b = self.lhs_tile(), self.rhs_tile()
        if tensor_core:
            em.emit(self.dot_line(a, b, lhs.aval.dtype.name, conv))
        else:
            em.emit(f"acc += tl.sum({a}.to({acc_t})[:, :, None] * "
                    f"{b}.to({acc_t})[None, :, :], axis=1)")
        em.close()
        self.put_result(acc_t)
        self.store_outputs()
        grid = (max(1, -(-geo.m // bm)), max(1, -(-geo.n // bn)), geo.groups)
        return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, grid

    def reduction_error(self, eqn) -> str:
        return f"'{eqn.primitive}' in a conv group (only an elementwise epilogue is fused)"


def generate_conv(group: FusionGroup, config: KernelConfig | None = None) -> KernelSource:
    """The Triton source of a CONV ``group`` (see the module docstring).

    Args:
      group: a CONV group of the fusion plan.
      config: block caps, warps and ``dot_precision`` (default: ``INTERPRETER_CONFIG``).

    Returns:
      a ``codegen.KernelSource`` (deterministic: equal groups give equal text).

    Raises:
      UnsupportedError: for dtypes or epilogue primitives not lowered.

    >>> src = generate_conv(group)  # doctest: +SKIP
    >>> src.grid                    # doctest: +SKIP
    (1, 1, 1)
    """
    config = config or INTERPRETER_CONFIG
    if group.kind is not GroupKind.CONV:
        raise UnsupportedError(f"generate_conv: expected a conv group, got "
                               f"{group.kind.value}")
    for v in tuple(group.inputs) + tuple(group.outputs):
        if type(v) is not Literal:
            rules.dtype_class(v.aval.dtype)
    return assemble(group, _Conv(group, config), config,
                    "functrax.lowering.triton.codegen (conv_groups)", prefix="igemm")


def build_conv(group: FusionGroup, config: KernelConfig | None = None, cache=None):
    """Generate, cache and import the kernel of a CONV ``group``; a ``runtime.TritonKernel``
    taking the group's inputs (literals included) in order."""
    from functrax.lowering.triton.cache import default_cache
    from functrax.lowering.triton.runtime import TritonKernel
    source = generate_conv(group, config)
    return TritonKernel(source, (cache or default_cache()).load(source))
