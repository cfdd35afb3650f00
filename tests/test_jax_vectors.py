"""Every program of ../shared/vectors/jax_jaxprs.md, run through functrax, prints JAX's text
(functrax omits the ``out_sharding=None`` params, as the vectors file allows)."""
import re

import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from tests.vectors import vector_path

VECTORS = vector_path("jax_jaxprs.md")


def _expected():
    if not VECTORS.exists():
        pytest.skip(f"reference vectors not found at {VECTORS}")
    text = VECTORS.read_text()
    out = text.split("## output", 1)[1]
    blocks = {}
    for chunk in re.split(r"^    === ", out, flags=re.M)[1:]:
        name, body = chunk.split("\n", 1)
        lines = [ln[4:] for ln in body.rstrip("\n").split("\n")]
        blocks[name.strip()] = "\n".join(lines).replace(" out_sharding=None", "")
    return blocks


def _f(x, y):
    z = fnp.sin(x) * y + 2.0
    return fnp.sum(z ** 2)


def _cf():
    @functrax.custom_jvp
    def cf(x):
        return fnp.log1p(fnp.exp(x))
    cf.defjvp(lambda p, t: (cf(p[0]), t[0] * functrax.nn.sigmoid(p[0])))
    return cf


x, y = fnp.ones(3), fnp.arange(3.0)
PROGRAMS = {
    "make_jaxpr(f)": lambda: functrax.make_jaxpr(_f)(x, y),
    "make_jaxpr(grad(f))": lambda: functrax.make_jaxpr(functrax.grad(_f))(x, y),
    "vmap": lambda: functrax.make_jaxpr(functrax.vmap(lambda a, b: fnp.dot(a, b),
                                                      in_axes=(0, None)))(fnp.ones((4, 3)), y),
    "cond": lambda: functrax.make_jaxpr(
        lambda x: lax.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, x))(x),
    "scan": lambda: functrax.make_jaxpr(
        lambda c, xs: lax.scan(lambda c, x: (c + x, c * x), c, xs))(0.0, fnp.arange(5.0)),
    "fori": lambda: functrax.make_jaxpr(
        lambda n, x: lax.fori_loop(0, n, lambda i, v: v * 2.0, x))(3, 1.0),
    "jit inside": lambda: functrax.make_jaxpr(lambda x: functrax.jit(fnp.tanh)(x) + 1)(x),
    "custom_jvp": lambda: functrax.make_jaxpr(_cf())(1.0),
    "checkpoint": lambda: functrax.make_jaxpr(
        functrax.checkpoint(lambda x: fnp.sin(fnp.sin(x))))(1.0),
    "int/ weak types": lambda: functrax.make_jaxpr(lambda a: a + 1)(fnp.int8(1)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_prints_like_jax(name):
    want = _expected()[name]
    closed = PROGRAMS[name]()
    functrax.check_jaxpr(closed)
    assert str(closed) == want


def test_every_vector_program_is_covered():
    assert set(_expected()) == set(PROGRAMS)
