"""The attention pattern (``functrax/passes/attention.py``) on the Triton backend.

``softmax(q @ k^T * scale [causal mask]) @ v`` written with functrax.numpy / functrax.nn is
rewritten to one ``fused_attention`` equation and runs ``kernels/attention.py``; results
must agree with the numpy backend (``jit(f)``). Near misses (softmax over another axis, a
score used twice, a mask that is not exactly causal, ...) keep their ordinary groups, and
gradients (whose forward pass keeps the softmax as a residual) run as usual.
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import dataclasses
import math

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import nn
from functrax.core import check_jaxpr
from functrax.passes import attention as fa
from functrax.lowering.numpy.attention import attention_reference
from functrax.lowering.fusion.planner import plan_fusion
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.triton import backend as tbackend
from functrax.lowering.triton import compile as tcompile
from functrax.lowering.triton.codegen import (
    GPU_CONFIG, INTERPRETER_CONFIG, KernelConfig,
)
from tests.triton_harness import lowered

fresh_cache = th.fresh_cache  # autouse: a kernel cache of each test's own
normal = th.normal_from(np.random.default_rng(3))

ATT = KernelConfig(hand_written=("dense", "attention"))
OFF = KernelConfig(hand_written=("dense",))


def program(fn, *args, config=ATT):
    return th.triton_program(fn, *args, kernel_config=config)


def run_both(fn, *args, config=ATT, tol=None):
    """(program, output) after checking the Triton program against the numpy backend."""
    prog = program(fn, *args, config=config)
    got = prog.run(*args)
    want = functrax.tree_util.tree_leaves(functrax.jit(fn)(*args))
    f16 = any(np.asarray(a).dtype == np.float16 for a in args)
    tol = tol or (2e-2 if f16 else 2e-5)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol,
                                   atol=tol)
    return prog, got


def numpy_attention(q, k, v, causal=False, scale=None):
    """Plain numpy, float64: the value the backends approximate."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def kernel_names(prog):
    return [k.source.name for k in prog.kernels]


# --- the forms users write ---


def att_matmul(q, k, v):
    return nn.softmax(q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])) @ v


def att_einsum(q, k, v):
    s = fnp.einsum("...qd,...kd->...qk", q, k) * (1.0 / math.sqrt(q.shape[-1]))
    return fnp.einsum("...qk,...kd->...qd", nn.softmax(s, axis=-1), v)


def att_tril(q, k, v):
    s = fnp.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    mask = fnp.tril(fnp.ones(s.shape[-2:], dtype=bool))
    return nn.softmax(fnp.where(mask, s, -fnp.inf)) @ v


def att_iota(q, k, v):
    s = q @ fnp.swapaxes(k, -1, -2)
    rows = fnp.arange(s.shape[-2])[:, None]
    cols = fnp.arange(s.shape[-1])[None, :]
    s = fnp.where(cols <= rows, s, -fnp.inf)  # masked first, scaled after
    return nn.softmax(s * (1.0 / math.sqrt(q.shape[-1]))) @ v


def att_bias(q, k, v):
    lq, lk = q.shape[-2], k.shape[-2]
    bias = fnp.where(fnp.tril(fnp.ones((lq, lk), dtype=bool)), 0.0, -fnp.inf)
    s = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1]) + bias
    return nn.softmax(s) @ v


def att_manual_softmax(q, k, v):
    s = q @ k.swapaxes(-1, -2) * 0.5
    e = fnp.exp(s - fnp.max(s, axis=-1, keepdims=True))
    return (e / fnp.sum(e, axis=-1, keepdims=True)) @ v


FORMS = [(att_matmul, False), (att_einsum, False), (att_tril, True), (att_iota, True),
         (att_bias, True)]


@pytest.mark.parametrize("fn, causal", FORMS, ids=[f.__name__ for f, _ in FORMS])
@pytest.mark.parametrize("shapes", [
    ((2, 3, 5, 16), (2, 3, 7, 16), (2, 3, 7, 8)),     # batch + heads, Lq < Lk, Dv != D
    ((3, 19, 8), (3, 11, 8), (3, 11, 8)),             # Lq > Lk, not powers of two
], ids=["4d_lq<lk", "3d_lq>lk"])
def test_forms_match_and_agree(fn, causal, shapes):
    q, k, v = (normal(*s) for s in shapes)
    prog, (got,) = run_both(fn, q, k, v)
    assert kernel_names(prog) == ["attention_kernel"] and prog.fallbacks == ()
    (m,) = fa.find_attention(lowered(fn, q, k, v))
    assert m.causal is causal
    assert m.scale == pytest.approx(1 / math.sqrt(q.shape[-1]), rel=1e-6)
    assert prog.kernels[0].source.constexprs["CAUSAL"] is causal
    np.testing.assert_allclose(got, numpy_attention(q, k, v, causal), rtol=1e-4, atol=1e-5)
    text = prog.as_text()
    assert "fused_attention" in text and "triton kernel attention_kernel" in text


