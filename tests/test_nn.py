"""functrax.nn beyond the op-spec table: derivatives at kinks, numerical stability at large
inputs, where= masks, one_hot/standardize details, errors, and the initializers."""
from __future__ import annotations

import math

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import nn, random
from functrax.nn import initializers as init

# --- derivatives at kinks (as JAX's custom JVPs) ---


def test_relu_derivative_at_zero_is_zero():
    assert float(functrax.grad(nn.relu)(0.0)) == 0.0
    x = fnp.array([-1.0, 0.0, 2.0])
    g = functrax.grad(lambda x: fnp.sum(nn.relu(x)))(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])
    _, t = functrax.jvp(nn.relu, (x,), (fnp.ones(3),))
    np.testing.assert_array_equal(t, [0.0, 0.0, 1.0])
    # under vmap and jit too
    gv = functrax.vmap(functrax.grad(nn.relu))(x)
    np.testing.assert_array_equal(gv, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(functrax.jit(functrax.grad(nn.relu))(0.0), 0.0)
    # the second derivative is zero everywhere
    assert float(functrax.grad(functrax.grad(nn.relu))(1.5)) == 0.0


def test_relu6_derivative_at_kinks_is_zero():
    x = fnp.array([-1.0, 0.0, 3.0, 6.0, 7.0])
    g = functrax.vmap(functrax.grad(nn.relu6))(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0, 0.0, 0.0])


def test_relu_keeps_integer_dtype_and_printed_as_custom_jvp():
    out = nn.relu(fnp.array([-2, 3], fnp.int32))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [0, 3])
    assert "custom_jvp_call" in str(functrax.make_jaxpr(nn.relu)(1.0))


# --- stability at large inputs ---

BIG = np.float32([1000.0, 999.0, -1000.0])


