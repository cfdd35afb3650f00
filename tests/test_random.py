"""functrax.random: JAX's default PRNG (threefry2x32, partitionable), bit for bit.

- Every entry of the JAX reference vectors (``../shared/vectors/jax_random.json``, with a
  copy in ``tests/data/``) is reproduced: integers exactly, floats within 1 ulp.
- Random123 known answers of threefry2x32-20, and an independent Python threefry.
- Under ``jit`` and ``vmap`` (over batched keys) every sampler equals eager / a loop.
- ``grad`` through sampling: keys and bits have zero tangents.
- Distributions: KS statistics against closed-form CDFs, chi-square tests of discrete
  samplers, permutation / choice properties.
- Errors: bad keys, shapes, dtypes and parameters give clear messages.
"""
from __future__ import annotations

import doctest
import json
import math
import pathlib
import re
import sys

import ml_dtypes
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax import random
from functrax.test_util import enable_x64
from tests.opspec.random import threefry2x32_ref

SHARED_VECTORS = pathlib.Path(__file__).resolve().parents[2] / "shared" / "vectors" / \
    "jax_random.json"
LOCAL_VECTORS = pathlib.Path(__file__).resolve().parent / "data" / "jax_random.json"


def _load(path):
    return json.loads(path.read_text()) if path.exists() else None


SHARED = _load(SHARED_VECTORS)
LOCAL = _load(LOCAL_VECTORS)
K0 = random.PRNGKey(0)


# --- evaluating a vector's call string ---

_DTYPE_SUFFIX = re.compile(r"\s+(u?int\d+|float\d+|bool)$")
_NAMESPACE = {name: getattr(random, name) for name in random.__all__}
_NAMESPACE["jnp"] = fnp


def _run_call(call: str):
    """Evaluate ``call`` (as written in the vectors file, JAX names) with functrax."""
    call = _DTYPE_SUFFIX.sub("", call.strip())
    *stmts, expr = [s.strip() for s in call.split(";")]
    env = dict(_NAMESPACE)
    for s in stmts:
        exec(s, env)  # noqa: S102 - fixed strings from the reference vectors
    return eval(expr, env)  # noqa: S307


def _ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in units in the last place of float32 values (via ordered bit patterns)."""
    def ordered(x):
        i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(got) - ordered(want))


def _check_case(case):
    got = _run_call(case["call"])
    assert isinstance(got, functrax.Array), case["name"]
    assert got.dtype == np.dtype(case["dtype"]), (case["name"], got.dtype)
    assert got.shape == tuple(case["shape"]), (case["name"], got.shape)
    g = np.asarray(got)
    if "bits_uint32" in case:
        want = np.asarray(case["bits_uint32"], np.uint32).view(np.float32).reshape(g.shape)
        ulps = _ulp_distance(g, want)
        assert ulps.max() <= 1, f"{case['name']}: {ulps.max()} ulps from JAX ({g} vs {want})"
        np.testing.assert_allclose(g, np.asarray(case["values"], np.float32).reshape(g.shape),
                                   rtol=2e-7, atol=0)
    else:
        want = np.asarray(case["values"]).astype(g.dtype).reshape(g.shape)
        np.testing.assert_array_equal(g, want, err_msg=case["name"])


def _case_ids(data):
    return [c["name"] for c in data["cases"]] if data else []


@pytest.mark.skipif(SHARED is None, reason=f"reference vectors not found at {SHARED_VECTORS} "
                    "(a checkout without ../shared); the copy in tests/data is tested below")
@pytest.mark.parametrize("case", SHARED["cases"] if SHARED else [], ids=_case_ids(SHARED))
def test_shared_vectors(case):
    _check_case(case)


@pytest.mark.parametrize("case", LOCAL["cases"], ids=_case_ids(LOCAL))
def test_local_vector_copy(case):
    _check_case(case)


@pytest.mark.skipif(SHARED is None, reason="reference vectors ../shared not present")
def test_local_copy_is_current():
    assert LOCAL == SHARED, ("tests/data/jax_random.json differs from "
                             f"{SHARED_VECTORS}: copy the new file over")


def test_every_function_of_the_vectors_is_covered():
    names = {c["call"].split("(")[0].split("; ")[-1] for c in LOCAL["cases"]}
    for c in LOCAL["cases"]:
        names |= set(re.findall(r"\b([a-z_]+)\(", c["call"])) & set(random.__all__)
    assert {"split", "fold_in", "bits", "uniform", "normal", "randint", "bernoulli",
            "permutation", "categorical", "truncated_normal", "gumbel",
            "exponential"} <= names


# --- threefry2x32 ---


def test_threefry_known_answers():
    for ka in LOCAL["threefry2x32_20_known_answers"]:
        k = np.asarray(ka["key"], np.uint32)
        x = np.asarray(ka["counter"], np.uint32)
        got = random.threefry2x32(k[0], k[1], x[0], x[1])
        assert [int(v) for v in got] == ka["out"]
        assert [int(v) for v in threefry2x32_ref(k[0], k[1], x[0], x[1])] == ka["out"]


def test_threefry_matches_reference_on_random_words():
    rng = np.random.default_rng(0)
    words = [rng.integers(0, 2 ** 32, size=(3, 4), dtype=np.uint64).astype(np.uint32)
             for _ in range(4)]
    got = random.threefry2x32(*[fnp.asarray(w) for w in words])
    want = threefry2x32_ref(*words)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)


@pytest.mark.parametrize("n", [1, 4, 5])
def test_threefry_2x32_count_layout(n):
    """JAX's threefry_2x32: counters cut in halves (odd sizes padded with one zero)."""
    key = np.array([3, 17], np.uint32)
    count = np.arange(n, dtype=np.uint32) * np.uint32(7919)
    padded = np.concatenate([count, np.zeros(n % 2, np.uint32)])
    half = len(padded) // 2
    y0, y1 = threefry2x32_ref(key[0], key[1], padded[:half], padded[half:])
    want = np.concatenate([y0, y1])[:n]
    got = random.threefry_2x32(key, fnp.asarray(count))
    np.testing.assert_array_equal(np.asarray(got), want)


