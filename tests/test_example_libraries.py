"""functrax.example_libraries (JAX's stax and optimizers): every layer's init_fun shape
against its apply_fun output, layer values against numpy references, parameters drawn as
JAX's stax draws them, the optimizers' first updates against numpy re-implementations of
JAX's formulas, schedules, OptimizerState as a pytree, serialization, training a small CNN,
and the errors."""
from __future__ import annotations

import doctest
import itertools
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax, random
from functrax.example_libraries import optimizers, stax
from functrax.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten

KEY = random.PRNGKey(0)
NAMES = os.path.join(os.path.dirname(__file__), "data", "jax_api_names.json")


def _normal(shape, seed=0):
    return np.random.RandomState(seed).standard_normal(shape).astype(np.float32)


def _close(a, b, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol)


# --- the API ---


@pytest.mark.parametrize("module,mod", [("stax", stax), ("optimizers", optimizers)])
def test_all_jax_names_are_provided(module, mod):
    with open(NAMES, encoding="utf-8") as f:
        names = json.load(f)["modules"][f"jax.example_libraries.{module}"]["names"]
    assert sorted(mod.__all__) == sorted(set(names) | ({"JoinPoint"} if module ==
                                                          "optimizers" else set()))
    assert [n for n in names if not hasattr(mod, n)] == []


def test_example_libraries_is_a_subpackage_only():
    # as jax.example_libraries: ``import functrax`` does not import it
    code = "import sys, functrax; print('functrax.example_libraries' in sys.modules)"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


@pytest.mark.parametrize("mod", [stax, optimizers])
def test_doctests(mod):
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 5


def test_aliases_are_jax_s():
    from functrax import nn
    assert stax.glorot is nn.initializers.glorot_normal
    assert stax.randn is nn.initializers.normal
    assert stax.logsoftmax is nn.log_softmax and stax.standardize is nn.standardize
    assert stax.zeros is nn.initializers.zeros and stax.ones is nn.initializers.ones


# --- init_fun's output shape is apply_fun's ---

ELEMENTWISE = ["Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu",
               "LeakyRelu", "Selu", "Gelu"]

# (id, layer, input shapes, apply kwargs)
LAYERS = [
    ("Dense", stax.Dense(5), [(3,), (2, 3), (2, 4, 3)], {}),
    ("Conv", stax.Conv(4, (3, 3)), [(2, 7, 7, 3), (1, 5, 6, 2)], {}),
    ("Conv-strided-same", stax.Conv(4, (3, 2), (2, 2), "SAME"), [(2, 7, 8, 3), (1, 5, 5, 1)],
     {}),
    ("Conv-pads", stax.Conv(2, (2, 2), padding=((1, 0), (2, 1))), [(1, 4, 5, 3)], {}),
    ("GeneralConv-NCHW", stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (3, 3), (1, 2), "SAME"),
     [(2, 3, 6, 7), (1, 1, 5, 5)], {}),
    ("GeneralConv-1d", stax.GeneralConv(("NWC", "WIO", "NWC"), 3, (2,)), [(2, 9, 4)], {}),
    ("ConvTranspose", stax.ConvTranspose(3, (3, 3), (2, 2), "SAME"),
     [(2, 4, 5, 2), (1, 3, 3, 1)], {}),
    ("ConvTranspose-valid", stax.ConvTranspose(2, (2, 3)), [(1, 4, 4, 3)], {}),
    ("Conv1DTranspose", stax.Conv1DTranspose(4, (3,), (2,)), [(2, 5, 3)], {}),
    ("GeneralConvTranspose", stax.GeneralConvTranspose(("NCHW", "OIHW", "NCHW"), 2, (2, 2),
                                                       (2, 1), "SAME"), [(1, 3, 4, 4)], {}),
    ("BatchNorm", stax.BatchNorm(), [(4, 3, 3, 2), (2, 5, 4, 3)], {}),
    ("BatchNorm-axis0", stax.BatchNorm(axis=0, center=False), [(6, 3), (5, 2, 2)], {}),
    ("BatchNorm-neg", stax.BatchNorm(axis=(0, -1), scale=False), [(6, 3, 2)], {}),
    ("Dropout-train", stax.Dropout(0.7), [(3, 4)], {"rng": random.PRNGKey(3)}),
    ("Dropout-test", stax.Dropout(0.7, mode="test"), [(3, 4)], {}),
    ("Flatten", stax.Flatten, [(2, 3, 4), (3, 5), (2, 1, 2, 3)], {}),
    ("Identity", stax.Identity, [(2, 3), ()], {}),
    ("MaxPool", stax.MaxPool((2, 2)), [(2, 5, 5, 3), (1, 4, 6, 2)], {}),
    ("MaxPool-strided-same", stax.MaxPool((3, 3), (2, 2), "SAME"), [(2, 7, 6, 3)], {}),
    ("SumPool", stax.SumPool((2, 3), (1, 2)), [(2, 6, 7, 2)], {}),
    ("AvgPool", stax.AvgPool((2, 2), (2, 2)), [(2, 6, 6, 3), (1, 5, 7, 1)], {}),
    ("AvgPool-same-NCHW", stax.AvgPool((3, 3), (2, 2), "SAME", spec="NCHW"),
     [(2, 3, 7, 6)], {}),
    ("AvgPool-1d", stax.AvgPool((2,), spec="NCW"), [(2, 3, 7)], {}),
    ("serial", stax.serial(stax.Dense(6), stax.Relu, stax.Dropout(0.5), stax.Dense(2)),
     [(4, 3)], {"rng": random.PRNGKey(1)}),
    ("fan-sum", stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Dense(3)),
                            stax.FanInSum), [(2, 4)], {}),
    ("fan-concat", stax.serial(stax.FanOut(3), stax.parallel(stax.Dense(3), stax.Identity,
                                                             stax.Dense(1)),
                               stax.FanInConcat()), [(2, 4)], {}),
    ("fan-concat-axis0", stax.serial(stax.FanOut(2), stax.parallel(stax.Identity,
                                                                   stax.Identity),
                                     stax.FanInConcat(0)), [(2, 4)], {}),
    ("shape_dependent", stax.shape_dependent(lambda s: stax.Dense(2 * s[-1])), [(3, 2)], {}),
    ("cnn", stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.BatchNorm(), stax.Relu,
                        stax.MaxPool((2, 2), (2, 2)), stax.Flatten, stax.Dense(3),
                        stax.LogSoftmax), [(2, 8, 8, 1)], {}),
] + [(n, getattr(stax, n), [(3, 4), (2, 3, 5)], {}) for n in ELEMENTWISE]


