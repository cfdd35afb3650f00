"""functrax.nn layers as pytree modules: the Module machinery (fields, static aux data,
freezing, repr), the helpers (partition/combine/count_params/cast/tree_at/inference_mode),
Linear/Embedding/Identity/Sequential/MLP/Lambda against numpy, and the acceptance checks:
per-example gradients under vmap(grad) equal a Python loop, and a jitted model trains.

Convolutions and pooling: tests/test_nn_layers_conv.py; normalisation, dropout and
attention: tests/test_nn_layers_norm.py.
"""
import dataclasses
import doctest
import importlib

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import nn
from functrax import tree_util as tu
from functrax.test_util import check_grads

KEY = functrax.random.key


def keys(n, seed=0):
    k = functrax.random.split(KEY(seed), n)
    return [k[i] for i in range(n)]


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def to64(tree):
    """Float leaves as float64 numpy arrays (check_grads makes them float64 Arrays)."""
    return tu.tree_map(lambda a: np.asarray(a, np.float64) if nn.is_inexact_array(a) else a,
                       tree)


def a(x):
    return np.asarray(x)


# --- Module: fields, static data, freezing, repr ---


class Affine(nn.Module):
    w: object
    b: object
    name: str = nn.field(static=True, default="affine")
    scale: float = 2.0

    def __call__(self, x):
        return self.scale * (x * self.w + self.b)


def test_module_is_a_keyed_pytree_with_static_fields_in_the_treedef():
    m = Affine(fnp.ones(3), fnp.zeros(3))
    leaves, treedef = tu.tree_flatten_with_path(m)
    assert [tu.keystr(p) for p, _ in leaves] == [".w", ".b"]
    back = tu.tree_unflatten(treedef, [leaf for _, leaf in leaves])
    assert type(back) is Affine and back.name == "affine" and back.scale == 2.0
    assert back.w is m.w
    # static values are aux data: a different value gives a different treedef
    assert tu.tree_structure(Affine(fnp.ones(3), 0.0, scale=3.0)) != tu.tree_structure(
        Affine(fnp.ones(3), 0.0))
    # a field holding no array (here b=0.0) is static too
    assert len(tu.tree_leaves(Affine(fnp.ones(3), 0.0))) == 1


def test_module_is_frozen_after_init_and_checks_its_fields():
    m = Affine(fnp.ones(3), fnp.zeros(3))
    with pytest.raises(dataclasses.FrozenInstanceError, match=r"Affine\.w.*tree_at"):
        m.w = fnp.zeros(3)

    class Bad(nn.Module):
        w: object

        def __init__(self):
            self.v = 1

    with pytest.raises(AttributeError, match="'v', which is not a field"):
        Bad()

    class Missing(nn.Module):
        w: object
        u: object

        def __init__(self):
            self.w = 1

    with pytest.raises(ValueError, match=r"Missing.__init__ did not set the field 'u'"):
        Missing()

    class ArrayStatic(nn.Module):
        w: object = nn.field(static=True)

    with pytest.raises(TypeError, match=r"ArrayStatic.w is declared field\(static=True\)"):
        ArrayStatic(fnp.ones(2))


def test_subclass_of_a_custom_init_keeps_it_and_repr_is_readable():
    class Sub(nn.Linear):
        pass

    s = Sub(3, 4, key=KEY(0))
    assert s.weight.shape == (3, 4)
    assert repr(nn.Linear(3, 4, key=KEY(0))) == (
        "Linear(weight=f32[3,4], bias=f32[4], in_features=3, out_features=4, use_bias=True)")
    r = repr(nn.Sequential([nn.Linear(2, 2, key=KEY(0)), nn.relu]))
    assert "Lambda(fn=relu)" in r and "\n" in r


def test_jit_takes_a_model_and_does_not_retrace_for_new_parameter_values():
    traces = []

    @functrax.jit
    def apply(model, x):
        traces.append(1)
        return model(x)

    m1, m2 = nn.Linear(3, 2, key=KEY(0)), nn.Linear(3, 2, key=KEY(1))
    x = fnp.asarray(rand(3))
    np.testing.assert_allclose(a(apply(m1, x)), a(m1(x)), rtol=1e-6)
    np.testing.assert_allclose(a(apply(m2, x)), a(m2(x)), rtol=1e-6)
    assert len(traces) == 1
    apply(nn.Linear(3, 2, use_bias=False, key=KEY(0)), x)  # a new static value: retraces
    assert len(traces) == 2