def test_partitionable_layout():
    """Element i of any shape comes from threefry(key, (0, i)): prefixes and reshapes agree."""
    key = random.PRNGKey(5)
    b6 = np.asarray(random.bits(key, (6,)))
    np.testing.assert_array_equal(np.asarray(random.bits(key, (2, 3))).ravel(), b6)
    np.testing.assert_array_equal(np.asarray(random.bits(key, (4,))), b6[:4])
    y0, y1 = threefry2x32_ref(0, 5, np.zeros(6, np.uint32), np.arange(6, dtype=np.uint32))
    np.testing.assert_array_equal(b6, y0 ^ y1)
    np.testing.assert_array_equal(np.asarray(random.split(key, (2, 3))).reshape(6, 2),
                                  np.asarray(random.split(key, 6)))
    np.testing.assert_array_equal(np.asarray(random.split(key, 6)), np.stack([y0, y1], -1))


def test_bits_narrow_dtypes_are_low_bits():
    b32 = np.asarray(random.bits(K0, (8,)))
    np.testing.assert_array_equal(np.asarray(random.bits(K0, (8,), np.uint8)),
                                  (b32 & 0xFF).astype(np.uint8))
    np.testing.assert_array_equal(np.asarray(random.bits(K0, (8,), np.uint16)),
                                  (b32 & 0xFFFF).astype(np.uint16))


# --- keys and seeds ---


@pytest.mark.parametrize("seed,want", [
    (0, [0, 0]), (1, [0, 1]), (np.int32(1), [0, 1]), (np.uint32(2), [0, 2]),
    (np.int64(3), [0, 3]), (-1, [0, 4294967295]), (np.int32(-2), [0, 4294967294]),
    (np.int64(-3), [0, 4294967293]), (2 ** 31 - 1 + 100, [0, 2147483747]),
    (np.uint32(2 ** 31 + 100), [0, 2147483748]), (-2 ** 31 - 100, [0, 2147483548]),
])
def test_prng_key_seeds(seed, want):
    """JAX's table of seeds (x64 off: seeds wrap to 32 bits)."""
    for make in (random.PRNGKey, lambda s: random.key_data(random.key(s))):
        k = make(seed)
        assert k.dtype == np.uint32 and k.shape == (2,)
        assert np.asarray(k).tolist() == want
    if not isinstance(seed, int) or -2 ** 31 <= seed < 2 ** 31:
        traced = functrax.jit(random.PRNGKey)(fnp.asarray(seed))
        assert np.asarray(traced).tolist() == want


