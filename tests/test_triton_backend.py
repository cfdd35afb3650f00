"""``jit(f, backend="triton")``: fused Triton kernels run in Triton's CPU interpreter.

Each program runs with the triton backend and with the default numpy backend (``jit(f)``)
and the results must agree. Groups the code generator does not lower fall back to numpy
rules; the fallbacks must be listed on the compiled program. Control flow is a host-driven
step over Triton body programs (tests/test_triton_control_flow.py).
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import os

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax, nn
from functrax.lowering.numpy.executor import Executable
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.triton import backend as tbackend
from functrax.tree_util import tree_leaves
from tests.triton_harness import compiled, dense_relu, ew_chain, program_of, softmax_rows

fresh_cache = th.fresh_cache  # autouse: a kernel cache of each test's own
normal = th.normal_from(np.random.default_rng(0))


# --- the programs ---


def layernorm(x, g, b):
    mu = fnp.mean(x, axis=-1, keepdims=True)
    var = fnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / fnp.sqrt(var + 1e-5) * g + b


def row_norm(x):
    return fnp.sqrt(fnp.sum(fnp.abs(x) * 2.0, axis=1)) + 1.0


def mlp_step(params, x, y):
    def loss(p):
        h = nn.relu(x @ p["w1"] + p["b1"])
        out = h @ p["w2"] + p["b2"]
        return fnp.mean((out - y) ** 2)

    value, grads = functrax.value_and_grad(loss)(params)
    new = {k: params[k] - 0.1 * grads[k] for k in params}
    return new, value


def with_cond(x):
    y = lax.cond(fnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, fnp.exp(x))
    return y + 1.0


def with_scan(xs):
    def body(c, x):
        c = c * 0.5 + x
        return c, fnp.tanh(c)

    c, ys = lax.scan(body, fnp.zeros(xs.shape[1:], xs.dtype), xs)
    return fnp.sum(ys * 2.0, axis=0) + c


MLP_PARAMS = {"w1": normal(4, 5), "b1": normal(5), "w2": normal(5, 2), "b2": normal(2)}

PROGRAMS = {
    "ew_chain": (ew_chain, (normal(3, 4), normal(4))),
    "softmax_rows": (softmax_rows, (normal(3, 6),)),
    "layernorm": (layernorm, (normal(3, 8), normal(8), normal(8))),
    "dense_relu": (dense_relu, (normal(3, 4), normal(4, 5), normal(5))),
    "row_norm": (row_norm, (normal(4, 6),)),
    "mlp_step": (mlp_step, (MLP_PARAMS, normal(3, 4), normal(3, 2))),
    "with_cond": (with_cond, (normal(2, 3),)),
    "with_scan": (with_scan, (normal(4, 3),)),
}


def compiled_named(name):
    """``compiled`` of the program ``PROGRAMS[name]`` on its arguments."""
    fn, args = PROGRAMS[name]
    return compiled(fn, *args)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_matches_numpy_backend(name):
    fn, args = PROGRAMS[name]
    got = functrax.jit(fn, backend="triton")(*args)
    want = functrax.jit(fn)(*args)
    g_leaves, w_leaves = tree_leaves(got), tree_leaves(want)
    assert len(g_leaves) == len(w_leaves)
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def test_default_backend_is_numpy():
    fn, args = PROGRAMS["ew_chain"]
    assert isinstance(program_of(functrax.jit(fn).lower(*args).compile()), Executable)
    prog = program_of(compiled(fn, *args))
    assert isinstance(prog, tbackend.TritonProgram)


@pytest.mark.parametrize("name", ["ew_chain", "softmax_rows", "layernorm", "row_norm"])
def test_fusible_programs_are_one_kernel_without_fallbacks(name):
    fn, args = PROGRAMS[name]
    prog = program_of(compiled(fn, *args))
    assert len(prog.kernels) == 1 and prog.fallbacks == ()
    assert prog.plan.groups[0].kind in (GroupKind.ELEMENTWISE, GroupKind.REDUCTION)


def test_unsupported_matmul_falls_back_and_is_listed():
    x, w = (normal(3, 4) + 1j * normal(3, 4)).astype(np.complex64), normal(4, 5)
    c = compiled(lambda x, w: x @ w, x, w.astype(np.complex64))
    prog = program_of(c)
    kinds = [f.kind for f in prog.fallbacks]
    assert GroupKind.MATMUL in kinds
    fb = prog.fallbacks[kinds.index(GroupKind.MATMUL)]
    assert "dot_general" in fb.primitives and "complex64" in fb.reason
    assert "fallback: numpy (" in c.as_text()


@pytest.mark.parametrize("name, prim", [("with_cond", "cond"), ("with_scan", "scan")])
def test_control_flow_is_a_host_step_and_rest_is_triton(name, prim):
    c = compiled_named(name)
    prog = program_of(c)
    assert prog.fallbacks == ()  # control flow runs its bodies as Triton programs
    (step,) = [s for s in prog.steps if s.group.kind is GroupKind.OPAQUE]
    assert step.runner.primitive == prim and step.kernels  # the body programs' kernels
    assert len(prog.kernels) > len(step.kernels)  # the exp / epilogue around it are kernels
    assert len(prog.steps) == len(prog.plan.groups)


def test_mlp_step_runs_as_kernels_without_fallbacks():
    prog = program_of(compiled_named("mlp_step"))
    assert prog.fallbacks == () and len(prog.kernels) == len(prog.plan.groups)
    kinds = [g.kind for g in prog.plan.groups]
    # per dense layer: 1 forward + 2 backward matmul kernels (x.T @ g with the bias gradient
    # fused; g @ w.T with the relu mask) but no input gradient for the first layer
    assert kinds.count(GroupKind.MATMUL) == 5 and len(prog.kernels) == 6, kinds


def test_as_text_shows_groups_equations_and_sources():
    c = compiled_named("with_cond")
    prog = program_of(c)
    text = c.as_text()
    assert f"{len(prog.kernels)} kernel(s), {len(prog.fallbacks)} numpy fallback(s)" in text
    for i, step in enumerate(prog.steps):
        assert f"kernel {i}: {step.group.kind.value}" in text
    for k in prog.kernels:  # (the kernels of the cond's branch programs print indented)
        assert f"triton kernel {k.source.name}" in text
    for step in prog.steps:
        assert step.kernel is None or step.kernel.source.text.strip() in text
    assert "control flow cond on the host over Triton programs" in text
    assert " = cond[" in text and " = exp " in text  # the equations of each group


def test_codegen_rejection_falls_back_with_reason(monkeypatch):
    from functrax.lowering.triton import runtime
    from functrax.lowering.triton.rules import UnsupportedError

    def reject(group, config=None, cache=None):
        raise UnsupportedError("not today")

    monkeypatch.setattr(runtime, "build_kernel", reject)
    fn, args = PROGRAMS["softmax_rows"]
    c = compiled(fn, *args)
    prog = program_of(c)
    assert prog.kernels == () and len(prog.fallbacks) == 1
    assert prog.fallbacks[0].kind is GroupKind.REDUCTION
    assert "not today" in prog.fallbacks[0].reason and "not today" in c.as_text()
    np.testing.assert_allclose(c(*args), functrax.jit(fn)(*args), rtol=1e-6)


def two_parts(x, y):
    return softmax_rows(x), fnp.exp(y) * 2.0


def test_kernel_cache_compiles_only_what_changed(fresh_cache):
    f = functrax.jit(two_parts, backend="triton")
    x, y = fnp.asarray(normal(3, 4)), fnp.asarray(normal(5))
    f(x, y)
    programs = tbackend.STATS["programs"]
    assert fresh_cache.stats["imports"] == 2
    assert len(os.listdir(fresh_cache.directory)) == 2

    out = f(x, y)  # same avals: the jit cache, nothing compiled, generated or imported
    assert tbackend.STATS["programs"] == programs and fresh_cache.stats["imports"] == 2
    np.testing.assert_allclose(out[1], np.exp(np.asarray(y)) * 2.0, rtol=1e-6)

    x2 = fnp.asarray(normal(2, 7))  # new shape of x only: only the softmax kernel is new
    hits = fresh_cache.stats["hits"]
    out = f(x2, y)
    assert tbackend.STATS["programs"] == programs + 1
    assert fresh_cache.stats["imports"] == 3 and fresh_cache.stats["hits"] == hits + 1
    np.testing.assert_allclose(out[0], functrax.jit(softmax_rows)(x2), rtol=1e-5, atol=1e-6)

    g = functrax.jit(two_parts, backend="triton")  # a new trace of the same program
    g(x, y)
    assert fresh_cache.stats["imports"] == 3


def test_fast_path_runs_the_triton_program():
    f = functrax.jit(ew_chain, backend="triton")
    x, y = fnp.asarray(normal(3, 4)), fnp.asarray(normal(4))
    f(x, y)
    exe = f._fast[(x.aval, y.aval)][0]
    assert isinstance(exe, tbackend.TritonProgram)
    np.testing.assert_allclose(f(x, y), functrax.jit(ew_chain)(x, y), rtol=1e-5, atol=1e-6)


def test_compile_triton_rejects_non_jaxprs():
    with pytest.raises(TypeError, match="compile_triton: expected a ClosedJaxpr"):
        tbackend.compile_triton(lambda x: x)