def test_pmap_and_vmap_take_a_model():
    m = nn.MLP(3, 2, 4, 1, key=KEY(0))
    xs = fnp.asarray(rand(1, 3))
    out = functrax.pmap(lambda m, x: m(x), in_axes=(None, 0))(m, xs)
    np.testing.assert_allclose(a(out), a(m(xs[0]))[None], rtol=1e-6)
    # a batch of models (vmap over the parameters)
    ms = functrax.vmap(lambda k: nn.Linear(3, 2, key=k))(functrax.random.split(KEY(0), 4))
    assert ms.weight.shape == (4, 3, 2)
    out = functrax.vmap(lambda m, x: m(x), in_axes=(0, None))(ms, xs[0])
    assert out.shape == (4, 2)


# --- helpers ---


def test_partition_combine_count_params_and_cast():
    model = nn.Sequential([nn.Linear(3, 4, key=KEY(0)), nn.Embedding(5, 2, key=KEY(1))])
    params, static = nn.partition(model)
    assert all(nn.is_array(x) for x in tu.tree_leaves(params))
    assert tu.tree_leaves(static) == []
    back = nn.combine(params, static)
    assert tu.tree_structure(back) == tu.tree_structure(model)
    assert all(x is y for x, y in zip(tu.tree_leaves(back), tu.tree_leaves(model)))
    assert nn.count_params(model) == 3 * 4 + 4 + 5 * 2
    tree = {"w": fnp.ones(2), "i": fnp.arange(3), "k": KEY(0), "m": model}
    assert nn.count_params(tree) == 2 + nn.count_params(model)
    cast = nn.cast(tree, fnp.bfloat16)
    assert cast["w"].dtype == fnp.bfloat16 and cast["m"].layers[0].weight.dtype == fnp.bfloat16
    assert cast["i"].dtype == tree["i"].dtype and cast["k"].dtype == tree["k"].dtype
    x = fnp.asarray(rand(3)).astype(fnp.bfloat16)
    assert cast["m"].layers[0](x).dtype == fnp.bfloat16
    with pytest.raises(TypeError, match="cast: dtype must be a floating dtype"):
        nn.cast(tree, np.int32)
    # partition by a custom filter: only the Linear's weight
    w_only, rest = nn.partition(model, lambda x: nn.is_array(x) and x.shape == (3, 4))
    assert len(tu.tree_leaves(w_only)) == 1 and len(tu.tree_leaves(rest)) == 2


def test_tree_at_replaces_leaves_subtrees_and_static_fields():
    model = nn.Sequential([nn.Linear(3, 4, key=KEY(0)), nn.Dropout(0.5)])
    new = nn.tree_at(lambda m: m.layers[0].weight, model, fnp.zeros((3, 4)))
    assert float(fnp.abs(new.layers[0].weight).sum()) == 0.0
    assert float(fnp.abs(model.layers[0].weight).sum()) > 0  # unchanged
    new = nn.tree_at(lambda m: (m.layers[0].bias, m.layers[1].p), model, (fnp.ones(4), 0.1))
    assert new.layers[1].p == 0.1 and float(new.layers[0].bias.sum()) == 4.0
    assert tu.tree_structure(new) != tu.tree_structure(model)  # p is static
    new = nn.tree_at(lambda m: m.layers[0], model, replace_fn=lambda old: nn.Identity())
    assert isinstance(new.layers[0], nn.Identity)
    # replacing an array by None keeps it a child (partition-style trees stay aligned)
    none_w = nn.tree_at(lambda m: m.layers[0].weight, model, None)
    assert tu.tree_structure(none_w, is_leaf=lambda x: x is None) == tu.tree_structure(
        model, is_leaf=lambda x: x is None)
    with pytest.raises(ValueError, match="tree_at: `where` must return nodes"):
        nn.tree_at(lambda m: 3, model, 1)
    with pytest.raises(ValueError, match="selected 2 nodes but `replace` has 1"):
        nn.tree_at(lambda m: (m.layers[0].weight, m.layers[0].bias), model, [None])
    with pytest.raises(TypeError, match="exactly one of replace"):
        nn.tree_at(lambda m: m.layers[0], model)


def test_inference_mode_turns_dropout_off_everywhere():
    model = nn.Sequential([nn.Dropout(0.5), nn.Sequential([nn.Dropout(0.9)])])
    inf = nn.inference_mode(model)
    assert inf.layers[0].inference and inf.layers[1].layers[0].inference
    x = fnp.ones(10)
    np.testing.assert_array_equal(a(inf(x)), a(x))  # no key needed
    assert not nn.inference_mode(inf, False).layers[1].layers[0].inference


# --- Linear, Identity, Embedding ---