def _shapes(tree):
    """The shapes of an output pytree (lists and tuples of arrays)."""
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "shape"):
        return [_shapes(t) for t in tree]
    return tuple(tree.shape)


def _as_shapes(shape):
    if shape and isinstance(shape[0], (tuple, list)):
        return [_as_shapes(s) for s in shape]
    return tuple(shape)


@pytest.mark.parametrize("name,layer,shapes,kwargs", LAYERS, ids=[r[0] for r in LAYERS])
def test_init_shape_is_apply_shape(name, layer, shapes, kwargs):
    init_fun, apply_fun = layer
    for i, shape in enumerate(shapes):
        out_shape, params = init_fun(random.PRNGKey(i), shape)
        out = apply_fun(params, fnp.asarray(_normal(shape, i)), **kwargs)
        assert _shapes(out) == _as_shapes(out_shape), (name, shape)
        jitted = functrax.jit(lambda p, x: apply_fun(p, x, **kwargs))(params, _normal(shape))
        assert _shapes(jitted) == _as_shapes(out_shape), (name, shape)


def test_batch_size_minus_one_as_in_jax_examples():
    init_fun, apply_fun = stax.serial(stax.Dense(8), stax.Relu, stax.Dense(10),
                                      stax.LogSoftmax)
    out_shape, params = init_fun(KEY, (-1, 784))
    assert out_shape == (-1, 10)
    assert apply_fun(params, fnp.ones((3, 784))).shape == (3, 10)
    conv_init, _ = stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.Relu, stax.Flatten)
    assert conv_init(KEY, (-1, 6, 6, 1))[0] == (-1, 144)


# --- values against numpy ---


