"""The hand-written Triton kernels of ``kernels/``: each against its numpy reference in
Triton's CPU interpreter (small shapes, non-powers of two, float32 and float16 inputs), and
each compiled to PTX + cubin for sm_90 on the CPU. Also: which user spellings the softmax and
layernorm templates (written with primitives, ``functrax/lowering/triton/patterns.py``)
match, as canonical terms of the planned groups."""
from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # noqa: E402 - before anything imports triton

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import triton  # noqa: E402, F401 - a required dependency, after TRITON_INTERPRET=1

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import lax, nn  # noqa: E402
from functrax.lowering.fusion.planner import plan_fusion  # noqa: E402
from functrax.lowering.triton import compile as tcompile  # noqa: E402
from functrax.lowering.triton import patterns  # noqa: E402
from kernels import launcher as _launch, layernorm, matmul, softmax  # noqa: E402
from tests import triton_harness  # noqa: E402

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
TOL = {F32: (1e-5, 1e-5), F16: (2e-3, 2e-3)}


def rng(seed=0):
    return np.random.default_rng(seed)


def normal(r, shape, dtype, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(dtype)


def assert_close(got, want, dtype):
    assert got.dtype == want.dtype == dtype and got.shape == want.shape
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=atol)


# --- softmax ---


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shape,block_m", [((1, 1), None), ((5, 37), None), ((9, 64), 4),
                                           ((3, 300), None)])
def test_softmax(shape, block_m, dtype):
    x = normal(rng(1), shape, dtype, 3.0)
    y = softmax.softmax(x, block_m)
    assert_close(y, softmax.reference(x), dtype)
    np.testing.assert_allclose(y.astype(np.float64).sum(-1), 1.0, rtol=2e-3)


def test_softmax_extreme_values():
    x = np.array([[1e30, 0.0, -1e30], [-np.inf, 0.0, 1.0], [80.0, 80.0, 80.0]], F32)
    np.testing.assert_allclose(softmax.softmax(x), softmax.reference(x), rtol=1e-6)


def test_softmax_errors():
    with pytest.raises(TypeError, match="softmax: x must be float16 or float32"):
        softmax.softmax(np.ones((2, 3), np.int32))
    with pytest.raises(ValueError, match="softmax: x must have rank 2"):
        softmax.softmax(np.ones(3, F32))
    with pytest.raises(ValueError, match="do not fit in registers"):
        softmax.pick_config(10 ** 6)


# --- layernorm ---


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shape,eps,block_m", [((1, 1), 1e-5, None), ((6, 37), 1e-5, None),
                                               ((5, 64), 1e-2, 2), ((3, 300), 1e-6, None)])
def test_layernorm(shape, eps, block_m, dtype):
    r = rng(2)
    x = normal(r, shape, dtype, 2.0) + dtype.type(0.5)
    w, b = normal(r, shape[-1:], dtype), normal(r, shape[-1:], dtype)
    y = layernorm.layernorm(x, w, b, eps, block_m)
    assert_close(y, layernorm.reference(x, w, b, eps), dtype)


def test_layernorm_mixed_param_dtype():
    r = rng(3)
    x = normal(r, (4, 20), F16)
    w, b = normal(r, (20,), F32), normal(r, (20,), F16)
    assert_close(layernorm.layernorm(x, w, b), layernorm.reference(x, w, b), F16)


def test_layernorm_errors():
    x = np.ones((2, 3), F32)
    with pytest.raises(ValueError, match=r"layernorm: weight must have shape \(3,\)"):
        layernorm.layernorm(x, np.ones(4, F32), np.ones(3, F32))
    with pytest.raises(TypeError, match="layernorm: bias must be float16 or float32"):
        layernorm.layernorm(x, np.ones(3, F32), np.ones(3, np.int32))


# --- matmul ---


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("mnk,config", [((1, 1, 1), 0), ((20, 24, 40), 0), ((33, 17, 50), 1),
                                        ((16, 48, 16), None)])
def test_matmul(mnk, config, dtype):
    m, n, k = mnk
    r = rng(4)
    a, b = normal(r, (m, k), dtype), normal(r, (k, n), dtype)
    cfg = None if config is None else matmul.CONFIGS[config]
    c = matmul.matmul(a, b, config=cfg)
    tol = TOL[dtype] if dtype == F32 else (5e-3, 5e-3)
    want = matmul.reference(a, b)
    assert c.dtype == want.dtype == dtype and c.shape == (m, n)
    np.testing.assert_allclose(c.astype(np.float64), want.astype(np.float64), rtol=tol[0],
                               atol=tol[1])


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("epilogue", matmul.EPILOGUES)
def test_matmul_epilogues(epilogue, dtype):
    r = rng(5)
    a, b = normal(r, (18, 21), dtype), normal(r, (21, 19), dtype)
    bias = normal(r, (19,), dtype) if epilogue in ("bias", "bias_relu") else None
    c = matmul.matmul(a, b, bias, epilogue, config=matmul.CONFIGS[1])
    want = matmul.reference(a, b, bias, epilogue)
    tol = 1e-5 if dtype == F32 else 5e-3
    assert c.dtype == want.dtype == dtype
    np.testing.assert_allclose(c.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)
    if "relu" in epilogue:
        assert (c >= 0).all() and (c == 0).any()


