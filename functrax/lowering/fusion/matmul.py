"""Fusion analysis of ``dot_general``: the MATMUL group (output tile, elementwise
epilogue, a transposed input absorbed as a flag, side reductions of an operand over its
contracting dims)."""
from __future__ import annotations

from functrax import primitives as P
from functrax.lowering.fusion.config import IllegalGroup
from functrax.lowering.fusion.types import GroupKind

# reductions that may ride along a MATMUL group over an operand's contracting dims
_SIDE_REDUCTIONS = frozenset({P.reduce_sum_p, P.reduce_max_p, P.reduce_min_p})

__all__ = ["MatmulAnalysis"]


class MatmulAnalysis:
    """The dot_general equation and checks of
    :class:`~functrax.lowering.fusion.analysis.Analysis`."""

    def setup_dot(self, e):
        (lc, rc), (lb, rb) = e.params["dimension_numbers"]
        lhs, rhs = e.invars[:2]
        for v in (lhs, rhs):
            if v in self.defined and not self._flag_transpose(v):
                raise IllegalGroup("a dot_general operand is computed in the same group "
                                   "(operand producers are separate kernels)")
        out = e.outvars[0]
        out_t = self.fresh(out.aval.shape)
        nb, nl = len(lb), len(lhs.aval.shape) - len(lb) - len(lc)
        k = {}
        for i, j in zip(lc, rc):
            k[i] = k[("r", j)] = self.fresh_axis(lhs.aval.shape[i])
        self.k_axes = {a for a in k.values() if a is not None}

        def operand(shape, contract, batch, free_start, tag):
            t, free = [], free_start
            for d in range(len(shape)):
                if d in contract:
                    t.append(k[d] if tag is None else k[(tag, d)])
                elif d in batch:
                    t.append(out_t[batch.index(d)])
                else:
                    t.append(out_t[free])
                    free += 1
            return tuple(t)

        self.dot_uses = [(lhs, set(lc), operand(lhs.aval.shape, lc, list(lb), nb, None)),
                         (rhs, set(rc), operand(rhs.aval.shape, rc, list(rb), nb + nl, "r"))]
        self.tuples.extend(t for _, _, t in self.dot_uses)
        self.dot = e
        self.fixed[out] = out_t

    def _flag_transpose(self, v):
        e = next(e for e in self.eqns if v in e.outvars)
        return e.primitive is P.transpose_p and self.input_like(e.invars[0])

    def do_dot(self, e):
        pass  # set up front: its output axes do not depend on the other equations

    def dot_side_reduction(self, e, x, dims):
        """The dot operand's axes when ``e`` reduces that operand over its contracting dims."""
        if (not self.config.matmul_side_reductions
                or e.primitive not in _SIDE_REDUCTIONS):
            return None
        return next((t for v, contract, t in self.dot_uses if v is x and dims == contract),
                    None)

    def finish_matmul(self):
        out = self.dot.outvars[0]
        out_axes = {a for a in self.ax.canon(self.fixed[out]) if a is not None}
        if any(id(e) not in self.side for e, *_ in self.reductions):
            raise IllegalGroup("a reduction in a MATMUL group that is not a reduction of an "
                               "operand over its contracting dims")
        for t in self.tuples:
            live = {a for a in t if a is not None}
            if live & self.k_axes:
                continue  # operand tiles (and side reductions of them) run along K
            if not live <= out_axes:
                raise IllegalGroup("a MATMUL epilogue value leaves the output tile")
        return self.layout(GroupKind.MATMUL, out, self.fixed[out])
