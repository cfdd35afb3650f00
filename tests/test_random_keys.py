"""Typed PRNG key arrays (``random.key``, dtype ``key<fry>``) beside raw ``uint32[2]`` keys.

- Printed forms exactly as JAX 0.10 prints them (``../shared/vectors/jax_reprs.md``): key
  arrays, their dtype and shape, ``key_data``, the jaxprs of ``split`` and ``normal``.
- Every sampler of ``functrax.random`` gives the same bits for a typed key as for the raw
  key with the same data, eagerly and under ``jit``; the JAX reference vectors
  (``jax_random.json``) hold for typed keys too.
- Key arrays under ``jit`` (inputs, outputs, constants), ``vmap`` (every key primitive, any
  batch axis), ``grad`` (non-differentiable inputs: ``allow_int`` gives float0), ``jvp``,
  ``scan`` / ``fori_loop`` / ``while_loop`` carries, ``cond`` operands, ``pmap`` and pytrees;
  the Triton backend (interpreter) on programs over keys, bit for bit with no fallback.
- Shape operations on keys equal the same operations on their data's leading axes.
- ``multinomial``: shapes, counts summing to ``n``, moments and a chi-square test.
- Errors: arithmetic on keys, conversions, bad key data, keys as seeds (JAX's messages).
"""
from __future__ import annotations

from tests import triton_harness  # noqa: F401 - first: TRITON_INTERPRET=1 before triton

import json
import pathlib
import pickle
import re

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import dtypes, lax, random
from functrax.lowering.triton.backend import compile_triton
from functrax.passes.physicalize import mentions_extended, physicalize
from functrax.passes.pipeline import optimize
from tests.opspec.random import bits_ref, split_ref
from tests.vectors import vector_path

VECTORS = vector_path("jax_reprs.md").parent
LOCAL = pathlib.Path(__file__).resolve().parent / "data" / "jax_random.json"
REPRS = VECTORS / "jax_reprs.md"
K = random.key(0)
R = random.PRNGKey(0)


def _sections(path):
    """``{title: body}`` of a markdown file of ``## title`` + fenced block sections."""
    text = path.read_text()
    return {m.group(1).strip(): m.group(2) for m in
            re.finditer(r"^## (.+?)\n+```\n(.*?)\n```", text, re.S | re.M)}


JAX = _sections(REPRS) if REPRS.exists() else {}
needs_reprs = pytest.mark.skipif(not JAX, reason=f"{REPRS} not found (a checkout without "
                                 "../shared)")


def data(x):
    """The uint32 data of a key array (raw keys and other arrays as they are)."""
    x = random.key_data(x) if dtypes.issubdtype(x.dtype, dtypes.prng_key) else x
    return np.asarray(x)