def _pads(in_shape, window, strides, padding):
    if not isinstance(padding, str):
        return list(padding)
    if padding == "VALID":
        return [(0, 0)] * len(in_shape)
    out = [-(-n // s) for n, s in zip(in_shape, strides)]
    total = [max((o - 1) * s + w - n, 0) for o, s, w, n in zip(out, strides, window, in_shape)]
    return [(t // 2, t - t // 2) for t in total]


def _conv_nhwc(x, w, strides, padding):
    """A direct NHWC x HWIO convolution in float64."""
    (lo_h, hi_h), (lo_w, hi_w) = _pads(x.shape[1:3], w.shape[:2], strides, padding)
    xp = np.pad(x.astype(np.float64), ((0, 0), (lo_h, hi_h), (lo_w, hi_w), (0, 0)))
    kh, kw = w.shape[:2]
    oh = (xp.shape[1] - kh) // strides[0] + 1
    ow = (xp.shape[2] - kw) // strides[1] + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i, j in itertools.product(range(oh), range(ow)):
        patch = xp[:, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw]
        out[:, i, j] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def _pool_nhwc(x, window, strides, padding, kind):
    """Max/sum/mean pooling over axes 1, 2 of ``x`` (mean over the unpadded elements)."""
    (lo_h, hi_h), (lo_w, hi_w) = _pads(x.shape[1:3], window, strides, padding)
    fill = -np.inf if kind == "max" else 0.0
    pad = ((0, 0), (lo_h, hi_h), (lo_w, hi_w), (0, 0))
    xp = np.pad(x.astype(np.float64), pad, constant_values=fill)
    ones = np.pad(np.ones(x.shape), pad)
    oh = (xp.shape[1] - window[0]) // strides[0] + 1
    ow = (xp.shape[2] - window[1]) // strides[1] + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i, j in itertools.product(range(oh), range(ow)):
        sl = (slice(None), slice(i * strides[0], i * strides[0] + window[0]),
              slice(j * strides[1], j * strides[1] + window[1]))
        if kind == "max":
            out[:, i, j] = xp[sl].max(axis=(1, 2))
        else:
            out[:, i, j] = xp[sl].sum(axis=(1, 2))
            if kind == "avg":
                out[:, i, j] /= ones[sl].sum(axis=(1, 2))
    return out


def test_dense_values():
    init_fun, apply_fun = stax.Dense(4)
    _, (W, b) = init_fun(KEY, (5, 3))
    x = _normal((5, 3))
    _close(apply_fun((W, b), x), x.astype(np.float64) @ np.asarray(W) + np.asarray(b))


@pytest.mark.parametrize("strides,padding", [((1, 1), "VALID"), ((2, 1), "SAME"),
                                             ((2, 2), "SAME"), ((1, 2), ((1, 2), (0, 1)))])
def test_conv_values(strides, padding):
    init_fun, apply_fun = stax.Conv(4, (3, 2), strides, padding,
                                    b_init=stax.normal(1.0))
    _, (W, b) = init_fun(KEY, (2, 7, 6, 3))
    x = _normal((2, 7, 6, 3))
    ref = _conv_nhwc(x, np.asarray(W), strides, padding) + np.asarray(b)
    _close(apply_fun((W, b), x), ref, rtol=1e-4)


def test_general_conv_layouts_agree_with_conv():
    _, conv = stax.Conv(3, (3, 3), (1, 2), "SAME")
    init_fun, general = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (3, 3), (1, 2), "SAME")
    out_shape, (W, b) = init_fun(KEY, (2, 4, 6, 5))
    assert W.shape == (3, 4, 3, 3) and b.shape == (1, 3, 1, 1)
    x = _normal((2, 4, 6, 5))
    nhwc = conv((fnp.transpose(W, (2, 3, 1, 0)), fnp.transpose(b, (0, 2, 3, 1))),
                fnp.transpose(x, (0, 2, 3, 1)))
    _close(general((W, b), x), np.transpose(np.asarray(nhwc), (0, 3, 1, 2)), rtol=1e-4)
    assert out_shape == (2, 3, 6, 3)


def test_conv_transpose_is_the_gradient_of_conv():
    # conv_transpose(y, W) (transpose_kernel=False, as stax) equals the VJP of a conv by the
    # spatially flipped, io-swapped kernel: check one case against that identity
    init_fun, apply_fun = stax.ConvTranspose(2, (3, 3), (1, 1), "VALID", b_init=stax.zeros)
    _, (W, b) = init_fun(KEY, (1, 4, 4, 3))
    y = _normal((1, 4, 4, 3))
    out = np.asarray(apply_fun((W, b), y))
    w_flipped = np.asarray(W)[::-1, ::-1].transpose(0, 1, 3, 2)  # HWOI -> as HWIO of a conv

    def conv(x):
        return lax.conv_general_dilated(x, fnp.asarray(w_flipped), (1, 1), "VALID",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    _, vjp = functrax.vjp(conv, fnp.zeros((1, 6, 6, 2)))
    _close(out, vjp(fnp.asarray(y))[0], rtol=1e-4)


@pytest.mark.parametrize("kind,layer", [("max", stax.MaxPool), ("sum", stax.SumPool),
                                        ("avg", stax.AvgPool)])
@pytest.mark.parametrize("window,strides,padding", [((2, 2), None, "VALID"),
                                                    ((3, 2), (2, 2), "SAME"),
                                                    ((2, 3), (2, 1), "SAME")])
def test_pool_values(kind, layer, window, strides, padding):
    _, apply_fun = layer(window, strides, padding)
    x = _normal((2, 7, 6, 3))
    ref = _pool_nhwc(x, window, strides or (1, 1), padding, kind)
    _close(apply_fun((), x), ref)


def test_pool_spec_nchw_matches_nhwc():
    x = _normal((2, 3, 7, 6))
    for layer in (stax.MaxPool, stax.AvgPool, stax.SumPool):
        nchw = layer((3, 2), (2, 2), "SAME", spec="NCHW")[1]((), x)
        nhwc = layer((3, 2), (2, 2), "SAME")[1]((), np.transpose(x, (0, 2, 3, 1)))
        _close(nchw, np.transpose(np.asarray(nhwc), (0, 3, 1, 2)))


@pytest.mark.parametrize("axis,center,scale", [((0, 1, 2), True, True), (0, True, False),
                                               ((0, 2), False, True), (-1, False, False)])
def test_batchnorm_values(axis, center, scale):
    shape = (5, 3, 4, 2)
    beta_init, gamma_init = stax.randn(1.0), stax.randn(1.0)
    init_fun, apply_fun = stax.BatchNorm(axis, 1e-3, center, scale, beta_init, gamma_init)
    out_shape, (beta, gamma) = init_fun(KEY, shape)
    axes = tuple(a % 4 for a in ((axis,) if isinstance(axis, int) else axis))
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    assert out_shape == shape
    assert (beta.shape if center else beta) == (kept if center else ())
    assert (gamma.shape if scale else gamma) == (kept if scale else ())
    x = _normal(shape).astype(np.float64) * 3 + 1
    mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-3)
    bshape = tuple(1 if i in axes else d for i, d in enumerate(shape))
    if scale:
        ref = ref * np.asarray(gamma).reshape(bshape)
    if center:
        ref = ref + np.asarray(beta).reshape(bshape)
    _close(apply_fun((beta, gamma), x.astype(np.float32)), ref, rtol=1e-4, atol=1e-4)


def test_batchnorm_default_params_are_zeros_and_ones():
    _, (beta, gamma) = stax.BatchNorm()[0](KEY, (2, 3, 3, 4))
    np.testing.assert_array_equal(beta, np.zeros(4))
    np.testing.assert_array_equal(gamma, np.ones(4))


def test_dropout_keeps_with_probability_rate_as_jax():
    # JAX's stax: ``rate`` is the probability of keeping; kept values are scaled by 1/rate
    _, apply_fun = stax.Dropout(0.8)
    x = _normal((50, 40)) + 5.0
    key = random.PRNGKey(7)
    out = np.asarray(apply_fun((), x, rng=key))
    keep = np.asarray(random.bernoulli(key, 0.8, x.shape))
    np.testing.assert_array_equal(out, np.where(keep, x / np.float32(0.8), 0))
    assert 0.75 < keep.mean() < 0.85
    np.testing.assert_array_equal(apply_fun((), x, rng=key), out)  # deterministic
    assert not np.array_equal(apply_fun((), x, rng=random.PRNGKey(8)), out)
    np.testing.assert_array_equal(stax.Dropout(0.8, "test")[1]((), x), x)


def test_serial_splits_the_apply_rng_per_layer():
    _, apply_fun = stax.serial(stax.Identity, stax.Dropout(0.5))
    x, key = fnp.ones((6, 6)), random.PRNGKey(2)
    expected = stax.Dropout(0.5)[1]((), x, rng=random.split(key, 2)[1])
    np.testing.assert_array_equal(apply_fun([(), ()], x, rng=key), expected)


def test_elementwise_layers_apply_their_functions():
    from functrax import nn
    x = _normal((3, 4))
    funs = {"Tanh": fnp.tanh, "Relu": nn.relu, "Exp": fnp.exp, "Softplus": nn.softplus,
            "Sigmoid": nn.sigmoid, "Elu": nn.elu, "LeakyRelu": nn.leaky_relu,
            "Selu": nn.selu, "Gelu": nn.gelu,
            "LogSoftmax": lambda v: nn.log_softmax(v, axis=-1),
            "Softmax": lambda v: nn.softmax(v, axis=-1)}
    for name, f in funs.items():
        _, apply_fun = getattr(stax, name)
        np.testing.assert_array_equal(apply_fun((), x, rng=KEY), f(x))
    _close(np.asarray(stax.Softmax[1]((), x)).sum(-1), np.ones(3))


def test_fan_layers_values():
    x = _normal((2, 3))
    init_fun, apply_fun = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3),
                                                                    stax.Identity),
                                      stax.FanInSum)
    _, params = init_fun(KEY, (2, 3))
    W, b = params[1][0]
    _close(apply_fun(params, x), x @ np.asarray(W) + np.asarray(b) + x)
    out = stax.FanInConcat(0)[1]((), [x, x * 2])
    np.testing.assert_array_equal(out, np.concatenate([x, 2 * x], 0))


