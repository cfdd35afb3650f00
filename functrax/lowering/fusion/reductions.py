"""Fusion analysis of reductions: the REDUCTION group (elementwise prologue, reductions,
epilogue), rows kept in registers or streamed."""
from __future__ import annotations

import math

from functrax.core import Var
from functrax.lowering.fusion.config import IllegalGroup
from functrax.lowering.fusion.types import GroupKind

__all__ = ["ReductionAnalysis"]


class ReductionAnalysis:
    """The reduction equations and checks of
    :class:`~functrax.lowering.fusion.analysis.Analysis`."""

    def do_reduction(self, e):
        x = e.invars[0]
        dims = {d % max(len(x.aval.shape), 1) for d in e.params["axes"]}
        t = self.dot_side_reduction(e, x, dims)
        if t is not None:
            self.side.add(id(e))
        else:
            t = self.use(x)
        red = tuple(t[d] for d in sorted(dims) if t[d] is not None)
        self.reductions.append((e, t, red, x))
        out = tuple(a for d, a in enumerate(t) if d not in dims)
        self.tuples.append(out)
        self.fixed[e.outvars[0]] = out

    def finish_reduction(self):
        grid = self.all_axes - self.red_axes
        ops = [(x, self.ax.canon(t)) for _, t, _, x in self.reductions]
        for e, t, _, _ in self.reductions:
            if not grid <= set(self.ax.canon(t)):
                raise IllegalGroup(f"'{e.primitive.name}' would be recomputed along a loop of "
                                   "the group it does not depend on")
        v, t = self.spanning(ops + list(self.fixed.items()))
        row = math.prod(self.ax.size[a] for a in self.red_axes)
        persistent = row <= self.config.max_row
        if not self.config.mixed_reductions or not persistent:
            self.check_same_rows()
        if not persistent:
            self.check_streaming()
        return self.layout(GroupKind.REDUCTION, v, t, self.red_axes, persistent=persistent,
                           row_size=row)

    def check_same_rows(self):
        for e, _, r, _ in self.reductions:
            if {self.ax.find(a) for a in r} != self.red_axes:
                raise IllegalGroup(f"'{e.primitive.name}' reduces other axes than the group's "
                                   "rows (see FusionConfig.mixed_reductions)")

    def check_streaming(self):
        """Rows too long for registers: one pass, prologue -> reductions -> epilogue."""
        red = self.red_axes
        reduced = {id(e) for e, *_ in self.reductions}
        after = set()  # values that depend on a reduction result
        for e in self.eqns:
            dep = any(type(v) is Var and v in after for v in e.invars)
            if id(e) in reduced:
                if dep:
                    raise IllegalGroup(f"rows of {math.prod(self.ax.size[a] for a in red)} "
                                       f"elements exceed max_row={self.config.max_row}: only "
                                       "one streamed pass over the rows fits")
                after.add(e.outvars[0])
            elif dep:
                t = self.fixed.get(e.outvars[0], ())
                if {self.ax.find(a) for a in t if a is not None} & red:
                    raise IllegalGroup("a value along the streamed rows depends on a reduction "
                                       f"of them (rows exceed max_row={self.config.max_row})")
                after.add(e.outvars[0])
