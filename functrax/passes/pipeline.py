"""The optimization pipeline run by jit before compiling: a list of passes applied in order.

:func:`optimize` first runs ``physicalize``, which rewrites values of extended dtypes (typed
PRNG keys) onto their physical data (a type lowering, not one of ``PASSES``: the only step
that changes the program's types, a ``key<fry>[n]`` input or output becoming ``u32[n,2]``,
the buffer behind the key array) and ``explicit_broadcasts`` (implicit size-1 broadcasts of
elementwise operands become ``broadcast_in_dim``, so the passes and backends see equal
shapes); then the passes of ``PASSES``: ``inline`` removes
call boundaries; then ``sink_transposes``, ``simplify``, ``const_fold`` and ``cse`` (the
passes in ``FIXED_POINT``, which feed each other: a transpose of a sum of products becomes a
sum of transposed products that simplify swaps, a fold makes a literal that simplifies, a
simplification exposes duplicates, ...) repeat as a group until nothing changes (at most
``MAX_ROUNDS`` times); ``forward`` bypasses no-op conversions, ``dce`` drops what became
dead (unused scan/while carries and ys, cond outputs included), ``hoist_accumulators``
turns a scan's step-by-step ``acc += dot(p_t, q_t)`` into one dot after the loop, and
``prune_consts`` drops the consts nothing reads any more.

Every pass of ``PASSES`` keeps the program well-typed and its avals exactly equal;
a pass that changes nothing returns its argument itself, which is how the group detects a
fixed point.
"""
from __future__ import annotations

from functrax.core import ClosedJaxpr, check_if_enabled
from functrax.passes.const_fold import const_fold, prune_consts
from functrax.passes.cse import cse
from functrax.passes.dce import dce
from functrax.passes.explicit_broadcast import explicit_broadcasts
from functrax.passes.forward import forward
from functrax.passes.hoist_accumulators import hoist_accumulators
from functrax.passes.inline import inline_closed
from functrax.passes.physicalize import physicalize
from functrax.passes.simplify import simplify
from functrax.passes.sink_transposes import sink_transposes


def _on_jaxpr(pass_fn):
    def run(closed):
        j = pass_fn(closed.jaxpr)
        return closed if j is closed.jaxpr else ClosedJaxpr(j, closed.consts)
    run.__name__ = getattr(pass_fn, "__name__", "pass")
    return run


# each entry: (name, fn(ClosedJaxpr) -> ClosedJaxpr)
PASSES = [
    ("inline", inline_closed),
    ("sink_transposes", _on_jaxpr(sink_transposes)),
    ("simplify", _on_jaxpr(simplify)),
    ("const_fold", const_fold),
    ("cse", _on_jaxpr(cse)),
    ("forward", _on_jaxpr(forward)),
    ("dce", _on_jaxpr(dce)),
    ("hoist_accumulators", _on_jaxpr(hoist_accumulators)),
    ("prune_consts", prune_consts),
]

# consecutive passes named here run as a group, repeated until none of them changes anything
FIXED_POINT = {"sink_transposes", "simplify", "const_fold", "cse"}
MAX_ROUNDS = 4


def optimize(closed: ClosedJaxpr, passes=None) -> ClosedJaxpr:
    """Physicalize typed keys, then run the passes of ``PASSES`` (or ``passes``) in order,
    iterating ``FIXED_POINT`` groups.

    >>> import functrax, functrax.numpy as fnp
    >>> c = functrax.make_jaxpr(lambda x: fnp.sin(x) * fnp.sin(x) + 0.0)(1.0)
    >>> print(optimize(c))
    { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b b in (c,) }
    """
    passes = PASSES if passes is None else passes
    closed = physicalize(closed)  # a no-op (its argument) without extended dtypes
    closed = explicit_broadcasts(closed)  # likewise without implicit size-1 broadcasts
    i = 0
    while i < len(passes):
        group = [passes[i]]
        while (passes[i][0] in FIXED_POINT and i + len(group) < len(passes)
               and passes[i + len(group)][0] in FIXED_POINT):
            group.append(passes[i + len(group)])
        i += len(group)
        rounds = MAX_ROUNDS if group[0][0] in FIXED_POINT else 1
        for _ in range(rounds):
            before = closed
            for name, fn in group:
                out = fn(closed)
                if out is not closed:
                    check_if_enabled(out, f"the pass {name!r}")  # functrax.enable_checks
                closed = out
            if closed is before:
                break
    return closed
