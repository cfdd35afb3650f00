"""Printed forms against JAX's own text: every section of ../shared/vectors/jax_reprs.md (a
heading naming the expression, then a fenced block with what JAX 0.10.2 printed) is either
reproduced here exactly or skipped with the area that owns it."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import core, random

VECTORS = pathlib.Path(__file__).resolve().parents[2] / "shared" / "vectors" / "jax_reprs.md"


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
    # print(jax.typeof(x)) prints x's aval (functrax.typeof itself comes with the debugging
    # area); the aval's str is the core's
    "typeof": lambda: str(core.get_aval(fnp.zeros(3))),
}

_KEYS = "typed PRNG keys (the keys area: tests/test_random_keys.py)"
_DEBUG = "debug output (the debugging area: tests/test_debugging.py)"
SKIPPED = {
    "repr(jax.random.key(0))": _KEYS,
    "str(jax.random.key(0))": _KEYS,
    "k.dtype, k.shape": _KEYS,
    "repr(jax.random.split(key, 3))": _KEYS,
    "jax.random.key_data(key)": _KEYS,
    "make_jaxpr(lambda k: jax.random.normal(k, (2,)))(key)": _KEYS,
    "make_jaxpr(lambda k: jax.random.split(k))(key)": _KEYS,
    "jit(debug.print) output": _DEBUG,
    "vmap(debug.print)": _DEBUG,
    "make_jaxpr with debug.print": _DEBUG,
}


def test_every_section_is_checked_or_skipped_with_a_reason():
    sections = _sections()
    assert len(sections) >= 16
    assert set(sections) == set(CHECKED) | set(SKIPPED)
    assert not set(CHECKED) & set(SKIPPED)


@pytest.mark.parametrize("heading", sorted(CHECKED))
def test_prints_like_jax(heading):
    assert CHECKED[heading]() == _sections()[heading]


@pytest.mark.parametrize("heading", sorted(SKIPPED))
def test_entries_of_other_areas(heading):
    pytest.skip(SKIPPED[heading])
