"""Groups that run several C calls as one C function: BLAS products with their fused
epilogue, and control flow (scan, while, cond) with compiled bodies.

A *block* is one generated function with the kernel signature. Its arguments are the
group's inputs, its outputs, then scratch buffers and constants (both allocated once by the
caller, :class:`functrax.lowering.c.backend.Step`). Inside, every value lives at a *location*:
a C expression of a byte pointer (an argument, a scratch buffer, a slice ``xs + i * bytes``
of a scanned array, a carry pointer). Equations are planned with the same fusion planner as
the program (:func:`plan_fusion`), and each group becomes:

- ELEMENTWISE / REDUCTION: a call of its generated kernel (``codegen.generate``, emitted once
  per translation unit);
- MATMUL: ``ft_gemm_f32``/``ft_gemm_f64`` (BLAS, ``matmul.gemm_call``; a transposed operand
  read in place), then the rest of the group (epilogue, operand reductions) planned again
  and emitted as kernels;
- bodies have their calls inlined first (remat, nested jit and custom derivatives only
  matter to transformations);
- ``scan``: a C loop. The body's inputs are the constants, the carry pointers and the
  ``i``-th slices of the scanned arrays; its scanned outputs are written straight into the
  ``i``-th slices of the outputs. A carry lives in one of two buffers by the parity of the
  iteration (the body reads one while writing the other); a carry the body computes into a
  location that stays valid (an output slice, a constant) is passed on by pointer, others
  are copied into the carry's buffer;
- ``while``: the same loop, the condition evaluated into a scratch flag before each step;
- ``cond``: a ``switch`` on the clamped index, each branch a block writing the outputs.

Anything else raises ``UnsupportedError`` and the caller runs the group with numpy rules.
"""
from __future__ import annotations

import hashlib
import math
import re

import numpy as np

from functrax import primitives as P
from functrax.core import ClosedJaxpr, Jaxpr, Literal
from functrax.lowering.c import codegen
from functrax.lowering.c.blas import blas_functions
from functrax.lowering.c.matmul import gemm_call
from functrax.lowering.c.prelude import KERNEL_SIGNATURE
from functrax.lowering.c.rules import UnsupportedError
from functrax.lowering.fusion.planner import plan_fusion
from functrax.lowering.fusion.types import FusionGroup, GroupKind
from functrax.passes.explicit_broadcast import explicit_broadcasts_jaxpr
from functrax.passes.inline import inline_closed
from functrax.primitives.control_flow import cond_p, scan_p, while_p

__all__ = ["generate_block", "program_group", "BLOCK_PRIMITIVES"]

BLOCK_PRIMITIVES = frozenset({scan_p, while_p, cond_p})
_STRIDED_EPILOGUE = 4096  # elements of a transposed epilogue value left to numpy (top level)
_INDEX_TYPES = {"int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t", "bool": "uint8_t",
                "int8": "int8_t", "int16": "int16_t", "uint32": "uint32_t"}


def _nbytes(aval) -> int:
    return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize


def _free_vars(eqns) -> list:
    defined, out = set(), []
    for e in eqns:
        for v in e.invars:
            if type(v) is not Literal and v not in defined and v not in out:
                out.append(v)
        defined.update(e.outvars)
    return out


def _targets(closed, outvars, locs) -> dict:
    """Where a body should compute its outputs: each output value computed by the body (not
    an input or a literal) at the first location given for it (None: anywhere)."""
    out = {}
    for v, loc in zip(outvars, locs):
        if loc is not None and type(v) is not Literal and v not in closed.jaxpr.invars:
            out.setdefault(v, loc)
    return out