@pytest.mark.parametrize("use_bias", [True, False])
def test_linear_matches_numpy_with_leading_dims(use_bias):
    lin = nn.Linear(3, 5, use_bias=use_bias, key=KEY(0))
    assert lin.weight.shape == (3, 5) and (lin.bias is None) != use_bias
    if use_bias:
        np.testing.assert_array_equal(a(lin.bias), np.zeros(5))  # zeros, as Flax
    x = rand(2, 4, 3)
    want = x @ a(lin.weight) + (a(lin.bias) if use_bias else 0)
    np.testing.assert_allclose(a(lin(fnp.asarray(x))), want, rtol=1e-5, atol=1e-6)
    # reverse-mode gradient against numpy: d/dW sum(c * (x W + b)) = x^T c
    c = rand(2, 4, 5, seed=1)
    g = functrax.grad(lambda m: fnp.sum(m(fnp.asarray(x)) * c))(lin)
    np.testing.assert_allclose(a(g.weight), np.einsum("abi,abo->io", x, c), rtol=1e-5)
    if use_bias:
        np.testing.assert_allclose(a(g.bias), c.sum((0, 1)), rtol=1e-5)


def test_linear_init_is_lecun_normal_and_takes_custom_initializers_and_dtype():
    w = a(nn.Linear(400, 300, key=KEY(0)).weight)
    assert abs(w.std() - 1 / np.sqrt(400)) < 0.05 / np.sqrt(400)
    lin = nn.Linear(2, 3, key=KEY(0), dtype=fnp.float16,
                    kernel_init=nn.initializers.ones, bias_init=nn.initializers.constant(7))
    assert lin.weight.dtype == np.float16 and float(lin.bias[0]) == 7.0
    np.testing.assert_array_equal(a(lin.weight), np.ones((2, 3)))


def test_linear_gradcheck_float64():
    lin = to64(nn.Linear(3, 2, key=KEY(0)))
    check_grads(lambda m, x: fnp.tanh(m(x)), (lin, rand(4, 3, dtype=np.float64)), 2)


def test_identity_and_lambda():
    x = fnp.asarray(rand(3))
    assert nn.Identity()(x, key=KEY(0)) is x
    np.testing.assert_allclose(a(nn.Lambda(fnp.tanh)(x)), np.tanh(a(x)), rtol=1e-6)
    assert tu.tree_leaves(nn.Lambda(fnp.tanh)) == []


def test_embedding_matches_indexing_and_scatters_its_gradient():
    emb = nn.Embedding(6, 4, key=KEY(0))
    idx = np.array([[0, 5], [2, 2]])
    np.testing.assert_array_equal(a(emb(fnp.asarray(idx))), a(emb.weight)[idx])
    g = functrax.grad(lambda m: fnp.sum(m(fnp.asarray(idx))))(emb)
    want = np.zeros((6, 4))
    np.add.at(want, idx.ravel(), 1.0)
    np.testing.assert_allclose(a(g.weight), want)
    # Flax's default: variance_scaling(1, fan_in, normal, out_axis=0): stddev 1/sqrt(features)
    w = a(nn.Embedding(500, 100, key=KEY(1)).weight)
    assert abs(w.std() - 0.1) < 0.005
    with pytest.raises(TypeError, match=r"Embedding: indices must be integers, got dtype "
                                        r"float32 \(shape \(2,\)\)"):
        emb(fnp.ones(2))
    with pytest.raises(IndexError, match=r"indices must lie in \[0, 6\), got values from 0 "
                                         r"to 6"):
        emb(fnp.array([0, 6]))


# --- containers ---


def test_sequential_splits_the_key_over_the_layers_that_take_one():
    lin = nn.Linear(4, 4, key=KEY(0))
    seq = nn.Sequential([lin, fnp.tanh, nn.Dropout(0.5)])
    x, key = fnp.asarray(rand(4)), KEY(3)
    k = functrax.random.split(key, 3)
    want = nn.Dropout(0.5)(fnp.tanh(lin(x)), key=k[2])
    np.testing.assert_array_equal(a(seq(x, key=key)), a(want))
    with pytest.raises(ValueError, match=r"Dropout\(p=0.5\): training mode needs a PRNG key"):
        seq(x)
    assert isinstance(seq[1], nn.Lambda) and len(seq[:2]) == 2 and list(seq)[0] is lin
    with pytest.raises(TypeError, match="Sequential: layer 0 is not callable"):
        nn.Sequential([3])


def test_mlp_matches_numpy():
    mlp = nn.MLP(3, 2, width_size=5, depth=2, activation=fnp.tanh,
                 final_activation=nn.sigmoid, key=KEY(0))
    assert [lin.weight.shape for lin in mlp.layers] == [(3, 5), (5, 5), (5, 2)]
    x = rand(3)
    h = x
    for lin in mlp.layers[:-1]:
        h = np.tanh(h @ a(lin.weight) + a(lin.bias))
    want = 1 / (1 + np.exp(-(h @ a(mlp.layers[-1].weight) + a(mlp.layers[-1].bias))))
    np.testing.assert_allclose(a(mlp(fnp.asarray(x))), want, rtol=1e-5)
    assert len(nn.MLP(3, 2, 5, 0, key=KEY(0)).layers) == 1
    assert nn.MLP(3, 2, 5, 1, use_final_bias=False, key=KEY(0)).layers[-1].bias is None
    # activation functions are static: the only leaves are the Linear parameters
    assert len(tu.tree_leaves(mlp)) == 6


