"""Control flow on the Triton backend: cond/switch, while/fori_loop and scan run as
host-driven steps whose bodies are compiled Triton programs (not numpy fallbacks).

Every program runs as ``jit(f, backend="triton")`` (Triton's interpreter) and must match
``jit(f)`` (the numpy backend); the compiled program must hold a control-flow step and no
'control flow' fallback. Over a fake GPU (numpy-backed buffers, kernels launched through
the interpreter) the carries stay device buffers: only the predicate scalar is read back.
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.lowering.triton import backend as tbackend
from functrax.lowering.backends import nested_backend
from functrax.lowering.triton.control_flow import ControlFlowStep
from functrax.tree_util import tree_leaves
from tests import fake_gpu as fake_gpu_lib
from tests.fake_gpu import FakeGpuBuffer

fresh_cache = th.fresh_cache  # autouse: a kernel cache of each test's own
normal = th.normal_from(np.random.default_rng(0))


def check(f, *args, n_steps=1, rtol=1e-5, atol=1e-6):
    """``f`` on the Triton backend matches the numpy backend; its program has ``n_steps``
    control-flow steps and no control-flow fallback. Returns the program."""
    want = functrax.jit(f)(*args)
    got = functrax.jit(f, backend="triton")(*args)
    for g, w in zip(tree_leaves(got), tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)
    prog = th.triton_program(f, *args)
    steps = [s for s in prog.steps if isinstance(s, ControlFlowStep)]
    assert len(steps) == n_steps, prog.as_text()
    assert not [fb for fb in prog.fallbacks if fb.reason.startswith("control flow")]
    return prog


# --- cond / switch ---


def test_cond_runs_the_selected_branch_program():
    x = normal(8)

    def f(p, x):
        return lax.cond(p > 0, lambda x: fnp.sin(x) * 2.0, lambda x: fnp.exp(x) - 1.0, x)
    for p in (1.0, -1.0):
        prog = check(f, np.float32(p), x)
    (step,) = [s for s in prog.steps if isinstance(s, ControlFlowStep)]
    assert len(step.runner.programs) == 2 and all(p.kernels for p in step.runner.programs)
    assert len(prog.kernels) >= 3  # the predicate kernel and one per branch


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])  # out of range: clamped, as lax.switch
def test_switch_clamps_the_index(index):
    x = normal(4, 3)
    branches = [lambda x: fnp.min(x, axis=0) + 1.0, lambda x: fnp.sum(x, axis=0),
                lambda x: fnp.max(x, axis=0)]

    def f(i, x):
        return lax.switch(i, branches, x)
    check(f, np.int32(index), x)


def test_cond_with_literal_and_int_operands():
    def f(x, n):
        return lax.cond(n > 2, lambda x, n: (x * 2.0, n + 1), lambda x, n: (x, n - 1), x, n)
    for n in (1, 5):
        check(f, normal(3), np.int32(n))


# --- while / fori_loop ---


def test_while_loop_runs_cond_and_body_programs():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.1 + 0.5),
                              (0, x))
    prog = check(f, normal(6))
    (step,) = [s for s in prog.steps if isinstance(s, ControlFlowStep)]
    assert step.runner.cond.kernels and step.runner.body.kernels


def test_while_loop_zero_iterations():
    def f(x):
        return lax.while_loop(lambda c: fnp.sum(c) > 1e6, lambda c: c * 2.0, x)
    check(f, normal(5))


def test_fori_loop_traced_bounds_is_a_while():
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, c: c * 0.5 + i.astype(np.float32), x)
    prog = check(f, np.int32(4), normal(3))
    assert "control flow while" in prog.as_text()


def test_fori_loop_static_bounds():
    def f(x):
        return lax.fori_loop(1, 5, lambda i, c: fnp.cos(c) + i, x)
    check(f, normal(4))


# --- scan ---


def test_scan_with_xs_and_ys():
    def f(c, xs):
        return lax.scan(lambda c, x: (c * 0.9 + x, fnp.tanh(c) * x), c, xs)
    prog = check(f, normal(3), normal(5, 3))
    (step,) = [s for s in prog.steps if isinstance(s, ControlFlowStep)]
    assert step.runner.body.kernels and not step.runner.body.fallbacks


def test_scan_reverse_and_several_xs_ys():
    def f(c, xs, ws):
        def body(c, xw):
            x, w = xw
            return c + x * w, (c, fnp.sum(x))
        return lax.scan(body, c, (xs, ws), reverse=True)
    check(f, normal(2, 3), normal(4, 2, 3), normal(4, 2, 3))


def test_scan_length_only_and_unroll():
    def f(c):
        return lax.scan(lambda c, _: (c * 2.0 + 1.0, c), c, None, length=4, unroll=2)
    check(f, normal(3))


def test_scan_int_and_bool_ys():
    def f(xs):
        return lax.scan(lambda c, x: (c + x.astype(np.int32), (x > 0, c)), np.int32(0), xs)
    check(f, normal(5))


def test_scan_length_zero():
    def f(c, xs):
        return lax.scan(lambda c, x: (c + x, c * x), c, xs)
    check(f, normal(3), normal(0, 3))


def test_nested_scan_in_cond():
    def f(p, c, xs):
        def yes(c, xs):
            return lax.scan(lambda c, x: (c + fnp.sin(x), c), c, xs)
        return lax.cond(p > 0, yes, lambda c, xs: (c, xs * 2.0), c, xs)
    for p in (1.0, -1.0):
        prog = check(f, np.float32(p), normal(3), normal(4, 3))
    text = prog.as_text()
    assert "control flow cond" in text and "control flow scan" in text  # nested listing


def test_as_text_lists_body_kernels():
    def f(c, xs):
        return lax.scan(lambda c, x: (fnp.exp(c) * x, c), c, xs)
    prog = th.triton_program(f, normal(3), normal(2, 3))
    text = prog.as_text()
    assert "control flow scan on the host over Triton programs" in text
    assert "  body:" in text and "@triton.jit" in text
    assert "fallback: numpy" not in text
    cost = prog.cost_analysis()
    assert any(k.get("control_flow") == "scan" for k in cost["kernels"])


# --- transforms of control flow under jit(backend="triton") ---


def test_grad_of_scan():
    def loss(w, xs):
        c, ys = lax.scan(lambda c, x: (fnp.tanh(c * w + x), c * c), fnp.zeros(3), xs)
        return fnp.sum(c) + fnp.sum(ys)
    g = functrax.grad(loss)
    check(g, normal(3), normal(4, 3), n_steps=2, rtol=1e-4, atol=1e-5)


def test_vmap_of_while():
    def f(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5 - 0.25),
                              (0, x))[1]
    check(functrax.vmap(f), normal(4, 2), np.array([0, 3, 1, 5], np.int32))


# --- a jit(backend="triton") inside a control-flow body keeps its backend ---


def test_triton_jit_inside_scan_body_keeps_triton():
    inner = functrax.jit(lambda c, x: fnp.sin(c) * x + 1.0, backend="triton")

    def f(c, xs):
        return lax.scan(lambda c, x: (inner(c, x), c), c, xs)
    c, xs = normal(3), normal(4, 3)
    jaxpr = functrax.make_jaxpr(f)(c, xs)
    assert nested_backend(jaxpr) == "triton"
    assert nested_backend(functrax.make_jaxpr(fnp.sin)(c)) is None
    want_c, want_ys = c, []
    for x in xs:
        want_ys.append(want_c)
        want_c = np.sin(want_c) * x + np.float32(1.0)
    for run in (functrax.jit(f), f):  # the numpy backend's scan, jitted and eager
        before = dict(tbackend.STATS)
        got_c, got_ys = run(c, xs)
        np.testing.assert_allclose(np.asarray(got_c), want_c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(got_ys), np.stack(want_ys), rtol=1e-5)
        assert tbackend.STATS["programs"] > before["programs"]  # the body, on Triton
    # under jit(backend="triton") the body is a Triton program of the scan step
    prog = th.triton_program(f, c, xs)
    (step,) = [s for s in prog.steps if isinstance(s, ControlFlowStep)]
    assert step.runner.body.kernels and not step.runner.body.fallbacks


def test_triton_jit_inside_cond_and_while_bodies(monkeypatch):
    inner = functrax.jit(lambda x: fnp.exp(x) * 0.5, backend="triton")
    runs = []
    real_run = tbackend.TritonProgram.run
    monkeypatch.setattr(tbackend.TritonProgram, "run",
                        lambda self, *a: runs.append(self) or real_run(self, *a))

    def f(p, x):
        y = lax.cond(p > 0, inner, lambda x: x - 1.0, x)
        return lax.while_loop(lambda c: fnp.sum(c) < 50.0, lambda c: inner(c) + 1.0, y)
    for p in (1.0, -1.0):
        runs.clear()
        x = np.abs(normal(3))
        got = functrax.jit(f)(np.float32(p), x)
        y = np.exp(x) * 0.5 if p > 0 else x - 1.0
        while y.sum() < 50.0:
            y = np.exp(y) * 0.5 + 1.0
        np.testing.assert_allclose(np.asarray(got), y, rtol=1e-5)
        assert len(runs) >= 1 + (p > 0)  # the while body (and the true branch) on Triton


# --- the GPU path over a fake GPU: carries stay on the device ---


@pytest.fixture
def fake_gpu(monkeypatch):
    return fake_gpu_lib.install(monkeypatch)


def _on_device(f, *args):
    from functrax.lowering.triton.gpu_program import GpuProgram
    prog = GpuProgram(th.triton_program(f, *args))
    FakeGpuBuffer.reads = []
    outs = prog.run(*[FakeGpuBuffer.from_numpy(a) for a in args])
    assert all(type(o) is FakeGpuBuffer for o in outs)
    reads = list(FakeGpuBuffer.reads)
    return [o.array for o in outs], reads


def test_fake_gpu_while_reads_only_the_predicate(fake_gpu):
    def f(x):
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, fnp.sin(c[1]) + 1.0),
                              (0, x))
    x = normal(8)
    want = functrax.jit(f)(x)
    got, reads = _on_device(f, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-5)
    assert reads == [()] * 6  # one scalar per predicate evaluation, no carry round trip
    assert fake_gpu  # the cond and body kernels ran on device buffers


def test_fake_gpu_scan_keeps_carries_and_ys_on_device(fake_gpu):
    def f(c, xs):
        return lax.scan(lambda c, x: (c * 0.5 + x, (fnp.exp(c), c > 0)), c, xs, reverse=True)
    c, xs = normal(2, 3), normal(4, 2, 3)
    want = functrax.jit(f)(c, xs)
    got, reads = _on_device(f, c, xs)
    for g, w in zip(got, tree_leaves(want)):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-5)
    assert reads == []  # no host reads at all
    names = [name for name, _ in fake_gpu]
    assert names.count("row_take") == 4 and names.count("row_put") == 8


def test_fake_gpu_cond_reads_the_index_once(fake_gpu):
    def f(i, x):
        return lax.switch(i, [lambda x: x * 2.0, lambda x: fnp.cos(x)], x)
    x = normal(5)
    for i in (0, 1):
        got, reads = _on_device(f, np.int32(i), x)
        np.testing.assert_allclose(got[0], np.asarray(functrax.jit(f)(np.int32(i), x)),
                                   rtol=1e-6)
        assert reads == [()]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float16])
def test_row_copy_kernels_compile_for_sm90(dtype):
    from functrax.lowering.triton import compile as tcompile
    from functrax.lowering.triton.control_flow import _row_kernel
    ks = [_row_kernel(name, (5, 3, 700), dtype) for name in ("row_take", "row_put")]
    assert ks[0].source.grid == (3,) and ks[0].source.constexprs == {"ROW": 2100, "BLOCK": 1024}
    calls = [(k.fn, k.source.signature, k.source.constexprs, k.source.num_warps) for k in ks]
    for c in tcompile.compile_many(calls):
        assert ".target sm_90" in c.ptx and len(c.cubin) > 0


def test_fake_gpu_scan_of_wide_rows_uses_several_programs(fake_gpu):
    def f(c, xs):
        return lax.scan(lambda c, x: (c + x, c * x), c, xs)
    c, xs = normal(1500), normal(3, 1500)
    want = functrax.jit(f)(c, xs)
    got, reads = _on_device(f, c, xs)
    for g, w in zip(got, tree_leaves(want)):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)
    assert reads == []
