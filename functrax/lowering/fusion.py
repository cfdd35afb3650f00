"""The fusion planner: partition an optimized, first-order jaxpr into kernels.

:func:`plan_fusion` maps a jaxpr (normally ``passes.pipeline.optimize``'s result: call-likes
inlined) to a :class:`~functrax.lowering.fusion_types.FusionPlan`. It is a pure function of the
jaxpr and backend-independent; backends render each group (:func:`group_layout` gives the
iteration space of every value of a group).

How equations are treated (one explicit table each, see :func:`classify`):

- *elementwise* (``ELEMENTWISE``: arithmetic, comparisons, ``select_n``, ``clamp``,
  ``convert_element_type``, ``integer_pow``, ...) compute one value per index;
- *views* (``VIEWS``: ``broadcast_in_dim``, ``reshape``, ``transpose``, ``squeeze``,
  ``expand_dims``, ``rev``, ``pad``, static ``slice``/``dynamic_slice``, ``concatenate``,
  static ``dynamic_update_slice``, ``iota``) are index arithmetic, never copies: a view of a
  group input is a load with computed indices (each use may index it differently; a
  ``concatenate`` selects among loads of its operands at shifted indices); a view of a value
  computed in the same group must keep a one-to-one correspondence of dimensions (broadcast,
  transpose, squeeze/expand_dims, a reshape that only adds or drops size-1 dims, a
  ``dynamic_update_slice`` of it with an update read from the group's inputs). A view is
  placed in every group that reads it (cheap index-only producers are duplicated); it is
  materialized (a node of its own) only when it is a jaxpr output, an opaque equation's
  operand or a ``dot_general`` operand other than a transposed input;
- *reductions* (``REDUCTIONS``) take their elementwise prologue and epilogue into one
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
- everything else is its own OPAQUE group; ``UNFUSIBLE`` gives the reason for each known
  primitive and unknown primitives are OPAQUE too (``classify`` says why).

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
epilogue stays inside the output tile, and a REDUCTION's rows fit the configuration.
"""
from __future__ import annotations

import dataclasses
import math

from functrax.core import ClosedJaxpr, Jaxpr, Literal, Var
from functrax.lowering.fusion_types import FusionGroup, FusionPlan, GroupKind

__all__ = ["ELEMENTWISE", "VIEWS", "REDUCTIONS", "CONTRACTIONS", "UNFUSIBLE", "FusionConfig",
           "GroupLayout", "IllegalGroup", "classify", "group_layout", "plan_fusion",
           "describe_plan"]

# --- the tables: every primitive is in exactly one of them (unknown ones are OPAQUE) ---

ELEMENTWISE = frozenset("""
abs acos acosh add and asin asinh atan atan2 atanh cbrt ceil clamp conj convert_element_type
copy cos cosh digamma div eq erf erf_inv erfc exp exp2 expm1 floor ge gt imag integer_pow
is_finite le lgamma log log1p logistic lt max min mul ne neg nextafter not or pow real rem round
rsqrt select_n shift_left shift_right_arithmetic shift_right_logical sign sin sinh sqrt square
stop_gradient sub tan tanh xor
""".split())

VIEWS = frozenset("""
broadcast_in_dim reshape transpose squeeze expand_dims rev slice pad dynamic_slice iota
concatenate dynamic_update_slice
""".split())

REDUCTIONS = frozenset("""
reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or reduce_xor argmax argmin
""".split())

CONTRACTIONS = frozenset({"dot_general"})

_CALL_LIKE = "call-like primitive that survived inlining (run passes.pipeline.optimize first)"
_COLLECTIVE = "collective over a named axis: communication, not a loop over indices"
_SCATTER = "scatter: data-dependent writes with a combiner"
_CUMULATIVE = "cumulative scan along an axis: a sequential dependence, not a map or a reduction"