def test_prng_key_seeds_x64():
    with enable_x64():
        assert np.asarray(random.PRNGKey(-1)).tolist() == [4294967295, 4294967295]
        assert np.asarray(random.PRNGKey(2 ** 32 + 5)).tolist() == [1, 5]
        assert np.asarray(random.PRNGKey(np.int64(-3))).tolist() == [4294967295, 4294967293]
        u = random.uniform(random.PRNGKey(0), (4,))
        assert u.dtype == np.float64 and bool(((u >= 0) & (u < 1)).all())
        assert random.bits(random.PRNGKey(0), (3,)).dtype == np.uint64
        assert random.randint(random.PRNGKey(0), (3,), 0, 5).dtype == np.int64
        z = np.asarray(random.normal(random.PRNGKey(1), (N,)))
        assert z.dtype == np.float64 and _ks(z, _normal_cdf) < KS_CRIT


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_samplers(dtype):
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    u = random.uniform(random.PRNGKey(2), (2000,), dt)
    z = random.normal(random.PRNGKey(3), (2000,), dt)
    assert u.dtype == np.dtype(dt) and z.dtype == np.dtype(dt)
    uf, zf = np.asarray(u).astype(np.float64), np.asarray(z).astype(np.float64)
    assert uf.min() >= 0 and uf.max() < 1 and abs(uf.mean() - 0.5) < 0.03
    assert np.isfinite(zf).all() and abs(zf.mean()) < 0.1 and abs(zf.var() - 1) < 0.1


def test_key_helpers():
    keys = random.split(K0, 3)
    np.testing.assert_array_equal(np.asarray(random.key_data(keys)), np.asarray(keys))
    typed = random.wrap_key_data(np.asarray(keys))
    assert typed.shape == (3,) and typed.dtype == random.key_dtype()
    np.testing.assert_array_equal(np.asarray(random.key_data(typed)), np.asarray(keys))
    np.testing.assert_array_equal(np.asarray(random.clone(K0)), np.asarray(K0))
    k = random.fold_in(K0, np.uint32(7))
    np.testing.assert_array_equal(np.asarray(k), np.asarray(random.fold_in(K0, 7)))
    k2 = functrax.jit(random.fold_in)(K0, fnp.asarray(7))
    np.testing.assert_array_equal(np.asarray(k2), np.asarray(k))


# --- jit and vmap equal eager ---

LOGITS = fnp.log(fnp.array([0.1, 0.2, 0.3, 0.4]))
SAMPLERS = {
    "split": lambda k: random.split(k, 3),
    "fold_in": lambda k: random.fold_in(k, 11),
    "bits": lambda k: random.bits(k, (2, 3)),
    "uniform": lambda k: random.uniform(k, (5,), minval=-2.0, maxval=3.0),
    "normal": lambda k: random.normal(k, (2, 3)),
    "normal_complex": lambda k: random.normal(k, (3,), fnp.complex64),
    "truncated_normal": lambda k: random.truncated_normal(k, -0.5, 2.0, (4,)),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (6,)),
    "categorical": lambda k: random.categorical(k, LOGITS, shape=(5,)),
    "categorical_no_replace": lambda k: random.categorical(k, LOGITS, shape=(3,),
                                                           replace=False),
    "randint": lambda k: random.randint(k, (6,), -3, 10),
    "permutation": lambda k: random.permutation(k, 10),
    "permutation_2d": lambda k: random.permutation(k, fnp.arange(12).reshape(4, 3), axis=1),
    "choice": lambda k: random.choice(k, 7, (4,), replace=False),
    "choice_p": lambda k: random.choice(k, 4, (5,), p=fnp.array([0.1, 0.2, 0.3, 0.4])),
    "gumbel": lambda k: random.gumbel(k, (4,)),
    "exponential": lambda k: random.exponential(k, (4,)),
    "laplace": lambda k: random.laplace(k, (4,)),
    "logistic": lambda k: random.logistic(k, (4,)),
    "rademacher": lambda k: random.rademacher(k, (4,)),
}