@pytest.mark.parametrize("fn, causal", [(att_matmul, False), (att_tril, True),
                                        (att_einsum, False), (att_iota, True)],
                         ids=["matmul", "tril", "einsum", "iota"])
def test_float16(fn, causal):
    q, k, v = (normal(2, n, 16, dtype=np.float16) for n in (9, 12, 12))
    prog, (got,) = run_both(fn, q, k, v)
    assert kernel_names(prog) == ["attention_kernel"]
    # ``/ math.sqrt(d)`` keeps float16; a float64 numpy scalar would promote (checked below)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, numpy_attention(q, k, v, causal), rtol=2e-2, atol=2e-2)


def test_float16_promoted_by_a_float64_scale():
    q, k, v = (normal(2, 6, 16, dtype=np.float16) for _ in range(3))
    fn = lambda q, k, v: nn.softmax(q @ k.swapaxes(-1, -2) / np.sqrt(16.0)) @ v  # noqa: E731
    prog, (got,) = run_both(fn, q, k, v)
    assert kernel_names(prog) == ["attention_kernel"]
    assert got.dtype == np.float32  # as on the numpy backend: v is widened, read as float16
    assert prog.kernels[0].source.in_avals[2].dtype == np.float16


def test_manual_softmax_and_self_attention():
    x = normal(2, 10, 8)
    prog, _ = run_both(att_manual_softmax, x, x, x)
    assert kernel_names(prog) == ["attention_kernel"]
    prog, (got,) = run_both(lambda x: att_tril(x, x, x), x)  # one input read three times
    assert kernel_names(prog) == ["attention_kernel"]
    np.testing.assert_allclose(got, numpy_attention(x, x, x, True), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn, perms", [
    (lambda q, k, v: nn.softmax(fnp.einsum("...dq,...kd->...qk", q, k)) @ v, (1, 0, 0)),
    (lambda q, k, v: fnp.einsum("bqk,bdk->bqd",
                                nn.softmax(fnp.einsum("bqd,bkd->bqk", q, k) * 0.3), v),
     (0, 0, 1)),
    (lambda q, k, v: nn.softmax(q @ k * 0.3) @ v, (0, 1, 0)),  # k given as (.., D, Lk)
], ids=["q_transposed", "v_transposed", "k_as_d_by_lk"])
def test_other_layouts_get_transposes(fn, perms):
    b, lq, lk, d, dv = 2, 6, 9, 8, 5
    shapes = [(b, d, lq) if perms[0] else (b, lq, d),
              (b, d, lk) if perms[1] else (b, lk, d),
              (b, dv, lk) if perms[2] else (b, lk, dv)]
    q, k, v = (normal(*s) for s in shapes)
    prog, _ = run_both(fn, q, k, v)
    assert "attention_kernel" in kernel_names(prog) and prog.fallbacks == ()
    (m,) = fa.find_attention(lowered(fn, q, k, v))
    assert [p is not None for p in (m.q[1], m.k[1], m.v[1])] == [bool(p) for p in perms]
    assert m.shapes() == ((b, lq, d), (b, lk, d), (b, lk, dv))


def test_two_layers_and_surrounding_ops():
    def block(x, wq, wk, wv):
        h = att_tril(x @ wq, x @ wk, x @ wv)
        return fnp.tanh(att_matmul(h, h, x @ wv) + x)
    x, w = normal(2, 7, 8), normal(8, 8)
    prog, _ = run_both(block, x, w, w * 0.5, w.T)
    assert kernel_names(prog).count("attention_kernel") == 2 and prog.fallbacks == ()
    closed = fa.rewrite_attention(lowered(block, x, w, w * 0.5, w.T))
    check_jaxpr(closed)
    assert [e.params["causal"] for e in closed.jaxpr.eqns
            if e.primitive is fa.attention_p] == [True, False]


# --- the plan, the switch and the defaults ---


def test_one_opaque_group_and_the_switch():
    q, k, v = normal(2, 5, 8), normal(2, 7, 8), normal(2, 7, 8)
    closed = lowered(att_tril, q, k, v)
    plan = plan_fusion(fa.rewrite_attention(closed))
    assert [(g.kind, [e.primitive.name for e in g.eqns]) for g in plan.groups] == [
        (GroupKind.OPAQUE, ["fused_attention"])]
    assert len(plan_fusion(closed).groups) == 3  # the planner alone: matmul, softmax, matmul
    prog, _ = run_both(att_tril, q, k, v, config=OFF)
    assert "attention_kernel" not in kernel_names(prog) and len(prog.kernels) == 3
    assert "attention" in INTERPRETER_CONFIG.hand_written
    assert "attention" in GPU_CONFIG.hand_written
    with pytest.raises(ValueError, match="hand_written must be a tuple of pattern names"):
        program(att_tril, q, k, v, config=KernelConfig(hand_written=("flash",)))