def same_bits(a, b):
    a, b = data(a), data(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind in "fc":
        a, b = a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")
    np.testing.assert_array_equal(a, b)


# --- printed forms ---


@needs_reprs
def test_repr_and_str_of_a_key():
    assert repr(random.key(0)) == JAX["repr(jax.random.key(0))"]
    assert str(random.key(0)) == JAX["str(jax.random.key(0))"]
    assert f"{K.dtype} {K.shape}" == JAX["k.dtype, k.shape"]


@needs_reprs
def test_repr_of_split_keys_and_key_data():
    assert repr(random.split(K, 3)) == JAX["repr(jax.random.split(key, 3))"]
    assert repr(random.key_data(K)) == JAX["jax.random.key_data(key)"]
    assert repr(random.PRNGKey(0)) == JAX["jax.random.PRNGKey(0)"]


@needs_reprs
def test_jaxpr_of_split_of_a_typed_key():
    got = str(functrax.make_jaxpr(lambda k: random.split(k))(K))
    assert got == JAX["make_jaxpr(lambda k: jax.random.split(k))(key)"]


@needs_reprs
def test_jaxpr_of_normal_is_jaxs():
    """JAX nests the sampler in jits (jit(_normal) > jit(_normal_real) > jit(_uniform), the
    last printed once at the top) around one random_bits and one erf_inv."""
    want = JAX["make_jaxpr(lambda k: jax.random.normal(k, (2,)))(key)"]
    assert str(functrax.make_jaxpr(lambda k: random.normal(k, (2,)))(K)) == want


def test_jaxprs_of_the_key_primitives():
    assert str(functrax.make_jaxpr(lambda k: random.split(k))(R)) == (
        "{ lambda ; a:u32[2]. let\n"
        "    b:key<fry>[] = random_wrap[impl=fry] a\n"
        "    c:key<fry>[2] = random_split[shape=(2,)] b\n"
        "    d:u32[2,2] = random_unwrap c\n"
        "  in (d,) }")
    assert str(functrax.make_jaxpr(random.key)(1)) == (
        "{ lambda ; a:i32[]. let b:key<fry>[] = random_seed[impl=fry] a in (b,) }")
    assert str(functrax.make_jaxpr(lambda k: random.fold_in(k, 3))(K)) == (
        "{ lambda ; a:key<fry>[]. let b:key<fry>[] = random_fold_in a 3:u32[] in (b,) }")
    assert str(functrax.make_jaxpr(lambda k: random.bits(k, (3,)))(K)) == (
        "{ lambda ; a:key<fry>[]. let\n"
        "    b:u32[3] = random_bits[bit_width=32 shape=(3,)] a\n"
        "  in (b,) }")
    assert str(functrax.make_jaxpr(random.clone)(K)) == (
        "{ lambda ; a:key<fry>[]. let b:key<fry>[] = random_clone a in (b,) }")
    closed = functrax.make_jaxpr(functrax.vmap(lambda k: random.bits(k, (3,))))(
        random.split(K, 4))
    assert "a:key<fry>[4]" in str(closed) and "u32[4,3] = random_bits" in str(closed)
    functrax.check_jaxpr(closed)


def test_avals_and_shape_dtype_structs():
    assert str(functrax.core.get_aval(random.split(K, 3))) == "key<fry>[3]"
    assert repr(functrax.core.get_aval(K)) == "ShapedArray(key<fry>[])"
    s = functrax.eval_shape(lambda k: random.split(k, (2, 3)), K)
    assert s.shape == (2, 3) and s.dtype == random.key_dtype()
    assert repr(s) == "ShapeDtypeStruct(shape=(2, 3), dtype=key<fry>)"


# --- the dtype and the key functions ---


def test_key_dtype_and_impl():
    dt = K.dtype
    assert dt == random.key_dtype() == random.key_dtype("threefry2x32")
    assert dtypes.issubdtype(dt, dtypes.prng_key) and dtypes.issubdtype(dt, dtypes.extended)
    assert fnp.issubdtype(dt, dtypes.prng_key) and dtypes.issubdtype(dt, dt)
    assert not dtypes.issubdtype(dt, np.integer) and not dtypes.issubdtype(np.uint32, dt)
    assert not dtypes.issubdtype(np.uint32, dtypes.prng_key)
    assert dt.name == "key<fry>" and dt.itemsize == 8 and str(dt) == repr(dt) == "key<fry>"
    assert (K.size, K.ndim, K.nbytes) == (1, 0, 8)
    assert random.key_impl(K) == random.key_impl(R) == "threefry2x32"
    assert repr(random.PRNGSpec(random.default_prng_impl())) == "PRNGSpec('threefry2x32')"
    assert random.key(0, impl=random.PRNGSpec(random.default_prng_impl())).dtype == dt
    assert hash(dt) == hash(random.key_dtype()) and pickle.loads(pickle.dumps(dt)) == dt


def test_key_data_and_wrap_key_data_round_trip():
    keys = random.split(K, (2, 3))
    d = random.key_data(keys)
    assert d.dtype == np.uint32 and d.shape == (2, 3, 2)
    back = random.wrap_key_data(d)
    assert back.dtype == K.dtype and back.shape == (2, 3)
    same_bits(random.key_data(back), d)
    same_bits(random.key_data(R), R)  # a raw key's data is the key
    same_bits(random.key_data(random.key(7)), random.PRNGKey(7))
    assert random.clone(K).dtype == K.dtype and random.clone(R).dtype == np.uint32


@pytest.mark.parametrize("seed", [0, 1, -1, 2 ** 31 - 1, np.int32(-5), np.uint32(7)])
def test_key_and_prng_key_share_their_data(seed):
    same_bits(random.key_data(random.key(seed)), random.PRNGKey(seed))
    same_bits(random.key_data(functrax.jit(random.key)(fnp.asarray(seed))),
              random.PRNGKey(seed))


def test_key_primitives_on_batches_match_the_threefry_reference():
    """The physical implementation per key of a batch (JAX's partitionable counters)."""
    raw = np.asarray(random.key_data(random.split(random.key(9), 3)))
    keys = random.wrap_key_data(raw)
    bits = functrax.primitives.random_bits(keys, 32, (2, 2))
    np.testing.assert_array_equal(np.asarray(bits), np.stack([bits_ref(k, (2, 2)) for k in raw]))
    split = functrax.primitives.random_split(keys, (4,))
    np.testing.assert_array_equal(data(split), np.stack([split_ref(k, 4) for k in raw]))
    for bw in (8, 16):
        b = functrax.primitives.random_bits(keys, bw, (5,))
        np.testing.assert_array_equal(np.asarray(b), np.stack(
            [bits_ref(k, (5,)).astype(f"u{bw // 8}") for k in raw]))


def test_pickle_and_pytrees():
    keys = random.split(K, 3)
    back = pickle.loads(pickle.dumps(keys))
    assert back.dtype == keys.dtype and back.shape == keys.shape
    same_bits(back, keys)
    tree = {"a": K, "b": [keys, 1.0]}
    leaves = functrax.tree_util.tree_leaves(tree)
    assert len(leaves) == 3 and leaves[0] is K
    out = functrax.tree_util.tree_map(lambda x: x, tree)
    assert out["b"][0] is keys


def test_iteration_and_len():
    keys = random.split(K, 3)
    assert len(keys) == 3
    parts = list(keys)
    assert all(p.dtype == K.dtype and p.shape == () for p in parts)
    for p, want in zip(parts, random.split(R, 3)):
        same_bits(random.key_data(p), want)
    k1, k2 = random.split(K)
    same_bits(random.normal(k2, (3,)), random.normal(random.split(R)[1], (3,)))
    with pytest.raises(TypeError, match="iteration over a 0-d key array"):
        iter(K)
    with pytest.raises(TypeError, match="len"):
        len(K)


# --- every sampler: typed key == raw key, and JAX's vectors ---

P3 = fnp.array([0.2, 0.3, 0.5])
LOGITS = fnp.log(fnp.array([0.1, 0.2, 0.3, 0.4]))
SAMPLERS = {
    "bits": lambda k: random.bits(k, (2, 3)),
    "uniform": lambda k: random.uniform(k, (5,), minval=-2.0, maxval=3.0),
    "normal": lambda k: random.normal(k, (2, 3)),
    "normal_complex": lambda k: random.normal(k, (3,), fnp.complex64),
    "truncated_normal": lambda k: random.truncated_normal(k, -0.5, 2.0, (4,)),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (6,)),
    "categorical": lambda k: random.categorical(k, LOGITS, shape=(5,)),
    "randint": lambda k: random.randint(k, (6,), -3, 10),
    "permutation": lambda k: random.permutation(k, 10),
    "permutation_array": lambda k: random.permutation(k, fnp.arange(12).reshape(4, 3), 1),
    "shuffle": lambda k: random.shuffle(k, fnp.arange(6)),
    "choice": lambda k: random.choice(k, 7, (4,), replace=False),
    "choice_p": lambda k: random.choice(k, 4, (5,), p=fnp.array([0.1, 0.2, 0.3, 0.4])),
    "gumbel": lambda k: random.gumbel(k, (4,)),
    "exponential": lambda k: random.exponential(k, (4,)),
    "laplace": lambda k: random.laplace(k, (4,)),
    "logistic": lambda k: random.logistic(k, (4,)),
    "rademacher": lambda k: random.rademacher(k, (4,)),
    "cauchy": lambda k: random.cauchy(k, (3,)),
    "lognormal": lambda k: random.lognormal(k, 0.5, (3,)),
    "pareto": lambda k: random.pareto(k, 2.0, (3,)),
    "weibull_min": lambda k: random.weibull_min(k, 1.0, 2.0, (3,)),
    "rayleigh": lambda k: random.rayleigh(k, 1.5, (3,)),
    "maxwell": lambda k: random.maxwell(k, (3,)),
    "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 0.0, 1.0, (3,)),
    "triangular": lambda k: random.triangular(k, 0.0, 0.5, 1.0, (3,)),
    "wald": lambda k: random.wald(k, 1.0, (3,)),
    "gamma": lambda k: random.gamma(k, 2.5, (3,)),
    "loggamma": lambda k: random.loggamma(k, 0.5, (3,)),
    "beta": lambda k: random.beta(k, 2.0, 3.0, (3,)),
    "dirichlet": lambda k: random.dirichlet(k, P3 * 3, (2,)),
    "chisquare": lambda k: random.chisquare(k, 3.0, (3,)),
    "f": lambda k: random.f(k, 3.0, 4.0, (3,)),
    "t": lambda k: random.t(k, 3.0, (3,)),
    "generalized_normal": lambda k: random.generalized_normal(k, 1.5, (3,)),
    "ball": lambda k: random.ball(k, 3, 2.0, (2,)),
    "poisson": lambda k: random.poisson(k, 3.0, (4,)),
    "poisson_large": lambda k: random.poisson(k, 40.0, (4,)),
    "binomial": lambda k: random.binomial(k, 20, 0.3, (4,)),
    "binomial_btrs": lambda k: random.binomial(k, 200, 0.4, (4,)),
    "geometric": lambda k: random.geometric(k, 0.3, (4,)),
    "multinomial": lambda k: random.multinomial(k, 10, P3),
    "multivariate_normal": lambda k: random.multivariate_normal(
        k, fnp.zeros(2), fnp.array([[2.0, 0.5], [0.5, 1.0]]), (3,)),
    "orthogonal": lambda k: random.orthogonal(k, 3),
    "split": lambda k: random.key_data(random.split(k, 3)),
    "fold_in": lambda k: random.key_data(random.fold_in(k, 11)),
}


