"""``lax.erf_inv`` as JAX computes it: XLA's ErfInv32 for float32 (float16/bfloat16 through
float32), with every Horner step a fused multiply-add; the numpy backend's exact float32
fma; the Triton template bit for bit against the numpy backend; and ``random.normal``, which
binds ``erf_inv`` as JAX does."""
from __future__ import annotations

import warnings
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax, random
from functrax.lowering.numpy.special_functions import fma32


def _is_correctly_rounded(got, a, b, c) -> bool:
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    err = abs(Fraction(float(got)) - exact)
    for n in (np.nextafter(got, np.float32(-np.inf)), np.nextafter(got, np.float32(np.inf))):
        if np.isfinite(n) and abs(Fraction(float(n)) - exact) < err:
            return False
    return True


def test_fma32_rounds_once():
    rng = np.random.default_rng(0)
    n = 3000
    a = rng.normal(size=n).astype(np.float32)
    b = rng.normal(size=n).astype(np.float32)
    c = (rng.normal(size=n) * rng.choice([1e-9, 1.0, 1e9], n)).astype(np.float32)
    c[:300] = -(a[:300].astype(np.float64) * b[:300]).astype(np.float32)  # cancellation
    got = fma32(a, b, c)
    assert all(_is_correctly_rounded(g, x, y, z) for g, x, y, z in zip(got, a, b, c))
    # the double rounding that round-to-odd prevents: a*b + c halfway between two floats
    # after rounding to float64, but not exactly
    a1 = np.float32(1 + 2 ** -12)
    assert float(fma32(a1, a1, np.float32(-1))) == 2 ** -11 + 2 ** -24
    plain = a * b + c  # two roundings in float32
    assert (plain != got).sum() > 10  # the test tells a fused result from a plain one
    special = fma32(np.float32([np.inf, np.nan, 3e38]), np.float32([1, 1, 10]),
                    np.float32([0, 0, 0]))
    assert special[0] == np.inf and np.isnan(special[1]) and special[2] == np.inf


def _erf(y):
    from math import erf
    return np.array([erf(v) for v in y])


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 3e-6), (np.float64, 1e-14)])
def test_erf_inv_is_accurate(dtype, rtol):
    with functrax.enable_x64(dtype == np.float64):
        u = np.linspace(-0.999, 0.999, 801).astype(dtype)
        y = np.asarray(lax.erf_inv(fnp.asarray(u)), np.float64)
        ends = np.asarray(lax.erf_inv(fnp.asarray(np.array([-1, 1, 1.5], dtype))))
    np.testing.assert_allclose(_erf(y), u, rtol=rtol, atol=rtol / 10)
    assert ends[0] == -np.inf and ends[1] == np.inf and np.isnan(ends[2])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
def test_triton_erf_inv_is_the_numpy_backends_bit_for_bit(dtype):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.random(4000) * 2 - 1, 1 - rng.random(500) * 1e-6,
                        [1, -1, 0, -0.0, 1.5, np.nan, np.inf, 1e-30]]).astype(dtype)
    with functrax.enable_x64(dtype == np.float64):
        assert functrax.jit(lax.erf_inv)(x).dtype == dtype
        want = np.asarray(functrax.jit(lax.erf_inv)(x)).astype(np.float64)
        got = np.asarray(functrax.jit(lax.erf_inv, backend="triton")(x)).astype(np.float64)
    np.testing.assert_array_equal(got, want)


def test_normal_binds_erf_inv_and_keeps_jaxs_bits():
    k = random.key(0)
    eqn_names = []

    def walk(jaxpr):
        for e in jaxpr.eqns:
            eqn_names.append(e.primitive.name)
            for sub in functrax.core.sub_jaxprs(e.params):
                walk(sub)
    walk(functrax.make_jaxpr(lambda k: random.normal(k, (3,)))(k).jaxpr)
    assert eqn_names.count("erf_inv") == 1 and eqn_names.count("jit") == 3
    bits = np.asarray(random.normal(random.PRNGKey(0), (7,))).view(np.uint32)
    assert bits.tolist() == [1070576317, 1073847792, 3202220055, 3181445666, 1043616044,
                             3212368599, 3204290508]  # ../shared/vectors/jax_random.json


def test_library_jits_do_not_warn_about_recompiling_but_user_jits_do():
    k = random.PRNGKey(0)
    from functrax.transforms.jit import RecompileWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)
        for n in range(1, 14):
            random.normal(k, (n,))
    f = functrax.jit(lambda x: x + 1)
    with pytest.warns(RecompileWarning, match="has been compiled"):
        for n in range(1, 14):
            f(np.zeros(n, np.float32))
