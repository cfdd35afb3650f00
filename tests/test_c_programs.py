"""The composition programs (``tests/test_composition.py``) through the C backend: each
program, its gradient (the reverse-differentiable ones) and its ``vmap`` are lowered once,
compiled together (``backend.compile_many``), and compared with the numpy executor on the
same optimized jaxpr. Control flow (cond, switch, scan, while, fori) runs as C loops, matrix
products through BLAS; where a group still runs on numpy, its fallback names a reason.
"""
from __future__ import annotations

import numpy as np
import pytest

from functrax import grad, jit, vmap
from functrax.lowering.c import backend as cb
from functrax.lowering.c.toolchain import toolchain
from functrax.lowering.numpy.executor import compile_jaxpr
from functrax.tree_util import tree_leaves
from tests.test_composition import (
    ALL_PROGRAMS, PROGRAMS, args_for, batched_args_for, to_arrays, total,
)

HAVE_CC = toolchain().available
_DIFF = {name for name, _, _ in PROGRAMS}


def _cases():
    for name, f, builder in ALL_PROGRAMS:
        yield f"{name}", f, lambda b=builder: to_arrays(args_for(b))
        if name in _DIFF:
            yield f"{name}-grad", grad(total(f)), lambda b=builder: to_arrays(args_for(b))
        yield f"{name}-vmap", vmap(f), lambda b=builder: to_arrays(batched_args_for(b))


CASES = {cid: (f, make) for cid, f, make in _cases()}
_BUILT: dict = {}


def _built():
    if not _BUILT:
        lowered = {}
        for cid, (f, make) in CASES.items():
            args = make()
            lowered[cid] = (jit(f).lower(*args).jaxpr, tree_leaves(args))
        progs = cb.compile_many([c for c, _ in lowered.values()])
        for (cid, (closed, leaves)), prog in zip(lowered.items(), progs):
            _BUILT[cid] = (prog, compile_jaxpr(closed), [np.asarray(x) for x in leaves])
    return _BUILT


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_composition_program_on_c_matches_numpy(case_id):
    prog, ref, leaves = _built()[case_id]
    want, got = ref.run(*leaves), prog.run(*leaves)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, case_id
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6, err_msg=case_id)
    assert all(fb.reason for fb in prog.fallbacks)
    if HAVE_CC:
        assert not prog.on_numpy, prog.fallbacks


@pytest.mark.skipif(not HAVE_CC, reason="no working C compiler on this machine")
def test_control_flow_of_the_programs_runs_in_c():
    built = _built()
    loops = [cid for cid, (p, _, _) in built.items() if "for (int64_t it" in p.source]
    switches = [cid for cid, (p, _, _) in built.items() if "switch (" in p.source]
    assert {"scan_rnn", "scan_rnn-grad", "while_unbounded", "fori_traced"} <= set(loops)
    assert {"switch3", "cond_closure"} <= set(switches)
    cf = [fb for p, _, _ in built.values() for fb in p.fallbacks
          if set(fb.primitives) & {"scan", "while", "cond"}]
    assert not cf, [(fb.primitives, fb.reason) for fb in cf]