# --- parameters drawn as JAX's stax draws them ---


def _jax_glorot_normal(key, shape, in_axis=-2, out_axis=-1):
    """JAX's glorot_normal sample, rounded as JAX rounds: a float32 variance, its float32
    square root, divided by the float32 stddev of the truncated normal."""
    receptive = math.prod(shape) / shape[in_axis] / shape[out_axis]
    fan_avg = (shape[in_axis] * receptive + shape[out_axis] * receptive) / 2
    stddev = np.sqrt(np.float32(1.0 / fan_avg)) / np.float32(0.87962566103423978)
    return np.asarray(random.truncated_normal(key, -2, 2, shape, fnp.float32)) * stddev


def test_dense_serial_params_are_drawn_as_jax_s():
    init_fun, _ = stax.serial(stax.Dense(5), stax.Relu, stax.Dense(2))
    key = random.PRNGKey(42)
    _, params = init_fun(key, (-1, 3))
    expected, shape = [], 3
    for out_dim in (5, None, 2):
        key, layer_key = random.split(key)
        if out_dim is None:
            expected.append(())
            continue
        k1, k2 = random.split(layer_key)
        W = _jax_glorot_normal(k1, (shape, out_dim))
        b = np.asarray(random.normal(k2, (out_dim,))) * np.float32(1e-2)
        expected.append((W, b))
        shape = out_dim
    assert params[1] == ()
    for (W, b), (eW, eb) in zip([params[0], params[2]], [expected[0], expected[2]]):
        assert W.dtype == np.float32 and b.dtype == np.float32
        np.testing.assert_array_equal(W, eW)  # bit-identical
        np.testing.assert_array_equal(b, eb)


def test_conv_params_are_drawn_as_jax_s():
    init_fun, _ = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 6, (3, 2))
    _, (W, b) = init_fun(KEY, (1, 4, 8, 8))
    k1, k2 = random.split(KEY)
    np.testing.assert_array_equal(W, _jax_glorot_normal(k1, (6, 4, 3, 2), 1, 0))
    np.testing.assert_array_equal(
        b, np.asarray(random.normal(k2, (1, 6, 1, 1))) * np.float32(1e-6))


def test_parallel_params_use_one_key_per_layer():
    init_fun, _ = stax.parallel(stax.Dense(2), stax.Dense(3))
    shapes, params = init_fun(KEY, [(1, 4), (1, 5)])
    assert shapes == ((1, 2), (1, 3))
    keys = random.split(KEY, 2)
    for (W, b), k, shape in zip(params, keys, [(4, 2), (5, 3)]):
        np.testing.assert_array_equal(W, stax.Dense(shape[1])[0](k, (1, shape[0]))[1][0])