def test_every_sampler_of_the_module_is_listed():
    not_samplers = {"PRNGKey", "PRNGSpec", "clone", "default_prng_impl", "fold_in", "key",
                    "key_data", "key_dtype", "key_impl", "split", "threefry2x32",
                    "threefry_2x32", "wrap_key_data"}
    listed = {re.sub(r"_(complex|array|p|large|btrs)$", "", n) for n in SAMPLERS}
    assert set(random.__all__) - not_samplers <= listed


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_typed_and_raw_keys_give_the_same_bits(name):
    f = SAMPLERS[name]
    raw = random.PRNGKey(5)
    typed = random.wrap_key_data(raw)
    want = f(raw)
    same_bits(f(typed), want)
    same_bits(f(random.key(5)), want)
    same_bits(functrax.jit(f)(typed), want)


def _vector_cases():
    if not LOCAL.exists():
        return []
    return json.loads(LOCAL.read_text())["cases"]


def _run_with_typed_keys(call):
    call = re.sub(r"\s+(u?int\d+|float\d+|bool)$", "", call.strip())
    call = re.sub(r"PRNGKey\((\d+)\)", r"key(\1)", call)
    env = {name: getattr(random, name) for name in random.__all__}
    env["jnp"] = fnp
    *stmts, expr = [s.strip() for s in call.split(";")]
    for s in stmts:
        exec(s, env)  # noqa: S102 - fixed strings from the reference vectors
    return eval(expr, env)  # noqa: S307


