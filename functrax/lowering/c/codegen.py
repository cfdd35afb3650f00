"""Render a :class:`FusionGroup` as one deterministic C function.

Every value of the group is computed *at an index* (``indexing``: constants and digits of
the loop variables), as in the Triton code generator; the planner's layout
(``fusion.planner.group_layout``) says where each value of the group runs in the iteration
space, and views of group inputs compose their index rules down to a load.

- ELEMENTWISE: the iteration shape splits into outer dims (loop variable ``o``) and inner
  dims (``j``, at least the last dim, more while they hold fewer than ``MIN_INNER``
  elements). One OpenMP ``parallel for`` runs over tasks (an outer index and a chunk of the
  inner range); the inner loop is unit-stride ``#pragma omp simd``. Expressions that do not
  read ``j`` are hoisted out of the inner loop.
- REDUCTION: one ``parallel for`` over the kept indices (rows, ``r``); per row, one loop
  over the reduced elements (``k``) per *stage* of reductions (a reduction reading another
  one's result runs in a later loop: softmax is max, then sum, then the output loop), the
  elementwise prologue computed inside the loop, the accumulators declared before it and
  finished after it (``rules.reduce_rules``); row outputs are stored per row and full-size
  outputs in one last loop.

float16/bfloat16 are loaded into float and rounded to their precision after every
operation (as numpy rounds each step). OpenMP threads are used only when the iteration has
at least ``PARALLEL_THRESHOLD`` elements; ``nt`` (the kernel's argument) sets their number.

Source is deterministic: names are numbered in emission order, identical expressions are
emitted once per scope (CSE), and the kernel's name includes a hash of its body.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import re

from functrax import primitives as P
from functrax.core import ELEMENTWISE_FAMILIES, Family, Literal
from functrax.lowering.c import rules
from functrax.lowering.c.column_sum import column_sum
from functrax.lowering.c.indexing import (
    const, delinearize, index_rules, ix_bases, linear_terms, row_major_strides,
    select_rules,
)
from functrax.lowering.c.prelude import KERNEL_SIGNATURE
from functrax.lowering.c.rules import UnsupportedError
from functrax.lowering.fusion.planner import IllegalGroup, group_layout
from functrax.lowering.fusion.types import FusionGroup, GroupKind

__all__ = ["KernelSource", "generate", "PARALLEL_THRESHOLD", "MIN_INNER", "REDUCTIONS",
           "UnsupportedError"]

PARALLEL_THRESHOLD = 1 << 16  # elements of an iteration space worth OpenMP threads
MIN_INNER = 256               # the inner loop takes trailing dims until it has this many
INNER_CHUNK = 1 << 14         # inner elements per task when the inner range is long

REDUCTIONS = frozenset(p for p in P.primitive_registry.values() if p.family is Family.REDUCTION)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$|^-?[0-9]+$")
_NAMES = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


@dataclasses.dataclass(frozen=True)
class KernelSource:
    """A generated C function and what calling it needs.

    Attributes:
      name: the function's name (``fx_<primitives>_<hash of the body>``).
      text: its definition (no prelude).
      kind: the group kind.
      in_avals, out_avals: the buffers, in argument order (non-literal inputs, outputs).
      work: elements of the iteration space (0: the call is skipped).
      deps: the kernels this function calls (a block's, ``blocks.generate_block``).
      scratch: bytes of each scratch buffer passed after the outputs (a block's).
      callees: kernels called through their addresses, passed last (a whole program's
        block: they compile in other translation units).
    """

    name: str
    text: str
    kind: GroupKind
    in_avals: tuple
    out_avals: tuple
    work: int
    deps: tuple = ()
    scratch: tuple = ()
    callees: tuple = ()


# --- the emitter: nested scopes with CSE and hoisting by loop variables ---


class _Scope:
    def __init__(self, roots, header=None, pragma=None):
        self.roots = frozenset(roots)
        self.header, self.pragma = header, pragma
        self.lines: list = []
        self.cse: dict = {}


class Emitter:
    """C statements in nested loop scopes. ``bind`` names an expression once (CSE) in the
    outermost open scope defining every loop variable it reads (hoisting)."""

    def __init__(self):
        self.scopes = [_Scope(())]
        self.roots_of: dict = {}  # name -> the loop variables its value depends on
        self.count = 0

    def define(self, name: str, roots):
        self.roots_of[name] = frozenset(roots)

    def roots(self, expr: str) -> frozenset:
        out = frozenset()
        for n in _NAMES.findall(expr):
            out |= self.roots_of.get(n, frozenset())
        return out

    def _target(self, roots) -> int:
        for i, sc in enumerate(self.scopes):
            if roots <= sc.roots:
                return i
        return len(self.scopes) - 1

    def get(self, key, upto: int | None = None):
        top = len(self.scopes) - 1 if upto is None else upto
        for i in range(top, -1, -1):
            if key in self.scopes[i].cse:
                return self.scopes[i].cse[key]
        return None

    def put(self, key, name: str):
        self.scopes[self._target(self.roots(name))].cse[key] = name

    def fresh(self, prefix: str = "v") -> str:
        name = f"{prefix}{self.count}"
        self.count += 1
        return name

    def bind(self, expr: str, ctype: str = "__auto_type") -> str:
        if _IDENT.match(expr):
            return expr
        roots = self.roots(expr)
        i = self._target(roots)
        name = self.get(expr, i)
        if name is None:
            name = self.fresh()
            self.scopes[i].lines.append(f"const {ctype} {name} = {expr};")
            self.scopes[i].cse[expr] = name
            self.roots_of[name] = roots
        return name

    def declare(self, ctype: str, init: str, roots) -> str:
        """A mutable variable (an accumulator) in the current scope."""
        name = self.fresh("acc")
        self.scopes[-1].lines.append(f"{ctype} {name} = {init};")
        self.roots_of[name] = frozenset(roots)
        return name

    def emit(self, line: str):
        self.scopes[-1].lines.append(line)

    def open(self, header: str, roots, pragma: str | None = None, defines=()):
        for d in defines:
            self.define(d, roots)
        self.scopes.append(_Scope(roots, header, pragma))

    def close(self):
        sc = self.scopes.pop()
        out = self.scopes[-1].lines
        if sc.pragma:
            out.append(sc.pragma)
        out.append(sc.header + " {")
        out.extend("  " + line for line in sc.lines)
        out.append("}")


# --- lowering ---


class Lowering:
    """Computing a group's values at an index (shared by both kinds)."""

    def __init__(self, group: FusionGroup):
        self.group = group
        self.em = Emitter()
        self.producer = {}
        for eqn in group.eqns:
            if eqn.primitive.multiple_results:
                raise UnsupportedError(f"'{eqn.primitive}' has several results; the C backend "
                                       "lowers single-result primitives only")
            self.producer[eqn.outvars[0]] = eqn
        self.ins = [v for v in group.inputs if type(v) is not Literal]
        self.inputs = {v: i for i, v in enumerate(self.ins)}
        self.totals: dict = {}
        self.select_conds: dict = {}
        try:
            self.var_axes = group_layout(group).var_axes
        except IllegalGroup as e:
            raise UnsupportedError(f"no iteration space for the group: {e}") from None
        self.base = ()

    # -- rendering --
    def render(self, ix) -> str:
        if ix[0] == "c":
            return str(ix[1])
        if ix[0] == "e":
            return ix[1] if _IDENT.match(ix[1]) else f"({ix[1]})"
        _, base, stride, extent = ix
        text = base if stride == 1 else f"{base} / {stride}"
        if stride * extent < self.totals[base]:
            text = f"{base} % {extent}" if stride == 1 else f"({text}) % {extent}"
        return f"({text})" if text != base else text

    def render_linear(self, terms, c) -> str:
        parts = [self.bind(self.render(ix)) + (f" * {m}" if m != 1 else "") for ix, m in terms]
        if c or not parts:
            parts.append(str(c))
        return " + ".join(parts)

    def bind(self, expr: str, ctype: str = "int64_t") -> str:
        return self.em.bind(expr, ctype)

    def address(self, index, shape) -> str:
        terms, c = linear_terms(index, row_major_strides(shape))
        return self.bind(self.render_linear(terms, c))

    # -- values --
    def value(self, var, index) -> str:
        """The name (or constant) of ``var`` computed at ``index``."""
        stack = [(var, index, False)]
        while stack:
            v, ix, ready = stack.pop()
            key = (v, ix)
            if self.em.get(key) is not None:
                continue
            if type(v) is Literal:
                self.em.put(key, rules.literal(v.val, v.aval.dtype))
                continue
            if v in self.inputs:
                self.em.put(key, self.load(v, ix))
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
            self.em.put(key, self.apply(eqn, ix, [self.em.get(r) for r in reqs]))
        return self.em.get((var, index))

    def operand_requests(self, eqn, index):
        prim = eqn.primitive
        if prim in select_rules:
            reqs, conds = select_rules[prim](self, eqn, index)
            self.select_conds[(id(eqn), index)] = conds
            return reqs
        if prim in index_rules:
            return list(zip(eqn.invars[:1], index_rules[prim](self, eqn, index)))
        if prim is P.iota_p:
            return []
        if prim in REDUCTIONS:
            raise UnsupportedError(f"the result of '{prim}' is read at an index other than its "
                                   "row (only broadcasts of a row result are lowered)")
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

    def apply(self, eqn, index, operands) -> str:
        prim = eqn.primitive
        if prim in select_rules:
            conds = self.select_conds[(id(eqn), index)]
            val = operands[-1]
            for cond, v in zip(reversed(conds), reversed(operands[:-1])):
                val = self.em.bind(f"{self.bind(cond, 'int')} ? {v} : {val}")
            return val
        if prim in index_rules:
            return operands[0]
        out = eqn.outvars[0].aval
        if prim is P.iota_p:
            ix = index[eqn.params["dimension"]]
            return self.em.bind(f"({rules.reg_type(out.dtype)}){self.render(ix)}",
                                rules.reg_type(out.dtype))
        ctx = rules.RuleContext(prim, tuple(v.aval for v in eqn.invars), out, eqn.params)
        template = rules.lookup(prim, ctx)
        fields = ctx.fields()
        steps = template if isinstance(template, tuple) else (template,)
        temps = {}
        for step in steps[:-1]:
            temps[f"t{len(temps)}"] = self.em.bind(step.format(*operands, **fields, **temps))
        expr = steps[-1].format(*operands, **fields, **temps)
        reg = rules.reg_type(out.dtype)
        return self.em.bind(rules.round_expr(f"({reg})({expr})", out.dtype), reg)

    def load(self, var, index) -> str:
        i = self.inputs[var]
        addr = "0" if var.aval.shape == () else self.address(index, var.aval.shape)
        return self.em.bind(rules.load_expr(f"in{i}[{addr}]", var.aval.dtype),
                            rules.reg_type(var.aval.dtype))

    # -- outputs --
    def natural_index(self, var):
        """Where ``var`` runs in the iteration space (from the planner's layout), and the
        iteration dims it does not use (a smaller output is written where they are 0)."""
        axes = self.var_axes.get(var)
        shape = self.group.shape
        if axes is None or len(axes) != len(var.aval.shape):
            return None, None
        if any(p is not None and (p >= len(shape) or var.aval.shape[d] != shape[p])
               for d, p in enumerate(axes)):
            return None, None
        used = {p for p in axes if p is not None}
        unused = [d for d in range(len(shape)) if d not in used and shape[d] != 1]
        return tuple(const(0) if p is None else self.base[p] for p in axes), unused

    def store(self, j, out, index, unused):
        val = self.value(out, index)
        addr = "0" if out.aval.shape == () else self.address(index, out.aval.shape)
        stmt = f"out{j}[{addr}] = {rules.store_expr(val, out.aval.dtype)};"
        conds = [f"{self.bind(self.render(self.base[d]))} == 0" for d in unused
                 if self.base[d][0] != "c"]
        self.em.emit(f"if ({' && '.join(conds)}) {stmt}" if conds else stmt)

    def unknown_output(self, out):
        return UnsupportedError(f"{self.group.kind.value} group of shape "
                                f"{list(self.group.shape)} writes an output of shape "
                                f"{list(out.aval.shape)} whose index in the iteration is unknown")

    def pointers(self, inplace=None) -> list:
        """The argument pointers; ``inplace`` maps an input to the output whose buffer holds
        it (read through a pointer derived from the output's: legal with ``restrict``)."""
        inplace = inplace or {}
        lines, after = [], []
        for i, v in enumerate(self.ins):
            t = rules.storage_type(v.aval.dtype)
            if v in inplace:
                after.append(f"const {t} *in{i} = (const {t} *)out{inplace[v]};")
            else:
                lines.append(f"const {t} *restrict in{i} = (const {t} *)a[{i}];")
        for j, v in enumerate(self.group.outputs):
            t = rules.storage_type(v.aval.dtype)
            lines.append(f"{t} *restrict out{j} = ({t} *)a[{len(self.ins) + j}];")
        return lines + after

    def parallel(self, work: int, tasks: str) -> str | None:
        if work < PARALLEL_THRESHOLD:
            return None
        return f"#pragma omp parallel for num_threads(nt) schedule(static) if({tasks} > 1)"


class _Elementwise(Lowering):

    def run(self) -> int:
        shape = tuple(self.group.shape)
        n = math.prod(shape)
        k = max(len(shape) - 1, 0)
        while k > 0 and math.prod(shape[k:]) < MIN_INNER:
            k -= 1
        outer, inner = math.prod(shape[:k]), math.prod(shape[k:])
        chunk = inner if inner <= 4 * INNER_CHUNK else INNER_CHUNK
        nch = -(-inner // chunk) if inner else 1
        self.totals = {"o": outer, "j": inner}
        self.base = delinearize("o", shape[:k]) + delinearize("j", shape[k:])
        em = self.em
        em.open(f"for (int64_t t = 0; t < {outer * nch}; t++)", ("o",),
                self.parallel(n, str(outer * nch)), defines=("t",))
        em.emit(f"const int64_t o = t / {nch};" if nch > 1 else "const int64_t o = t;")
        em.emit(f"const int64_t j0 = (t % {nch}) * {chunk};" if nch > 1 else
                "const int64_t j0 = 0;")
        em.emit(f"const int64_t j1 = ft_imin(j0 + {chunk}, {inner});" if nch > 1 else
                f"const int64_t j1 = {inner};")
        for name in ("o", "j0", "j1"):
            em.define(name, ("o",))
        em.open("for (int64_t j = j0; j < j1; j++)", ("o", "j"), "#pragma omp simd",
                defines=("j",))
        apart = []
        for j, out in enumerate(self.group.outputs):
            if math.prod(out.aval.shape) > n:  # unrelated to an (empty) iteration space
                apart.append((j, out))
                continue
            index, unused = self.natural_index(out)
            if index is None:
                raise self.unknown_output(out)
            self.store(j, out, index, unused)
        em.close()
        em.close()
        for j, out in apart:  # e.g. a sibling view of a shared input: at its own index
            size = math.prod(out.aval.shape)
            self.totals["q"] = size
            em.open(f"for (int64_t q = 0; q < {size}; q++)", ("q",), None, defines=("q",))
            self.store(j, out, delinearize("q", out.aval.shape), [])
            em.close()
        return max([n] + [math.prod(v.aval.shape) for v in self.group.outputs])


class _Reduction(Lowering):

    def run(self) -> int:
        g = self.group
        shape = tuple(g.shape)
        axes = tuple(sorted(a % max(len(shape), 1) for a in g.reduce_axes))
        kept = [d for d in range(len(shape)) if d not in axes]
        kshape, rshape = [shape[d] for d in kept], [shape[d] for d in axes]
        rows, cols = math.prod(kshape), math.prod(rshape)
        self.totals = {"r": rows, "k": cols}
        ix = dict(zip(kept, delinearize("r", kshape)))
        ix.update(zip(axes, delinearize("k", rshape)))
        self.base = tuple(ix[d] for d in range(len(shape)))
        em = self.em
        em.open(f"for (int64_t r = 0; r < {rows}; r++)", ("r",),
                self.parallel(rows * cols, str(rows)), defines=("r",))
        stages = self.stages()
        self.stash, self.stashed = self.choose_stash(stages), False
        for stage in stages:
            self.reduce_stage(stage)
        full, rowwise = [], []
        for j, out in enumerate(g.outputs):
            index, unused = self.natural_index(out)
            if index is None:
                raise self.unknown_output(out)
            if any("k" in ix_bases(i) for i in index):
                full.append((j, out, index, unused))
            else:  # per row, after the loops (the reduced dims it does not use: no condition)
                rowwise.append((j, out, index, [d for d in unused if d not in axes]))
        for j, out, index, unused in rowwise:
            self.store(j, out, index, unused)
        if full:
            self.open_cols("#pragma omp simd")
            for j, out, index, unused in full:
                self.store(j, out, index, unused)
            em.close()
        em.close()
        return max(rows * cols, rows)  # rows of zero elements still write their results

    def open_cols(self, pragma):
        self.em.open(f"for (int64_t k = 0; k < {self.totals['k']}; k++)", ("r", "k"), pragma,
                     defines=("k",))
        if self.stashed:  # later loops read the stashed value back
            var, j = self.stash
            addr = self.address(self.base, var.aval.shape)
            self.em.put((var, self.base), self.em.bind(
                rules.load_expr(f"out{j}[{addr}]", var.aval.dtype),
                rules.reg_type(var.aval.dtype)))

    def choose_stash(self, stages):
        """``(var, j)``: a transcendental value computed in a reduction loop and needed again
        by the full-size output ``j`` (softmax's ``exp(x - max)``), which the loop then
        writes into that output's buffer (of its shape and dtype) so that the output loop
        reads it instead of computing it again; None when there is none."""
        if not stages:
            return None
        reduced = self._ancestors([e.invars[0] for st in stages for e in st])
        for j, out in enumerate(self.group.outputs):
            if out.aval.shape != tuple(self.group.shape) or self.natural_index(out) != (
                    self.base, []):
                continue
            for v in self._ancestors([out]):
                e = self.producer.get(v)
                if (e is not None and e.primitive.family is Family.TRANSCENDENTAL
                        and v in reduced and v.aval.shape == out.aval.shape
                        and v.aval.dtype == out.aval.dtype
                        and self.natural_index(v) == (self.base, [])):
                    return v, j
        return None

    def _ancestors(self, roots) -> list:
        """The group values ``roots`` are computed from (``roots`` included), in order."""
        seen, stack, order = set(), [v for v in roots if type(v) is not Literal], []
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            order.append(v)
            e = self.producer.get(v)
            if e is not None:
                stack.extend(u for u in e.invars if type(u) is not Literal)
        return order

    def stages(self) -> list:
        """The reductions in loops: a reduction reading another one's result runs later."""
        level, out = {}, []
        for e in self.group.eqns:
            s = max((level.get(v, 0) for v in e.invars if type(v) is not Literal), default=0)
            if e.primitive in REDUCTIONS:
                while len(out) <= s:
                    out.append([])
                out[s].append(e)
                s += 1
            level[e.outvars[0]] = s
        return out

    def operand_index(self, eqn):
        x = eqn.invars[0]
        index, _ = self.natural_index(x)
        if index is not None:
            return index
        axes = tuple(sorted(a % x.aval.ndim for a in eqn.params["axes"])) if x.aval.ndim else ()
        kept = [d for d in range(x.aval.ndim) if d not in axes]
        kshape = [x.aval.shape[d] for d in kept]
        rshape = [x.aval.shape[d] for d in axes]
        if math.prod(kshape) != self.totals["r"] or math.prod(rshape) != self.totals["k"]:
            raise UnsupportedError(
                f"'{eqn.primitive}' reduces axes {list(axes)} of a {x.aval.str_short()} "
                f"operand; this group has {self.totals['r']} rows of {self.totals['k']} "
                f"elements (shape {list(self.group.shape)})")
        ix = dict(zip(kept, delinearize("r", kshape)))
        ix.update(zip(axes, delinearize("k", rshape)))
        return tuple(ix[d] for d in range(x.aval.ndim))

    def reduce_stage(self, eqns):
        em = self.em
        plans = []
        for e in eqns:
            x, out = e.invars[0], e.outvars[0]
            rule = rules.lookup_reduce(e.primitive, x.aval.dtype)
            ctx = rules.RuleContext(e.primitive, (x.aval,), out.aval, e.params)
            fields = ctx.fields()
            accs = [(em.declare(t.format(**fields), init.format(**fields), ("r",)), op)
                    for t, init, op in rule.accs]
            plans.append((e, rule, fields, accs))
        simd = all(rule.simd for _, rule, _, _ in plans)
        clauses = " ".join(f"reduction({op}:{a})" for *_, accs in plans for a, op in accs if op)
        self.open_cols(f"#pragma omp simd {clauses}".rstrip() if simd else None)
        for e, rule, fields, accs in plans:
            index = self.operand_index(e)
            x = self.value(e.invars[0], index)
            axis = e.params["axes"][0] if e.primitive in (P.argmax_p, P.argmin_p) else None
            pos = self.bind(self.render(index[axis])) if axis is not None else "k"
            names = {f"a{i}": a for i, (a, _) in enumerate(accs)}
            em.emit(rule.update.format(x=x, k=pos, **names, **fields))
        if self.stash is not None and not self.stashed:
            var, j = self.stash
            val = em.get((var, self.base))
            if val is not None:
                addr = self.address(self.base, var.aval.shape)
                em.emit(f"out{j}[{addr}] = {rules.store_expr(val, var.aval.dtype)};")
                self.stashed = True
        em.close()
        for e, rule, fields, accs in plans:
            names = {f"a{i}": a for i, (a, _) in enumerate(accs)}
            res = em.bind(rule.finish.format(**names, **fields),
                          rules.reg_type(e.outvars[0].aval.dtype))
            out = e.outvars[0]
            index, _ = self.natural_index(out)
            if index is None:
                index = delinearize("r", out.aval.shape)
            em.put((out, index), res)


def reads_in_place(group: FusionGroup, inplace: dict) -> bool:
    """Whether each input of ``inplace`` (input var -> output position) can share its
    output's buffer: an ELEMENTWISE group with that one output, of the input's shape and
    dtype (the iteration's shape), the input read by elementwise equations only (at the
    index each iteration writes, after every load it needs: the output's value depends on
    every value the single output's iteration loads)."""
    if group.kind is not GroupKind.ELEMENTWISE or len(group.outputs) != 1:
        return False
    for v, j in inplace.items():
        out = group.outputs[j]
        if (v not in group.inputs or v.aval.shape != out.aval.shape
                or v.aval.dtype != out.aval.dtype or tuple(group.shape) != out.aval.shape):
            return False
        for e in group.eqns:
            if v in e.invars and (e.primitive.family not in ELEMENTWISE_FAMILIES
                                  or e.outvars[0].aval.shape != out.aval.shape):
                return False
    return True


def _kernel_name(group: FusionGroup, body: str) -> str:
    names = []
    for e in group.eqns:
        n = e.primitive.name
        if e.primitive not in index_rules and n not in names:
            names.append(n)
    readable = re.sub(r"[^A-Za-z0-9_]", "_", "_".join(names[:3]))[:40]
    digest = hashlib.sha256(body.encode()).hexdigest()[:12]
    return f"fx_{readable}_{digest}"


def generate(group: FusionGroup, inplace=None) -> KernelSource:
    """The C function of ``group`` (ELEMENTWISE or REDUCTION).

    ``inplace`` (ELEMENTWISE groups with one output): ``{input var: 0}`` when the caller
    passes that input in the output's buffer (a product's epilogue computed where the
    product was written); the input must be read at the output's own index only, which
    :func:`reads_in_place` checks.

    Returns:
      a :class:`KernelSource`; equal groups (same equations on the same avals) give the same
      text.

    Raises:
      UnsupportedError: for a group kind, primitive, dtype or layout not lowered yet.
    """
    if group.kind is GroupKind.REDUCTION:
        streamed = column_sum(group, PARALLEL_THRESHOLD)
        if streamed is not None:
            name, text, work, x = streamed
            return KernelSource(name, text, group.kind, (x,), (group.outputs[0].aval,), work)
    if group.kind is GroupKind.ELEMENTWISE:
        low = _Elementwise(group)
    elif group.kind is GroupKind.REDUCTION:
        low = _Reduction(group)
    else:
        raise UnsupportedError(f"the C code generator does not lower {group.kind.value} "
                               "groups (only elementwise and reduction)")
    for v in tuple(group.inputs) + tuple(group.outputs):
        rules.dtype_class(v.aval.dtype)  # raises for unsupported dtypes
    if inplace and not reads_in_place(group, inplace):
        raise UnsupportedError("an in-place input is not read at its output's index")
    work = low.run()
    body = "\n".join("  " + line for line in low.pointers(inplace) + low.em.scopes[0].lines)
    head = [f"/* {group.describe()} */",
            *(f"/* in{i}: {v.aval.str_short()} */" for i, v in enumerate(low.ins)),
            *(f"/* out{j}: {v.aval.str_short()} */" for j, v in enumerate(group.outputs))]
    name = _kernel_name(group, "\n".join(head) + body)
    text = "\n".join(head + [KERNEL_SIGNATURE.format(name=name) + " {", body, "}", ""])
    sizes = [math.prod(v.aval.shape) for v in group.outputs]
    return KernelSource(name, text, group.kind, tuple(v.aval for v in low.ins),
                        tuple(v.aval for v in group.outputs), work if any(sizes) else 0)