UNFUSIBLE = {
    "sort": "sort: data-dependent permutation of whole rows",
    "gather": "gather: data-dependent indexing",
    "scatter": _SCATTER, "scatter-add": _SCATTER, "scatter-mul": _SCATTER,
    "scatter-min": _SCATTER, "scatter-max": _SCATTER,
    "cumsum": _CUMULATIVE, "cumprod": _CUMULATIVE, "cummax": _CUMULATIVE,
    "cummin": _CUMULATIVE, "cumlogsumexp": _CUMULATIVE,
    "cond": "control flow: runs one of several sub-jaxprs",
    "scan": "control flow: a loop over a sub-jaxpr",
    "while": "control flow: a loop over a sub-jaxpr",
    "threefry2x32": "threefry2x32: multi-result integer hash (its own kernel)",
    "bitcast_convert_type": "bitcast_convert_type: reinterprets bytes (may change the shape)",
    "jit": _CALL_LIKE, "custom_jvp_call": _CALL_LIKE, "custom_vjp_call": _CALL_LIKE,
    "custom_lin": _CALL_LIKE, "remat2": _CALL_LIKE,
    "xla_pmap": "pmap: a call mapped over devices (each device runs its own program)",
    "psum": _COLLECTIVE, "pmax": _COLLECTIVE, "pmin": _COLLECTIVE,
    "ppermute": _COLLECTIVE, "all_gather": _COLLECTIVE, "all_to_all": _COLLECTIVE,
    "reduce_scatter": _COLLECTIVE, "axis_index": _COLLECTIVE,
}


def _dynamic_slice_unfusible(eqn):
    if any(type(v) is not Literal for v in eqn.invars[1:]):
        return "dynamic_slice with traced start indices: data-dependent indexing"
    return None


def _dynamic_update_slice_unfusible(eqn):
    if any(type(v) is not Literal for v in eqn.invars[2:]):
        return ("dynamic_update_slice with traced start indices: writes a window at a "
                "data-dependent position")
    return None


# a fused concatenate loads every operand per element: more operands are one copy instead
MAX_CONCAT_OPERANDS = 32


def _concatenate_unfusible(eqn):
    if len(eqn.invars) > MAX_CONCAT_OPERANDS:
        return (f"concatenate of {len(eqn.invars)} operands (more than "
                f"{MAX_CONCAT_OPERANDS}): one copy, not a select among loads")
    return None


# views that are fusible only for some params: primitive name -> fn(eqn) -> reason or None
_CONDITIONAL = {"dynamic_slice": _dynamic_slice_unfusible,
                "dynamic_update_slice": _dynamic_update_slice_unfusible,
                "concatenate": _concatenate_unfusible}


def classify(eqn) -> tuple:
    """``(category, reason)`` of an equation for fusion.

    ``category`` is one of ``"elementwise"``, ``"view"``, ``"reduction"``, ``"dot"`` and
    ``"opaque"``; ``reason`` says why an equation is opaque (None otherwise).

    >>> import functrax, functrax.numpy as fnp
    >>> eqn = functrax.make_jaxpr(fnp.sort)(fnp.ones(3)).eqns[0]
    >>> classify(eqn)
    ('opaque', 'sort: data-dependent permutation of whole rows')
    """
    name = eqn.primitive.name
    if name in UNFUSIBLE:
        return "opaque", UNFUSIBLE[name]
    if name in _CONDITIONAL:
        reason = _CONDITIONAL[name](eqn)
        if reason is not None:
            return "opaque", reason
    if len(eqn.outvars) != 1:
        return "opaque", f"'{name}' has {len(eqn.outvars)} results (fused groups need one)"
    if name in ELEMENTWISE:
        return "elementwise", None
    if name in VIEWS:
        return "view", None
    if name in REDUCTIONS:
        return "reduction", None
    if name in CONTRACTIONS:
        return "dot", None
    return "opaque", (f"unknown primitive '{name}': no fusion rule (add it to one of the tables "
                      "in functrax/lowering/fusion.py)")