@pytest.mark.parametrize("case", _vector_cases(), ids=[c["name"] for c in _vector_cases()])
def test_jax_vectors_with_typed_keys(case):
    got = data(_run_with_typed_keys(case["call"]))
    assert got.dtype == np.dtype(case["dtype"]) and got.shape == tuple(case["shape"])
    if "bits_uint32" in case:
        want = np.asarray(case["bits_uint32"], np.uint32).reshape(got.shape)
        diff = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32))
        assert diff.max() <= 1, case["name"]  # within 1 ulp (as tests/test_random.py)
    else:
        np.testing.assert_array_equal(got, np.asarray(case["values"]).reshape(got.shape))


# --- transformations ---


def test_jit_takes_and_returns_keys():
    f = functrax.jit(lambda k: random.split(k, 3))
    out = f(K)
    assert out.dtype == K.dtype and out.shape == (3,)
    same_bits(out, random.split(K, 3))
    same_bits(f(K), out)  # the cached fast path
    g = functrax.jit(lambda x: x + random.uniform(K, ()))  # a closed-over key constant
    same_bits(g(1.0), 1.0 + random.uniform(K, ()))
    closed = functrax.make_jaxpr(lambda x: x + random.uniform(K, ()))(1.0)
    assert "a:key<fry>[]" in str(closed)
    low = functrax.jit(lambda k: random.split(k)).lower(K)
    assert not mentions_extended(low.jaxpr.jaxpr) and "threefry2x32" in low.as_text()


def test_vmap_of_every_key_primitive():
    keys = random.split(K, 3)
    same_bits(functrax.vmap(random.split)(keys),
              fnp.stack([random.split(k) for k in keys]))
    same_bits(functrax.vmap(lambda k: random.bits(k, (2,)))(keys),
              np.stack([data(random.bits(k, (2,))) for k in keys]))
    same_bits(functrax.vmap(random.fold_in)(keys, fnp.arange(3)),
              fnp.stack([random.fold_in(k, i) for i, k in enumerate(keys)]))
    same_bits(functrax.vmap(lambda d: random.fold_in(K, d))(fnp.arange(3)),
              fnp.stack([random.fold_in(K, i) for i in range(3)]))
    same_bits(functrax.vmap(random.key)(fnp.arange(3)),
              fnp.stack([random.key(i) for i in range(3)]))
    d = random.key_data(keys)
    same_bits(functrax.vmap(random.key_data)(keys), d)
    same_bits(functrax.vmap(random.wrap_key_data)(d), keys)
    same_bits(functrax.vmap(random.wrap_key_data, in_axes=1)(d.T), keys)
    same_bits(functrax.vmap(random.clone)(keys), keys)
    out = functrax.vmap(lambda k: random.split(k), out_axes=1)(keys)
    assert out.shape == (2, 3)
    same_bits(out, fnp.stack([random.split(k) for k in keys]).T)


