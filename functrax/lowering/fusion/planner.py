"""The fusion planner: partition an optimized, first-order jaxpr into kernels.

:func:`plan_fusion` maps a jaxpr (normally ``passes.pipeline.optimize``'s result: call-likes
inlined) to a :class:`~functrax.lowering.fusion.types.FusionPlan`. It is a pure function of the
jaxpr and backend-independent; backends render each group (:func:`group_layout` gives the
iteration space of every value of a group).

How equations are treated follows from their primitive's family (``FAMILY_CATEGORIES``, see
:func:`classify`):

- *elementwise* (families ELEMENTWISE and TRANSCENDENTAL: arithmetic, comparisons,
  ``select_n``, ``clamp``, ``convert_element_type``, ``integer_pow``, ``exp``, ...) compute one
  value per index;
- *views* (families SHAPE and INDEXING: ``broadcast_in_dim``, ``reshape``, ``transpose``,
  ``squeeze``, ``expand_dims``, ``rev``, ``pad``, static ``slice``/``dynamic_slice``,
  ``concatenate``, static ``dynamic_update_slice``, ``iota``) are index arithmetic, never
  copies: a view of a group input is a load with computed indices (each use may index it
  differently; a ``concatenate`` selects among loads of its operands at shifted indices); a
  view of a value computed in the same group must keep a one-to-one correspondence of
  dimensions (broadcast, transpose, squeeze/expand_dims, a reshape that only adds or drops
  size-1 dims, a ``dynamic_update_slice`` of it with an update read from the group's
  inputs). A view is placed in every group that reads it (cheap index-only producers are
  duplicated); it is materialized (a node of its own) only when it is a jaxpr output, an
  opaque equation's or a convolution's operand, or a ``dot_general`` operand other than a
  transposed input;
- *reductions* (family REDUCTION) take their elementwise prologue and epilogue into one
  REDUCTION group. When the reduced row has at most ``FusionConfig.max_row`` elements it is
  kept whole in registers, so several reductions over the same rows and the values computed
  from their results (softmax, layernorm) form one group; longer rows are streamed, which
  allows only prologue -> reductions -> epilogue. Every reduction of a group reduces exactly
  the group's reduce axes (``FusionConfig.mixed_reductions`` relaxes this for rows in
  registers: e.g. a whole small array in one program);
- ``dot_general`` takes the elementwise epilogue on its output into one MATMUL group (its
  operands' producers stay separate; a transposed input is absorbed as a flag), plus
  reductions of one of its operands over exactly that operand's contracting dims (a dense
  layer's bias gradient next to its weight gradient);
- ``conv_general_dilated`` likewise takes the elementwise epilogue on its output into one
  CONV group (bias, activation, scaling, conversion; its operands are group inputs, views of
  them materialized: the kernel reads them through its own window arithmetic);
- everything else is its own OPAQUE group; ``UNFUSIBLE_FAMILIES`` (or
  ``UNFUSIBLE_PRIMITIVES``) gives the reason, and primitives without a family are OPAQUE too
  (``classify`` says why).

The grouping is greedy: in program order each equation tries to join the groups of its
producers, then groups reading the same value try to merge (siblings; MATMUL groups first, so
they take the reductions of their operands). A merge happens only when the merged group still
has a valid iteration space (:func:`group_layout`) and the group graph stays acyclic, so no
expensive value is ever computed twice: a value used by several groups is computed once and
written out by its group.

Iteration spaces are described with symbolic *axes*: every dimension of every value in a group
is an axis (or constant, for size-1 dimensions); elementwise operands unify their axes, views
permute, add or drop them, reductions remove them. A group is valid when one value spans all
its axes (no accidental outer products), no value is indexed twice along one axis, a MATMUL
epilogue (or a CONV epilogue) stays inside the output tile, and a REDUCTION's rows fit the
configuration.
"""
from __future__ import annotations

import math

