"""MATMUL fusion groups on the Triton backend: ``kernels/matmul.py`` or a numpy fallback.

A 2-D x 2-D ``dot_general`` (operands possibly transposed) with an epilogue of at most a bias
add and a relu becomes one launch of the hand-written ``tl.dot`` kernel; every other MATMUL
group falls back to numpy rules with its reason. Results must agree with ``jit(f)`` (numpy
backend) and with a plain numpy reference.
"""
from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # noqa: E402 - before anything imports triton

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("triton")

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import lax, nn  # noqa: E402
from functrax.lowering.fusion_types import GroupKind  # noqa: E402
from functrax.lowering.triton import backend as tbackend  # noqa: E402
from functrax.lowering.triton import cache as tcache  # noqa: E402

RNG = np.random.default_rng(1)


def normal(*shape, dtype=np.float32):
    return RNG.normal(size=shape).astype(dtype)


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    cache = tcache.KernelCache(str(tmp_path / "kernels"))
    monkeypatch.setattr(tcache, "_DEFAULT", cache)
    return cache


def program(fn, *args):
    return functrax.jit(fn, backend="triton").lower(*args).compile()._entry.exe


def run_both(fn, *args, rtol=2e-5, atol=2e-6):
    """Run on the triton and numpy backends, check they agree; returns the triton result."""
    got = np.asarray(functrax.jit(fn, backend="triton")(*args))
    want = np.asarray(functrax.jit(fn)(*args))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return got


def one_matmul_kernel(prog):
    assert prog.fallbacks == () and len(prog.kernels) == 1
    assert [g.kind for g in prog.plan.groups] == [GroupKind.MATMUL]
    return prog.kernels[0]


def test_dense_relu_is_one_kernel_and_matches_numpy():
    x, w, b = normal(5, 7), normal(7, 6), normal(6)
    fn = lambda x, w, b: nn.relu(x @ w + b)  # noqa: E731
    kernel = one_matmul_kernel(program(fn, x, w, b))
    assert kernel.source.name == "matmul_kernel"
    assert kernel.source.constexprs["EPILOGUE"] == "bias_relu"
    got = run_both(fn, x, w, b)
    np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=2e-5, atol=2e-6)
    assert (got == 0).any() and (got > 0).any()  # the relu did something


@pytest.mark.parametrize("fn, epilogue, ref", [
    (lambda x, w, b: x @ w, "none", lambda x, w, b: x @ w),
    (lambda x, w, b: b + x @ w, "bias", lambda x, w, b: x @ w + b),
    (lambda x, w, b: fnp.maximum(x @ w, 0.0), "relu", lambda x, w, b: np.maximum(x @ w, 0)),
], ids=["plain", "bias", "relu"])
def test_epilogues(fn, epilogue, ref):
    x, w, b = normal(4, 9), normal(9, 3), normal(3)
    kernel = one_matmul_kernel(program(fn, x, w, b))
    assert kernel.source.constexprs["EPILOGUE"] == epilogue
    got = run_both(fn, x, w, b)
    np.testing.assert_allclose(got, ref(x, w, b), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("fn, shapes, ref", [
    (lambda x, w: nn.relu(x @ w.T), ((5, 4), (6, 4)), lambda x, w: np.maximum(x @ w.T, 0)),
    (lambda x, w: lax.dot_general(w, x, (((1,), (1,)), ((), ()))), ((5, 4), (6, 4)),
     lambda x, w: w @ x.T),
    (lambda x, w: lax.dot_general(x, w, (((0,), (1,)), ((), ()))), ((4, 5), (6, 4)),
     lambda x, w: x.T @ w.T),
], ids=["x@w.T", "contract_11", "contract_01"])
def test_transposed_operands(fn, shapes, ref):
    args = tuple(normal(*s) for s in shapes)
    one_matmul_kernel(program(fn, *args))
    got = run_both(fn, *args)
    np.testing.assert_allclose(got, ref(*args), rtol=2e-5, atol=2e-6)


def test_absorbed_transpose_is_matched():
    x, w, b = normal(5, 4), normal(6, 4), normal(6)
    prog = program(lambda x, w, b: nn.relu(x @ w.T + b), x, w, b)
    (group,) = prog.plan.groups
    assert "transpose" in [e.primitive.name for e in group.eqns]
    match = tbackend.match_matmul(group)
    assert isinstance(match, tbackend.MatmulMatch) and match.epilogue == "bias_relu"


def test_float16_matches_numpy():
    h = np.float16
    x, w, b = normal(4, 6, dtype=h), normal(6, 5, dtype=h), normal(5, dtype=h)
    fn = lambda x, w, b: nn.relu(x @ w + b)  # noqa: E731
    one_matmul_kernel(program(fn, x, w, b))
    got = run_both(fn, x, w, b, rtol=2e-2, atol=2e-2)
    assert got.dtype == np.float16


def test_larger_than_one_tile():
    x, w, b = normal(40, 20), normal(20, 33), normal(33)
    fn = lambda x, w, b: nn.relu(x @ w + b)  # noqa: E731
    one_matmul_kernel(program(fn, x, w, b))
    got = run_both(fn, x, w, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn, shapes, needle", [
    (lambda x, w: fnp.tanh(x @ w), ((3, 4), (4, 5)),
     "matmul group with epilogue tanh not supported by kernels/matmul.py"),
    (lambda x, w: nn.relu(x @ w) + 1.0, ((3, 4), (4, 5)), "epilogue max add"),
    (lambda x, w: fnp.matmul(x, w), ((2, 3, 4), (2, 4, 5)), "batched dot_general"),
    (lambda x, w: (x @ w, nn.relu(x @ w)), ((3, 4), (4, 5)), "2 outputs"),
    (lambda x, w: x @ w, ((3, 4), (4,)), "rank-2 x rank-1"),
], ids=["tanh", "relu_then_add", "batched", "two_outputs", "matvec"])
def test_unsupported_groups_fall_back_with_reason(fn, shapes, needle):
    args = tuple(normal(*s) for s in shapes)
    c = functrax.jit(fn, backend="triton").lower(*args).compile()
    prog = c._entry.exe
    fbs = [f for f in prog.fallbacks if f.kind is GroupKind.MATMUL]
    assert len(fbs) == 1 and "dot_general" in fbs[0].primitives
    assert needle in fbs[0].reason and needle in c.as_text()
    got = functrax.tree_util.tree_leaves(functrax.jit(fn, backend="triton")(*args))
    want = functrax.tree_util.tree_leaves(functrax.jit(fn)(*args))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-6)


def test_integer_matmul_falls_back():
    x, w = np.arange(12, dtype=np.int32).reshape(3, 4), np.ones((4, 2), np.int32)
    prog = program(lambda x, w: x @ w, x, w)
    (fb,) = prog.fallbacks
    assert "int32" in fb.reason and "float16/float32" in fb.reason
    np.testing.assert_array_equal(functrax.jit(lambda x, w: x @ w, backend="triton")(x, w),
                                  x @ w)


def test_as_text_names_the_matmul_kernel():
    x, w, b = normal(3, 4), normal(4, 5), normal(5)
    c = functrax.jit(lambda x, w, b: nn.relu(x @ w + b), backend="triton").lower(x, w, b)
    text = c.compile().as_text()
    assert "1 kernel(s), 0 numpy fallback(s)" in text
    assert "triton kernel matmul_kernel" in text and "tl.dot" in text
