"""Mixed precision: float32 accumulation of low-precision products, and functrax.mixed_precision.

Part 1: matrix products (``dot_general``: ``@``, ``einsum``, ``dot``) and convolutions of
bfloat16 / float16 operands accumulate in float32 and round once to the result dtype (as XLA
on CPU and GPU), on the numpy backend (eager and ``jit``), the C backend and the Triton
backend (interpreter), under ``grad`` (the transposed products) and ``vmap``. The workloads
tell the accumulators apart: summing 4096 terms of 0.01 stalls at 4 in a bfloat16
accumulator and at 32 in a float16 one, while the float32 sum is 40.96; the random
workloads use values whose float32 sums are exact in any order, so "float32 accumulation
rounded once" is one exact number (compared bit for bit).

Part 2: dtype policies, loss scaling, ``all_finite``/``select_tree``, and a jitted float16
train step that recovers from an injected overflow.
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import doctest

import ml_dtypes
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax import mixed_precision as mp
from functrax.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten

fresh_cache = th.fresh_cache  # autouse: a Triton kernel cache of each test's own

BF16, F16, F32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(np.float32)
LOW = [BF16, F16]
K = 4096  # terms per output element


# --- references ---


def _round(exact, dtype):
    """The exact (float64) result as float32 accumulation rounded once to ``dtype``: the
    inputs are chosen so that every float32 partial sum is exact."""
    exact = np.asarray(exact, np.float64)
    assert np.array_equal(exact.astype(np.float32).astype(np.float64), exact)
    return exact.astype(np.float32).astype(dtype)


def _assert_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    np.testing.assert_array_equal(got.view(np.uint16 if got.itemsize == 2 else np.uint32),
                                  want.view(np.uint16 if want.itemsize == 2 else np.uint32))


def _low_precision_sum(terms, dtype):
    """What an accumulator of ``dtype`` gives: every partial sum rounded to ``dtype``."""
    acc = dtype.type(0)
    for t in np.asarray(terms, dtype).ravel():
        acc = dtype.type(np.float32(acc) + np.float32(t))
    return acc


def _stall(shape, dtype):
    return np.full(shape, 0.01, dtype)


def _ones(shape, dtype):
    return np.ones(shape, dtype)


def _exact_lhs(shape, dtype, seed=0):
    """Multiples of 1/64 in [1/64, 8/64]: exact in bfloat16/float16; sums of 4096 products
    with :func:`_exact_rhs` values are exact in float32."""
    return (np.random.default_rng(seed).integers(1, 9, shape) / 64).astype(dtype)


def _exact_rhs(shape, dtype, seed=1):
    return np.random.default_rng(seed).integers(1, 5, shape).astype(dtype)


def _f64(*xs):
    return [np.asarray(x, np.float64) for x in xs]


# --- the workloads tell a low-precision accumulator from a float32 one ---


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_the_workloads_tell_the_accumulators_apart(dtype):
    stalled = _low_precision_sum(_stall(K, dtype), dtype)
    want = _round(np.sum(_f64(_stall(K, dtype))[0]), dtype)
    assert float(stalled) == {BF16: 4.0, F16: 32.0}[dtype]
    assert float(want) > 40.9 and float(stalled) != float(want)
    terms = _exact_lhs(K, dtype) * _exact_rhs(K, dtype)
    assert _low_precision_sum(terms, dtype) != _round(np.sum(_f64(terms)[0]), dtype)


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_a_low_precision_accumulator_fails_the_check(dtype):
    a, b = _stall((2, K), dtype), _ones((K, 3), dtype)
    lowp = np.array([[_low_precision_sum(a[i] * b[:, j], dtype) for j in range(3)]
                     for i in range(2)], dtype)
    with pytest.raises(AssertionError):
        _assert_bits(lowp, _round(np.matmul(*_f64(a, b)), dtype))


# --- dot_general ---

RUNNERS = {
    "eager": lambda f: lambda *xs: f(*map(fnp.asarray, xs)),  # functrax arrays, not numpy's @
    "jit": lambda f: functrax.jit(f),
    "jit_c": lambda f: functrax.jit(f, backend="c"),
}

# name: (function, einsum of the reference, lhs shape, rhs shape)
DOTS = {
    "matmul_2d": (lambda a, b: a @ b, "ik,kj->ij", (2, K), (K, 3)),
    "batched": (lambda a, b: fnp.einsum("bik,bkj->bij", a, b), "bik,bkj->bij", (2, 2, K),
                (2, K, 3)),
    "vector": (lambda a, b: fnp.dot(a, b), "k,k->", (K,), (K,)),
    "matvec": (lambda a, b: a @ b, "ik,k->i", (3, K), (K,)),
    "lhs_transposed": (lambda a, b: lax.dot_general(a, b, (((0,), (0,)), ((), ()))),
                       "ki,kj->ij", (K, 2), (K, 3)),
    "two_contractions": (lambda a, b: lax.dot_general(a, b, (((1, 2), (0, 1)), ((), ()))),
                         "ikl,klj->ij", (2, 64, 64), (64, 64, 3)),
}
INPUTS = {"stall": (_stall, _ones), "exact": (_exact_lhs, _exact_rhs)}


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("case", DOTS)
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_dot_general_accumulates_in_float32(dtype, case, inputs, runner):
    fn, spec, ls, rs = DOTS[case]
    make_a, make_b = INPUTS[inputs]
    a, b = make_a(ls, dtype), make_b(rs, dtype)
    got = RUNNERS[runner](fn)(a, b)
    _assert_bits(got, _round(np.einsum(spec, *_f64(a, b)), dtype))


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_preferred_element_type_float32_returns_the_float32_sum(dtype, runner):
    a, b = _exact_lhs((2, K), dtype), _exact_rhs((K, 3), dtype)
    f = lambda a, b: (lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                      preferred_element_type=np.float32),
                      fnp.matmul(a, b, preferred_element_type=fnp.float32))
    want = np.matmul(*_f64(a, b)).astype(np.float32)
    for got in RUNNERS[runner](f)(a, b):
        _assert_bits(got, want)


def test_preferred_low_precision_of_integer_operands_accumulates_in_float32():
    a, b = np.full((2, K), 3, np.int8), np.ones((K, 3), np.int8)
    got = functrax.jit(lambda a, b: lax.dot_general(
        a, b, (((1,), (0,)), ((), ())), preferred_element_type=fnp.bfloat16))(a, b)
    _assert_bits(got, _round(np.full((2, 3), 3.0 * K), BF16))  # 12288: a bf16 sum stalls


# --- convolutions ---


def _conv_ref(x, w, strides):
    """VALID cross-correlation of ``N C spatial`` by ``O I spatial`` in float64."""
    x, w = _f64(x, w)
    nsp = x.ndim - 2
    axes = tuple(range(2, 2 + nsp))
    win = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=axes)
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    sp = "xyz"[:nsp]
    ks = "uvw"[:nsp]
    return np.einsum(f"nc{sp}{ks},oc{ks}->no{sp}", win, w)


# name: (lhs shape, rhs shape, strides, dimension numbers or None); every output element
# sums 4096 products (channels x window)
CONVS = {
    "1d": ((2, 256, 20), (3, 256, 16), (1,), None),
    "1d_strided": ((2, 64, 131), (3, 64, 64), (3,), None),
    "2d_nchw": ((2, 64, 10, 10), (3, 64, 8, 8), (1, 1), None),
    "2d_nhwc": ((2, 64, 11, 11), (3, 64, 8, 8), (2, 2), ("NHWC", "HWIO", "NHWC")),
}


def _conv_case(case, x, w):
    _, _, strides, dn = CONVS[case]
    if dn is None:
        return lambda a, b: lax.conv_general_dilated(a, b, strides, "VALID"), x, w
    # the same numbers stored NHWC / HWIO
    xt, wt = np.transpose(x, (0, 2, 3, 1)), np.transpose(w, (2, 3, 1, 0))
    return (lambda a, b: fnp.transpose(lax.conv_general_dilated(
        a, b, strides, "VALID", dimension_numbers=dn), (0, 3, 1, 2))), xt, wt


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("case", CONVS)
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_convolution_accumulates_in_float32(dtype, case, inputs, runner):
    ls, rs, strides, _ = CONVS[case]
    make_x, make_w = INPUTS[inputs]
    x, w = make_x(ls, dtype), make_w(rs, dtype)
    f, xa, wa = _conv_case(case, x, w)
    _assert_bits(RUNNERS[runner](f)(xa, wa), _round(_conv_ref(x, w, strides), dtype))


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_convolution_preferred_float32_and_numpy_convolve(dtype, runner):
    x, w = _exact_lhs((2, 256, 20), dtype), _exact_rhs((3, 256, 16), dtype)
    f = lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID",
                                              preferred_element_type=np.float32)
    _assert_bits(RUNNERS[runner](f)(x, w), _conv_ref(x, w, (1,)).astype(np.float32))
    u, v = _exact_lhs(K, dtype), _exact_rhs(K, dtype)
    got = RUNNERS[runner](lambda u, v: fnp.convolve(u, v, mode="valid"))(u, v)
    _assert_bits(got, _round(np.convolve(*_f64(u, v), mode="valid"), dtype))


# --- grad: the transposed products ---

GRAD_RUNNERS = {
    "eager": lambda f: functrax.grad(f, argnums=(0, 1)),
    "jit": lambda f: functrax.jit(functrax.grad(f, argnums=(0, 1))),
    "jit_c": lambda f: functrax.jit(functrax.grad(f, argnums=(0, 1)), backend="c"),
    "grad_of_jit": lambda f: functrax.grad(functrax.jit(f), argnums=(0, 1)),
}


def _sum32(y):
    return fnp.sum(y.astype(fnp.float32))


@pytest.mark.parametrize("runner", GRAD_RUNNERS)
@pytest.mark.parametrize("shapes", [((K, 4), (4, 3)), ((3, 4), (4, K))], ids=["dw", "dx"])
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_grad_of_matmul_accumulates_in_float32(dtype, shapes, runner):
    a, b = _exact_lhs(shapes[0], dtype), _exact_rhs(shapes[1], dtype)
    ga, gb = GRAD_RUNNERS[runner](lambda a, b: _sum32(a @ b))(a, b)
    a64, b64 = _f64(a, b)
    ct = np.ones((a.shape[0], b.shape[1]))
    _assert_bits(ga, _round(ct @ b64.T, dtype))
    _assert_bits(gb, _round(a64.T @ ct, dtype))


def _conv_grads_ref(x, w, out_spatial):
    """Gradients of ``sum(conv(x, w, VALID))`` (cotangent ones) in float64."""
    x, w = _f64(x, w)
    nsp = x.ndim - 2
    axes = tuple(range(2, 2 + nsp))
    win = np.lib.stride_tricks.sliding_window_view(x, out_spatial, axis=axes)
    gw = win.sum(axis=(0,) + tuple(range(2 + nsp, 2 + 2 * nsp)))  # (C, kernel)
    gw = np.broadcast_to(gw, w.shape)
    ws = w.sum(axis=0)  # (C, kernel): dx = full convolution of ones(out) with it
    pad = [(0, 0)] + [(o - 1, o - 1) for o in out_spatial]
    wp = np.pad(ws, pad)
    wwin = np.lib.stride_tricks.sliding_window_view(wp, out_spatial, axis=tuple(
        range(1, 1 + nsp)))
    gx = wwin.sum(axis=tuple(range(1 + nsp, 1 + 2 * nsp)))
    return np.broadcast_to(gx, x.shape), gw


@pytest.mark.parametrize("runner", GRAD_RUNNERS)
@pytest.mark.parametrize("case", ["1d", "2d"])
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_grad_of_convolution_accumulates_in_float32(dtype, case, runner):
    # dx sums out_channels x window = 4096 terms, dw batch x out_positions (4096 / 1024)
    xs, ws = {"1d": ((64, 2, 127), (64, 2, 64)), "2d": ((16, 4, 23, 23), (16, 4, 16, 16))}[case]
    x, w = _exact_lhs(xs, dtype), _exact_rhs(ws, dtype)
    f = lambda x, w: _sum32(lax.conv_general_dilated(x, w, (1,) * (x.ndim - 2), "VALID"))
    gx, gw = GRAD_RUNNERS[runner](f)(x, w)
    out_sp = tuple(s - k + 1 for s, k in zip(xs[2:], ws[2:]))
    gx_ref, gw_ref = _conv_grads_ref(x, w, out_sp)
    _assert_bits(gx, _round(gx_ref, dtype))
    _assert_bits(gw, _round(gw_ref, dtype))


# --- vmap ---


@pytest.mark.parametrize("backend", [None, "c"], ids=["eager_and_jit", "jit_c"])
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_vmap_of_products_accumulates_in_float32(dtype, backend):
    a, b = _exact_lhs((3, 2, K), dtype), _exact_rhs((3, K, 2), dtype)
    v, u = _exact_lhs((3, K), dtype), _exact_rhs((K,), dtype)
    x, w = _exact_lhs((3, 2, 256, 20), dtype), _exact_rhs((3, 256, 16), dtype)

    def f(a, b, v, u, x, w):
        mm = functrax.vmap(lambda a, b: a @ b)(a, b)
        vd = functrax.vmap(fnp.dot, in_axes=(0, None))(v, u)
        cv = functrax.vmap(lambda x: lax.conv_general_dilated(x, w, (1,), "VALID"))(x)
        return mm, vd, cv

    runs = [f, functrax.jit(f)] if backend is None else [functrax.jit(f, backend="c")]
    for run in runs:
        mm, vd, cv = run(a, b, v, u, x, w)
        _assert_bits(mm, _round(np.matmul(*_f64(a, b)), dtype))
        _assert_bits(vd, _round(np.matmul(*_f64(v, u)), dtype))
        _assert_bits(cv, _round(np.stack([_conv_ref(xi, w, (1,)) for xi in x]), dtype))


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_vmap_of_grad_accumulates_in_float32(dtype):
    a, b = _exact_lhs((2, K, 3), dtype), _exact_rhs((3, 2), dtype)
    g = functrax.jit(functrax.vmap(functrax.grad(lambda a, b: _sum32(a @ b), argnums=1),
                                   in_axes=(0, None)))(a, b)
    want = np.stack([_f64(ai)[0].T @ np.ones((K, 2)) for ai in a])
    _assert_bits(g, _round(want, dtype))


# --- the Triton backend (interpreter) ---


def _run_triton(fn, *args):
    """``jit(fn, backend="triton")(*args)``, every group a Triton kernel (no numpy
    fallback)."""
    c = th.compiled(fn, *args)
    assert th.program_of(c).fallbacks == ()
    return c(*args)


@pytest.mark.parametrize("case", ["matmul_2d", "batched", "vector", "lhs_transposed"])
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_triton_dot_general_accumulates_in_float32(dtype, case):
    fn, spec, ls, rs = DOTS[case]
    a, b = _stall(ls, dtype), _exact_rhs(rs, dtype)
    got = _run_triton(fn, a, b)
    _assert_bits(got, _round(np.einsum(spec, *_f64(a, b)), dtype))


@pytest.mark.parametrize("case", ["1d", "2d_nchw"])
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_triton_convolution_accumulates_in_float32(dtype, case):
    ls, rs, strides, _ = CONVS[case]
    x, w = _stall(ls, dtype), _exact_rhs(rs, dtype)
    f, xa, wa = _conv_case(case, x, w)
    _assert_bits(_run_triton(f, xa, wa),
                 _round(_conv_ref(x, w, strides), dtype))


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_triton_grad_of_matmul_accumulates_in_float32(dtype):
    a, b = _exact_lhs((K, 4), dtype), _exact_rhs((4, 3), dtype)
    ga, gb = _run_triton(functrax.grad(lambda a, b: _sum32(a @ b), argnums=(0, 1)), a, b)
    ct = np.ones((K, 3))
    a64, b64 = _f64(a, b)
    _assert_bits(ga, _round(ct @ b64.T, dtype))
    _assert_bits(gb, _round(a64.T @ ct, dtype))


# === Part 2: functrax.mixed_precision ===


def _leaves_tree():
    return {
        "f32": fnp.ones(3), "np_f32": np.ones(2, np.float32), "np_scalar": np.float32(2.0),
        "bf16": fnp.ones(2, fnp.bfloat16), "i32": fnp.arange(3), "np_i64": np.arange(2),
        "bool": fnp.array([True, False]), "key": functrax.random.key(0),
        "raw_key": functrax.random.PRNGKey(0), "py_float": 1.5, "py_int": 3, "name": "dense",
        "none": None, "c64": fnp.ones(2, fnp.complex64),
    }


FLOATS = ("f32", "np_f32", "np_scalar", "bf16")


@pytest.mark.parametrize("method, attr", [("cast_to_param", "param_dtype"),
                                          ("cast_to_compute", "compute_dtype"),
                                          ("cast_to_output", "output_dtype")])
def test_policy_casts_only_floating_array_leaves(method, attr):
    policy = mp.Policy(np.float32, fnp.bfloat16, "float16")
    tree = _leaves_tree()
    out = getattr(policy, method)(tree)
    want = getattr(policy, attr)
    for k in tree:
        if k in FLOATS:
            assert np.dtype(out[k].dtype) == want, k
            np.testing.assert_array_equal(np.asarray(out[k], np.float32),
                                          np.asarray(tree[k], np.float32))
            # numpy stays numpy, functrax stays functrax
            assert isinstance(out[k], (np.ndarray, np.generic)) == isinstance(
                tree[k], (np.ndarray, np.generic)), k
        else:
            assert out[k] is tree[k], k
    if want == np.dtype(tree["f32"].dtype):
        assert out["f32"] is tree["f32"]  # no cast when the dtype already matches


def test_policy_casts_inside_jit_grad_and_vmap():
    policy = mp.get_policy("mixed_bf16")
    params = {"w": fnp.full((3, 2), 0.5), "step": fnp.asarray(1)}
    x = fnp.ones((4, 3))

    def loss(p, x):
        p, x = policy.cast_to_compute((p, x))
        assert p["w"].dtype == BF16 and x.dtype == BF16 and p["step"].dtype == np.int32
        return policy.cast_to_output(fnp.sum(x @ p["w"]))

    value = functrax.jit(loss)(params, x)
    assert value.dtype == F32 and float(value) == 12.0
    g = functrax.jit(functrax.grad(lambda w: loss({**params, "w": w}, x)))(params["w"])
    assert g.dtype == F32  # gradients come back in the parameters' dtype
    np.testing.assert_array_equal(np.asarray(g), np.full((3, 2), 4.0, np.float32))
    out = functrax.vmap(policy.cast_to_compute)({"w": fnp.ones((5, 2)), "i": fnp.arange(5)})
    assert out["w"].dtype == BF16 and out["i"].dtype == np.int32


def test_policy_normalizes_and_checks_dtypes():
    p = mp.Policy("f32", "bf16", np.float16)
    assert (p.param_dtype, p.compute_dtype, p.output_dtype) == (F32, BF16, F16)
    assert p.with_output_dtype(fnp.float32).output_dtype == F32
    assert p.with_compute_dtype("f16").compute_dtype == F16
    assert p.with_param_dtype(fnp.bfloat16).param_dtype == BF16
    assert p.with_param_dtype("bf16") == mp.Policy("bf16", "bf16", "f16")
    with pytest.raises(TypeError, match=r"Policy\(compute_dtype=...\).*floating.*int32"):
        mp.Policy(np.float32, np.int32, np.float32)
    with pytest.raises(AttributeError):
        p.param_dtype = F16  # frozen


@pytest.mark.parametrize("spec, want", [
    ("params=float32,compute=bfloat16,output=float32", (F32, BF16, F32)),
    ("p=f32,c=f16,o=f32", (F32, F16, F32)),
    (" Params = F32 , compute = BF16 ", (F32, BF16, BF16)),
    ("params=float32", (F32, F32, F32)),
    ("float32", (F32, F32, F32)), ("f32", (F32, F32, F32)),
    ("bf16", (BF16, BF16, BF16)), ("bfloat16", (BF16, BF16, BF16)),
    ("f16", (F16, F16, F16)), ("float16", (F16, F16, F16)), ("half", (F16, F16, F16)),
    ("mixed_bf16", (F32, BF16, F32)), ("mixed_f16", (F32, F16, F32)),
])
def test_get_policy_parses(spec, want):
    p = mp.get_policy(spec)
    assert (p.param_dtype, p.compute_dtype, p.output_dtype) == want
    assert mp.get_policy(str(p)) == p  # str round-trips
    assert mp.get_policy(p) is p


@pytest.mark.parametrize("spec, why", [
    ("int8", "'int8' is not a floating dtype name"),
    ("params=float32,compute=int32", "'int32' is not a floating dtype name"),
    ("params=f32,weights=bf16", "'weights=bf16' is not 'params=...'"),
    ("compute=bf16", "the 'params' dtype is missing"),
    ("p=f32,params=bf16", "given twice"),
    ("p=f32,c", "'c' is not 'params=...'"),
    ("", "the string is empty"),
    ("mixed_fp8", "'mixed_fp8' is not a floating dtype name"),
])
def test_get_policy_errors_list_the_accepted_forms(spec, why):
    with pytest.raises(ValueError) as info:
        mp.get_policy(spec)
    msg = str(info.value)
    assert f"get_policy: cannot parse {spec!r}" in msg and why in msg
    assert "Accepted forms" in msg and "mixed_bf16" in msg and "params=" in msg
    with pytest.raises(TypeError, match="expected a policy string"):
        mp.get_policy(np.float32)


def test_cast_to_full_and_half():
    tree = {"a": fnp.ones(2, fnp.bfloat16), "b": fnp.arange(2)}
    assert mp.cast_to_full(tree)["a"].dtype == F32
    assert mp.cast_to_half(tree)["a"].dtype == F16 and mp.cast_to_half(tree)["b"] is tree["b"]


# --- loss scales ---


def test_noop_and_static_loss_scales():
    tree = {"g": fnp.ones(2, fnp.float16), "i": fnp.arange(2)}
    noop = mp.NoOpLossScale()
    assert noop.scale(tree) is tree and noop.unscale(tree) is tree and noop.adjust(False) is noop
    assert float(noop.loss_scale) == 1.0
    assert tree_leaves(noop) == [] and functrax.jit(lambda s: s)(noop) == noop
    s = mp.StaticLossScale(1024.0)
    scaled = s.scale(tree)
    assert scaled["g"].dtype == F16 and float(scaled["g"][0]) == 1024.0
    assert scaled["i"] is tree["i"]  # integers are not scaled
    back = s.unscale(scaled)
    assert back["g"].dtype == F16 and float(back["g"][0]) == 1.0
    assert s.adjust(fnp.asarray(False)) is s
    assert [np.asarray(x).dtype for x in tree_leaves(s)] == [F32]
    with pytest.raises(TypeError, match="expected a scalar"):
        mp.StaticLossScale(fnp.ones(2))


def test_unscale_multiplies_in_float32_and_rounds_once():
    # 3 * (1/3) of a float16 gradient: in float16 1/3 would round first
    s = mp.DynamicLossScale(3.0)
    g = np.asarray([3.0, 6.0, 65504.0], np.float16)
    got = s.unscale({"g": g})["g"]
    want = (g.astype(np.float32) * np.float32(1 / np.float32(3))).astype(np.float16)
    _assert_bits(got, want)
    assert got.dtype == F16


def test_dynamic_loss_scale_adjust():
    ls = mp.DynamicLossScale(8.0, period=3, factor=2, min_loss_scale=2.0)
    assert ls.loss_scale.dtype == F32 and ls.counter.dtype == np.int32
    yes, no = fnp.asarray(True), fnp.asarray(False)
    ls = ls.adjust(yes).adjust(yes)
    assert (float(ls.loss_scale), int(ls.counter)) == (8.0, 2)
    ls = ls.adjust(yes)  # the 3rd consecutive finite step: grows, counter restarts
    assert (float(ls.loss_scale), int(ls.counter)) == (16.0, 0)
    ls = ls.adjust(yes).adjust(no)  # overflow: halves, counter restarts
    assert (float(ls.loss_scale), int(ls.counter)) == (8.0, 0)
    for _ in range(5):
        ls = ls.adjust(no)
    assert float(ls.loss_scale) == 2.0  # not below min_loss_scale
    assert ls.loss_scale.dtype == F32 and ls.counter.dtype == np.int32
    assert (ls.period, ls.factor, ls.min_loss_scale) == (3, 2, 2.0)
    big = mp.DynamicLossScale(np.float32(3e38), period=1).adjust(yes)
    assert float(big.loss_scale) == np.float32(3e38)  # growing past float32 keeps the scale
    assert float(mp.DynamicLossScale(1.0, factor=1.5).adjust(no).loss_scale) == 1.0


def test_dynamic_loss_scale_argument_errors():
    with pytest.raises(ValueError, match="period must be a positive int"):
        mp.DynamicLossScale(2.0, period=0)
    with pytest.raises(ValueError, match="factor must be a number > 1"):
        mp.DynamicLossScale(2.0, factor=1)
    with pytest.raises(ValueError, match="min_loss_scale must be a number > 0"):
        mp.DynamicLossScale(2.0, min_loss_scale=0.0)
    with pytest.raises(TypeError, match="expected a scalar"):
        mp.DynamicLossScale(fnp.ones(3))
    with pytest.raises(TypeError, match=r"adjust: grads_finite must be a boolean scalar.*"
                                        r"shape \(2,\)"):
        mp.DynamicLossScale(2.0).adjust(fnp.array([True, False]))


def test_dynamic_loss_scale_is_a_pytree_through_flatten_and_jit():
    ls = mp.DynamicLossScale(2.0 ** 15, counter=8, period=10, factor=4, min_loss_scale=0.5)
    leaves, treedef = tree_flatten(ls)
    assert len(leaves) == 2 and leaves[0].dtype == F32 and leaves[1].dtype == np.int32
    back = tree_unflatten(treedef, leaves)
    assert isinstance(back, mp.DynamicLossScale) and back.loss_scale is ls.loss_scale
    assert (back.period, back.factor, back.min_loss_scale) == (10, 4, 0.5)
    # static fields are part of the structure
    assert tree_flatten(mp.DynamicLossScale(1.0, period=11))[1] != treedef
    # any leaves can be put back (tree operations put axis specs, None, ...)
    assert tree_unflatten(treedef, [0, None]).counter is None
    assert tree_map(lambda x: x, ls).period == 10

    traces = []

    @functrax.jit
    def step(ls, finite):
        traces.append(1)
        return ls.adjust(finite)

    out = step(ls, True)
    assert isinstance(out, mp.DynamicLossScale) and (out.period, out.factor) == (10, 4)
    assert (float(out.loss_scale), int(out.counter)) == (2.0 ** 15, 9)
    out = step(out, True)
    assert (float(out.loss_scale), int(out.counter)) == (2.0 ** 17, 0)
    out = step(out, False)
    assert (float(out.loss_scale), int(out.counter)) == (2.0 ** 15, 0)
    assert len(traces) == 1  # the scale and counter are traced, not static


def test_all_finite_and_select_tree():
    tree = {"a": fnp.ones(2), "b": np.ones(3, np.float16), "i": fnp.arange(2),
            "key": functrax.random.key(0)}
    assert bool(mp.all_finite(tree)) and mp.all_finite(tree).dtype == np.bool_
    assert bool(mp.all_finite({})) and bool(mp.all_finite({"n": "name"}))
    for bad in (np.inf, -np.inf, np.nan):
        assert not bool(mp.all_finite({**tree, "b": np.array([1, bad], np.float16)}))
    assert not bool(functrax.jit(mp.all_finite)({"x": fnp.array([1.0, np.nan])}))
    a = {"w": fnp.ones(2), "n": fnp.asarray(1)}
    b = {"w": fnp.zeros(2), "n": fnp.asarray(2)}
    out = functrax.jit(mp.select_tree)(fnp.asarray(False), a, b)
    np.testing.assert_array_equal(np.asarray(out["w"]), np.zeros(2))
    assert int(out["n"]) == 2 and int(mp.select_tree(True, a, b)["n"]) == 1
    with pytest.raises(TypeError, match="select_tree: pred must be a boolean scalar"):
        mp.select_tree(fnp.ones(()), a, b)
    with pytest.raises(ValueError, match="same tree structure"):
        mp.select_tree(True, a, {"w": b["w"]})
    with pytest.raises(TypeError, match=r"leaf 1 of a is float32\[2\] but of b float16\[2\]"):
        mp.select_tree(True, a, {"w": fnp.zeros(2, fnp.float16), "n": b["n"]})


# --- a float16 train step that recovers from an overflow ---


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 8)).astype(np.float32)
    y = x @ rng.normal(size=(8, 1)).astype(np.float32)
    return x, y


def _make_step(policy, backend):
    def loss_fn(params, x, y, boost):
        p, x = policy.cast_to_compute((params, x))
        pred = fnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"]
        loss = fnp.mean((policy.cast_to_output(pred) - y) ** 2)
        return loss * boost  # boost > 1: gradients overflow float16 in the backward pass

    def step(params, ls, x, y, boost):
        scaled = lambda p: ls.scale(loss_fn(p, x, y, boost))
        grads = ls.unscale(functrax.grad(scaled)(params))
        finite = mp.all_finite(grads)
        new = tree_map(lambda p, g: p - 0.05 * g, params, grads)
        params = mp.select_tree(finite, new, params)
        return params, ls.adjust(finite), loss_fn(params, x, y, 1.0), finite

    return functrax.jit(step, backend=backend), functrax.jit(loss_fn, backend=backend)


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_dynamic_loss_scaling_skips_an_overflowing_step_and_recovers(backend):
    policy = mp.get_policy("mixed_f16")
    rng = np.random.default_rng(1)
    params = {"w1": rng.normal(size=(8, 16)).astype(np.float32) * 0.3,
              "b1": np.zeros(16, np.float32),
              "w2": rng.normal(size=(16, 1)).astype(np.float32) * 0.3}
    params = tree_map(fnp.asarray, params)
    x, y = _data()
    step, loss_fn = _make_step(policy, backend)
    ls = mp.DynamicLossScale(2.0 ** 10, period=4)
    one = np.float32(1)
    losses = [float(loss_fn(params, x, y, one))]
    for _ in range(2):
        params, ls, loss, finite = step(params, ls, x, y, one)
        assert bool(finite)
        losses.append(float(loss))
    assert (float(ls.loss_scale), int(ls.counter)) == (2.0 ** 10, 2)
    # inject an overflow: scale * boost * grad is far beyond float16's 65504
    before = params
    params, ls, loss, finite = step(params, ls, x, y, np.float32(2.0 ** 12))
    assert not bool(finite)
    for k in params:  # the step was skipped: parameters unchanged bit for bit
        np.testing.assert_array_equal(np.asarray(params[k]).view(np.uint32),
                                      np.asarray(before[k]).view(np.uint32))
        assert params[k].dtype == F32  # params stay in the param dtype
    assert (float(ls.loss_scale), int(ls.counter)) == (2.0 ** 9, 0)
    for i in range(4):  # period finite steps: the scale doubles on the 4th
        params, ls, loss, finite = step(params, ls, x, y, one)
        assert bool(finite)
        losses.append(float(loss))
        assert float(ls.loss_scale) == (2.0 ** 9 if i < 3 else 2.0 ** 10)
    assert int(ls.counter) == 0
    scale, counter = float(ls.loss_scale), 0
    for _ in range(20):  # the scale follows the rule, whatever overflows happen
        params, ls, loss, finite = step(params, ls, x, y, one)
        losses.append(float(loss))
        if bool(finite):
            counter = (counter + 1) % 4
            scale = scale * 2 if counter == 0 else scale
        else:
            scale, counter = max(scale / 2, 1.0), 0
        assert (float(ls.loss_scale), int(ls.counter)) == (scale, counter)
    assert scale > 2.0 ** 10  # it grew again after the overflow
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.1 * losses[0], losses  # training continued: the loss decreased


def test_doctests():
    result = doctest.testmod(mp, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
