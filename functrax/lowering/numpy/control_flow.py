"""numpy rules of the control-flow primitives: a Python loop (or branch choice) over
compiled sub-jaxprs.

Each sub-jaxpr is compiled once per jaxpr object (``backends.host_executable``) by the
numpy executor, or by the backend that a ``jit(..., backend=name)`` inside it names (so a
nested ``jit(f, backend="triton")`` keeps its backend after inlining).
"""
from __future__ import annotations

import weakref

import numpy as np

from functrax.lowering.backends import host_executable, nested_backend
from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.control_flow import (
    cond_p, custom_linear_solve_p, scan_p, split_at, while_p,
)


_BODIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def body_executable(closed):
    """The compiled executable of a control-flow body (once per jaxpr object)."""
    exe = _BODIES.get(closed)
    if exe is None:
        exe = _BODIES[closed] = host_executable(closed, nested_backend(closed))
    return exe


def _clamp_index(index, n: int) -> int:
    return min(max(int(index), 0), n - 1)


def _cond_numpy(index, *ops, branches):
    branch = branches[_clamp_index(index, len(branches))]
    return body_executable(branch)(*ops)


def _while_numpy(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond, body = body_executable(cond_jaxpr), body_executable(body_jaxpr)
    cconsts, bconsts, carry = split_at(args, cond_nconsts, body_nconsts)
    while cond(*cconsts, *carry)[0]:
        carry = body(*bconsts, *carry)
    return carry


def _scan_numpy(*args, jaxpr, length, reverse, unroll, num_consts, num_carry):
    exe = body_executable(jaxpr)
    consts, carry, xs = split_at(args, num_consts, num_carry)
    ys = [np.empty((length,) + a.shape, a.dtype) for a in jaxpr.out_avals[num_carry:]]
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        outs = exe(*consts, *carry, *[x[i] for x in xs])
        carry = outs[:num_carry]
        for y, o in zip(ys, outs[num_carry:]):
            y[i] = o
    return list(carry) + ys


def _linear_solve_numpy(*args, const_lengths, jaxprs):
    # x = solve(b): the solve jaxpr on its consts and b
    start = const_lengths.matvec + const_lengths.vecmat
    solve_args = args[start:start + const_lengths.solve] + args[sum(const_lengths):]
    return body_executable(jaxprs.solve)(*solve_args)


numpy_rules.update({cond_p: _cond_numpy, while_p: _while_numpy, scan_p: _scan_numpy,
                    custom_linear_solve_p: _linear_solve_numpy})