def _same(a, b, msg):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, msg
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"),
                                      err_msg=msg)
    else:
        np.testing.assert_array_equal(a, b, err_msg=msg)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_jit_equals_eager(name):
    f = SAMPLERS[name]
    key = random.PRNGKey(7)
    _same(functrax.jit(f)(key), f(key), name)
    closed = functrax.make_jaxpr(f)(key)
    functrax.check_jaxpr(closed)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_vmap_over_keys_equals_loop(name):
    f = SAMPLERS[name]
    keys = random.split(random.PRNGKey(3), 3)
    want = np.stack([np.asarray(f(k)) for k in keys])
    _same(functrax.vmap(f)(keys), want, name)
    _same(functrax.jit(functrax.vmap(f))(keys), want, name)
    # keys batched along axis 1 (a (2, n) layout of key words)
    _same(functrax.vmap(f, in_axes=1)(fnp.asarray(np.asarray(keys).T)), want, name)


def test_vmap_normal_equals_stacking():
    key = random.PRNGKey(0)
    keys = random.split(key, 4)
    got = functrax.vmap(lambda k: random.normal(k, (3,)))(keys)
    want = np.stack([np.asarray(random.normal(k, (3,))) for k in keys])
    _same(got, want, "normal")


def test_vmap_over_seeds_and_data():
    seeds = fnp.arange(4)
    keys = functrax.vmap(random.PRNGKey)(seeds)
    _same(keys, np.stack([np.asarray(random.PRNGKey(i)) for i in range(4)]), "PRNGKey")
    folded = functrax.vmap(random.fold_in, in_axes=(None, 0))(K0, fnp.arange(3))
    _same(folded, np.stack([np.asarray(random.fold_in(K0, i)) for i in range(3)]), "fold_in")
    # a vmapped parameter with an unbatched key
    lows = fnp.array([0.0, 10.0, 20.0])
    got = functrax.vmap(lambda lo: random.uniform(K0, (2,), minval=lo, maxval=lo + 1))(lows)
    want = np.stack([np.asarray(random.uniform(K0, (2,), minval=float(lo), maxval=lo + 1))
                     for lo in np.asarray(lows)])
    _same(got, want, "uniform bounds")


# --- differentiation ---


def test_grad_through_noise_is_one():
    key = random.PRNGKey(1)

    def f(x, k):
        return fnp.sum(x + random.normal(k, (3,)))
    g = functrax.grad(f)(fnp.ones(3), key)
    np.testing.assert_array_equal(np.asarray(g), np.ones(3, np.float32))
    g1 = functrax.grad(lambda x: x + random.normal(key, ()))(2.0)
    assert float(g1) == 1.0
    gj = functrax.jit(functrax.grad(f))(fnp.ones(3), key)
    np.testing.assert_array_equal(np.asarray(gj), np.ones(3, np.float32))


def test_grad_of_scaled_noise_and_bounds():
    key = random.PRNGKey(2)
    eps = np.asarray(random.normal(key, (4,)))
    g = functrax.grad(lambda s: fnp.sum(s * random.normal(key, (4,))))(1.5)
    np.testing.assert_allclose(float(g), eps.sum(), rtol=1e-6)
    u = np.asarray(random.uniform(key, ()))
    gm = functrax.grad(lambda m: random.uniform(key, (), maxval=m))(2.0)
    np.testing.assert_allclose(float(gm), u, rtol=1e-6)
    # vmap of grad over keys
    keys = random.split(key, 3)
    gs = functrax.vmap(functrax.grad(lambda x, k: fnp.sum(x * random.uniform(k, (2,)))),
                       in_axes=(None, 0))(fnp.ones(2), keys)
    want = np.stack([np.asarray(random.uniform(k, (2,))) for k in keys])
    np.testing.assert_allclose(np.asarray(gs), want, rtol=1e-6)


def test_jvp_of_primitives_is_zero():
    out, t = functrax.jvp(lambda x: lax.bitcast_convert_type(x, np.int32), (1.0,), (1.0,))
    assert int(out) == 1065353216 and t.dtype == functrax.dtypes.float0
    closed = functrax.make_jaxpr(functrax.grad(
        lambda x: x * random.uniform(random.PRNGKey(0), ())))(1.0)
    functrax.check_jaxpr(closed)


# --- distributions ---

N = 10000
KS_CRIT = 1.95 / math.sqrt(N)  # 0.1% critical value of the one-sample KS statistic