def test_head_dim_too_large_is_left_to_the_groups():
    q = normal(2, 4, 300)
    prog, _ = run_both(att_matmul, q, q, q, tol=1e-4)
    assert "attention_kernel" not in kernel_names(prog)
    assert len(fa.find_attention(lowered(att_matmul, q, q, q))) == 1  # detected, not taken


def test_bare_jaxpr_cannot_prove_a_const_mask_causal():
    q = normal(2, 5, 8)
    closed = lowered(att_tril, q, q, q)
    assert closed.jaxpr.constvars  # the folded mask
    assert len(fa.find_attention(closed)) == 1
    assert fa.find_attention(closed.jaxpr) == []
    with pytest.raises(TypeError, match="find_attention: expected a ClosedJaxpr"):
        fa.find_attention(lambda x: x)


def test_cost_and_reference_of_the_fused_equation():
    q, k, v = normal(2, 5, 8), normal(2, 7, 8), normal(2, 7, 4)
    prog = program(att_tril, q, k, v)
    cost = prog.cost_analysis()["kernels"][0]
    assert cost["flops"] == 2 * 2 * 5 * 7 * (8 + 4) + 4 * 2 * 5 * 7
    assert cost["transcendentals"] == 2 * 5 * 7
    got = attention_reference(q, k, v, causal=True, scale=0.5)
    np.testing.assert_allclose(got, numpy_attention(q, k, v, True, 0.5), rtol=1e-5, atol=1e-6)


def test_fused_attention_is_a_registered_primitive_with_a_numpy_rule():
    from functrax import primitives as P
    from functrax.lowering.cost import cost_rules
    assert P.primitive_registry["fused_attention"] is fa.attention_p is P.attention_p
    assert fa.attention_p in cost_rules
    q, k, v = normal(2, 5, 8), normal(2, 7, 8), normal(2, 7, 4)
    params = dict(causal=True, scale=0.5, precision=None, out_dtype=np.dtype(np.float32))
    got = fa.attention_p.bind(q, k, v, **params)  # eager: the numpy backend's rule
    np.testing.assert_allclose(np.asarray(got), attention_reference(q, k, v, **params))
    np.testing.assert_allclose(np.asarray(got), numpy_attention(q, k, v, True, 0.5), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(TypeError, match="fused_attention: q, k and v must have one dtype"):
        fa.attention_p.bind(q, k.astype(np.float16), v, **params)


# --- near misses keep their groups ---


def _triu_mask(q, k, v):
    s = q @ k.swapaxes(-1, -2)
    return nn.softmax(fnp.where(fnp.triu(fnp.ones(s.shape[-2:], bool)), s, -fnp.inf)) @ v


def _shifted_tril(q, k, v):  # bottom-right aligned when Lq != Lk: not the kernel's mask
    s = q @ k.swapaxes(-1, -2)
    mask = fnp.tril(fnp.ones(s.shape[-2:], bool), k=s.shape[-1] - s.shape[-2])
    return nn.softmax(fnp.where(mask, s, -fnp.inf)) @ v


def _finite_fill(q, k, v):
    s = q @ k.swapaxes(-1, -2)
    return nn.softmax(fnp.where(fnp.tril(fnp.ones(s.shape[-2:], bool)), s, -1e9)) @ v


def _score_twice(q, k, v):
    s = q @ k.swapaxes(-1, -2) * 0.5
    return nn.softmax(s) @ v, s


def _probs_twice(q, k, v):
    p = nn.softmax(q @ k.swapaxes(-1, -2))
    return p @ v + fnp.sum(p, axis=-1, keepdims=True)


def _mask_argument(q, k, v):
    s = q @ k.swapaxes(-1, -2)
    mask = fnp.tril(fnp.ones(s.shape[-2:], bool)) & (fnp.sum(q) == fnp.sum(q))  # data
    return nn.softmax(fnp.where(mask, s, -fnp.inf)) @ v


NEAR_MISSES = [
    lambda q, k, v: nn.softmax(q @ k.swapaxes(-1, -2), axis=-2) @ v,  # wrong axis
    lambda q, k, v: nn.log_softmax(q @ k.swapaxes(-1, -2)) @ v,       # another function
    lambda q, k, v: nn.softmax(q @ k.swapaxes(-1, -2) * -0.5) @ v,    # negative scale
    lambda q, k, v: nn.softmax(q @ k.swapaxes(-1, -2) + 1.0) @ v,     # a shift
    lambda q, k, v: nn.softmax(fnp.tanh(q @ k.swapaxes(-1, -2))) @ v,  # soft-capping
    _triu_mask, _shifted_tril, _finite_fill, _score_twice, _probs_twice, _mask_argument,
]


@pytest.mark.parametrize("fn", NEAR_MISSES, ids=[
    "axis-2", "log_softmax", "negative_scale", "shift", "tanh", "triu", "shifted_tril",
    "finite_fill", "score_twice", "probs_twice", "mask_from_data"])
def test_near_misses_keep_their_groups(fn):
    q, k, v = normal(2, 6, 8), normal(2, 9, 8), normal(2, 9, 4)
    if fn is NEAR_MISSES[0]:
        k, v = normal(2, 6, 8), normal(2, 6, 4)
    assert fa.find_attention(lowered(fn, q, k, v)) == []
    prog, _ = run_both(fn, q, k, v, tol=1e-4)
    assert "attention_kernel" not in kernel_names(prog)


# --- the backward pass runs its groups as usual ---


def _loss(q, k, v, w):
    return fnp.sum(att_tril(q, k, v) * w)


def test_grad_under_triton_jit():
    q, k, v = normal(2, 5, 8), normal(2, 7, 8), normal(2, 7, 4)
    w = normal(2, 5, 4)
    want = functrax.jit(functrax.grad(_loss, argnums=(0, 1, 2)))(q, k, v, w)
    got = functrax.jit(functrax.grad(_loss, argnums=(0, 1, 2)), backend="triton")(q, k, v, w)
    outer = functrax.grad(functrax.jit(_loss, backend="triton"), argnums=(0, 1, 2))(q, k, v, w)
    for a, b, c in zip(want, got, outer):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(c), np.asarray(a), rtol=1e-4, atol=1e-5)
    # numeric check of the reference gradient itself (central differences on q[0, 1, 2])
    eps, dq = 1e-2, np.zeros_like(q)
    dq[0, 1, 2] = eps
    q64 = [a.astype(np.float64) for a in (q, k, v)]
    f = lambda qq: np.sum(numpy_attention(qq, q64[1], q64[2], True) * w)  # noqa: E731
    fd = (f(q64[0] + dq) - f(q64[0] - dq)) / (2 * eps)
    assert np.asarray(want[0])[0, 1, 2] == pytest.approx(fd, rel=1e-3, abs=1e-4)
    prog = tbackend.compile_triton(
        functrax.jit(functrax.grad(_loss, argnums=(0, 1, 2))).lower(q, k, v, w).jaxpr)
    assert "attention_kernel" not in kernel_names(prog)  # the softmax is a residual


