"""Every primitive has its rules, and every primitive is exercised by the op-spec table."""
from __future__ import annotations

import pytest

from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives import primitive_registry
from tests.opspec import all_specs

_GATHER_SCATTER = "tested in tests/test_gather_scatter.py"
_CALL_LIKE = ("call-like primitive holding a sub-jaxpr (custom derivatives / checkpoint); "
              "exercised by the transform tests, not by an elementwise op spec")

# primitive name -> why no op spec lists it. A gap not listed here fails the test.
EXEMPT = {
    "gather": _GATHER_SCATTER,
    "scatter": _GATHER_SCATTER,
    "scatter-add": _GATHER_SCATTER,
    "scatter-mul": _GATHER_SCATTER,
    "scatter-min": _GATHER_SCATTER,
    "scatter-max": _GATHER_SCATTER,
    "custom_jvp_call": _CALL_LIKE,
    "custom_vjp_call": _CALL_LIKE,
    "custom_lin": _CALL_LIKE,
    "remat2": _CALL_LIKE,
}
_COLLECTIVES = ("all_gather", "all_to_all", "axis_index", "pmax", "pmin", "ppermute", "psum",
                "reduce_scatter")
_COLLECTIVE = ("collective over a named axis: executed by the vmap rule / the pmap runtime "
               "(later issue); tested in tests/test_collectives.py")
EXEMPT.update({name: _COLLECTIVE for name in _COLLECTIVES})
EXEMPT["xla_pmap"] = ("call-like primitive mapped over devices (one thread per device); "
                      "tested in tests/test_pmap.py")
EXEMPT["fused_attention"] = ("lowering-internal: made by the attention pass "
                             "(functrax/passes/attention.py) after every transformation ran, "
                             "never bound by user code; tested in "
                             "tests/test_triton_attention_pattern.py")

# primitive name -> why it has no numpy backend rule (it never reaches eager evaluation)
EXEMPT_NUMPY: dict = {}  # (the collectives have pmap-runtime numpy rules now)

PRIMS = sorted(primitive_registry.items())


def test_registry_is_populated():
    assert len(primitive_registry) > 50
    for name, prim in PRIMS:
        assert prim.name == name


@pytest.mark.parametrize("name,prim", PRIMS, ids=[n for n, _ in PRIMS])
def test_has_abstract_eval_rule(name, prim):
    assert callable(prim.abstract_eval), f"primitive '{name}' has no abstract eval rule"


@pytest.mark.parametrize("name,prim", PRIMS, ids=[n for n, _ in PRIMS])
def test_has_numpy_rule(name, prim):
    if name in EXEMPT_NUMPY:
        assert prim not in numpy_rules, (f"'{name}' has a numpy rule now: remove it from "
                                         "EXEMPT_NUMPY")
        return
    assert callable(numpy_rules.get(prim)), f"primitive '{name}' has no numpy backend rule"


def test_numpy_rules_are_only_for_registered_primitives():
    registered = set(primitive_registry.values())
    extra = [p.name for p in numpy_rules if p not in registered]
    assert not extra, f"numpy rules for unregistered primitives: {extra}"


def test_every_primitive_is_exercised_by_an_op_spec():
    covered = {name for spec in all_specs() for name in spec.primitives}
    unknown = sorted(covered - set(primitive_registry))
    assert not unknown, f"op specs list primitives that do not exist: {unknown}"
    gaps = sorted(set(primitive_registry) - covered - set(EXEMPT))
    assert not gaps, (f"primitives no op spec exercises: {gaps}. Add an OpSpec listing them in "
                      "`primitives=` (tests/opspec/*.py), or add them to EXEMPT with a reason.")


def test_exemptions_are_current():
    stale = sorted((set(EXEMPT) | set(EXEMPT_NUMPY)) - set(primitive_registry))
    assert not stale, f"EXEMPT lists primitives that no longer exist: {stale}"
    for name, reason in EXEMPT.items():
        assert reason.strip(), f"EXEMPT[{name!r}] needs a reason"
