"""Fusion analysis of ``conv_general_dilated``: the CONV group (one convolution anchoring an
output tile, plus the elementwise epilogue computed from its output: a broadcast bias, an
activation, a scaling, a dtype conversion, several outputs).

The convolution's operands are read by the kernel's own implicit-GEMM address arithmetic
(windows, strides, padding, dilations, groups), so they are group inputs: their producers
(and any view of them, which the planner materializes) run as separate kernels. Every other
value of the group must lie inside the output tile: the group's iteration space is the
convolution's output, nothing is reduced.
"""
from __future__ import annotations

from functrax.lowering.fusion.config import IllegalGroup
from functrax.lowering.fusion.types import GroupKind

__all__ = ["ConvAnalysis"]


class ConvAnalysis:
    """The conv_general_dilated equation and checks of
    :class:`~functrax.lowering.fusion.analysis.Analysis`."""

    def setup_conv(self, e):
        for v in e.invars[:2]:
            if v in self.defined:
                raise IllegalGroup("a conv_general_dilated operand is computed in the same "
                                   "group (operand producers are separate kernels)")
        out = e.outvars[0]
        self.conv = e
        self.fixed[out] = self.fresh(out.aval.shape)

    def do_conv(self, e):
        pass  # set up front: its output axes do not depend on the other equations

    def finish_conv(self):
        if self.reductions:
            raise IllegalGroup("a reduction in a CONV group (only an elementwise epilogue on "
                               "the convolution's output is fused)")
        out = self.conv.outvars[0]
        out_axes = {a for a in self.ax.canon(self.fixed[out]) if a is not None}
        for t in self.tuples:
            if not {a for a in t if a is not None} <= out_axes:
                raise IllegalGroup("a CONV epilogue value leaves the output tile")
        return self.layout(GroupKind.CONV, out, self.fixed[out])