def _softmax64(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


def test_logsumexp_large_inputs_and_gradient():
    x = fnp.asarray(BIG)
    val = nn.logsumexp(x)
    want = 1000.0 + np.log1p(np.exp(-1.0))
    np.testing.assert_allclose(float(val), want, rtol=1e-6)
    g = functrax.grad(nn.logsumexp)(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, _softmax64(BIG), rtol=1e-5, atol=1e-7)
    # very negative inputs neither underflow to -inf nor give NaN gradients
    small = fnp.asarray(-BIG)
    np.testing.assert_allclose(float(nn.logsumexp(small)), 1000.0 + np.log1p(np.exp(-1999.0)),
                               rtol=1e-6)
    assert np.all(np.isfinite(functrax.grad(nn.logsumexp)(small)))


def test_logsumexp_infinities():
    x = fnp.array([-np.inf, 0.0, -np.inf])
    np.testing.assert_allclose(float(nn.logsumexp(x)), 0.0, atol=1e-7)
    np.testing.assert_array_equal(functrax.grad(nn.logsumexp)(x), [0.0, 1.0, 0.0])
    assert float(nn.logsumexp(fnp.array([-np.inf, -np.inf]))) == -np.inf
    assert float(nn.logsumexp(fnp.array([np.inf, 1.0]))) == np.inf


def test_logsumexp_gradient_is_softmax_and_max_is_stop_gradient():
    rng = np.random.RandomState(0)
    x = rng.uniform(-3, 3, (2, 4)).astype(np.float32)
    g = functrax.grad(lambda x: fnp.sum(nn.logsumexp(x, axis=1)))(fnp.asarray(x))
    want = np.exp(x - x.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-7)
    jaxpr = str(functrax.make_jaxpr(nn.logsumexp)(fnp.asarray(x)))
    assert "stop_gradient" in jaxpr


def test_logsumexp_b_sign_and_nan():
    a = fnp.array([1.0, 2.0])
    b = fnp.array([1.0, -2.0])
    want = np.log(abs(np.exp(1.0) - 2 * np.exp(2.0)))
    out, sign = nn.logsumexp(a, b=b, return_sign=True)
    np.testing.assert_allclose(float(out), want, rtol=1e-6)
    assert float(sign) == -1.0
    assert np.isnan(float(nn.logsumexp(a, b=b)))
    # b == 0 drops an element even where a is +inf
    assert float(nn.logsumexp(fnp.array([np.inf, 0.0]), b=fnp.array([0.0, 1.0]))) == 0.0


def test_softmax_and_log_softmax_large_inputs_and_gradients():
    x = fnp.asarray(BIG)
    s = nn.softmax(x)
    np.testing.assert_allclose(s, _softmax64(BIG), rtol=1e-5, atol=1e-7)
    ls = nn.log_softmax(x)
    assert np.all(np.isfinite(ls))
    b64 = BIG.astype(np.float64)
    np.testing.assert_allclose(ls, b64 - b64.max() - np.log(np.exp(b64 - b64.max()).sum()),
                               rtol=1e-5)
    w = fnp.array([1.0, -2.0, 0.5])
    gs = functrax.grad(lambda x: fnp.sum(nn.softmax(x) * w))(x)
    gl = functrax.grad(lambda x: fnp.sum(nn.log_softmax(x) * w))(x)
    p = _softmax64(BIG)
    wn = np.asarray(w, np.float64)
    np.testing.assert_allclose(gs, p * (wn - p @ wn), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gl, wn - p * wn.sum(), rtol=1e-5, atol=1e-6)


def test_softplus_and_log_sigmoid_large_inputs():
    x = fnp.array([-100.0, 0.0, 100.0])
    np.testing.assert_allclose(nn.softplus(x), [np.exp(-100.0), np.log(2.0), 100.0],
                               rtol=1e-6, atol=1e-38)  # exp(-100) is subnormal in float32
    np.testing.assert_allclose(nn.log_sigmoid(x), [-100.0, -np.log(2.0), -np.exp(-100.0)],
                               rtol=1e-6, atol=1e-38)
    g = functrax.vmap(functrax.grad(nn.softplus))(x)
    np.testing.assert_allclose(g, [0.0, 0.5, 1.0], atol=1e-7)
    assert np.all(np.isfinite(functrax.vmap(functrax.grad(nn.log_sigmoid))(x)))


# --- where= masks ---

MASK = np.array([[True, False, True, True], [False, False, True, False]])


def test_softmax_where_masks_entries():
    rng = np.random.RandomState(1)
    x = fnp.asarray(rng.uniform(-2, 2, (2, 4)).astype(np.float32))
    s = np.asarray(nn.softmax(x, where=MASK))
    assert np.all(s[~MASK] == 0)
    np.testing.assert_allclose(s.sum(1), [1.0, 1.0], rtol=1e-6)
    ls = np.asarray(nn.log_softmax(x, where=MASK))
    assert np.all(ls[~MASK] == -np.inf)
    np.testing.assert_allclose(np.exp(ls).sum(1), [1.0, 1.0], rtol=1e-6)
    # gradients do not reach masked-out entries
    g = functrax.grad(lambda x: fnp.sum(nn.softmax(x, where=MASK) * fnp.arange(4.0)))(x)
    assert np.all(np.asarray(g)[~MASK] == 0) and np.all(np.isfinite(g))
    g = functrax.grad(lambda x: fnp.sum(fnp.where(MASK, nn.log_softmax(x, where=MASK), 0)))(x)
    assert np.all(np.asarray(g)[~MASK] == 0) and np.all(np.isfinite(g))


def test_logsumexp_and_standardize_where():
    x = np.float32([[1.0, 50.0, 2.0, 3.0], [0.0, 9.0, 4.0, 7.0]])
    got = nn.logsumexp(fnp.asarray(x), axis=1, where=MASK)
    want = [np.log(np.exp(x[0, MASK[0]]).sum()), x[1, 2]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    s = np.asarray(nn.standardize(fnp.asarray(x), axis=1, where=MASK))
    row = x[0, MASK[0]]
    np.testing.assert_allclose(s[0, MASK[0]], (row - row.mean()) / np.sqrt(row.var() + 1e-5),
                               rtol=1e-4)


# --- one_hot, standardize ---


def test_one_hot():
    x = fnp.array([0, 3, -1, 4, 2])
    out = nn.one_hot(x, 4)
    assert out.dtype == np.float32 and out.shape == (5, 4)
    want = np.zeros((5, 4), np.float32)
    for i, c in enumerate([0, 3, -1, 4, 2]):
        if 0 <= c < 4:
            want[i, c] = 1
    np.testing.assert_array_equal(out, want)  # out-of-range classes give zero rows
    np.testing.assert_array_equal(nn.one_hot(x, 4, axis=0), want.T)
    assert nn.one_hot(x, 4, dtype=fnp.int8).dtype == np.int8
    assert nn.one_hot(fnp.zeros((2, 3), fnp.int32), 5, axis=1).shape == (2, 5, 3)
    # traced indices, static num_classes
    f = functrax.jit(lambda i: nn.one_hot(i, 3))
    np.testing.assert_array_equal(f(fnp.array([2, 0])), [[0, 0, 1], [1, 0, 0]])
    with pytest.raises(TypeError, match="num_classes must be a static"):
        functrax.jit(lambda n: nn.one_hot(fnp.array([0]), n))(3)
    with pytest.raises(ValueError, match="axis 3 is out of bounds"):
        nn.one_hot(x, 4, axis=3)


def test_standardize_moments_and_given_stats():
    rng = np.random.RandomState(2)
    x = rng.normal(3.0, 2.0, (4, 50)).astype(np.float32)
    s = np.asarray(nn.standardize(fnp.asarray(x), axis=1, epsilon=0.0))
    np.testing.assert_allclose(s.mean(1), 0.0, atol=1e-5)
    np.testing.assert_allclose(s.var(1), 1.0, rtol=1e-4)
    s0 = np.asarray(nn.standardize(fnp.asarray(x), axis=(0, 1)))
    np.testing.assert_allclose(s0, (x - x.mean()) / np.sqrt(x.var() + 1e-5), rtol=1e-3,
                               atol=1e-4)
    given = nn.standardize(fnp.asarray(x), mean=1.0, variance=4.0, epsilon=0.0)
    np.testing.assert_allclose(given, (x - 1.0) / 2.0, rtol=1e-6)


def test_gelu_forms_and_dtypes():
    x = np.linspace(-4, 4, 17).astype(np.float32)
    exact = 0.5 * x * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    np.testing.assert_allclose(nn.gelu(fnp.asarray(x), approximate=False), exact, rtol=1e-5,
                               atol=1e-6)
    # the tanh form is close to the exact one, but not equal
    approx = np.asarray(nn.gelu(fnp.asarray(x)))
    assert 0 < np.max(np.abs(approx - exact)) < 1e-3
    assert nn.gelu(fnp.array([1, 2])).dtype == np.float32  # integers promote
    assert nn.sigmoid(fnp.ones(2, fnp.float16)).dtype == np.float16


def test_glu_and_errors():
    x = fnp.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(nn.glu(x), np.arange(0, 6, 2)[:, None] / (
        1 + np.exp(-np.arange(1, 6, 2)[:, None])), rtol=1e-6)
    with pytest.raises(ValueError, match="even size"):
        nn.glu(fnp.ones(3))
    with pytest.raises(TypeError, match="relu requires ndarray"):
        nn.relu([1.0, 2.0])
    with pytest.raises(ValueError, match="softmax: axis 2 is out of bounds"):
        nn.softmax(fnp.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match="logsumexp: axis -3"):
        nn.logsumexp(fnp.ones((2, 3)), axis=-3)


def test_aliases():
    assert nn.swish is nn.silu and nn.hard_swish is nn.hard_silu
    assert init.xavier_uniform is init.glorot_uniform
    assert init.kaiming_normal is init.he_normal


# --- initializers ---


def test_deterministic_initializers():
    z = init.zeros(None, (2, 3))
    assert z.dtype == np.float32 and z.shape == (2, 3) and not np.any(z)
    o = init.ones(None, (4,), fnp.int32)
    assert o.dtype == np.int32 and np.all(np.asarray(o) == 1)
    c = init.constant(-0.5)(None, (3, 2))
    assert c.dtype == np.float32 and np.all(np.asarray(c) == -0.5)
    assert init.constant(2, dtype=fnp.float16)(None, (1,)).dtype == np.float16


def _fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    def size(ax):
        axes = (ax,) if isinstance(ax, int) else ax
        return math.prod(shape[a] for a in axes)
    rf = math.prod(shape) / size(in_axis) / size(out_axis) / size(batch_axis)
    return size(in_axis) * rf, size(out_axis) * rf


@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "fan_avg"])
@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
def test_variance_scaling_variance_matches_fans(mode, distribution):
    shape = (3, 3, 16, 48)  # a conv kernel: receptive field 9
    scale = 2.0
    w = init.variance_scaling(scale, mode, distribution)(random.PRNGKey(0), shape)
    assert w.shape == shape and w.dtype == np.float32
    fan_in, fan_out = _fans(shape)
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    var = scale / n
    w = np.asarray(w, np.float64)
    # sampling error of the variance of ~7000 samples is ~2-3%
    np.testing.assert_allclose(w.var(), var, rtol=0.1)
    assert abs(w.mean()) < 4 * math.sqrt(var / w.size)
    bound = {"truncated_normal": 2 / 0.87962566103423978, "normal": None,
             "uniform": math.sqrt(3)}[distribution]
    if bound is not None:
        assert np.abs(w).max() <= bound * math.sqrt(var) * (1 + 1e-6)