# --- transforms through stax models ---


def test_grad_through_a_cnn_jit_equals_eager():
    init_fun, apply_fun = stax.serial(stax.Conv(3, (3, 3), padding="SAME"), stax.Relu,
                                      stax.AvgPool((2, 2), (2, 2)), stax.Flatten,
                                      stax.Dense(2), stax.LogSoftmax)
    _, params = init_fun(KEY, (2, 6, 6, 1))
    x = _normal((2, 6, 6, 1))

    def loss(p):
        return -fnp.mean(apply_fun(p, x)[:, 0])
    eager = functrax.grad(loss)(params)
    jitted = functrax.jit(functrax.grad(loss))(params)
    for a, b in zip(tree_leaves(eager), tree_leaves(jitted)):
        _close(a, b, rtol=1e-4, atol=1e-6)


def test_vmap_of_a_stax_model_is_a_loop():
    init_fun, apply_fun = stax.serial(stax.Dense(4), stax.Tanh, stax.Dense(2))
    _, params = init_fun(KEY, (3,))
    x = _normal((5, 3))
    batched = functrax.vmap(apply_fun, in_axes=(None, 0))(params, x)
    _close(batched, np.stack([np.asarray(apply_fun(params, xi)) for xi in x]))


def _blob_images(n, seed):
    """8x8 one-channel images with a bright 3x3 blob in one of 4 quadrants (the label)."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 4, n)
    x = 0.3 * rng.standard_normal((n, 8, 8, 1)).astype(np.float32)
    for i, q in enumerate(labels):
        r, c = 4 * (q // 2) + rng.randint(0, 2), 4 * (q % 2) + rng.randint(0, 2)
        x[i, r:r + 3, c:c + 3, 0] += 2.0
    return x, np.eye(4, dtype=np.float32)[labels]


def test_a_small_cnn_trains():
    init_fun, predict = stax.serial(stax.Conv(8, (3, 3), padding="SAME"), stax.Relu,
                                    stax.MaxPool((2, 2), (2, 2)), stax.Flatten,
                                    stax.Dense(4), stax.LogSoftmax)
    _, params = init_fun(KEY, (-1, 8, 8, 1))
    opt_init, opt_update, get_params = optimizers.adam(0.01)
    x, y = _blob_images(64, 0)

    def loss(p, batch):
        inputs, targets = batch
        return -fnp.mean(fnp.sum(predict(p, inputs) * targets, axis=1))

    @functrax.jit
    def step(i, opt_state, batch):
        value, grads = functrax.value_and_grad(loss)(get_params(opt_state), batch)
        return opt_update(i, grads, opt_state), value

    opt_state, losses = opt_init(params), []
    for i in range(12):
        opt_state, value = step(i, opt_state, (x, y))
        losses.append(float(value))
    assert losses[-1] < 0.6 * losses[0], losses
    pred = np.argmax(np.asarray(predict(get_params(opt_state), x)), 1)
    assert (pred == y.argmax(1)).mean() > 0.5


# --- optimizers against numpy re-implementations of JAX's formulas ---


def _np_opt(name, lr, **hp):
    """(init, update) on one float64 numpy array, as JAX's optimizers.py computes them."""
    def zeros_like_all(x, n):
        return (x,) + tuple(np.zeros_like(x) for _ in range(n))

    def sgd(i, g, s):
        return s - lr * g

    def momentum(i, g, s):
        x, v = s
        v = hp["mass"] * v + g
        return x - lr * v, v

    def nesterov(i, g, s):
        x, v = s
        v = hp["mass"] * v + g
        return x - lr * (hp["mass"] * v + g), v

    def adagrad(i, g, s):
        x, gsq, m = s
        mom = hp.get("momentum", 0.9)
        gsq = gsq + g ** 2
        inv = np.where(gsq > 0, 1 / np.sqrt(np.where(gsq > 0, gsq, 1)), 0)
        m = (1 - mom) * g * inv + mom * m
        return x - lr * m, gsq, m

    def rmsprop(i, g, s):
        x, a = s
        a = 0.9 * a + 0.1 * g ** 2
        return x - lr * g / np.sqrt(a + 1e-8), a

    def rmsprop_momentum(i, g, s):
        x, a, mom = s
        a = 0.9 * a + 0.1 * g ** 2
        mom = 0.9 * mom + lr * g / np.sqrt(a + 1e-8)
        return x - mom, a, mom

    def adam(i, g, s):
        x, m, v = s
        m = 0.1 * g + 0.9 * m
        v = 0.001 * g ** 2 + 0.999 * v
        mhat, vhat = m / (1 - 0.9 ** (i + 1)), v / (1 - 0.999 ** (i + 1))
        return x - lr * mhat / (np.sqrt(vhat) + 1e-8), m, v

    def adamax(i, g, s):
        x, m, u = s
        m = 0.1 * g + 0.9 * m
        u = np.maximum(0.999 * u, np.abs(g))
        return x - lr / (1 - 0.9 ** (i + 1)) * m / (u + 1e-8), m, u

    def sm3(i, g, s):
        x, m, vs = s
        g = g.reshape(x.shape)
        nd = x.ndim
        accum = np.min(np.stack(np.broadcast_arrays(
            *[v.reshape([-1 if d == a else 1 for d in range(nd)]) for a, v in enumerate(vs)])),
            0) + g ** 2
        inv = np.where(accum > 0, 1 / np.sqrt(np.where(accum > 0, accum, 1)), 0)
        m = 0.1 * g * inv + 0.9 * m
        x = x - lr * m
        vs = [accum.max(axis=tuple(d for d in range(nd) if d != a)) for a in range(nd)]
        return x, m, vs

    n_state = {"sgd": 0, "momentum": 1, "nesterov": 1, "adagrad": 2, "rmsprop": 1,
               "rmsprop_momentum": 2, "adam": 2, "adamax": 2}

    def init(x):
        if name == "sgd":
            return x
        if name == "sm3":
            x1 = np.atleast_1d(x)
            return x1, np.zeros_like(x1), [np.zeros(n) for n in x1.shape]
        return zeros_like_all(x, n_state[name])

    def params(s):
        return s if name == "sgd" else s[0]
    return init, locals()[name], params


