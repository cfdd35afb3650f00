"""functrax.nn LayerNorm / RMSNorm / BatchNorm / Dropout / MultiHeadAttention against
explicit numpy formulas: values, gradients, dtypes, vmap/pmap behaviour and error messages."""
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import nn
from functrax import tree_util as tu
from functrax.test_util import check_grads

KEY = functrax.random.key


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def a(x):
    return np.asarray(x, np.float64)


def to64(tree):
    return tu.tree_map(lambda v: np.asarray(v, np.float64) if nn.is_inexact_array(v) else v,
                       tree)


def with_random_params(module, seed=9):
    """``module`` with random (instead of ones/zeros) float parameters."""
    leaves, treedef = tu.tree_flatten(module)
    rng = np.random.default_rng(seed)
    return tu.tree_unflatten(treedef, [fnp.asarray(rng.standard_normal(p.shape).astype(
        np.float32)) for p in leaves])


# --- LayerNorm / RMSNorm ---


@pytest.mark.parametrize("shape", [4, (3, 4)])
@pytest.mark.parametrize("use_weight,use_bias", [(True, True), (False, False)])
def test_layer_norm_matches_the_formula(shape, use_weight, use_bias):
    ln = with_random_params(nn.LayerNorm(shape, eps=1e-3, use_weight=use_weight,
                                         use_bias=use_bias))
    shp = (shape,) if isinstance(shape, int) else shape
    x = rand(2, *shp, seed=1) * 3 + 1
    axes = tuple(range(-len(shp), 0))
    want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-3)
    if use_weight:
        want = want * a(ln.weight)
    if use_bias:
        want = want + a(ln.bias)
    np.testing.assert_allclose(a(ln(fnp.asarray(x))), want, rtol=1e-4, atol=1e-5)
    assert len(tu.tree_leaves(ln)) == use_weight + use_bias


def test_rms_norm_matches_the_formula_and_defaults_to_no_bias():
    rn = nn.RMSNorm(5)
    assert rn.bias is None and rn.weight.shape == (5,)
    rn = with_random_params(nn.RMSNorm(5, eps=1e-4, use_bias=True))
    x = rand(3, 5, seed=2)
    want = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-4) * a(rn.weight) + a(rn.bias)
    np.testing.assert_allclose(a(rn(fnp.asarray(x))), want, rtol=1e-5, atol=1e-6)


def test_trailing_norm_gradients_dtypes_and_errors():
    for layer in (nn.LayerNorm((2, 3)), nn.RMSNorm(3, use_bias=True)):
        layer = to64(with_random_params(layer))
        check_grads(lambda m, x: m(x), (layer, rand(2, 2, 3, seed=3, dtype=np.float64)), 1)
    x16 = fnp.asarray(rand(4, 8) * 100).astype(fnp.bfloat16)
    out = nn.cast(nn.LayerNorm(8), fnp.bfloat16)(x16)
    assert out.dtype == fnp.bfloat16
    np.testing.assert_allclose(a(out).mean(-1), 0, atol=0.05)
    assert nn.LayerNorm(8)(x16).dtype == np.float32  # promoted with f32 parameters
    with pytest.raises(ValueError, match=r"LayerNorm: expected an input whose trailing "
                                         r"dimensions are shape=\(3, 4\), got shape \(4, 3\)"):
        nn.LayerNorm((3, 4))(fnp.ones((4, 3)))


# --- BatchNorm ---


def _bn_apply(bn, xs, state, axis_name="batch", training=True):
    return functrax.vmap(lambda x: bn(x, state, training=training), axis_name=axis_name,
                         out_axes=(0, None))(xs)


