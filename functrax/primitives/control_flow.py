"""Control-flow primitives: ``cond`` (one of several branches), ``while`` and ``scan``
(loops), each holding sub-jaxprs. Only their abstract evaluation lives here; the public
functions that trace the user's bodies (``lax.cond``, ``lax.while_loop``, ``lax.scan``, ...)
and the transformation rules are in ``functrax/control_flow/``, the backends' rules in
``functrax/lowering/``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from functrax.core import typematch
from functrax.primitives.define import Family, new_primitive

cond_p = new_primitive("cond", multiple_results=True, family=Family.CONTROL_FLOW)
while_p = new_primitive("while", multiple_results=True, family=Family.CONTROL_FLOW)
scan_p = new_primitive("scan", multiple_results=True, family=Family.CONTROL_FLOW)


def avals_str(avals) -> str:
    """``(f32[2], i32[])``: a tuple of types as the error messages print them."""
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


# --- cond ---


@cond_p.def_abstract_eval
def _cond_abstract_eval(index, *ops, branches):
    if type(branches) is not tuple or not branches:
        raise TypeError(f"cond: branches must be a non-empty tuple of ClosedJaxprs, got "
                        f"{branches!r}")
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond: the branch index must be an int32 scalar, got "
                        f"{index.str_short()}")
    out0 = branches[0].out_avals
    for i, br in enumerate(branches):
        in_avals = br.in_avals
        if len(in_avals) != len(ops):
            raise TypeError(f"cond: branch {i} takes {len(in_avals)} operands but the cond "
                            f"passes {len(ops)}")
        for k, (want, got) in enumerate(zip(in_avals, ops)):
            if not typematch(want, got):
                raise TypeError(f"cond: operand {k} has type {got.str_short()} but branch {i} "
                                f"expects {want.str_short()}")
        outs = br.out_avals
        if len(outs) != len(out0) or not all(map(typematch, outs, out0)):
            raise TypeError(f"cond: branch {i} outputs {avals_str(outs)} but branch 0 "
                            f"outputs {avals_str(out0)}; all branches must output the "
                            f"same types")
    # as JAX: the types of branch 0 (weak types may differ between branches)
    return list(out0)


# --- while ---


def types_str(avals) -> str:
    return "[" + ", ".join(a.str_short() for a in avals) + "]"


def _check_operands(what, jaxpr_avals, avals):
    if len(jaxpr_avals) != len(avals) or not all(map(typematch, jaxpr_avals, avals)):
        raise TypeError(f"while: {what} takes {types_str(jaxpr_avals)} but is given "
                        f"{types_str(avals)}")


@while_p.def_abstract_eval
def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    if len(avals) < cond_nconsts + body_nconsts:
        raise TypeError(f"while: {len(avals)} operands for cond_nconsts={cond_nconsts} and "
                        f"body_nconsts={body_nconsts}")
    cconsts, bconsts, carry = split_at(avals, cond_nconsts, body_nconsts)
    _check_operands("cond_jaxpr", cond_jaxpr.in_avals, cconsts + carry)
    _check_operands("body_jaxpr", body_jaxpr.in_avals, bconsts + carry)
    _check_operands("the carry output of body_jaxpr", body_jaxpr.out_avals, carry)
    pred = cond_jaxpr.out_avals
    if len(pred) != 1 or pred[0].shape != () or pred[0].dtype.kind != "b":
        raise TypeError(f"while: cond_jaxpr must return one boolean scalar, got "
                        f"{types_str(pred)}")
    return list(body_jaxpr.out_avals)


# --- scan ---


def split_at(xs, *sizes):
    """Split ``xs`` into consecutive pieces of ``sizes`` and the rest."""
    out, i = [], 0
    for n in sizes:
        out.append(list(xs[i:i + n]))
        i += n
    out.append(list(xs[i:]))
    return out


def _scan_abstract_eval(*avals, jaxpr, length, reverse, unroll, num_consts, num_carry):
    in_avals, out_avals = jaxpr.in_avals, jaxpr.out_avals
    if len(avals) != len(in_avals):
        raise TypeError(f"scan: the body jaxpr takes {len(in_avals)} inputs but the scan has "
                        f"{len(avals)} operands (num_consts={num_consts}, "
                        f"num_carry={num_carry})")
    consts, init, xs = split_at(avals, num_consts, num_carry)
    j_consts, j_carry, j_xs = split_at(in_avals, num_consts, num_carry)
    carry_out, y_avals = out_avals[:num_carry], out_avals[num_carry:]
    _expect("const", consts, j_consts)
    _expect("carry input", init, j_carry)
    _expect("carry output of the body for carry input", j_carry, carry_out)
    for i, (x, jx) in enumerate(zip(xs, j_xs)):
        if x.shape != (length,) + jx.shape or x.dtype != jx.dtype:
            raise TypeError(f"scan: xs operand {i} has type {x.str_short()} but the body "
                            f"takes {jx.str_short()} slices of length={length}")
    return list(carry_out) + [a.update(shape=(length,) + a.shape) for a in y_avals]


def _expect(what, got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if not typematch(a, b):
            raise TypeError(f"scan: {what} {i} has type {a.str_short()} but the body jaxpr "
                            f"expects {b.str_short()}")


scan_p.def_abstract_eval(_scan_abstract_eval)


# --- custom_linear_solve: a linear solve with user-given solvers (lax.custom_linear_solve) ---

custom_linear_solve_p = new_primitive("custom_linear_solve", multiple_results=True,
                                      family=Family.CONTROL_FLOW)


class LinearSolveTuple(NamedTuple):
    """One entry per function of a ``custom_linear_solve`` (its jaxprs, or its numbers of
    consts); ``vecmat`` / ``transpose_solve`` may be None."""
    matvec: Any
    vecmat: Any
    solve: Any
    transpose_solve: Any

    def transpose(self) -> LinearSolveTuple:
        return LinearSolveTuple(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _linear_solve_abstract_eval(*avals, const_lengths, jaxprs):
    n_consts = sum(const_lengths)
    b = avals[n_consts:]
    solve = jaxprs.solve
    n_x = len(jaxprs.matvec.out_avals)
    if len(b) != n_x:
        raise TypeError(f"custom_linear_solve: {len(b)} right-hand side operands for a "
                        f"matvec with {n_x} outputs")
    for i, (a, m) in enumerate(zip(b, jaxprs.matvec.out_avals)):
        if not typematch(a, m):
            raise TypeError(f"custom_linear_solve: b operand {i} has type {a.str_short()} but "
                            f"matvec returns {m.str_short()}")
    return list(solve.out_avals)


custom_linear_solve_p.def_abstract_eval(_linear_solve_abstract_eval)

__all__ = [
    "cond_p", "while_p", "scan_p", "custom_linear_solve_p", "LinearSolveTuple", "avals_str",
    "types_str", "split_at",
]