def test_matmul_errors():
    a, b = np.ones((4, 5), F32), np.ones((5, 3), F32)
    with pytest.raises(ValueError, match="matmul: contracting dimensions differ"):
        matmul.matmul(a, np.ones((4, 3), F32))
    with pytest.raises(TypeError, match="matmul: a and b must have one dtype"):
        matmul.matmul(a, b.astype(F16))
    with pytest.raises(ValueError, match="unknown epilogue 'gelu'"):
        matmul.matmul(a, b, epilogue="gelu")
    with pytest.raises(ValueError, match="needs a bias"):
        matmul.matmul(a, b, epilogue="bias")
    with pytest.raises(ValueError, match="takes no bias"):
        matmul.matmul(a, b, np.ones(3, F32))
    with pytest.raises(ValueError, match=r"bias must have shape \(3,\)"):
        matmul.matmul(a, b, np.ones(4, F32), "bias_relu")


# --- compiling for sm_90 ---


def _compile_set():
    a16, b16, bias16 = np.empty((256, 128), F16), np.empty((128, 256), F16), np.empty(256, F16)
    a32, b32 = np.empty((100, 70), F32), np.empty((70, 90), F32)
    x = np.empty((128, 1000), F32)
    return [softmax.build(x), softmax.build(x.astype(F16)),
            layernorm.build(x, x[0], x[0]), layernorm.build(x.astype(F16), x[0], x[0]),
            matmul.build(a16, b16, bias16, "bias_relu", matmul.CONFIGS[2])[0],
            matmul.build(a32, b32, None, "none", matmul.CONFIGS[1])[0],
            matmul.build(a32, b32, np.empty(90, F32), "bias", matmul.CONFIGS[3],
                         precision="tf32")[0]]


def test_compile_for_sm90():
    kernels = _compile_set()
    calls = [(k.fn, k.source.signature, k.source.constexprs, k.source.num_warps)
             for k in kernels]
    compiled = tcompile.compile_many(calls)
    assert len(compiled) == len(kernels)
    for k, c in zip(kernels, compiled):
        assert c.name == k.source.name and c.target == "cuda:90"
        assert ".target sm_90" in c.ptx and f".entry {c.name}(" in c.ptx
        assert c.cubin[:4] == b"\x7fELF"
        assert c.num_warps == k.source.num_warps
    # the f16 matmul uses Hopper's tensor cores (wgmma or mma) for tl.dot
    assert "mma" in compiled[4].ptx
    # the compile_sm90 helpers reuse the memoized results
    before = tcompile.stats["compiles"]
    assert softmax.compile_sm90() is compiled[0]
    assert tcompile.stats["compiles"] == before


def test_make_kernel_rejects_wrong_constexprs():
    x = np.empty((2, 3), F32)
    with pytest.raises(TypeError, match="softmax_kernel: constexprs"):
        _launch.make_kernel(softmax.softmax_kernel, None, [x], [(x.shape, x.dtype)],
                            {"N_ROWS": 2}, (1,), 4)


# --- attention (flash-style forward) ---