from functrax import primitives as P
from functrax.core import ClosedJaxpr, Jaxpr, Var
from functrax.lowering.fusion.analysis import analyze_layout, group_layout
from functrax.lowering.fusion.config import FusionConfig, GroupLayout, IllegalGroup
from functrax.lowering.fusion.tables import (
    CONDITIONAL, FAMILY_CATEGORIES, MAX_CONCAT_OPERANDS, UNFUSIBLE_FAMILIES, UNFUSIBLE_PRIMITIVES,
    classify, fusion_category,
)
from functrax.lowering.fusion.types import FusionGroup, FusionPlan, GroupKind
from functrax.passes.def_use import def_use

__all__ = ["FAMILY_CATEGORIES", "UNFUSIBLE_FAMILIES", "UNFUSIBLE_PRIMITIVES", "CONDITIONAL",
           "fusion_category", "FusionConfig",
           "GroupLayout", "IllegalGroup", "classify", "group_layout", "plan_fusion",
           "describe_plan", "MAX_CONCAT_OPERANDS", "FusionGroup", "FusionPlan", "GroupKind"]

# The tables live in tables.py; FusionConfig, IllegalGroup and GroupLayout in config.py; the
# iteration-space analysis in analysis.py with one part per kind of equation (views.py,
# reductions.py, matmul.py). All public names are re-exported here.

# sibling fusion tries the first readers of a value only (each try analyses a group)
MAX_SIBLINGS = 8


# --- the planner ---