def test_batch_norm_training_uses_batch_statistics_and_updates_the_state():
    bn = with_random_params(nn.BatchNorm(3, axis_name="batch", momentum=0.9, eps=1e-3))
    xs = rand(4, 3, 5, seed=1) * 2 + 3
    state = bn.init_state()
    assert set(state) == {"mean", "var"} and state["var"].shape == (3,)
    y, new = _bn_apply(bn, fnp.asarray(xs), state)
    mean, var = xs.mean((0, 2)), xs.var((0, 2))
    want = (xs - mean[:, None]) / np.sqrt(var[:, None] + 1e-3) * a(bn.weight)[:, None] + \
        a(bn.bias)[:, None]
    np.testing.assert_allclose(a(y), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(a(new["mean"]), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(a(new["var"]), 0.9 + 0.1 * var, rtol=1e-5)
    # evaluation: the running statistics, state unchanged
    y, same = _bn_apply(bn, fnp.asarray(xs), new, training=False)
    want = (xs - a(new["mean"])[:, None]) / np.sqrt(a(new["var"])[:, None] + 1e-3) * \
        a(bn.weight)[:, None] + a(bn.bias)[:, None]
    np.testing.assert_allclose(a(y), want, rtol=1e-4, atol=1e-5)
    for k in ("mean", "var"):
        np.testing.assert_array_equal(a(same[k]), a(new[k]))
    assert bn(fnp.asarray(xs[0]), new, training=False)[1] is new


def test_batch_norm_gradients_under_vmap_and_pmap():
    bn = to64(with_random_params(nn.BatchNorm(2, axis_name="b")))
    state = to64(bn.init_state())

    def f(m, xs):
        return functrax.vmap(lambda x: m(x, state, training=True)[0], axis_name="b")(xs)
    check_grads(f, (bn, rand(3, 2, 4, seed=2, dtype=np.float64)), 1)
    # pmap over the (one) device, with a named axis
    bn32 = nn.BatchNorm(2, axis_name="b")
    xs = fnp.asarray(rand(1, 2, 4, seed=3))
    y, _ = functrax.pmap(lambda x: bn32(x, bn32.init_state(), training=True), axis_name="b",
                         out_axes=(0, None))(xs)
    x0 = a(xs[0])
    want = (x0 - x0.mean(1, keepdims=True)) / np.sqrt(x0.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(a(y[0]), want, rtol=1e-4, atol=1e-5)


def test_batch_norm_errors():
    bn = nn.BatchNorm(3, axis_name="batch")
    x, state = fnp.ones((3, 4)), bn.init_state()
    with pytest.raises(ValueError, match=r"BatchNorm: axis_name='batch' is not bound: call "
                                         r"the layer inside functrax\.vmap"):
        bn(x, state, training=True)
    with pytest.raises(ValueError, match=r"BatchNorm: training=True .* needs axis_name"):
        nn.BatchNorm(3)(x, state, training=True)
    with pytest.raises(ValueError, match=r"BatchNorm: expected one example of shape "
                                         r"\(C=3, \*spatial\), got shape \(8, 3, 4\)"):
        bn(fnp.ones((8, 3, 4)), state, training=False)
    with pytest.raises(ValueError, match="BatchNorm: state must be the dict bn.init_state"):
        bn(x, {"mean": fnp.zeros(3)}, training=False)
    y, _ = nn.BatchNorm(3)(x, state, training=False)  # evaluation needs no axis
    np.testing.assert_allclose(a(y), np.ones((3, 4)) / np.sqrt(1 + 1e-5), rtol=1e-6)


# --- Dropout ---


def test_dropout_masks_and_rescales_with_the_key():
    d, x, key = nn.Dropout(0.3), fnp.asarray(rand(2000, seed=1)), KEY(4)
    y = d(x, key=key)
    keep = np.asarray(functrax.random.bernoulli(key, 0.7, (2000,)))
    np.testing.assert_allclose(a(y), np.where(keep, a(x) / 0.7, 0), rtol=1e-6)
    assert abs(keep.mean() - 0.7) < 0.05
    np.testing.assert_array_equal(a(d(x, key=key)), a(y))  # deterministic in the key
    g = functrax.grad(lambda x: fnp.sum(d(x, key=key)))(x)
    np.testing.assert_allclose(a(g), keep / 0.7, rtol=1e-6)
    assert d(x, key=key, inference=True) is x
    assert nn.Dropout(0.0)(x) is x and nn.Dropout(0.5, inference=True)(x) is x
    np.testing.assert_array_equal(a(nn.Dropout(1.0)(x, key=key)), np.zeros(2000))
    xb = x.astype(fnp.bfloat16)
    assert d(xb, key=key).dtype == fnp.bfloat16
    # per-example keys under vmap
    ks = functrax.random.split(key, 3)
    ys = functrax.vmap(lambda x, k: d(x, key=k))(fnp.ones((3, 50)), ks)
    assert ys.shape == (3, 50) and not np.array_equal(a(ys[0]), a(ys[1]))


def test_dropout_errors():
    with pytest.raises(ValueError, match=r"Dropout\(p=0.5\): training mode needs a PRNG key: "
                                         r"call dropout\(x, key=key\)"):
        nn.Dropout()(fnp.ones(3))
    with pytest.raises(ValueError, match=r"Dropout: p must lie in \[0, 1\], got 1.5"):
        nn.Dropout(1.5)


# --- MultiHeadAttention ---


def np_mha(m, q, k, v, mask=None, causal=False):
    h = m.num_heads

    def proj(lin, x, d):
        y = x @ a(lin.weight) + (a(lin.bias) if lin.use_bias else 0)
        return y.reshape(x.shape[0], h, d)
    qh, kh, vh = proj(m.query_proj, q, m.qk_size), proj(m.key_proj, k, m.qk_size), \
        proj(m.value_proj, v, m.vo_size)
    logits = np.einsum("thd,shd->hts", qh, kh) / np.sqrt(m.qk_size)
    allowed = np.ones(logits.shape, bool)
    if mask is not None:
        allowed &= np.broadcast_to(mask, logits.shape)
    if causal:
        allowed &= np.tril(np.ones(logits.shape[1:], bool))
    logits = np.where(allowed, logits, -np.inf)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = np.einsum("hts,shd->thd", p, vh).reshape(q.shape[0], -1)
    return out @ a(m.output_proj.weight) + (a(m.output_proj.bias)
                                            if m.output_proj.use_bias else 0)


@pytest.mark.parametrize("kwargs", [
    dict(num_heads=2, query_size=8),
    dict(num_heads=3, query_size=6, key_size=5, value_size=4, output_size=7, qk_size=4,
         vo_size=2, use_query_bias=True, use_key_bias=True, use_value_bias=True,
         use_output_bias=True),
    dict(num_heads=2, query_size=4, qk_size=2, vo_size=5),
])
@pytest.mark.parametrize("masking", ["none", "mask2d", "mask3d", "causal"])
def test_multi_head_attention_matches_numpy(kwargs, masking):
    m = nn.MultiHeadAttention(**kwargs, key=KEY(0))
    m = tu.tree_map(lambda p: p + fnp.asarray(rand(*p.shape, seed=8)) * 0.1, m)  # biases != 0
    T, S = 4, 4 if masking == "causal" else 5
    q, k, v = rand(T, m.query_size, seed=1), rand(S, m.key_size, seed=2), \
        rand(S, m.value_size, seed=3)
    rng = np.random.default_rng(4)
    mask = None
    if masking == "mask2d":
        mask = rng.random((T, S)) > 0.3
        mask[:, 0] = True
    elif masking == "mask3d":
        mask = rng.random((m.num_heads, T, S)) > 0.3
        mask[..., 0] = True
    out = m(fnp.asarray(q), fnp.asarray(k), fnp.asarray(v),
            None if mask is None else fnp.asarray(mask), is_causal=masking == "causal")
    assert out.shape == (T, m.output_size)
    np.testing.assert_allclose(a(out), np_mha(m, q, k, v, mask, masking == "causal"),
                               rtol=1e-4, atol=1e-5)


def test_multi_head_attention_gradients_vmap_and_errors():
    m = nn.MultiHeadAttention(2, 4, qk_size=3, vo_size=2, use_output_bias=True, key=KEY(0))
    x = rand(3, 4, seed=1, dtype=np.float64)
    check_grads(lambda m, x: m(x, x, x, is_causal=True), (to64(m), x), 1)
    xs = fnp.asarray(rand(2, 3, 4, seed=2))
    ys = functrax.vmap(lambda x: m(x, x, x))(xs)
    np.testing.assert_allclose(a(ys[1]), a(m(xs[1], xs[1], xs[1])), rtol=1e-5, atol=1e-6)
    assert nn.MultiheadAttention is nn.MultiHeadAttention
    with pytest.raises(ValueError, match=r"MultiHeadAttention: expected query of shape "
                                         r"\(seq, 4\) for one example, got shape \(2, 3, 4\)"):
        m(xs, xs, xs)
    with pytest.raises(ValueError, match=r"mask must have shape \(T, S\) = \(3, 3\) or "
                                         r"\(num_heads, T, S\) = \(2, 3, 3\), got shape \(3,\)"):
        m(xs[0], xs[0], xs[0], mask=fnp.ones(3, bool))
    with pytest.raises(ValueError, match="mask must be boolean"):
        m(xs[0], xs[0], xs[0], mask=fnp.ones((3, 3)))
    with pytest.raises(ValueError, match="key_ and value must have the same sequence length"):
        m(xs[0], xs[0], xs[0, :2])