def _ks(samples, cdf):
    x = np.sort(np.asarray(samples, np.float64))
    c = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))


_erf = np.vectorize(math.erf)


def _normal_cdf(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2)))


def _trunc_cdf(lo, hi):
    return lambda x: (_normal_cdf(x) - _normal_cdf(lo)) / (_normal_cdf(hi) - _normal_cdf(lo))


CDFS = {
    "uniform": (lambda k: random.uniform(k, (N,), minval=-1.0, maxval=3.0),
                lambda x: np.clip((x + 1) / 4, 0, 1)),
    "normal": (lambda k: random.normal(k, (N,)), _normal_cdf),
    "truncated_normal": (lambda k: random.truncated_normal(k, -0.5, 1.5, (N,)),
                         _trunc_cdf(-0.5, 1.5)),
    "exponential": (lambda k: random.exponential(k, (N,)), lambda x: 1 - np.exp(-x)),
    "gumbel": (lambda k: random.gumbel(k, (N,)), lambda x: np.exp(-np.exp(-x))),
    "laplace": (lambda k: random.laplace(k, (N,)),
                lambda x: np.where(x < 0, 0.5 * np.exp(x), 1 - 0.5 * np.exp(-x))),
    "logistic": (lambda k: random.logistic(k, (N,)), lambda x: 1 / (1 + np.exp(-x))),
}


@pytest.mark.parametrize("name", sorted(CDFS))
def test_ks_against_closed_form_cdf(name):
    sample, cdf = CDFS[name]
    x = np.asarray(sample(random.PRNGKey(11)))
    assert np.isfinite(x).all()
    stat = _ks(x, cdf)
    assert stat < KS_CRIT, f"{name}: KS statistic {stat:.4f} >= {KS_CRIT:.4f}"
    # a shifted distribution is rejected: the test has power
    assert _ks(x + 0.1, cdf) > KS_CRIT


def test_moments():
    z = np.asarray(random.normal(random.PRNGKey(3), (N,)), np.float64)
    assert abs(z.mean()) < 4 / math.sqrt(N) and abs(z.var() - 1) < 0.05
    u = np.asarray(random.uniform(random.PRNGKey(4), (N,), minval=2.0, maxval=5.0))
    assert u.min() >= 2.0 and u.max() < 5.0
    assert abs(u.mean() - 3.5) < 0.03 and abs(u.var() - 0.75) < 0.03
    c = np.asarray(random.normal(random.PRNGKey(5), (N,), fnp.complex64))
    assert abs(c.real.var() - 0.5) < 0.03 and abs(c.imag.var() - 0.5) < 0.03
    t = np.asarray(random.truncated_normal(random.PRNGKey(6), -1.0, 0.5, (N,)))
    assert t.min() > -1.0 and t.max() < 0.5


def _chi2(counts, probs):
    expected = np.asarray(probs) * np.sum(counts)
    return float(np.sum((counts - expected) ** 2 / expected))


# 0.1% critical values of chi-square with k - 1 degrees of freedom
CHI2_CRIT = {4: 16.27, 10: 27.88}


def test_randint_bounds_and_uniformity():
    r = np.asarray(random.randint(random.PRNGKey(8), (N,), 3, 13))
    assert r.dtype == np.int32 and r.min() >= 3 and r.max() <= 12
    counts = np.bincount(r - 3, minlength=10)
    assert _chi2(counts, np.full(10, 0.1)) < CHI2_CRIT[10]
    # array bounds broadcast against the shape
    lo = fnp.array([0, 100, -50])
    r2 = np.asarray(random.randint(random.PRNGKey(9), (50, 3), lo, lo + 5))
    assert ((r2 >= np.asarray(lo)) & (r2 < np.asarray(lo) + 5)).all()


def test_randint_edge_cases():
    k = random.PRNGKey(10)
    np.testing.assert_array_equal(np.asarray(random.randint(k, (5,), 4, 4)), 4)
    np.testing.assert_array_equal(np.asarray(random.randint(k, (5,), 4, 1)), 4)
    u8 = np.asarray(random.randint(k, (4000,), 0, 256, np.uint8))
    assert u8.dtype == np.uint8 and u8.max() > 250 and len(np.unique(u8)) > 240
    i8 = np.asarray(random.randint(k, (2000,), -1000, 1000, np.int8))
    assert i8.min() < -120 and i8.max() > 120
    big = np.asarray(random.randint(k, (1000,), -2 ** 31, 2 ** 31 - 1))
    assert big.min() < -2 ** 30 and big.max() > 2 ** 30