class _Block:
    """The statements of one block function and what calling it needs."""

    def __init__(self):
        self.lines: list = []
        self.deps: dict = {}     # kernel name -> KernelSource
        self.scratch: list = []  # bytes per scratch buffer
        self.consts: list = []   # numpy arrays passed after the scratch buffers
        self.depth = 1
        self.count = 0
        self.callees: dict = {}  # name -> KernelSource called through a pointer argument
        self.regions: list = []  # (first, last) line of each loop's block (see arena)

    def emit(self, line: str):
        self.lines.append("  " * self.depth + line)

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def alloc(self, nbytes: int) -> str:
        self.scratch.append(max(nbytes, 1))
        return f"S{len(self.scratch) - 1}"

    def const(self, value, aval) -> str:
        self.consts.append(np.ascontiguousarray(np.asarray(value, dtype=aval.dtype)))
        return f"K{len(self.consts) - 1}"

    def memcpy(self, dst: str, src: str, nbytes: int):
        if nbytes and dst != src:
            self.emit(f"memcpy({dst}, {src}, {nbytes});")

    # --- values ---

    def loc(self, env: dict, v) -> str:
        if type(v) is Literal:
            return self.const(v.val, v.aval)
        try:
            return env[v]
        except KeyError:
            raise UnsupportedError("C block: a value is read before it is computed") from None

    def place(self, env: dict, targets: dict, v) -> str:
        """The location of a value computed here: its target when it has one, else scratch."""
        loc = targets.pop(v, None)
        if loc is None:
            loc = self.alloc(_nbytes(v.aval))
        env[v] = loc
        return loc

    def step(self, kernel, consts, g: FusionGroup, env: dict, targets: dict):
        """Call an already generated group function (a kernel, or a block with its scratch
        and constants) on ``g``'s values, through its address (an argument ``F<i>``): the
        callee compiles in another translation unit, at the same time."""
        ins = [self.loc(env, v) for v in g.inputs if type(v) is not Literal]
        outs = [self.place(env, targets, v) for v in g.outputs]
        scratch = [self.alloc(n) for n in kernel.scratch]
        for c in consts:
            self.consts.append(c)
        ks = [f"K{len(self.consts) - len(consts) + i}" for i in range(len(consts))]
        self.callees.setdefault(kernel.name, kernel)
        f = f"F{list(self.callees).index(kernel.name)}"
        if kernel.work:
            ptrs = ", ".join(f"(void *)({a})" for a in ins + outs + scratch + ks)
            self.emit(f"{{ void *const p[] = {{{ptrs}}}; {f}(p, nt); }}")

    def call(self, kernel, args):
        self.deps.setdefault(kernel.name, kernel)
        if kernel.work:
            ptrs = ", ".join(f"(void *)({a})" for a in args)
            self.emit(f"{{ void *const p[] = {{{ptrs}}}; {kernel.name}(p, nt); }}")

    # --- equations ---

    def eqns(self, eqns, env: dict, targets: dict, outvars):
        """Emit ``eqns`` (planned into groups); ``env`` holds the locations of the values
        they read and receives those they compute; ``targets`` asks for locations."""
        for g in _plan(eqns, outvars):
            self.group(g, env, targets)

    def group(self, g: FusionGroup, env: dict, targets: dict, inplace=None):
        if g.kind in (GroupKind.ELEMENTWISE, GroupKind.REDUCTION):
            kernel = codegen.generate(g, inplace)
            ins = [self.loc(env, v) for v in g.inputs if type(v) is not Literal]
            outs = [self.place(env, targets, v) for v in g.outputs]
            self.call(kernel, ins + outs)
        elif g.kind is GroupKind.MATMUL:
            self.matmul(g, env, targets)
        elif g.kind is GroupKind.OPAQUE and g.eqns[0].primitive in BLOCK_PRIMITIVES:
            eqn = g.eqns[0]
            needed = set(g.outputs)
            {scan_p: self.scan, while_p: self.while_loop, cond_p: self.cond}[eqn.primitive](
                eqn, env, targets, needed)
        else:
            names = " ".join(e.primitive.name for e in g.eqns)
            raise UnsupportedError(f"{g.kind.value} group ({names}) inside a C block")

    def matmul(self, g: FusionGroup, env: dict, targets: dict):
        dots = [e for e in g.eqns if e.primitive is P.dot_general_p]
        if len(dots) != 1:
            raise UnsupportedError("matmul group without exactly one dot_general")
        if not blas_functions().sgemm:
            raise UnsupportedError("no CBLAS found in numpy's libraries (a numpy built "
                                   "against another BLAS): matrix products run on numpy")
        dot = dots[0]
        producers = {o: e for e in g.eqns for o in e.outvars}
        readers = {}
        for e in g.eqns:
            for v in e.invars:
                readers.setdefault(v, []).append(e)
        ptrs, perms, absorbed = [], [], set()
        for v in dot.invars:
            t = producers.get(v)
            if t is not None and t.primitive is P.transpose_p and type(t.invars[0]) is not Literal:
                ptrs.append(self.loc(env, t.invars[0]))
                perms.append(tuple(t.params["permutation"]))
                if all(r is dot for r in readers.get(v, ())) and v not in g.outputs:
                    absorbed.add(id(t))
            else:
                ptrs.append(self.loc(env, v))
                perms.append(None)
        out = dot.outvars[0]
        rest = [e for e in g.eqns if e is not dot and id(e) not in absorbed]
        big = [e for e in rest if e.primitive is P.transpose_p
               and math.prod(e.outvars[0].aval.shape) > _STRIDED_EPILOGUE]
        if big and self.depth == 1:  # outside loops: numpy's cache-aware strided loops win
            raise UnsupportedError(f"a transposed epilogue ({big[0].outvars[0].aval.str_short()}"
                                   "): numpy's strided loops are faster than the C kernel's")
        made = {o for e in rest for o in e.outvars}
        epilogue = _plan(rest, [v for v in g.outputs if v in made])
        inplace = None
        if out in g.outputs:
            c = self.place(env, targets, out)
        else:
            inplace = self._in_place(out, epilogue, env, targets)
            c = (targets[inplace[1].outputs[0]] if inplace
                 else self.alloc(_nbytes(out.aval)))
        env[out] = c
        self.emit(gemm_call(dot, ptrs[0], ptrs[1], c, perms[0], perms[1]))
        for eg in epilogue:
            self.group(eg, env, targets, {out: 0} if inplace and eg is inplace[1] else None)

    def _in_place(self, out, epilogue: list, env: dict, targets: dict):
        """``(True, group)`` when the product ``out`` can be written where the one epilogue
        group reading it (elementwise, one output) writes its output, the group then
        computing in place: no scratch for the product (``w - lr * (x.T @ g)``); else
        None."""
        readers = [eg for eg in epilogue if out in eg.inputs]
        if len(readers) != 1:
            return None
        eg = readers[0]
        if len(eg.outputs) != 1 or eg.outputs[0] not in targets:
            return None
        if not codegen.reads_in_place(eg, {out: 0}):
            return None
        dst = targets[eg.outputs[0]]
        others = [env.get(v) for v in eg.inputs if type(v) is not Literal and v is not out]
        return None if dst in others else (True, eg)

    # --- control flow ---

    def _body(self, closed: ClosedJaxpr, in_locs, targets: dict) -> list:
        """Emit a body jaxpr (calls inlined, ``inline_closed``) on ``in_locs``; returns the
        locations of its outputs."""
        j = closed.jaxpr
        env = {v: self.const(c, v.aval) for v, c in zip(j.constvars, closed.consts)}
        env.update(zip(j.invars, in_locs))
        self.eqns(j.eqns, env, targets, j.outvars)
        return [self.loc(env, v) for v in j.outvars]

    def _carry_update(self, cps, carry_avals, out_locs, own, stable):
        """Point every carry at its new value: in place when its location stays valid for
        the next iteration, else copied into the carry's own buffer first."""
        news = []
        for k, (loc, aval) in enumerate(zip(out_locs, carry_avals)):
            if loc == own[k] or loc in stable or loc.startswith("K"):
                news.append(loc)
            else:
                self.memcpy(own[k], loc, _nbytes(aval))
                news.append(own[k])
        tmp = [self.fresh("np") for _ in cps]
        for t, n in zip(tmp, news):
            self.emit(f"char *const {t} = {n};")
        for cp, t in zip(cps, tmp):
            self.emit(f"{cp} = {t};")

    def _carries(self, init_locs, avals, it: str):
        cps, own = [], []
        for loc, aval in zip(init_locs, avals):
            cp = self.fresh("cp")
            self.emit(f"char *{cp} = {loc};")
            buf, n = self.alloc(2 * _nbytes(aval)), _nbytes(aval)
            cps.append(cp)
            own.append(f"({buf} + ({it} & 1) * {n})")
        return cps, own

    def _end_loop(self, eqn, env, targets, needed, cps, out_locs, own, stable, start):
        """Close a loop body (carries passed on), the loop and its block (opened at line
        ``start``); copy the final carries (the first outputs of ``eqn``) out."""
        self._carry_update(cps, [v.aval for v in eqn.outvars[:len(cps)]], out_locs, own,
                           stable)
        self.depth -= 1
        self.emit("}")
        for v, cp in zip(eqn.outvars, cps):
            if v in needed:
                self.memcpy(self.place(env, targets, v), cp, _nbytes(v.aval))
        self.depth -= 1
        self.emit("}")
        self.regions.append((start, len(self.lines) - 1))

    def scan(self, eqn, env, targets, needed):
        p = eqn.params
        body, length, nc, nk = (inline_closed(p["jaxpr"]), p["length"], p["num_consts"],
                                p["num_carry"])
        ins = [self.loc(env, v) for v in eqn.invars]
        consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
        carry_avals = [v.aval for v in eqn.outvars[:nk]]
        ys_vars = eqn.outvars[nk:]
        ys = [self.place(env, targets, v) if v in needed else None for v in ys_vars]
        it, i = self.fresh("it"), self.fresh("i")
        start = len(self.lines)
        self.emit("{")
        self.depth += 1
        cps, own = self._carries(init, carry_avals, it)
        self.emit(f"for (int64_t {it} = 0; {it} < {length}; ++{it}) {{")
        self.depth += 1
        self.emit(f"const int64_t {i} = {f'{length - 1} - {it}' if p['reverse'] else it};")
        x_avals = body.jaxpr.invars[nc + nk:]
        x_locs = [f"({x} + {i} * {_nbytes(v.aval)})" for x, v in zip(xs, x_avals)]
        bout = body.jaxpr.outvars
        y_locs = [None if y is None else f"({y} + {i} * {_nbytes(v.aval)})"
                  for y, v in zip(ys, bout[nk:])]
        # scanned outputs first: their slices stay valid, so a carry there needs no copy
        btargets = _targets(body, bout[nk:], y_locs)
        for v, loc in _targets(body, bout[:nk], own).items():
            btargets.setdefault(v, loc)
        outs = self._body(body, consts + cps + x_locs, btargets)
        for loc, dst, v in zip(outs[nk:], y_locs, bout[nk:]):
            if dst is not None:
                self.memcpy(dst, loc, _nbytes(v.aval))
        stable = set(ins[:nc]) | set(x_locs) | {y for y in y_locs if y} | set(own)
        self._end_loop(eqn, env, targets, needed, cps, outs[:nk], own, stable, start)

    def while_loop(self, eqn, env, targets, needed):
        p = eqn.params
        cj, bj = inline_closed(p["cond_jaxpr"]), inline_closed(p["body_jaxpr"])
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        ins = [self.loc(env, v) for v in eqn.invars]
        cconsts, bconsts, init = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]
        carry_avals = [v.aval for v in eqn.outvars]
        it = self.fresh("it")
        start = len(self.lines)
        self.emit("{")
        self.depth += 1
        cps, own = self._carries(init, carry_avals, it)
        self.emit(f"for (int64_t {it} = 0;; ++{it}) {{")
        self.depth += 1
        pred = self._body(cj, cconsts + cps, {})[0]
        self.emit(f"if (!*(const uint8_t *)({pred})) break;")
        outs = self._body(bj, bconsts + cps, _targets(bj, bj.jaxpr.outvars, own))
        self._end_loop(eqn, env, targets, needed, cps, outs, own,
                       set(cconsts) | set(bconsts) | set(own), start)

    def cond(self, eqn, env, targets, needed):
        branches = [inline_closed(b) for b in eqn.params["branches"]]
        index, *ops = eqn.invars
        ctype = _INDEX_TYPES.get(np.dtype(index.aval.dtype).name)
        if ctype is None:
            raise UnsupportedError(f"cond index of dtype {index.aval.dtype}")
        ops_locs = [self.loc(env, v) for v in ops]
        outs = [self.place(env, targets, v) if v in needed else None for v in eqn.outvars]
        b = self.fresh("b")
        self.emit(f"{{ int64_t {b} = (int64_t)*(const {ctype} *)({self.loc(env, index)});")
        self.emit(f"{b} = {b} < 0 ? 0 : ({b} > {len(branches) - 1} ? {len(branches) - 1} : {b});")
        self.emit(f"switch ({b}) {{")
        for k, br in enumerate(branches):
            self.emit(f"case {k}: {{")
            self.depth += 1
            locs = self._body(br, ops_locs, _targets(br, br.jaxpr.outvars, outs))
            for src, dst, v in zip(locs, outs, eqn.outvars):
                if dst is not None:
                    self.memcpy(dst, src, _nbytes(v.aval))
            self.emit("break;")
            self.depth -= 1
            self.emit("}")
        self.emit("} }")