@dataclasses.dataclass(frozen=True)
class FusionConfig:
    """Knobs of :func:`plan_fusion`.

    Attributes:
      max_row: a REDUCTION's rows (the product of its reduced dims) with at most this many
        elements are kept whole in registers: several reductions and the values computed from
        their results then share one group. Longer rows are streamed (one pass:
        prologue -> reductions -> epilogue).
      matmul_side_reductions: let a MATMUL group also reduce one of its operands over that
        operand's contracting dims (a dense layer's bias gradient).
      mixed_reductions: let one persistent REDUCTION group hold reductions over different
        subsets of its (in-register) reduce axes, e.g. a row softmax and a sum over the
        batch of a small array in one single-program group. False (default): every
        reduction of a group reduces exactly the group's reduce axes.
      sibling_fusion: after producer-consumer fusion, merge groups that read the same value
        (each merge only when the result is a valid kernel).
      enabled: False gives one group per equation (views still go with their consumers).
    """

    max_row: int = 8192
    mixed_reductions: bool = False
    matmul_side_reductions: bool = True
    sibling_fusion: bool = True
    enabled: bool = True


# sibling fusion tries the first readers of a value only (each try analyses a group)
MAX_SIBLINGS = 8


class IllegalGroup(Exception):
    """A set of equations that cannot run as one kernel (the message says why)."""


# --- iteration-space analysis ---


@dataclasses.dataclass(frozen=True)
class GroupLayout:
    """The iteration space of a group, as a backend needs it.

    Attributes:
      kind, shape, reduce_axes: as in FusionGroup.
      var_axes: for every value with one fixed indexing (computed in the group, and written
        views), one entry per dimension: the position in ``shape`` it runs along, or None for a
        size-1 dimension. Views of group inputs are absent: each use indexes them afresh
        (compose the view equations to compute the load index).
      persistent: REDUCTION only: the rows are kept whole in registers.
      row_size: REDUCTION only: elements per row (the product of the reduced dims).
    """

    kind: GroupKind
    shape: tuple
    reduce_axes: tuple = ()
    var_axes: dict = dataclasses.field(default_factory=dict)
    persistent: bool = True
    row_size: int = 1


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


def _nontrivial(shape):
    return [n for n in shape if n != 1]


def _view_of_computed(eqn, t, fresh_axis):
    """Axes of a view of a value computed in the group whose axes are ``t``.

    Raises IllegalGroup when the view does not keep a one-to-one correspondence of dims."""
    name, p = eqn.primitive.name, eqn.params
    x_shape, out_shape = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    if name == "broadcast_in_dim":
        out = [fresh_axis(n) for n in out_shape]
        for i, d in enumerate(p["broadcast_dimensions"]):
            if x_shape[i] == out_shape[d]:
                out[d] = t[i]
        return tuple(out)
    if name == "transpose":
        return tuple(t[i] for i in p["permutation"])
    if name == "squeeze":
        dims = {d % len(x_shape) for d in p["dimensions"]}
        return tuple(a for i, a in enumerate(t) if i not in dims)
    if name == "expand_dims":
        dims = {d % len(out_shape) for d in p["dimensions"]}
        it = iter(t)
        return tuple(None if i in dims else next(it) for i in range(len(out_shape)))
    if name == "reshape" and p.get("dimensions") in (None, tuple(range(len(x_shape)))):
        if _nontrivial(x_shape) == _nontrivial(out_shape):
            it = iter(a for a, n in zip(t, x_shape) if n != 1)
            return tuple(None if n == 1 else next(it) for n in out_shape)
    if name == "dynamic_update_slice":  # a select between the operand and the update
        return t
    if x_shape == out_shape and _identity_view(eqn):
        return t
    raise IllegalGroup(f"'{name}' re-indexes a value computed in the same group "
                       f"({eqn.invars[0].aval.str_short()} -> {eqn.outvars[0].aval.str_short()})")


def _identity_view(eqn):
    name, p = eqn.primitive.name, eqn.params
    shape = eqn.invars[0].aval.shape
    if name == "rev":
        return all(shape[d] == 1 for d in p["dimensions"])
    if name == "slice":
        return all(s == 0 for s in p["start_indices"]) and (
            not p.get("strides") or all(s == 1 for s in p["strides"]))
    if name == "pad":
        return all(c == (0, 0, 0) for c in map(tuple, p["padding_config"]))
    return False


