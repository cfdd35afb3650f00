"""Printed forms against JAX's own text: every section of ../shared/vectors/jax_reprs.md (a
heading naming the expression, then a fenced block with what JAX 0.10.2 printed) is either
reproduced here exactly."""
from __future__ import annotations

import re

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import random
from tests.vectors import vector_path

VECTORS = vector_path("jax_reprs.md")


def _sections() -> dict:
    """heading -> the text of the first fenced block under it."""
    text = VECTORS.read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r"^## (.+?)\n+```\n(.*?)\n```", text, re.M | re.S):
        out.setdefault(m.group(1).strip(), m.group(2))
    return out


def _vjp_returns():
    _, f_vjp = functrax.vjp(fnp.sin, 1.0)
    return f"VJP {len(f_vjp(1.0))}"


def _iterating():
    return repr(next(iter(fnp.arange(3.0))))


# heading -> a function printing functrax's text for the same expression
CHECKED = {
    "jax.random.PRNGKey(0)": lambda: repr(random.PRNGKey(0)),
    "vjp returns": _vjp_returns,
    "jax.tree.structure": lambda: str(functrax.tree.structure({"a": 1, "b": (2, 3)})),
    "iterating": _iterating,
    "ShapeDtypeStruct": lambda: str(functrax.ShapeDtypeStruct((2, 3), np.float32)),
    "typeof": lambda: str(functrax.typeof(fnp.zeros(3))),
}

_KEY = random.key(0)


def _printed(fn) -> str:
    """What ``fn()`` prints on stdout (debug.print output), without the final newline."""
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue().rstrip("\n")


def _jit_debug_print():
    x = fnp.arange(3.0)
    functrax.jit(lambda x: functrax.debug.print("x = {}", x))(x)
    functrax.jit(lambda x: functrax.debug.print("x={x} y={y}", x=x, y=x * 2))(x)


def _debug_jaxpr():
    def f(x):
        functrax.debug.print("x {}", x)
        return x
    return str(functrax.make_jaxpr(f)(1.0))


CHECKED.update({
    "repr(jax.random.key(0))": lambda: repr(_KEY),
    "str(jax.random.key(0))": lambda: str(_KEY),
    "k.dtype, k.shape": lambda: f"{_KEY.dtype} {_KEY.shape}",
    "repr(jax.random.split(key, 3))": lambda: repr(random.split(_KEY, 3)),
    "jax.random.key_data(key)": lambda: repr(random.key_data(_KEY)),
    "make_jaxpr(lambda k: jax.random.normal(k, (2,)))(key)": lambda: str(
        functrax.make_jaxpr(lambda k: random.normal(k, (2,)))(_KEY)),
    "make_jaxpr(lambda k: jax.random.split(k))(key)": lambda: str(
        functrax.make_jaxpr(lambda k: random.split(k))(_KEY)),
    "jit(debug.print) output": lambda: _printed(_jit_debug_print),
    "vmap(debug.print)": lambda: _printed(lambda: functrax.vmap(
        lambda v: functrax.debug.print("v {}", v))(fnp.arange(2.0))),
    "make_jaxpr with debug.print": _debug_jaxpr,
})
SKIPPED: dict = {}
# heading -> why functrax prints it differently today (xfail strict: fixing it flips the test)
KNOWN_DIFFERENT: dict = {}


def test_every_section_is_checked_or_skipped_with_a_reason():
    sections = _sections()
    assert len(sections) >= 16
    assert set(sections) == set(CHECKED) | set(SKIPPED)
    assert not set(CHECKED) & set(SKIPPED)


@pytest.mark.parametrize("heading", [
    pytest.param(h, marks=pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENT[h]))
    if h in KNOWN_DIFFERENT else h for h in sorted(CHECKED)])
def test_prints_like_jax(heading):
    assert CHECKED[heading]() == _sections()[heading]