def test_vmap_of_samplers_over_typed_keys_equals_a_loop():
    keys = random.split(random.key(3), 3)
    for name in ("normal", "randint", "gamma", "binomial", "permutation", "multinomial"):
        f = SAMPLERS[name]
        want = np.stack([data(f(k)) for k in keys])
        same_bits(functrax.vmap(f)(keys), want)
        same_bits(functrax.jit(functrax.vmap(f))(keys), want)


def _loss(x, k):
    return fnp.sum(x * random.normal(k, (3,)))


def test_grad_with_keys_as_non_differentiable_inputs():
    x = fnp.ones(3)
    g = functrax.grad(_loss)(x, K)
    same_bits(g, random.normal(K, (3,)))
    gx, gk = functrax.grad(_loss, argnums=(0, 1), allow_int=True)(x, K)
    same_bits(gx, g)
    assert gk.dtype == dtypes.float0 and gk.shape == ()
    gk3 = functrax.grad(lambda k: _loss(x, k[0]), allow_int=True)(random.split(K, 3))
    assert gk3.dtype == dtypes.float0 and gk3.shape == (3,)
    v, gj = functrax.jit(functrax.value_and_grad(_loss))(x, K)
    same_bits(gj, g)
    _, vjp = functrax.vjp(_loss, x, K)
    ct_x, ct_k = vjp(1.0)
    same_bits(ct_x, g)
    assert ct_k.dtype == dtypes.float0
    same_bits(functrax.grad(functrax.checkpoint(_loss))(x, K), g)
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs.*but got "
                       "key<fry>. If you want to use Boolean- or integer-valued inputs, use "
                       "vjp or set allow_int to True."):
        functrax.grad(_loss, argnums=1)(x, K)


def test_jvp_with_a_key_input_has_a_float0_tangent():
    t0 = np.zeros((), dtypes.float0)
    y, ty = functrax.jvp(lambda k: random.normal(k, (2,)), (K,), (t0,))
    same_bits(y, random.normal(K, (2,)))
    np.testing.assert_array_equal(np.asarray(ty), 0.0)
    y, ty = functrax.jvp(lambda x: x * random.uniform(K, ()), (2.0,), (1.0,))
    same_bits(ty, random.uniform(K, ()))


def _scan_body(c, _):
    c, sub = random.split(c)
    return c, random.normal(sub, ())


def test_scan_carries_and_scanned_keys():
    kc, ys = lax.scan(_scan_body, K, None, length=4)
    rc, rys = lax.scan(_scan_body, R, None, length=4)
    assert kc.dtype == K.dtype and rc.dtype == np.uint32
    same_bits(kc, rc)
    same_bits(ys, rys)
    jc, jys = functrax.jit(lambda k: lax.scan(_scan_body, k, None, length=4))(K)
    same_bits(jc, kc)
    same_bits(jys, ys)
    keys = random.split(K, 5)
    tot, outs = lax.scan(lambda c, k: (c + random.uniform(k, ()), k), 0.0, keys)
    same_bits(outs, keys)
    np.testing.assert_allclose(float(tot), sum(float(random.uniform(k, ())) for k in keys),
                               rtol=1e-6)
    same_bits(lax.map(lambda k: random.normal(k, ()), keys),
              fnp.stack([random.normal(k, ()) for k in keys]))


def test_loops_and_cond_over_keys():
    def fold3(k):
        return lax.fori_loop(0, 3, lambda i, c: random.fold_in(c, i), k)
    want = random.fold_in(random.fold_in(random.fold_in(K, 0), 1), 2)
    same_bits(fold3(K), want)
    same_bits(functrax.jit(fold3)(K), want)
    i, k = lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 1, random.split(s[1])[1]),
                          (0, K))
    same_bits(k, random.split(random.split(K)[1])[1])

    def pick(p, k):
        return lax.cond(p, lambda k: random.split(k)[0], lambda k: k, k)
    same_bits(pick(True, K), random.split(K)[0])
    same_bits(functrax.jit(pick)(False, K), K)
    same_bits(functrax.vmap(pick)(fnp.array([True, False]), random.split(K)),
              fnp.stack([random.split(random.split(K)[0])[0], random.split(K)[1]]))
    same_bits(lax.switch(1, [lambda k: k, lambda k: random.fold_in(k, 1)], K),
              random.fold_in(K, 1))