def test_variance_scaling_axes_and_errors():
    key = random.PRNGKey(1)
    shape = (4, 64, 32)  # batch axis 0
    w = init.variance_scaling(1.0, "fan_in", "normal", in_axis=1, out_axis=2,
                              batch_axis=0)(key, shape)
    np.testing.assert_allclose(np.asarray(w, np.float64).var(), 1.0 / 64, rtol=0.1)
    w = init.variance_scaling(1.0, "fan_out", "normal", in_axis=(1,), out_axis=(0, 2))(
        key, shape)
    np.testing.assert_allclose(np.asarray(w, np.float64).var(), 1.0 / (4 * 32), rtol=0.1)
    with pytest.raises(ValueError, match="invalid mode"):
        init.variance_scaling(1.0, "fan_sideways", "normal")
    with pytest.raises(ValueError, match="invalid distribution"):
        init.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(ValueError, match="Must be at least 2D"):
        init.glorot_normal()(key, (5,))
    with pytest.raises(TypeError, match="floating dtype"):
        init.he_normal()(key, (3, 3), fnp.int32)


@pytest.mark.parametrize("name, scale, mode", [
    ("glorot_uniform", 1.0, "fan_avg"), ("glorot_normal", 1.0, "fan_avg"),
    ("lecun_uniform", 1.0, "fan_in"), ("lecun_normal", 1.0, "fan_in"),
    ("he_uniform", 2.0, "fan_in"), ("he_normal", 2.0, "fan_in"),
])
def test_named_initializers(name, scale, mode):
    shape = (80, 120)
    w = getattr(init, name)()(random.PRNGKey(3), shape)
    assert w.shape == shape and w.dtype == np.float32
    n = {"fan_in": 80, "fan_avg": 100}[mode]
    np.testing.assert_allclose(np.asarray(w, np.float64).var(), scale / n, rtol=0.1)
    w16 = getattr(init, name)(dtype=fnp.float16)(random.PRNGKey(3), (4, 4))
    assert w16.dtype == np.float16