class _Planner:
    """Greedy grouping of the *nodes* of a jaxpr (its non-view equations plus materialized
    views); the other views follow the nodes that read them."""

    def __init__(self, jaxpr: Jaxpr, config: FusionConfig):
        self.jaxpr, self.config = jaxpr, config
        self.eqns = jaxpr.eqns
        self.cat = [classify(e)[0] for e in self.eqns]
        self.prod, self.uses, self.outs = def_use(jaxpr)
        self.materialized = self._materialized()
        self.is_node = [c != "view" or e.outvars[0] in self.materialized
                        or not (self.uses.get(e.outvars[0]) or e.outvars[0] in self.outs)
                        for e, c in zip(self.eqns, self.cat)]
        self._src_memo = {}
        self.deps, self.views = {}, {}
        for i in self.nodes():
            views, deps = set(), []
            for v in self.eqns[i].invars:
                vs, ds = self._sources(v)
                views |= vs
                deps += [d for d in ds if d not in deps]
            self.deps[i], self.views[i] = deps, views
        self.succ = {i: [] for i in self.nodes()}
        for i in self.nodes():
            for d in self.deps[i]:
                self.succ[d].append(i)
        self.parent = {i: i for i in self.nodes()}
        self.members = {i: [i] for i in self.nodes()}
        self.gsucc = {i: set(self.succ[i]) for i in self.nodes()}  # successor nodes outside
        self.frontier = math.inf

    def nodes(self):
        return [i for i in range(len(self.eqns)) if self.is_node[i]]

    def _view_eqn(self, v):
        j = self.prod.get(v)
        return j if j is not None and self.cat[j] == "view" else None

    def _materialized(self):
        """Views that must be written out: jaxpr outputs, operands of opaque equations and
        convolutions, and dot_general operands other than a transposed input (absorbed as a
        flag)."""
        m = {v for v in self.outs if self._view_eqn(v) is not None}
        for i, e in enumerate(self.eqns):  # opaque equations and convolutions read
            if self.cat[i] in ("opaque", "conv"):  # materialized values
                m.update(v for v in e.invars if self._view_eqn(v) is not None)
        for i, e in enumerate(self.eqns):
            if self.cat[i] != "dot":
                continue
            for v in e.invars[:2]:
                j = self._view_eqn(v)
                if j is None:
                    continue
                src = self.eqns[j].invars[0]
                flag = (self.eqns[j].primitive is P.transpose_p
                        and (self._view_eqn(src) is None or src in m))
                if not flag:
                    m.add(v)
        return m

    def _sources(self, v):
        """(view equations between ``v`` and its sources, source nodes) of a value."""
        if type(v) is not Var or v not in self.prod:
            return set(), []
        j = self.prod[v]
        if self.is_node[j]:
            return set(), [j]
        if j not in self._src_memo:
            views, nodes = {j}, []
            for u in self.eqns[j].invars:
                vs, ns = self._sources(u)
                views |= vs
                nodes += [n for n in ns if n not in nodes]
            self._src_memo[j] = (views, nodes)
        return self._src_memo[j]

    # --- union-find over nodes ---

    def find(self, i):
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def effective(self, members):
        """A group's equations: its nodes and every view they read, in program order."""
        idx = set(members)
        for m in members:
            idx |= self.views[m]
        return sorted(idx)

    def _succ_groups(self, g):
        return {self.find(s) for s in self.gsucc[g]} - {g}

    def _reaches(self, src, dst):
        """A path src -> (another group) -> ... -> dst: merging would make a cycle.

        While equations are visited in order (``frontier`` is the one visited), every node
        after the frontier is still alone, and paths through it only lead further on."""
        limit = self.frontier
        stack = [g for g in self._succ_groups(src) if g != dst and g <= limit]
        seen = set(stack)
        while stack:
            for h in self._succ_groups(stack.pop()):
                if h == dst:
                    return True
                if h not in seen and h != src and h <= limit:
                    seen.add(h)
                    stack.append(h)
        return False

    def try_merge(self, a, b):
        ga, gb = self.find(a), self.find(b)
        if ga == gb:
            return True
        if "opaque" in (self.cat[a], self.cat[b]):
            return False
        if self._reaches(ga, gb) or self._reaches(gb, ga):
            return False
        members = self.members[ga] + self.members[gb]
        try:
            analyze_layout([self.eqns[i] for i in self.effective(members)], self.materialized,
                    self.config, check_only=True)
        except IllegalGroup:
            return False
        keep, drop = min(ga, gb), max(ga, gb)  # a group's id is its first node
        self.parent[drop] = keep
        self.members[keep] = sorted(members)
        self.gsucc[keep] = (self.gsucc[keep] | self.gsucc.pop(drop)) - set(members)
        del self.members[drop]
        return True

    def group(self):
        if not self.config.enabled:
            return
        for i in self.nodes():
            if self.cat[i] == "opaque":
                continue
            self.frontier = i
            for d in self.deps[i]:
                if self.cat[d] != "opaque":
                    self.try_merge(d, i)
        self.frontier = math.inf
        if self.config.sibling_fusion:
            self.fuse_siblings()

    def fuse_siblings(self):
        """Groups reading the same value merge when legal: the value is loaded once (and a
        MATMUL group takes the bias-gradient reduction of its operand)."""
        through_views = {}  # view equation -> the nodes that read it
        for n in self.nodes():
            for j in self.views[n]:
                through_views.setdefault(j, []).append(n)
        for v in [*self.jaxpr.constvars, *self.jaxpr.invars, *self.prod]:
            readers = []
            for c in self.uses.get(v, []):
                for n in ([c] if self.is_node[c] else through_views.get(c, [])):
                    if self.cat[n] != "opaque" and n not in readers:
                        readers.append(n)
            readers.sort(key=lambda n: self.cat[n] != "dot")  # MATMUL groups first
            readers = readers[:MAX_SIBLINGS]
            for k, a in enumerate(readers):
                for b in readers[k + 1:]:
                    self.try_merge(a, b)

    # --- the plan ---

    def plan(self) -> FusionPlan:
        self.group()
        roots = sorted(self.members)
        preds = {g: {self.find(d) for m in self.members[g] for d in self.deps[m]} - {g}
                 for g in roots}
        order, done = [], set()
        while len(order) < len(roots):  # Kahn, earliest equation first
            ready = [g for g in roots if g not in done and preds[g] <= done]
            if not ready:
                raise AssertionError("internal error: the fusion groups form a cycle")
            order.append(ready[0])
            done.add(ready[0])
        groups = [self.eqns_of(g) for g in order]
        reads = [self._inputs(eqns) for eqns in groups]
        owned = [{v for i in self.members[g] for v in self.eqns[i].outvars} for g in order]
        read = set().union(*reads)  # a group never reads what it defines itself
        result = []
        for k, eqns in enumerate(groups):
            outputs = tuple(v for e in eqns for v in e.outvars if v in owned[k] and (
                v in self.outs or v in read))
            layout = analyze_layout(eqns, self.materialized, self.config)
            result.append(FusionGroup(layout.kind, tuple(eqns), tuple(reads[k]), outputs,
                                      layout.shape, layout.reduce_axes))
        return FusionPlan(self.jaxpr, tuple(result))

    def eqns_of(self, g):
        return [self.eqns[i] for i in self.effective(self.members[g])]

    @staticmethod
    def _inputs(eqns):
        defined = {v for e in eqns for v in e.outvars}
        seen = []
        for e in eqns:
            for v in e.invars:
                if type(v) is Var and v not in defined and v not in seen:
                    seen.append(v)
        return seen