def test_pmap_over_keys():
    n = len(functrax.devices())
    keys = random.split(K, n)
    out = functrax.pmap(lambda k: random.normal(k, (2,)))(keys)
    same_bits(out, fnp.stack([random.normal(k, (2,)) for k in keys]))
    new = functrax.pmap(lambda k: random.split(k))(keys)
    assert new.dtype == K.dtype and new.shape == (n, 2)
    same_bits(new, fnp.stack([random.split(k) for k in keys]))
    same_bits(functrax.pmap(lambda k: random.uniform(k[1], ()))(new),
              fnp.stack([random.uniform(random.split(k)[1], ()) for k in keys]))


# --- shape operations on keys: the same operations on the data's leading axes ---

KEYS = random.split(random.key(1), (2, 3))
DATA = np.asarray(random.key_data(KEYS))
SHAPE_OPS = {
    "index": (lambda k: k[1], lambda d: d[1]),
    "index_pair": (lambda k: k[1, 2], lambda d: d[1, 2]),
    "slice": (lambda k: k[:, 1:], lambda d: d[:, 1:]),
    "negative_step": (lambda k: k[:, ::-1], lambda d: d[:, ::-1]),
    "integer_array": (lambda k: k[fnp.array([1, 0, 1])], lambda d: d[[1, 0, 1]]),
    "take": (lambda k: fnp.take(k, fnp.array([2, 0]), axis=1), lambda d: d[:, [2, 0]]),
    "reshape": (lambda k: k.reshape(3, 2), lambda d: d.reshape(3, 2, 2)),
    "ravel": (lambda k: k.ravel(), lambda d: d.reshape(6, 2)),
    "transpose": (lambda k: k.T, lambda d: d.transpose(1, 0, 2)),
    "swapaxes": (lambda k: fnp.swapaxes(k, 0, 1), lambda d: d.transpose(1, 0, 2)),
    "expand_squeeze": (lambda k: fnp.squeeze(fnp.expand_dims(k, 1), 1), lambda d: d),
    "broadcast_to": (lambda k: fnp.broadcast_to(k[0], (4, 3)),
                     lambda d: np.broadcast_to(d[0], (4, 3, 2))),
    "concatenate": (lambda k: fnp.concatenate([k, k[:1]]), lambda d: np.concatenate([d, d[:1]])),
    "stack": (lambda k: fnp.stack([k[0], k[1]], axis=1), lambda d: np.stack([d[0], d[1]], 1)),
    "flip": (lambda k: fnp.flip(k, 1), lambda d: d[:, ::-1]),
    "where": (lambda k: fnp.where(fnp.array([True, False, True]), k[0], k[1]),
              lambda d: np.where(np.array([True, False, True])[:, None], d[0], d[1])),
    "select_scalar": (lambda k: lax.select(True, k, k[::-1]), lambda d: d),
    "at_set": (lambda k: k.at[0, 1].set(k[1, 2]),
               lambda d: np.where(np.arange(6).reshape(2, 3, 1) == 1, d[1, 2], d)),
    "dynamic_index": (lambda k: lax.dynamic_index_in_dim(k, 1, 1, keepdims=False),
                      lambda d: d[:, 1]),
    "dynamic_update": (lambda k: lax.dynamic_update_slice(k, k[:1, :2], (1, 1)),
                       lambda d: np.concatenate([d[:1], np.concatenate(
                           [d[1:, :1], d[:1, :2]], 1)])),
    "copy": (lambda k: fnp.copy(k), lambda d: d),
    "asarray": (lambda k: fnp.asarray(k), lambda d: d),
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_ops_on_keys(name):
    f, ref = SHAPE_OPS[name]
    want = ref(DATA)
    for fn in (f, functrax.jit(f)):
        out = fn(KEYS)
        assert out.dtype == K.dtype, name
        np.testing.assert_array_equal(data(out), want, err_msg=name)


def test_dynamic_indexing_with_a_traced_index():
    f = functrax.jit(lambda k, i: random.normal(k[i], (2,)))
    keys = random.split(K, 4)
    same_bits(f(keys, 2), random.normal(keys[2], (2,)))
    same_bits(functrax.vmap(f, in_axes=(None, 0))(keys, fnp.arange(4)),
              fnp.stack([random.normal(k, (2,)) for k in keys]))


def test_physicalize_leaves_no_key_behind():
    def f(k, x):
        ks = random.split(k, 3)
        return ks[1:], lax.scan(lambda c, kk: (c + random.uniform(kk, ()), kk), x, ks)
    closed = functrax.make_jaxpr(f)(K, 0.0)
    assert mentions_extended(closed.jaxpr)
    phys = physicalize(closed)
    assert not mentions_extended(phys.jaxpr)
    assert [a.str_short() for a in phys.in_avals] == ["u32[2]", "f32[]"]
    functrax.check_jaxpr(phys)
    assert not mentions_extended(optimize(closed).jaxpr)
    plain = functrax.make_jaxpr(lambda x: x + 1.0)(1.0)
    assert physicalize(plain) is plain


def test_an_operation_on_keys_without_a_physical_rule_raises():
    with pytest.raises(NotImplementedError, match="physicalize .*has no rule for 'pad'"):
        lax.pad(random.split(K, 2), K, [(1, 0, 0)])


# --- the Triton backend ---

TRITON_PROGRAMS = {
    "normal": lambda k: random.normal(k, (64, 33)),
    "split_index_uniform": lambda k: random.uniform(random.split(k, 4)[2], (16,)),
    "keys_out": lambda k: random.split(k, (2, 5)),
    "fold_in_bits": lambda k: random.bits(random.fold_in(k, 9), (7,)),
    "scan_carry": lambda k: lax.scan(_scan_body, k, None, length=3),
    "where_keys": lambda k: random.key_data(
        fnp.where(fnp.arange(4) < 2, random.split(k, 4), random.split(k, 4)[::-1])),
}


@pytest.mark.parametrize("name", sorted(TRITON_PROGRAMS))
def test_triton_backend_on_keys_is_bit_exact_without_fallback(name):
    f = TRITON_PROGRAMS[name]
    key = random.key(11)
    want = functrax.tree_util.tree_leaves(functrax.jit(f)(key))
    got = functrax.tree_util.tree_leaves(functrax.jit(f, backend="triton")(key))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        same_bits(g, w)
    prog = compile_triton(functrax.jit(f).lower(key).jaxpr)
    assert not prog.fallbacks, [fb.reason for fb in prog.fallbacks]


def test_triton_batch_of_keys_matches_numpy():
    keys = random.split(random.key(2), 5)
    f = functrax.vmap(lambda k: random.normal(k, (8,)))
    same_bits(functrax.jit(f, backend="triton")(keys), functrax.jit(f)(keys))


# --- multinomial ---


def test_multinomial_shapes_and_dtypes():
    p = fnp.array([[0.2, 0.8], [0.5, 0.5], [1.0, 0.0]])
    c = random.multinomial(K, 6, p)
    assert c.shape == (3, 2) and c.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(c.sum(-1)), 6.0)
    np.testing.assert_array_equal(np.asarray(c[2]), [6.0, 0.0])
    c = random.multinomial(K, fnp.array([1.0, 5.0, 9.0]), p[0], shape=(4, 3))
    assert c.shape == (4, 3, 2)
    np.testing.assert_array_equal(np.asarray(c.sum(-1)), np.broadcast_to([1, 5, 9], (4, 3)))
    same_bits(random.multinomial(K, 6, p, unroll=2), random.multinomial(K, 6, p))
    same_bits(functrax.jit(lambda k: random.multinomial(k, 6, p))(K),
              random.multinomial(K, 6, p))