def test_normal_uniform_truncated_normal():
    key = random.PRNGKey(4)
    w = np.asarray(init.normal(0.5)(key, (100, 100)), np.float64)
    np.testing.assert_allclose(w.std(), 0.5, rtol=0.05)
    u = np.asarray(init.uniform(0.3)(key, (100, 100)), np.float64)
    assert u.min() >= 0.0 and u.max() < 0.3
    np.testing.assert_allclose(u.mean(), 0.15, rtol=0.05)
    t = np.asarray(init.truncated_normal(2.0, lower=-1.0, upper=0.5)(key, (100, 100)),
                   np.float64)
    assert t.min() >= -2.0 * (1 + 1e-6) and t.max() <= 1.0 * (1 + 1e-6)
    t = np.asarray(init.truncated_normal(1.0)(key, (100, 100)), np.float64)
    np.testing.assert_allclose(t.std(), 0.87962566103423978, rtol=0.05)
    assert init.normal()(key, (2,), fnp.float16).dtype == np.float16


def test_initializers_are_deterministic_and_jit():
    key = random.PRNGKey(5)
    f = init.he_uniform()
    a, b = f(key, (3, 4)), f(key, (3, 4))
    np.testing.assert_array_equal(a, b)
    c = f(random.split(key)[0], (3, 4))
    assert not np.array_equal(np.asarray(a), np.asarray(c))
    j = functrax.jit(lambda k: f(k, (3, 4)))(key)
    np.testing.assert_allclose(j, a, rtol=1e-6)