def test_bernoulli_frequency():
    b = np.asarray(random.bernoulli(random.PRNGKey(12), 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.015
    p = fnp.array([0.0, 1.0, 0.5])
    bp = np.asarray(random.bernoulli(random.PRNGKey(13), p, (200, 3)))
    assert not bp[:, 0].any() and bp[:, 1].all() and 0.3 < bp[:, 2].mean() < 0.7
    assert random.bernoulli(random.PRNGKey(1), p).shape == (3,)


def test_categorical_frequencies():
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    s = np.asarray(random.categorical(random.PRNGKey(14), fnp.log(fnp.asarray(probs)),
                                      shape=(N,)))
    assert _chi2(np.bincount(s, minlength=4), probs) < CHI2_CRIT[4]
    # batched logits along axis 0: one category axis per column
    logits = fnp.log(fnp.asarray(np.array([[0.9, 0.05], [0.1, 0.95]])))
    s2 = np.asarray(random.categorical(random.PRNGKey(15), logits, axis=0, shape=(2000, 2)))
    assert abs((s2[:, 0] == 0).mean() - 0.9) < 0.03 and abs((s2[:, 1] == 1).mean() - 0.95) < 0.03
    nr = np.asarray(random.categorical(random.PRNGKey(16), fnp.zeros((2, 6)), shape=(6, 2),
                                       replace=False))
    for col in nr.T:
        assert sorted(col.tolist()) == list(range(6))


def test_permutation_is_a_permutation():
    for seed in range(5):
        p = np.asarray(random.permutation(random.PRNGKey(seed), 50))
        assert sorted(p.tolist()) == list(range(50))
    x = np.arange(20).reshape(4, 5)
    rows = np.asarray(random.permutation(K0, fnp.asarray(x)))
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, x.tolist()))
    cols = np.asarray(random.permutation(K0, fnp.asarray(x), axis=1))
    assert (np.sort(cols, axis=1) == x).all() and (cols - cols[:, :1] == (x - x[:, :1])[
        :, np.argsort(np.argsort(cols[0]))]).all()
    ind = np.asarray(random.permutation(K0, fnp.asarray(x), axis=1, independent=True))
    assert (np.sort(ind, axis=1) == x).all()
    with pytest.warns(DeprecationWarning, match="permutation"):
        sh = random.shuffle(K0, fnp.arange(6))
    assert sorted(np.asarray(sh).tolist()) == list(range(6))


def test_permutation_is_uniform_over_small_sets():
    perms = functrax.vmap(lambda k: random.permutation(k, 3))(random.split(K0, 3000))
    codes = np.asarray(perms) @ np.array([9, 3, 1])
    counts = np.array([np.sum(codes == c) for c in np.unique(codes)])
    assert len(counts) == 6 and _chi2(counts, np.full(6, 1 / 6)) < 20.5


def test_choice():
    k = random.PRNGKey(17)
    c = np.asarray(random.choice(k, 10, (10,), replace=False))
    assert sorted(c.tolist()) == list(range(10))
    c2 = np.asarray(random.choice(k, 100, (30,), replace=False))
    assert len(set(c2.tolist())) == 30
    a = fnp.arange(12).reshape(3, 4) * 10
    rows = np.asarray(random.choice(k, a, (2,), replace=False))
    assert rows.shape == (2, 4) and len({tuple(r) for r in rows.tolist()}) == 2
    cols = np.asarray(random.choice(k, a, (5,), axis=1))
    assert cols.shape == (3, 5) and set(cols[0].tolist()) <= {0, 10, 20, 30}
    p = np.array([0.1, 0.0, 0.6, 0.3])
    s = np.asarray(random.choice(k, 4, (N,), p=fnp.asarray(p)))
    counts = np.bincount(s, minlength=4)
    assert counts[1] == 0
    keep = p > 0
    assert _chi2(counts[keep], p[keep]) < 13.8  # 0.1% critical value, 2 dof
    nr = np.asarray(random.choice(k, 4, (3,), replace=False, p=fnp.asarray(p)))
    assert len(set(nr.tolist())) == 3 and 1 not in nr.tolist()
    assert random.choice(k, 5, (0,)).shape == (0,)
    assert random.choice(k, fnp.arange(5.0), (2, 2)).shape == (2, 2)


