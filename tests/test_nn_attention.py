"""nn.dot_product_attention against a numpy reference (grouped-query heads, bias, masks,
causal and local windows, sequence lengths), its gradients and transforms; the newer nn
functions (log1mexp, logmeanexp, tanh) and initializers (orthogonal, delta_orthogonal,
fan_geo_avg, complex variance scaling)."""
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import nn, random
from functrax.nn import initializers
from functrax.test_util import check_grads

RNG = np.random.default_rng(0)


def _normal(*shape, dtype=np.float32):
    return RNG.normal(size=shape).astype(dtype)


def reference(q, k, v, bias=None, mask=None, causal=False, q_len=None, kv_len=None,
              window=None, scale=None):
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    G = N // K
    kk, vv = np.repeat(k, G, axis=2), np.repeat(v, G, axis=2)
    lg = np.einsum("btnh,bsnh->bnts", q.astype(np.float64), kk) * (
        1 / np.sqrt(H) if scale is None else scale)
    if bias is not None:
        lg = lg + bias
    keep = np.ones(lg.shape, bool)
    if mask is not None:
        keep &= mask
    tq, ts = np.arange(T)[:, None], np.arange(S)[None, :]
    if causal:
        keep &= ts <= tq
    if window is not None:
        keep &= (tq - window[0] <= ts) & (ts <= tq + window[1])
    if q_len is not None:
        keep &= (np.arange(T)[None, :, None] < q_len[:, None, None])[:, None]
    if kv_len is not None:
        keep &= (np.arange(S)[None, None, :] < kv_len[:, None, None])[:, None]
    lg = np.where(keep, lg, -0.7 * np.finfo(np.float32).max)
    p = np.exp(lg - lg.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = np.einsum("bnts,bsnh->btnh", p, vv)
    if q_len is not None and kv_len is not None:
        out = out * (np.arange(T)[None, :] < q_len[:, None])[:, :, None, None]
    return out


CASES = {
    "plain": {},
    "causal": {"is_causal": True},
    "bias": {"bias": _normal(1, 4, 5, 6)},
    "mask": {"mask": RNG.random((2, 1, 5, 6)) > 0.3},
    "window": {"local_window_size": (1, 2)},
    "lengths": {"query_seq_lengths": np.array([3, 5], np.int32),
                "key_value_seq_lengths": np.array([6, 2], np.int32)},
    "scale": {"scale": 0.5},
}


@pytest.mark.parametrize("heads", [(4, 4), (4, 2)], ids=["mha", "gqa"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_the_reference(name, heads):
    n, kh = heads
    q, k, v = _normal(2, 5, n, 8), _normal(2, 6, kh, 8), _normal(2, 6, kh, 8)
    kw = CASES[name]
    got = nn.dot_product_attention(q, k, v, **kw)
    ref_kw = {"bias": kw.get("bias"), "mask": kw.get("mask"), "causal": kw.get("is_causal"),
              "q_len": kw.get("query_seq_lengths"), "kv_len": kw.get("key_value_seq_lengths"),
              "window": kw.get("local_window_size"), "scale": kw.get("scale")}
    np.testing.assert_allclose(np.asarray(got), reference(q, k, v, **ref_kw), atol=2e-6)
    jitted = functrax.jit(lambda q, k, v: nn.dot_product_attention(q, k, v, **kw))(q, k, v)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(got), atol=1e-6)


def test_unbatched_residual_vmap_and_gradients():
    q, k, v = _normal(5, 2, 4), _normal(6, 2, 4), _normal(6, 2, 4)
    out, lse = nn.dot_product_attention(q, k, v, return_residual=True)
    assert out.shape == (5, 2, 4) and lse.shape == (5, 2)
    lg = np.einsum("tnh,snh->nts", q, k) / 2.0
    np.testing.assert_allclose(np.asarray(lse),
                               np.log(np.exp(lg).sum(-1)).T, rtol=1e-5)
    batched = functrax.vmap(nn.dot_product_attention)(q[None], k[None], v[None])
    np.testing.assert_allclose(np.asarray(batched[0]), np.asarray(out), atol=1e-6)
    f = lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    args = tuple(a[None].astype(np.float64) for a in (q, k, v))
    check_grads(f, args, order=1)


def test_errors():
    q = _normal(1, 3, 3, 4)
    with pytest.raises(ValueError, match="multiple of the key/value heads"):
        nn.dot_product_attention(q, _normal(1, 3, 2, 4), _normal(1, 3, 2, 4))
    with pytest.raises(ValueError, match="mask must be boolean"):
        nn.dot_product_attention(q, q, q, mask=np.ones((1, 1, 3, 3), np.float32))
    with pytest.raises(NotImplementedError, match="cudnn"):
        nn.dot_product_attention(q, q, q, implementation="cudnn")


def test_log1mexp_logmeanexp_tanh():
    x = np.array([1e-8, 0.3, 0.7, 5.0, 50.0], np.float64)
    with functrax.test_util.enable_x64():
        want = np.where(x < np.log(2), np.log(-np.expm1(-x)), np.log1p(-np.exp(-x)))
        np.testing.assert_allclose(np.asarray(nn.log1mexp(x)), want, rtol=1e-14)
        check_grads(nn.log1mexp, (x[1:],), order=2)  # finite differences need x > eps
    np.testing.assert_allclose(float(nn.logmeanexp(fnp.array([1.0, 2.0, 3.0]))),
                               np.log(np.mean(np.exp([1.0, 2.0, 3.0]))), rtol=1e-6)
    w = np.array([[True, False], [True, True]])
    got = nn.logmeanexp(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1, where=w)
    np.testing.assert_allclose(np.asarray(got), [1.0, np.log(np.mean(np.exp([3.0, 4.0])))],
                               rtol=1e-6)
    assert float(nn.tanh(0.5)) == pytest.approx(np.tanh(0.5))


@pytest.mark.parametrize("shape, axis", [((3, 3), -1), ((5, 2), -1), ((2, 6), -1),
                                         ((3, 3, 4, 6), -1), ((4, 3, 2), 0)])
def test_orthogonal(shape, axis):
    w = np.asarray(initializers.orthogonal(scale=2.0, column_axis=axis)(
        random.PRNGKey(1), shape), np.float64)
    m = np.moveaxis(w, axis, -1).reshape(-1, shape[axis]) / 2.0
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, np.eye(len(gram)), atol=1e-5)
    with pytest.raises(ValueError, match="at least a 2D shape"):
        initializers.orthogonal()(random.PRNGKey(0), (3,))


def test_delta_orthogonal():
    w = np.asarray(initializers.delta_orthogonal()(random.PRNGKey(2), (3, 3, 2, 4)))
    centre = w[1, 1]
    np.testing.assert_allclose(centre @ centre.T, np.eye(2), atol=1e-5)
    assert np.count_nonzero(w) == np.count_nonzero(centre)
    with pytest.raises(ValueError, match="fan_in"):
        initializers.delta_orthogonal()(random.PRNGKey(2), (3, 4, 2))


def test_variance_scaling_modes_axes_and_complex():
    key = random.PRNGKey(3)
    w = initializers.variance_scaling(1.0, "fan_geo_avg", "normal")(key, (400, 900))
    assert float(np.var(np.asarray(w))) == pytest.approx(1 / 600, rel=0.05)
    w = initializers.variance_scaling(1.0, "fan_in", "normal", in_axis=(0, 1),
                                      out_axis=2)(key, (20, 30, 40))
    assert float(np.var(np.asarray(w))) == pytest.approx(1 / 600, rel=0.1)
    for dist in ("uniform", "truncated_normal", "normal"):
        z = initializers.variance_scaling(1.0, "fan_in", dist)(key, (300, 400), np.complex64)
        assert z.dtype == np.complex64
        assert float(np.var(np.asarray(z))) == pytest.approx(1 / 300, rel=0.05), dist
    with pytest.raises(ValueError, match="invalid mode"):
        initializers.variance_scaling(1.0, "fan_max", "normal")