from kernels import attention  # noqa: E402


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape,blocks", [
    (((2, 37, 16), (2, 37, 16), (2, 37, 16)), (16, 16)),   # several query and key blocks
    (((1, 2, 5, 8), (1, 2, 21, 8), (1, 2, 21, 24)), (None, 16)),  # Lq != Lk, Dv != D, 4-D
    (((3, 1, 20), (3, 1, 20), (3, 1, 20)), (None, None)),   # one query, one key
])
def test_attention(shape, blocks, causal, dtype):
    r = rng(6)
    q, k, v = (normal(r, s, dtype) for s in shape)
    o = attention.attention(q, k, v, causal=causal, block_m=blocks[0], block_n=blocks[1])
    want = attention.reference(q, k, v, causal=causal)
    tol = 2e-5 if dtype == F32 else 5e-3
    assert o.dtype == want.dtype == dtype and o.shape == want.shape
    np.testing.assert_allclose(o.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


def test_attention_scale_and_online_softmax_rescaling():
    r = rng(7)
    q, k, v = (normal(r, (1, 40, 16), F32, 4.0) for _ in range(3))
    k[0, 30:] *= 10.0  # the running maximum grows in a late key block
    for causal in (False, True):
        o = attention.attention(q, k, v, causal=causal, scale=0.3, block_m=16, block_n=16)
        want = attention.reference(q, k, v, causal=causal, scale=0.3)
        np.testing.assert_allclose(o, want, rtol=1e-4, atol=1e-5)
    o = attention.attention(q, k, v, causal=True, block_m=16, block_n=16)
    np.testing.assert_allclose(o[0, 0], v[0, 0], rtol=1e-6)  # row 0 sees key 0 only


def test_attention_errors():
    q = np.ones((2, 4, 8), F32)
    with pytest.raises(TypeError, match="attention: q must be float16 or float32"):
        attention.attention(q.astype(np.int32), q, q)
    with pytest.raises(TypeError, match="must have one dtype"):
        attention.attention(q, q.astype(F16), q)
    with pytest.raises(ValueError, match="equal leading"):
        attention.attention(q, np.ones((3, 4, 8), F32), np.ones((3, 4, 8), F32))
    with pytest.raises(ValueError, match="disagree"):
        attention.attention(q, np.ones((2, 4, 9), F32), q)
    with pytest.raises(ValueError, match="head dim 300 exceeds"):
        attention.pick_config(300)


def test_attention_compiles_for_sm90():
    q16 = np.empty((4, 256, 64), F16)
    q32 = np.empty((2, 100, 32), F32)
    kernels = [attention.build(q16, q16, q16, causal=True),
               attention.build(q16, q16, q16, causal=False),
               attention.build(q32, q32, q32, causal=True, precision="tf32")]
    calls = [(k.fn, k.source.signature, k.source.constexprs, k.source.num_warps)
             for k in kernels]
    compiled = tcompile.compile_many(calls)
    for k, c in zip(kernels, compiled):
        assert c.name == "attention_kernel" and ".target sm_90" in c.ptx
        assert c.cubin[:4] == b"\x7fELF"
    assert "mma" in compiled[0].ptx  # both tl.dots on the tensor cores


# --- the softmax / layernorm templates: the user spellings they match ---


def _sm_hand(x):
    e = fnp.exp(x - lax.stop_gradient(x.max(-1, keepdims=True)))
    return e / e.sum(-1, keepdims=True)


def _sm_indexed(x):  # a reduced row brought back by indexing / expand_dims
    e = fnp.exp(x - fnp.max(x, axis=-1)[..., None])
    return e / fnp.expand_dims(fnp.sum(e, axis=-1), -1)


_ln_pow, _ln_rsqrt = triton_harness.layernorm_pow_affine, triton_harness.layernorm_rsqrt


def _ln_var(x, w, b):  # fnp.var: float32 only (float16 variances are computed in float32)
    return (x - x.mean(-1, keepdims=True)) * lax.rsqrt(x.var(-1, keepdims=True) + 1e-6) * w + b


def _ln_bias_first(x, w, b):
    xc = x - fnp.mean(x, -1, keepdims=True)
    return b + (xc / fnp.sqrt(fnp.mean(xc * xc, -1, keepdims=True) + 1e-5)) * w


def _ln_one_pass(x):  # E[x^2] - E[x]^2: not the kernel's two-pass variance
    mu = fnp.mean(x, -1, keepdims=True)
    return (x - mu) * lax.rsqrt(fnp.mean(x * x, -1, keepdims=True) - mu * mu + 1e-5)


_SPELLINGS = [  # fn, number of (N,) parameters, template, variant (per dtype), eps
    (lambda x: nn.softmax(x), 0, "softmax", {F32: "softmax", F16: "softmax"}, None),
    (_sm_hand, 0, "softmax", {F32: "softmax", F16: "softmax"}, None),
    (_sm_indexed, 0, "softmax", {F32: "softmax", F16: "softmax"}, None),
    (lambda x: nn.log_softmax(x), 0, "softmax", {F32: None, F16: None}, None),
    (_ln_pow, 2, "layernorm", {F32: "_normalized_pow_affine", F16: "_normalized_pow_affine"},
     1e-3),
    (_ln_rsqrt, 0, "layernorm", {F32: "_normalized_rsqrt", F16: "_normalized_rsqrt"}, 1e-5),
    (_ln_var, 2, "layernorm", {F32: "_normalized_rsqrt_affine", F16: None}, 1e-6),
    (_ln_bias_first, 2, "layernorm", {F32: "_normalized_affine", F16: "_normalized_affine"},
     1e-5),
    (_ln_one_pass, 0, "layernorm", {F32: None, F16: None}, None),
    (lambda x: nn.standardize(x, axis=-1), 0, "layernorm", {F32: None, F16: None}, None),
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shape", [(4, 8), (2, 3, 5)])
@pytest.mark.parametrize("fn, nparams, name, variant, eps", _SPELLINGS,
                         ids=["nn.softmax", "softmax_by_hand", "softmax_indexed", "log_softmax",
                              "ln_pow_affine", "ln_rsqrt", "ln_var", "ln_bias_first",
                              "ln_one_pass", "standardize"])
def test_templates_match_the_user_spellings(fn, nparams, name, variant, eps, shape, dtype):
    r = rng(4)
    args = [normal(r, shape, dtype)] + [normal(r, shape[-1:], dtype) for _ in range(nparams)]
    groups = plan_fusion(functrax.jit(fn).lower(*args).jaxpr).groups
    got = [patterns.match_template(g, name) for g in groups]
    want = variant[dtype]
    if want is None:
        assert got == [None] * len(groups)
        return
    assert len(groups) == 1 and got[0] is not None
    assert got[0][0] == want
    binding = got[0][1]
    assert [binding[i] for i in range(1 + nparams)] == list(range(1 + nparams))
    if eps is not None:
        assert binding["eps"] == float(np.asarray(eps, dtype))  # the literal, in x's dtype