# --- the CPU float kernels (fused multiply-add, erf_inv, log) ---


def test_fma_is_rounded_once():
    from functrax.random.float_math import fma
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(2000) * 10.0 ** rng.integers(-3, 4, 2000)
               for _ in range(3))
    a, b, c = (v.astype(np.float32) for v in (a, b, c))
    c[:500] = -(a[:500].astype(np.float64) * b[:500]).astype(np.float32)  # cancellation
    want = (a.astype(np.float64) * b + c).astype(np.float32)  # product exact in float64
    got = np.asarray(fma(fnp.asarray(a), fnp.asarray(b), fnp.asarray(c)))
    np.testing.assert_array_equal(got, want)
    plain = a * b + c
    assert (plain != want).sum() > 10  # the test tells a fused result from a plain one
    special = np.asarray(fma(fnp.array([np.inf, np.nan, 3e38]), fnp.array([1.0, 1.0, 10.0]),
                             fnp.array([0.0, 0.0, 0.0])))
    assert special[0] == np.inf and np.isnan(special[1]) and special[2] == np.inf


def test_log_and_erf_inv_kernels_are_accurate():
    from functrax.lax import erf_inv
    from functrax.random.float_math import log
    x = np.concatenate([np.geomspace(1e-37, 1e37, 500), np.linspace(0.5, 2.0, 500)])
    x = x.astype(np.float32)
    got = np.asarray(log(fnp.asarray(x)))
    want = np.log(x.astype(np.float64)).astype(np.float32)
    assert _ulp_distance(got, want).max() <= 2
    sp = np.asarray(log(fnp.array([0.0, -1.0, np.inf, np.nan])))
    assert sp[0] == -np.inf and np.isnan(sp[1]) and sp[2] == np.inf and np.isnan(sp[3])
    u = np.linspace(-0.999, 0.999, 401).astype(np.float32)
    y = np.asarray(erf_inv(fnp.asarray(u)), np.float64)
    np.testing.assert_allclose(_erf(y), u, rtol=3e-6, atol=3e-7)
    ends = np.asarray(erf_inv(fnp.array([-1.0, 1.0])))
    assert ends.tolist() == [-np.inf, np.inf]


# --- bitcast_convert_type ---


def test_bitcast_convert_type():
    x = fnp.asarray(np.array([1.0, -2.5, np.inf], np.float32))
    u = lax.bitcast_convert_type(x, np.uint32)
    np.testing.assert_array_equal(np.asarray(u), np.asarray(x).view(np.uint32))
    back = lax.bitcast_convert_type(u, np.float32)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(x))
    b = lax.bitcast_convert_type(u, np.uint8)
    assert b.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(lax.bitcast_convert_type(b, np.uint32)),
                                  np.asarray(u))
    # vmap along a middle axis, and jit
    m = fnp.asarray(np.arange(24, dtype=np.uint32).reshape(2, 3, 4))
    got = functrax.vmap(lambda v: lax.bitcast_convert_type(v, np.uint8), in_axes=2)(m)
    want = np.stack([np.asarray(lax.bitcast_convert_type(m[:, :, i], np.uint8))
                     for i in range(4)])
    np.testing.assert_array_equal(np.asarray(got), want)
    jb = functrax.jit(lambda v: lax.bitcast_convert_type(v, np.float32))(u)
    np.testing.assert_array_equal(np.asarray(jb), np.asarray(x))


def test_bitcast_errors():
    with pytest.raises(TypeError, match="bool or complex"):
        lax.bitcast_convert_type(fnp.array([True]), np.uint8)
    with pytest.raises(TypeError, match="last axis has 4 elements"):
        lax.bitcast_convert_type(fnp.zeros(3, np.uint8), np.uint32)


# --- errors ---