def test_multinomial_errors():
    with pytest.raises(ValueError, match="at least one dimension"):
        random.multinomial(K, 3, 0.5)
    with pytest.raises(ValueError, match="`multinomial` must be a float dtype"):
        random.multinomial(K, 3, P3, dtype=np.int32)
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.multinomial(K, 3, fnp.ones((3, 2)) / 2, shape=(4,))
    with pytest.raises(ValueError, match="multinomial accepts a single key"):
        random.multinomial(random.split(K), 3, P3)


def test_multinomial_moments_and_chi_square():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    n, draws = 30, 4000
    c = np.asarray(random.multinomial(random.key(4), n, fnp.asarray(p, np.float32),
                                      shape=(draws,)), np.float64)
    np.testing.assert_array_equal(c.sum(-1), n)
    mean, cov = c.mean(0), np.cov(c.T)
    se = np.sqrt(n * p * (1 - p) / draws)
    assert np.all(np.abs(mean - n * p) < 5 * se), mean
    want_cov = n * (np.diag(p) - np.outer(p, p))
    np.testing.assert_allclose(cov, want_cov, atol=0.15 * n * 0.25)
    # first outcome's count is Binomial(n, p0): chi-square over its values
    k0 = c[:, 0].astype(int)
    from scipy import stats
    probs = stats.binom.pmf(np.arange(n + 1), n, p[0])
    keep = probs * draws >= 5
    obs = np.bincount(k0, minlength=n + 1)
    chi2 = (((obs - draws * probs) ** 2) / (draws * probs))[keep].sum()
    assert chi2 < stats.chi2.ppf(0.999, keep.sum() - 1), chi2


# --- errors ---