def test_missing_init_key_names_the_layer():
    with pytest.raises(ValueError, match=r"Linear: initialising the parameters needs a PRNG "
                                         r"key; pass key=functrax.random.key\(0\)"):
        nn.Linear(2, 3)
    with pytest.raises(ValueError, match=r"Linear: expected an input of shape \(\.\.\., "
                                         r"in_features=2\), got shape \(3,\)"):
        nn.Linear(2, 3, key=KEY(0))(fnp.ones(3))


# --- acceptance: per-example gradients, and training under jit ---


def _small_cnn():
    k1, k2 = keys(2)
    return nn.Sequential([
        nn.Conv2d(2, 3, kernel_size=3, padding=1, key=k1),
        nn.Lambda(nn.relu),
        nn.MaxPool2d(2, stride=2),
        nn.Lambda(lambda x: fnp.reshape(x, (-1,))),
        nn.Linear(3 * 3 * 3, 4, key=k2),
    ])


def _loss(model, x, y):
    return fnp.mean((model(x) - y) ** 2)


def test_per_example_gradients_equal_a_python_loop():
    model = _small_cnn()
    x, y = fnp.asarray(rand(5, 2, 6, 6, seed=1)), fnp.asarray(rand(5, 4, seed=2))
    grads = functrax.vmap(functrax.grad(_loss), in_axes=(None, 0, 0))(model, x, y)
    assert type(grads) is nn.Sequential
    assert tu.tree_structure(grads) == tu.tree_structure(model)
    for g, p in zip(tu.tree_leaves(grads), tu.tree_leaves(model)):
        assert g.shape == (5,) + p.shape
    for i in range(5):
        gi = functrax.grad(_loss)(model, x[i], y[i])
        for g, want in zip(tu.tree_leaves(grads), tu.tree_leaves(gi)):
            np.testing.assert_allclose(a(g[i]), a(want), rtol=1e-5, atol=1e-6)
    # the same under jit
    jitted = functrax.jit(functrax.vmap(functrax.grad(_loss), in_axes=(None, 0, 0)))
    for g, want in zip(tu.tree_leaves(jitted(model, x, y)), tu.tree_leaves(grads)):
        np.testing.assert_allclose(a(g), a(want), rtol=1e-5, atol=1e-6)


def test_jitted_value_and_grad_trains_the_model():
    model = _small_cnn()
    rng = np.random.default_rng(0)
    x = fnp.asarray(rng.standard_normal((16, 2, 6, 6)).astype(np.float32))
    y = fnp.asarray(rng.standard_normal((16, 4)).astype(np.float32))

    def batch_loss(m, x, y):
        return fnp.mean(functrax.vmap(_loss, in_axes=(None, 0, 0))(m, x, y))

    step = functrax.jit(functrax.value_and_grad(batch_loss))
    losses = []
    for _ in range(6):
        loss, g = step(model, x, y)
        model = tu.tree_map(lambda p, gp: p - 0.1 * gp, model, g)
        losses.append(float(loss))
    assert type(model) is nn.Sequential
    assert losses[-1] < losses[0] * 0.9, losses
    assert all(b <= a_ + 1e-6 for a_, b in zip(losses, losses[1:])), losses


def test_optim_adam_updates_a_model_under_jit():
    mlp = nn.MLP(2, 1, 8, 1, activation=fnp.tanh, key=KEY(0))
    x = fnp.asarray(rand(32, 2, seed=3))
    y = fnp.sum(x ** 2, axis=1, keepdims=True)
    opt = functrax.optim.adam(5e-2)

    def loss(m):
        return fnp.mean((functrax.vmap(m)(x) - y) ** 2)

    @functrax.jit
    def step(m, st):
        value, g = functrax.value_and_grad(loss)(m)
        updates, st = opt.update(g, st, m)
        return functrax.optim.apply_updates(m, updates), st, value

    state, first = opt.init(mlp), float(loss(mlp))
    for _ in range(20):
        mlp, state, _ = step(mlp, state)
    assert type(mlp) is nn.MLP and mlp.activation is fnp.tanh
    assert float(loss(mlp)) < 0.8 * first


# --- doctests of the new modules ---


@pytest.mark.parametrize("name", [
    "functrax.nn.module", "functrax.nn.updates", "functrax.nn.layers",
    "functrax.nn.layers.linear", "functrax.nn.layers.conv", "functrax.nn.layers.pooling",
    "functrax.nn.layers.normalization", "functrax.nn.layers.dropout",
    "functrax.nn.layers.attention", "functrax.nn.layers.containers"])
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