OPTIMIZERS = [
    ("sgd", lambda: optimizers.sgd(0.1), {}),
    ("momentum", lambda: optimizers.momentum(0.1, mass=0.8), {"mass": 0.8}),
    ("nesterov", lambda: optimizers.nesterov(0.1, 0.8), {"mass": 0.8}),
    ("adagrad", lambda: optimizers.adagrad(0.1), {}),
    ("rmsprop", lambda: optimizers.rmsprop(0.1), {}),
    ("rmsprop_momentum", lambda: optimizers.rmsprop_momentum(0.1), {}),
    ("adam", lambda: optimizers.adam(0.1), {}),
    ("adamax", lambda: optimizers.adamax(0.1), {}),
    ("sm3", lambda: optimizers.sm3(0.1), {}),
]
PARAMS = {"w": _normal((3, 2), 1), "b": _normal((2,), 2), "s": np.float32(0.5)}


def _grads(step):
    g = {k: _normal(np.shape(v), 10 + step) for k, v in PARAMS.items()}
    g["b"][0] = 0.0  # a zero gradient (adagrad's and sm3's where(... > 0) branches)
    return g


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name,make,hp", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_first_three_updates_match_numpy(name, make, hp, jit):
    opt_init, opt_update, get_params = make()
    update = functrax.jit(opt_update) if jit else opt_update
    state = opt_init({k: fnp.asarray(v) for k, v in PARAMS.items()})
    np_init, np_update, np_params = _np_opt(name, 0.1, **hp)
    ref = {k: np_init(np.asarray(v, np.float64)) for k, v in PARAMS.items()}
    for i in range(3):
        g = _grads(i)
        state = update(i, {k: fnp.asarray(v) for k, v in g.items()}, state)
        ref = {k: np_update(i, np.asarray(g[k], np.float64), ref[k]) for k in ref}
        got = get_params(state)
        for k in PARAMS:
            assert np.shape(got[k]) == np.shape(PARAMS[k]), (name, k)
            assert got[k].dtype == np.float32
            _close(got[k], np.reshape(np_params(ref[k]), np.shape(PARAMS[k])), rtol=2e-5,
                   atol=2e-6)


def test_adam_first_step_moves_each_weight_by_the_step_size():
    # bias correction at step 0: mhat = g, vhat = g**2, so the update is lr * sign(g)
    opt_init, opt_update, get_params = optimizers.adam(0.01)
    x = get_params(opt_update(0, fnp.array([3.0, -0.5]), opt_init(fnp.zeros(2))))
    _close(x, [-0.01, 0.01], rtol=1e-5)


def test_schedule_step_size_is_read_at_each_step():
    opt_init, opt_update, get_params = optimizers.sgd(lambda i: 0.1 * (i + 1))
    state = opt_init(fnp.zeros(()))
    for i in range(3):
        state = functrax.jit(opt_update)(i, fnp.ones(()), state)
    _close(get_params(state), -(0.1 + 0.2 + 0.3))


def test_optimizer_decorator_keeps_names_and_maps_over_trees():
    assert optimizers.adam.__name__ == "adam"
    opt = optimizers.sgd(0.5)
    assert isinstance(opt, optimizers.Optimizer) and opt._fields == ("init_fn", "update_fn",
                                                                    "params_fn")
    params = {"a": [fnp.ones(2), fnp.zeros(())], "b": (fnp.ones(1),)}
    new = opt.params_fn(opt.update_fn(0, tree_map(fnp.ones_like, params), opt.init_fn(params)))
    assert tree_flatten(new)[1] == tree_flatten(params)[1]
    _close(new["a"][0], [0.5, 0.5])


# --- schedules ---


def test_schedules_values():
    assert optimizers.constant(0.3)(17) == 0.3
    _close(optimizers.exponential_decay(0.1, 10, 0.5)(15), 0.1 * 0.5 ** 1.5)
    _close(optimizers.inverse_time_decay(0.1, 10, 0.5)(15), 0.1 / (1 + 0.5 * 1.5))
    _close(optimizers.inverse_time_decay(0.1, 10, 0.5, staircase=True)(15), 0.1 / 1.5)
    poly = optimizers.polynomial_decay(1.0, 10, 0.1, power=2.0)
    for i in (0, 4, 10, 25):
        _close(poly(i), (1 - min(i, 10) / 10) ** 2 * 0.9 + 0.1)
    pc = optimizers.piecewise_constant([5, 10], [1.0, 0.5, 0.25])
    assert [float(pc(i)) for i in (0, 5, 6, 10, 11, 100)] == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]