def test_arithmetic_and_conversions_of_keys_raise():
    with pytest.raises(TypeError, match=r"add does not accept dtypes key<fry>, int32\."):
        K + 1
    with pytest.raises(TypeError, match=r"multiply does not accept dtypes key<fry>, int32\."):
        random.split(K) * 2
    with pytest.raises(TypeError, match="add does not accept dtype key<fry>"):
        K + K
    with pytest.raises(TypeError, match="neg does not accept dtype key<fry>"):
        -K
    with pytest.raises(TypeError, match="add does not accept dtype key<fry>"):
        lax.add(K, K)
    with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to uint32"):
        lax.convert_element_type(K, np.uint32)
    with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to float32"):
        K.astype(np.float32)
    with pytest.raises(ValueError, match="Cannot convert_element_type from uint32 to key<fry>"):
        lax.convert_element_type(R, K.dtype)
    with pytest.raises(TypeError, match="cannot be converted to a NumPy array. Use "
                       r"functrax.random.key_data\(arr\)"):
        np.asarray(K)
    with pytest.raises(TypeError, match="cannot be converted to a NumPy array"):
        int(K)
    with pytest.raises(TypeError, match="cannot be converted to a NumPy array"):
        functrax.jit(lambda k: k)(K).tolist()


def test_bad_key_data_gets_jax_messages():
    with pytest.raises(TypeError, match="invalid PRNG key data: expected key_data.ndim >= 1; "
                       "got ndim=0"):
        random.wrap_key_data(np.uint32(3))
    with pytest.raises(TypeError, match=r"expected key_data.shape to end with \(2,\); got "
                       r"shape=\(4, 3\)"):
        random.wrap_key_data(np.zeros((4, 3), np.uint32))
    with pytest.raises(TypeError, match="expected key_data.dtype = uint32; got dtype=int32"):
        random.wrap_key_data(np.zeros((4, 2), np.int32))
    with pytest.raises(TypeError, match="expected key_data.dtype = uint32; got dtype=key<fry>"):
        random.wrap_key_data(random.split(K, (3, 2)))
    with pytest.raises(TypeError, match="expected key_data to have ndim, shape, and dtype"):
        random.wrap_key_data([0, 0])
    with pytest.raises(TypeError, match="unexpected PRNG key type <class 'str'>"):
        random.normal("key", (2,))
    with pytest.raises(TypeError, match="expected key_data.dtype = uint32; got dtype=float32"):
        random.split(fnp.zeros(2))
    with pytest.raises(TypeError, match=r"expected key_data.shape to end with \(2,\)"):
        functrax.jit(random.normal)(fnp.zeros(3, np.uint32))


def test_keys_where_seeds_or_single_keys_are_expected():
    with pytest.raises(TypeError, match="key accepts a scalar seed, but was given a PRNG key."):
        random.key(K)
    with pytest.raises(TypeError, match="PRNGKey accepts a scalar seed, but was given a PRNG "
                       "key."):
        random.PRNGKey(K)
    with pytest.raises(TypeError, match=r"key accepts a scalar seed, but was given an array of "
                       r"shape \(2,\) != \(\). Use functrax.vmap for batching"):
        random.key(fnp.arange(2))
    with pytest.raises(TypeError, match="PRNG key seed must be an integer"):
        random.key(1.5)
    with pytest.raises(ValueError, match=r"normal accepts a single key, but was given a key "
                       r"array of shape \(2,\) != \(\). Use functrax.vmap for batching."):
        random.normal(random.split(K), (2,))
    with pytest.raises(ValueError, match=r"fold_in accepts a single key, but was given a key "
                       r"array of shape \(2, 2\)"):  # a raw batch: np.shape of the data, as JAX
        random.fold_in(random.split(R), 1)
    with pytest.raises(TypeError, match="iteration over a 0-d key array"):
        random.threefry_2x32(K, fnp.zeros(4, np.uint32))  # raw key words expected
    with pytest.raises(TypeError, match="random_bits takes key array operand"):
        functrax.primitives.random_bits(R, 32, (2,))
    with pytest.raises(ValueError, match='unrecognized PRNG implementation "rbg". Did you mean '
                       'one of: "threefry2x32"'):
        random.key(0, impl="rbg")
    with pytest.raises(TypeError, match="unrecognized type <class 'int'> for specifying PRNG"):
        random.key_dtype(3)


def test_doctests():
    import doctest
    import sys
    for name in ("functrax.random.keys", "functrax.passes.physicalize",
                 "functrax.primitives.prng_impl", "functrax.dtypes", "functrax.core.avals",
                 "functrax.random.discrete_samplers"):
        result = doctest.testmod(sys.modules[name])
        assert result.failed == 0, name
