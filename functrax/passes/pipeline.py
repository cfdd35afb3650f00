"""The optimization pipeline run by jit before compiling: a list of passes applied in order."""
from __future__ import annotations

from functrax.core import ClosedJaxpr
from functrax.passes.dce import dce
from functrax.passes.inline import inline_closed


def _on_jaxpr(pass_fn):
    return lambda closed: ClosedJaxpr(pass_fn(closed.jaxpr), closed.consts)


# each entry: (name, fn(ClosedJaxpr) -> ClosedJaxpr)
PASSES = [
    ("inline", inline_closed),
    ("dce", _on_jaxpr(dce)),
]


def optimize(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Run every pass of ``PASSES`` in order."""
    for _, fn in PASSES:
        closed = fn(closed)
    return closed