def test_schedules_under_jit():
    for schedule in (optimizers.exponential_decay(0.1, 10, 0.5),
                     optimizers.inverse_time_decay(0.1, 10, 0.5, True),
                     optimizers.polynomial_decay(1.0, 10, 0.1),
                     optimizers.piecewise_constant([5, 10], [1.0, 0.5, 0.25])):
        jitted = functrax.jit(schedule)
        for i in (0, 7, 12):
            _close(jitted(i), schedule(i))


def test_make_schedule():
    f = optimizers.make_schedule(lambda i: i)
    assert f(3) == 3
    assert optimizers.make_schedule(0.2)(100) == 0.2
    assert float(optimizers.make_schedule(np.float32(0.5))(1)) == 0.5
    with pytest.raises(TypeError, match="scalar or a callable schedule"):
        optimizers.make_schedule([0.1, 0.2])
    with pytest.raises(TypeError, match="scalar or a callable schedule"):
        optimizers.sgd(np.ones(3))


def test_piecewise_constant_errors():
    with pytest.raises(ValueError, match="boundaries and values must be sequences"):
        optimizers.piecewise_constant(5, [1.0, 2.0])
    with pytest.raises(ValueError, match="one shorter than values"):
        optimizers.piecewise_constant([5, 6], [1.0, 2.0])


# --- OptimizerState, serialization, utilities ---


def test_optimizer_state_is_a_pytree():
    opt_init, opt_update, get_params = optimizers.momentum(0.1, 0.9)
    params = {"w": fnp.ones((2, 2)), "b": fnp.zeros(2)}
    state = opt_init(params)
    assert isinstance(state, optimizers.OptimizerState)
    assert state._fields == ("packed_state", "tree_def", "subtree_defs")
    leaves, treedef = tree_flatten(state)
    # per parameter leaf (b, w: sorted dict keys): (x, velocity)
    assert [tuple(x.shape) for x in leaves] == [(2,), (2,), (2, 2), (2, 2)]
    assert state.tree_def == tree_flatten(params)[1]
    rebuilt = tree_unflatten(treedef, [x + 1 for x in leaves])
    assert isinstance(rebuilt, optimizers.OptimizerState)
    assert rebuilt.tree_def == state.tree_def and rebuilt.subtree_defs == state.subtree_defs
    _close(get_params(rebuilt)["w"], 2 * np.ones((2, 2)))
    doubled = tree_map(lambda x: 2 * x, state)
    _close(get_params(doubled)["b"], np.zeros(2))
    # through jit as an argument and a result
    out = functrax.jit(lambda s: opt_update(0, {"w": fnp.ones((2, 2)), "b": fnp.ones(2)}, s))(
        state)
    assert isinstance(out, optimizers.OptimizerState) and out.tree_def == state.tree_def


def test_pack_unpack_round_trip():
    opt_init, opt_update, get_params = optimizers.adam(0.1)
    params = {"w": fnp.ones((2, 2)), "layers": [fnp.zeros(3), (fnp.ones(()),)]}
    state = opt_update(0, tree_map(fnp.ones_like, params), opt_init(params))
    marked = optimizers.unpack_optimizer_state(state)
    assert isinstance(marked["w"], optimizers.JoinPoint)
    x, m, v = marked["w"].subtree
    _close(x, get_params(state)["w"])
    assert list(marked["w"]) == [marked["w"].subtree]
    packed = optimizers.pack_optimizer_state(marked)
    assert isinstance(packed, optimizers.OptimizerState)
    assert packed.tree_def == state.tree_def and packed.subtree_defs == state.subtree_defs
    for a, b in zip(tree_leaves(packed), tree_leaves(state)):
        np.testing.assert_array_equal(a, b)
    # a copy made of plain numpy arrays (as after pickling) packs into a working state
    copied = tree_map(lambda j: optimizers.JoinPoint(tree_map(np.asarray, j.subtree)),
                      marked, is_leaf=lambda j: isinstance(j, optimizers.JoinPoint))
    restored = optimizers.pack_optimizer_state(copied)
    nxt = opt_update(1, tree_map(fnp.ones_like, params), restored)
    _close(get_params(nxt)["w"], get_params(opt_update(1, tree_map(fnp.ones_like, params),
                                                       state))["w"])


def test_pack_rejects_leaves_that_are_not_join_points():
    with pytest.raises(TypeError, match="every leaf must be a JoinPoint"):
        optimizers.pack_optimizer_state({"w": fnp.ones(2)})


def test_l2_norm_and_clip_grads():
    tree = {"a": fnp.array([3.0, 0.0]), "b": [fnp.array([[4.0]])]}
    _close(optimizers.l2_norm(tree), 5.0)
    clipped = optimizers.clip_grads(tree, 1.0)
    _close(clipped["a"], [0.6, 0.0])
    _close(clipped["b"][0], [[0.8]])
    kept = optimizers.clip_grads(tree, 10.0)
    np.testing.assert_array_equal(kept["a"], tree["a"])
    _close(functrax.jit(optimizers.l2_norm)(tree), 5.0)


