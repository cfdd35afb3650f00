"""Iteration-space analysis of a fusion group: symbolic axes for every value (see the
:mod:`functrax.lowering.fusion.planner` docstring); the per-family parts are the mixins in
views, reductions, matmul and conv."""
from __future__ import annotations

from functrax.core import Literal
from functrax.lowering.fusion.config import FusionConfig, GroupLayout, IllegalGroup
from functrax.lowering.fusion.conv import ConvAnalysis
from functrax.lowering.fusion.matmul import MatmulAnalysis
from functrax.lowering.fusion.reductions import ReductionAnalysis
from functrax.lowering.fusion.tables import classify
from functrax.lowering.fusion.types import FusionGroup, GroupKind
from functrax.lowering.fusion.views import ViewAnalysis

__all__ = ["Analysis", "group_layout"]


class _Axes:
    """Union-find over symbolic axes, each with a size."""

    def __init__(self):
        self.parent, self.size = [], []

    def new(self, size):
        self.parent.append(len(self.parent))
        self.size.append(size)
        return len(self.parent) - 1

    def find(self, a):
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a, b):
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def canon(self, t):
        return tuple(None if a is None else self.find(a) for a in t)



class Analysis(ViewAnalysis, ReductionAnalysis, MatmulAnalysis, ConvAnalysis):
    """One pass over a group's equations assigning axes (see the module docstring)."""

    def __init__(self, eqns, materialized, config, check_only=False):
        self.eqns, self.config, self.check_only = eqns, config, check_only
        self.materialized = materialized
        self.defined = {v for e in eqns for v in e.outvars}
        self.ax = _Axes()
        self.fixed = {}      # var -> axes tuple
        self.lazy = set()    # views of group inputs: each use indexes them afresh
        self.tuples = []     # every axes tuple seen (co-occurrence)
        self.reductions = []  # (eqn, operand tuple, reduced axes, operand var)
        self.dot = None
        self.conv = None     # the conv_general_dilated equation of a CONV group
        self.dot_uses = []   # (dot operand var, contracting dims, axes tuple with K axes)
        self.k_axes = set()
        self.side = set()    # ids of reduction eqns that reduce a dot operand along K

    def fresh_axis(self, n):
        return None if n == 1 else self.ax.new(n)

    def fresh(self, shape):
        t = tuple(self.fresh_axis(n) for n in shape)
        self.tuples.append(t)
        return t

    def use(self, v):
        if type(v) is Literal or v.aval.shape == ():
            return ()
        if v in self.fixed:
            return self.fixed[v]
        return self.fresh(v.aval.shape)

    def input_like(self, v):
        return type(v) is Literal or v not in self.defined or v in self.lazy

    def run(self):
        cats = [classify(e) for e in self.eqns]
        if any(c == "opaque" for c, _ in cats):
            if len(self.eqns) == 1:
                return GroupLayout(GroupKind.OPAQUE, ())
            raise IllegalGroup("an opaque equation is always alone in its group")
        anchors = [(e, c) for e, (c, _) in zip(self.eqns, cats) if c in ("dot", "conv")]
        if len(anchors) > 1:
            raise IllegalGroup("more than one dot_general / conv_general_dilated in one group")
        if anchors:
            e, c = anchors[0]
            getattr(self, "setup_" + c)(e)
        for e, (cat, _) in zip(self.eqns, cats):
            getattr(self, "do_" + cat)(e)
        self.unify_done()
        if self.dot is not None:
            return self.finish_matmul()
        if self.conv is not None:
            return self.finish_conv()
        if self.reductions:
            return self.finish_reduction()
        return self.finish_elementwise()

    # --- equations ---

    def do_elementwise(self, e):
        ts = [self.use(v) for v in e.invars if v.aval.shape != ()]
        for t in ts[1:]:
            for a, b in zip(ts[0], t):
                if (a is None) != (b is None):
                    raise IllegalGroup("internal: size-1 dims disagree")  # shapes are equal
                if a is not None:
                    self.ax.union(a, b)
        self.fixed[e.outvars[0]] = ts[0] if ts else ()

    # --- checks ---

    def unify_done(self):
        ax = self.ax
        self.tuples = [ax.canon(t) for t in self.tuples]
        for t in self.tuples:
            live = [a for a in t if a is not None]
            if len(live) != len(set(live)):
                raise IllegalGroup("a value is indexed twice along one axis (e.g. x + x.T "
                                   "with x computed in the group)")
        self.k_axes = {ax.find(a) for a in self.k_axes}
        self.red_axes = {ax.find(a) for _, _, red, _ in self.reductions for a in red} - (
            self.k_axes)
        self.merge_free_axes()
        self.tuples = [ax.canon(t) for t in self.tuples]
        self.red_axes = {ax.find(a) for a in self.red_axes}
        self.all_axes = {a for t in self.tuples for a in t if a is not None} - self.k_axes

    def merge_free_axes(self):
        """Rename axes of equal size that never index one value together into one: a kernel
        computing both on the same loop index is equivalent, and it avoids outer products
        (softmax's max and sum run over the same rows)."""
        ax = self.ax
        co = {}
        for t in self.tuples:
            live = {a for a in t if a is not None}
            for a in live:
                co.setdefault(a, set()).update(live - {a})
        order = sorted(co, key=lambda a: (a not in self.red_axes, a))
        reps = {}
        for a in order:
            if a in self.k_axes:
                continue
            same = reps.setdefault(ax.size[a], [])
            for k, r in enumerate(same):
                if a not in co[r]:
                    ax.union(r, a)
                    root = ax.find(r)
                    merged = co.pop(r) | co.pop(a)
                    for b in merged:
                        co[b] = (co[b] - {a, r}) | {root}
                    co[root] = merged
                    same[k] = root
                    break
            else:
                same.append(a)

    def spanning(self, candidates):
        for v, t in candidates:
            if {self.ax.find(a) for a in t if a is not None} == self.all_axes:
                return v, t
        raise IllegalGroup("no value spans the whole iteration space (an outer product of "
                           "unrelated loops)")

    def layout(self, kind, v, t, red=(), **kw):
        if self.check_only:
            return None
        t = self.ax.canon(t)
        pos = {a: i for i, a in enumerate(t) if a is not None}
        shape = list(v.aval.shape)
        for a in sorted(self.all_axes - set(pos)):
            pos[a] = len(shape)
            shape.append(self.ax.size[a])
        var_axes = {}
        for u, ut in self.fixed.items():
            ut = self.ax.canon(ut)
            var_axes[u] = tuple(None if a is None else pos.get(a) for a in ut)
        reduce_axes = tuple(sorted(pos[a] for a in red if a in pos))
        return GroupLayout(kind, tuple(shape), reduce_axes, var_axes, **kw)

    def finish_elementwise(self):
        if not self.fixed:  # only views of inputs that nothing reads
            return GroupLayout(GroupKind.ELEMENTWISE, ())
        v, t = self.spanning(reversed(self.fixed.items()))
        return self.layout(GroupKind.ELEMENTWISE, v, t)



def analyze_layout(eqns, materialized, config, check_only=False) -> GroupLayout:
    return Analysis(list(eqns), materialized, config, check_only).run()


def group_layout(group: FusionGroup, config: FusionConfig | None = None) -> GroupLayout:
    """The iteration space of ``group``: where every value of the group is indexed.

    Raises:
      IllegalGroup: when the group cannot run as one kernel (never for planned groups).
    """
    return analyze_layout(group.eqns, set(group.outputs), config or FusionConfig())