def plan_fusion(closed_or_jaxpr, config: FusionConfig | None = None) -> FusionPlan:
    """Partition the equations of an optimized, first-order jaxpr into fused kernels.

    Args:
      closed_or_jaxpr: a ``ClosedJaxpr`` or ``Jaxpr``, normally
        ``functrax.passes.pipeline.optimize(...)``'s result or ``jit(f).lower(...).jaxpr``.
      config: a :class:`FusionConfig` (defaults when None).

    Returns:
      a ``FusionPlan`` whose groups are in a valid execution order. Every non-view equation
      is in exactly one group; a view (index arithmetic) is in every group that reads it.
      ``inputs`` are the values a group reads from outside, ``outputs`` the values it computes
      that later groups read or that the jaxpr returns.

    >>> import functrax, functrax.numpy as fnp
    >>> f = lambda x, w, b: functrax.nn.relu(x @ w + b)
    >>> closed = functrax.jit(f).lower(fnp.ones((8, 16)), fnp.ones((16, 4)), fnp.ones(4)).jaxpr
    >>> print(plan_fusion(closed).describe())
    kernel 0: matmul[8, 4]: dot_general broadcast_in_dim add max
    """
    if isinstance(closed_or_jaxpr, ClosedJaxpr):
        jaxpr = closed_or_jaxpr.jaxpr
    elif isinstance(closed_or_jaxpr, Jaxpr):
        jaxpr = closed_or_jaxpr
    else:
        raise TypeError(f"plan_fusion: expected a ClosedJaxpr or a Jaxpr (e.g. "
                        f"functrax.jit(f).lower(*args).jaxpr), got "
                        f"{type(closed_or_jaxpr).__name__}")
    if config is not None and not isinstance(config, FusionConfig):
        raise TypeError(f"plan_fusion: config must be a FusionConfig, got "
                        f"{type(config).__name__}")
    return _Planner(jaxpr, config or FusionConfig()).plan()


def describe_plan(plan: FusionPlan) -> str:
    """The plan with each group's inputs and outputs, named as the printed jaxpr names them.

    >>> import functrax, functrax.numpy as fnp
    >>> closed = functrax.jit(lambda x: fnp.exp(x) / fnp.sum(fnp.exp(x))).lower(fnp.ones(4)).jaxpr
    >>> print(describe_plan(plan_fusion(closed)))
    kernel 0: reduction[4] reduce (0,): exp reduce_sum div
      in:  a:f32[4]
      out: d:f32[4]
    """
    from functrax.core.jaxpr import PPContext
    ctx = PPContext()
    j = plan.jaxpr
    for v in [*j.constvars, *j.invars, *(v for e in j.eqns for v in e.outvars)]:
        ctx.name(v)

    def names(vs):
        return " ".join(f"{ctx.name(v)}:{v.aval.str_short()}" for v in vs) or "-"

    lines = []
    for i, g in enumerate(plan.groups):
        red = f" reduce {g.reduce_axes}" if g.kind is GroupKind.REDUCTION else ""
        prims = " ".join(e.primitive.name for e in g.eqns)
        lines.append(f"kernel {i}: {g.kind.value}{list(g.shape)}{red}: {prims}")
        lines.append(f"  in:  {names(g.inputs)}")
        lines.append(f"  out: {names(g.outputs)}")
    return "\n".join(lines)