def test_bad_keys():
    """JAX's messages (more in tests/test_random_keys.py)."""
    with pytest.raises(TypeError, match="unexpected PRNG key type <class 'list'>"):
        random.normal([0, 0], (2,))
    with pytest.raises(TypeError, match="expected key_data.ndim >= 1; got ndim=0"):
        random.normal(0, (2,))
    with pytest.raises(TypeError, match="expected key_data.dtype = uint32; got dtype=int32"):
        random.uniform(fnp.array([0, 0]), (2,))
    with pytest.raises(TypeError, match=r"expected key_data.shape to end with \(2,\); got "
                       r"shape=\(3,\)"):
        random.uniform(fnp.zeros(3, np.uint32), (2,))
    with pytest.raises(ValueError, match="uniform accepts a single key.*functrax.vmap"):
        random.uniform(random.split(K0, 4), (2,))
    with pytest.raises(ValueError, match="split accepts a single key"):
        random.split(random.split(K0, 2))


def test_bad_shapes_and_dtypes():
    with pytest.raises(TypeError, match=r"shape must be a sequence.*shape=\(3,\)"):
        random.normal(K0, 3)
    with pytest.raises(ValueError, match="negative dimension"):
        random.uniform(K0, (2, -1))
    with pytest.raises(ValueError, match="`uniform` must be a float dtype, got int32"):
        random.uniform(K0, (2,), np.int32)
    with pytest.raises(ValueError, match="`normal` must be a float or complex dtype"):
        random.normal(K0, (2,), np.int32)
    with pytest.raises(ValueError, match="`bits` must be an unsigned int dtype"):
        random.bits(K0, (2,), np.int32)
    with pytest.raises(TypeError, match="randint only accepts integer dtypes"):
        random.randint(K0, (2,), 0, 3, np.float32)
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.uniform(K0, (2, 3), minval=fnp.zeros(4))
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.randint(K0, (3,), fnp.zeros((2, 3), np.int32), 5)
    with pytest.raises(TypeError, match="must have a floating dtype, got int32"):
        random.bernoulli(K0, 1, (2,))
    with pytest.raises(TypeError, match="logits must have a floating dtype"):
        random.categorical(K0, fnp.array([1, 2]))


def test_bad_parameters():
    with pytest.raises(TypeError, match="seed must be an integer"):
        random.PRNGKey(1.5)
    with pytest.raises(TypeError, match=r"PRNGKey accepts a scalar seed, but was given an "
                       r"array of shape \(2,\) != \(\)"):
        random.PRNGKey(fnp.array([1, 2]))
    with pytest.raises(OverflowError, match="does not fit in int64"):
        random.PRNGKey(2 ** 64)
    with pytest.raises(TypeError, match="fold_in accepts a scalar"):
        random.fold_in(K0, fnp.array([1, 2]))
    with pytest.raises(OverflowError, match="uint32"):
        random.fold_in(K0, -1)
    with pytest.raises(ValueError, match="Cannot take a larger sample"):
        random.choice(K0, 3, (4,), replace=False)
    with pytest.raises(ValueError, match="p must be None or a 1D vector"):
        random.choice(K0, 3, (2,), p=fnp.ones(4) / 4)
    with pytest.raises(TypeError, match="must be a sequence"):
        random.choice(K0, 3, 2)
    with pytest.raises(ValueError, match="cannot exceed number of categories"):
        random.categorical(K0, fnp.zeros(3), shape=(4,), replace=False)
    with pytest.raises(TypeError, match="x must be an integer or at least 1-dimensional"):
        random.permutation(K0, 2.5)
    with pytest.raises(ValueError, match='unrecognized PRNG implementation "rbg". Did you '
                       'mean one of: "threefry2x32"'):
        random.PRNGKey(0, impl="rbg")
    with pytest.raises(NotImplementedError, match="mode='high'"):
        random.gumbel(K0, (2,), mode="high")
    with pytest.raises(TypeError, match="every operand must have dtype uint32"):
        random.threefry2x32(fnp.int32(0), fnp.int32(0), fnp.int32(0), fnp.int32(0))


def test_traced_population_size_error():
    with pytest.raises(TypeError, match="traced integer cannot be the population size"):
        functrax.jit(lambda n: random.permutation(K0, n))(5)


def test_doctests():
    for mod in ("functrax.random", "functrax.random.prng", "functrax.random.keys",
                "functrax.random.distributions"):
        result = doctest.testmod(sys.modules[mod])
        assert result.failed == 0, mod