def _plan(eqns, outvars) -> list:
    """The fusion groups of ``eqns`` (computing ``outvars``), in order."""
    eqns = list(eqns)
    if not eqns:
        return []
    sub = explicit_broadcasts_jaxpr(Jaxpr((), _free_vars(eqns), list(outvars), eqns))
    return list(plan_fusion(sub).groups)


_SLOT = re.compile(r"\bS(\d+)\b")
_ALIGN = 64


def _arena(b: _Block) -> tuple:
    """Offsets of ``b``'s scratch buffers in one arena, and its size: buffers whose lives
    do not overlap share bytes (fewer pages to touch, warmer caches). A buffer lives from
    the first to the last line naming it; one named inside a loop's block lives through the
    whole block (the loop runs its lines again, and carry pointers alias the buffers it
    names). Unnamed buffers (a skipped call's) get no place (offset None)."""
    lives: dict = {}
    for n, line in enumerate(b.lines):
        for m in _SLOT.finditer(line):
            k = int(m.group(1))
            lo, hi = lives.get(k, (n, n))
            lives[k] = (min(lo, n), max(hi, n))
    changed = True
    while changed:
        changed = False
        for k, (lo, hi) in lives.items():
            for first, last in b.regions:
                if lo <= last and hi >= first and (lo > first or hi < last):
                    lo, hi, changed = min(lo, first), max(hi, last), True
            lives[k] = (lo, hi)
    placed: list = []  # (offset, end, lo, hi)
    offsets = [None] * len(b.scratch)
    for k in sorted(lives, key=lambda k: (-b.scratch[k], k)):
        lo, hi = lives[k]
        size = -(-b.scratch[k] // _ALIGN) * _ALIGN
        busy = sorted((o, e) for o, e, l2, h2 in placed if l2 <= hi and h2 >= lo)
        off = 0
        for o, e in busy:
            if off + size <= o:
                break
            off = max(off, e)
        offsets[k] = off
        placed.append((off, off + size, lo, hi))
    return offsets, max((e for _, e, _, _ in placed), default=0)


# a whole program becomes one block only while its intermediates (held between calls as
# scratch) stay below this many bytes
PROGRAM_SCRATCH_LIMIT = 256 << 20


def program_group(jaxpr: Jaxpr) -> FusionGroup:
    """The pseudo-group of a whole program: its equations, the inputs they read (constvars
    and invars) and the outputs they compute (each once)."""
    read = set(_free_vars(jaxpr.eqns))
    ins = [v for v in list(jaxpr.constvars) + list(jaxpr.invars) if v in read]
    made = {o for e in jaxpr.eqns for o in e.outvars}
    outs = list(dict.fromkeys(v for v in jaxpr.outvars if type(v) is not Literal and v in made))
    return FusionGroup(GroupKind.OPAQUE, tuple(jaxpr.eqns), tuple(ins), tuple(outs))


def generate_block(group: FusionGroup, groups=None):
    """The block function of a MATMUL group or a control-flow OPAQUE group; with ``groups``
    (``(group, kernel, consts)`` of each group of a plan, already generated; ``group`` their
    :func:`program_group`), of a whole program that calls them in order: one C function and
    one call per run instead of one per group.

    Returns:
      ``(kernel, consts)``: a ``codegen.KernelSource`` whose ``deps`` are the kernels it
      calls by name (its translation unit holds them), ``callees`` those it calls through
      their addresses (passed last) and ``scratch`` the bytes of its scratch buffers, and
      the constant arrays to pass after the scratch buffers.

    Raises:
      UnsupportedError: for an equation, dtype or layout the block cannot run in C.
    """
    ins = [v for v in group.inputs if type(v) is not Literal]
    b = _Block()
    env = {v: f"(char *)a[{i}]" for i, v in enumerate(ins)}
    out_locs = [f"(char *)a[{len(ins) + j}]" for j in range(len(group.outputs))]
    targets = {}
    for v, loc in zip(group.outputs, out_locs):
        targets.setdefault(v, loc)
    if groups is None:
        b.group(group, env, targets)
    else:
        for g, kernel, consts in groups:
            b.step(kernel, consts, g, env, targets)
    for v, loc in zip(group.outputs, out_locs):
        b.memcpy(loc, b.loc(env, v), _nbytes(v.aval))
    offsets, arena = _arena(b)
    if groups is not None and arena > PROGRAM_SCRATCH_LIMIT:
        raise UnsupportedError(f"the program's intermediates ({arena} bytes) would "
                               "be held between calls")
    nio = len(ins) + len(group.outputs)
    scratch = (arena,) if arena else ()
    decl = [f"  char *const SA = (char *)a[{nio}];"] if arena else []
    decl += [f"  char *const S{k} = SA + {off};" for k, off in enumerate(offsets)
             if off is not None]
    decl += [f"  char *const K{k} = (char *)a[{nio + len(scratch) + k}];"
             for k in range(len(b.consts))]
    nsk = nio + len(scratch) + len(b.consts)
    decl += [f"  void (*const F{k})(void *const *, int) = (void (*)(void *const *, int))"
             f"a[{nsk + k}];" for k in range(len(b.callees))]
    what = group.describe() if groups is None else f"program of {len(groups)} groups"
    head = [f"/* {what} */",
            *(f"/* in{i}: {v.aval.str_short()} */" for i, v in enumerate(ins)),
            *(f"/* out{j}: {v.aval.str_short()} */" for j, v in enumerate(group.outputs))]
    body = "\n".join(decl + b.lines)
    deps = "".join(k.name for k in list(b.deps.values()) + list(b.callees.values()))
    digest = hashlib.sha256(("\n".join(head) + body + deps).encode()).hexdigest()[:12]
    prims = ("program" if groups is not None else
             "_".join(dict.fromkeys(e.primitive.name for e in group.eqns))[:40])
    name = f"fx_{prims}_{digest}"
    text = "\n".join(head + [KERNEL_SIGNATURE.format(name=name) + " {", body, "}", ""])
    kernel = codegen.KernelSource(name, text, group.kind, tuple(v.aval for v in ins),
                                  tuple(v.aval for v in group.outputs), 1,
                                  deps=tuple(b.deps.values()), scratch=scratch,
                                  callees=tuple(b.callees.values()))
    return kernel, tuple(b.consts)