# --- errors ---


def test_update_with_a_mismatched_gradient_tree():
    opt_init, opt_update, _ = optimizers.sgd(0.1)
    state = opt_init({"w": fnp.ones(2)})
    with pytest.raises(TypeError, match="did not match the parameter tree structure"):
        opt_update(0, {"v": fnp.ones(2)}, state)
    with pytest.raises(TypeError, match="opt_state must be the OptimizerState"):
        opt_update(0, {"w": fnp.ones(2)}, {"w": fnp.ones(2)})


def test_update_changing_a_state_structure():
    @optimizers.optimizer
    def bad():
        return (lambda x: (x, x)), (lambda i, g, s: s[0]), (lambda s: s)
    opt_init, opt_update, _ = bad()
    with pytest.raises(TypeError, match="did not match its input structure"):
        opt_update(0, fnp.ones(2), opt_init(fnp.ones(2)))


def test_dense_errors():
    init_fun, apply_fun = stax.Dense(3)
    _, params = init_fun(KEY, (2, 4))
    with pytest.raises(TypeError, match=r"Dense apply_fun: inputs of shape \(2, 5\) have 5 "
                                        r"features, but the weights of shape \(4, 3\)"):
        apply_fun(params, fnp.ones((2, 5)))
    with pytest.raises(ValueError, match="input_shape \\(\\) has rank 0"):
        init_fun(KEY, ())
    with pytest.raises(TypeError, match="input_shape must be a tuple of ints"):
        init_fun(KEY, (2, 4.5))
    with pytest.raises(ValueError, match="Dense: out_dim must be positive"):
        stax.Dense(0)


def test_conv_errors():
    with pytest.raises(ValueError, match="filter_shape \\(3,\\) has 1 dimensions"):
        stax.Conv(4, (3,))
    with pytest.raises(TypeError, match="dimension_numbers must be three spec strings"):
        stax.GeneralConv(("NHWC", "HWIO"), 4, (3, 3))
    with pytest.raises(ValueError, match="invalid dimension_numbers"):
        stax.GeneralConv(("NHWC", "HWXY", "NHWC"), 4, (3, 3))
    init_fun, apply_fun = stax.Conv(4, (3, 3))
    with pytest.raises(ValueError, match="GeneralConv init_fun: input_shape \\(5, 5, 3\\) has "
                                         "rank 3, but the layer needs inputs of rank 4"):
        init_fun(KEY, (5, 5, 3))
    _, params = init_fun(KEY, (1, 5, 5, 3))
    with pytest.raises(TypeError, match="GeneralConv apply_fun: inputs of shape \\(5, 5, 3\\)"):
        apply_fun(params, fnp.ones((5, 5, 3)))


def test_pool_errors():
    with pytest.raises(ValueError, match="MaxPool init_fun: input_shape \\(4, 4, 3\\) has "
                                         "rank 3, but the layer needs inputs of rank 4"):
        stax.MaxPool((2, 2))[0](KEY, (4, 4, 3))
    with pytest.raises(ValueError, match="spec must be a string of 4 letters"):
        stax.AvgPool((2, 2), spec="NHW")
    with pytest.raises(ValueError, match="strides \\(1,\\) and window_shape \\(2, 2\\)"):
        stax.SumPool((2, 2), (1,))
    with pytest.raises(TypeError, match="AvgPool apply_fun: inputs of shape \\(4, 4\\)"):
        stax.AvgPool((2, 2))[1]((), fnp.ones((4, 4)))


def test_combinator_errors():
    with pytest.raises(TypeError, match="layer 1 is not an \\(init_fun, apply_fun\\) pair.*"
                                        "Dense\\(10\\), not Dense"):
        stax.serial(stax.Relu, stax.Dense)
    with pytest.raises(ValueError, match="serial: needs at least one layer"):
        stax.serial()
    init_fun, apply_fun = stax.serial(stax.Dense(2), stax.Relu)
    _, params = init_fun(KEY, (1, 3))
    with pytest.raises(ValueError, match="serial apply_fun: got 1 params for 2 layers"):
        apply_fun(params[:1], fnp.ones((1, 3)))
    with pytest.raises(ValueError, match="parallel apply_fun: got 1 inputs for 2 layers"):
        stax.parallel(stax.Identity, stax.Identity)[1]([(), ()], [fnp.ones(2)])
    with pytest.raises(ValueError, match="FanInConcat init_fun: needs a list of input shapes "
                                         "that agree except on axis 1"):
        stax.FanInConcat()[0](KEY, [(2, 3), (3, 3)])
    with pytest.raises(ValueError, match="FanInSum init_fun: needs a list of input shapes"):
        stax.FanInSum[0](KEY, [(2, 3), (2, 4)])


def test_dropout_errors():
    _, apply_fun = stax.Dropout(0.5)
    with pytest.raises(ValueError, match="requires apply_fun to be called with a PRNG key"):
        apply_fun((), fnp.ones(3))
    with pytest.raises(ValueError, match="either `'train'` or `'test'`"):
        stax.Dropout(0.5, mode="eval")[1]((), fnp.ones(3), rng=KEY)


def test_batchnorm_errors():
    with pytest.raises(ValueError, match="BatchNorm: axis \\(0, 3\\) is out of range"):
        stax.BatchNorm(axis=(0, 3))[0](KEY, (2, 3))