# --- sm_90 compile of the kernel at the matched shapes ---


def test_matched_kernels_compile_for_sm90():
    h = np.float16
    gpu = dataclasses.replace(GPU_CONFIG)
    cases = [(att_tril, [normal(2, 3, 5, 16), normal(2, 3, 7, 16), normal(2, 3, 7, 8)]),
             (att_matmul, [normal(3, 19, 8), normal(3, 11, 8), normal(3, 11, 8)]),
             (att_einsum, [normal(2, 9, 16, dtype=h), normal(2, 12, 16, dtype=h),
                           normal(2, 12, 16, dtype=h)])]
    kernels = []
    for fn, args in cases:
        (k,) = program(fn, *args, config=gpu).kernels
        assert k.source.name == "attention_kernel"
        kernels.append(k)
    assert kernels[0].source.constexprs["PRECISION"] == "tf32"
    calls = [(k.fn, k.source.signature, k.source.constexprs, k.source.num_warps)
             for k in kernels]
    for c in tcompile.compile_many(calls):
        assert c.name == "attention_kernel" and ".target sm_90" in c.ptx
        assert c.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("causal", [False, True])
def test_nn_dot_product_attention_runs_the_attention_kernel(causal):
    # (B, T, N, H) layout, its transposes and JAX's large negative fill are matched
    q, k, v = normal(2, 5, 3, 16), normal(2, 7, 3, 16), normal(2, 7, 3, 16)
    fn = lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
    prog, (got,) = run_both(fn, q, k, v)
    names = kernel_names(prog)  # the attention kernel and the (B, T, N, H) transposes
    assert names.count("attention_kernel") == 1 and prog.fallbacks == ()
    att = prog.kernels[names.index("attention_kernel")]
    assert att.source.constexprs["CAUSAL"] is causal
    want = numpy_attention(*(np.swapaxes(a, 1, 2) for a in (q, k, v)), causal)
    np.testing.assert_allclose(got, np.swapaxes(want, 1, 2), rtol=1e-4, atol=1e-5)