class _Analysis:
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
        dots = [e for e, (c, _) in zip(self.eqns, cats) if c == "dot"]
        if len(dots) > 1:
            raise IllegalGroup("more than one dot_general in one group")
        if dots:
            self.setup_dot(dots[0])
        for e, (cat, _) in zip(self.eqns, cats):
            getattr(self, "do_" + cat)(e)
        self.unify_done()
        if self.dot is not None:
            return self.finish_matmul()
        if self.reductions:
            return self.finish_reduction()
        return self.finish_elementwise()

    # --- equations ---

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
        return e.primitive.name == "transpose" and self.input_like(e.invars[0])

    def do_dot(self, e):
        pass  # set up front: its output axes do not depend on the other equations

    def do_view(self, e):
        out = e.outvars[0]
        if all(self.input_like(v) for v in e.invars):
            self.lazy.add(out)
            if out in self.materialized:
                self.fixed[out] = self.fresh(out.aval.shape)
            return
        if e.primitive.name == "concatenate":
            raise IllegalGroup("'concatenate' of a value computed in the same group (its "
                               "operands are read at shifted indices)")
        if any(not self.input_like(v) for v in e.invars[1:]):
            raise IllegalGroup(f"'{e.primitive.name}' with a computed index, padding or update "
                               "operand")
        t = _view_of_computed(e, self.use(e.invars[0]), self.fresh_axis)
        self.tuples.append(t)
        self.fixed[out] = t

    def do_elementwise(self, e):
        ts = [self.use(v) for v in e.invars if v.aval.shape != ()]
        for t in ts[1:]:
            for a, b in zip(ts[0], t):
                if (a is None) != (b is None):
                    raise IllegalGroup("internal: size-1 dims disagree")  # shapes are equal
                if a is not None:
                    self.ax.union(a, b)
        self.fixed[e.outvars[0]] = ts[0] if ts else ()

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

    def dot_side_reduction(self, e, x, dims):
        """The dot operand's axes when ``e`` reduces that operand over its contracting dims."""
        if (not self.config.matmul_side_reductions
                or e.primitive.name not in ("reduce_sum", "reduce_max", "reduce_min")):
            return None
        return next((t for v, contract, t in self.dot_uses if v is x and dims == contract),
                    None)

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


def _layout(eqns, materialized, config, check_only=False) -> GroupLayout:
    return _Analysis(list(eqns), materialized, config, check_only).run()


def group_layout(group: FusionGroup, config: FusionConfig | None = None) -> GroupLayout:
    """The iteration space of ``group``: where every value of the group is indexed.

    Raises:
      IllegalGroup: when the group cannot run as one kernel (never for planned groups).
    """
    return _layout(group.eqns, set(group.outputs), config or FusionConfig())


# --- the planner ---


class _Planner:
    """Greedy grouping of the *nodes* of a jaxpr (its non-view equations plus materialized
    views); the other views follow the nodes that read them."""

    def __init__(self, jaxpr: Jaxpr, config: FusionConfig):
        self.jaxpr, self.config = jaxpr, config
        self.eqns = jaxpr.eqns
        self.cat = [classify(e)[0] for e in self.eqns]
        self.prod, self.uses = {}, {}
        for i, e in enumerate(self.eqns):
            for v in e.invars:
                if type(v) is Var:
                    self.uses.setdefault(v, []).append(i)
            for v in e.outvars:
                self.prod[v] = i
        self.outs = {v for v in jaxpr.outvars if type(v) is Var}
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
        dot_general operands other than a transposed input (absorbed as a flag)."""
        m = {v for v in self.outs if self._view_eqn(v) is not None}
        for i, e in enumerate(self.eqns):  # opaque equations read materialized values
            if self.cat[i] == "opaque":
                m.update(v for v in e.invars if self._view_eqn(v) is not None)
        for i, e in enumerate(self.eqns):
            if self.cat[i] != "dot":
                continue
            for v in e.invars[:2]:
                j = self._view_eqn(v)
                if j is None:
                    continue
                src = self.eqns[j].invars[0]
                flag = (self.eqns[j].primitive.name == "transpose"
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
            _layout([self.eqns[i] for i in self.effective(members)], self.materialized,
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
            layout = _layout(eqns, self.materialized, self.config)
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
    from functrax.jaxpr_printer import PPContext
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
