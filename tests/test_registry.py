"""Every primitive has its rules (abstract eval, numpy, cost, Triton; jvp/transpose and vmap
in their own registry tests), a family, and is exercised by the op-spec table."""
from __future__ import annotations

import pytest

from functrax import primitives as P
from functrax.core import ELEMENTWISE_FAMILIES, Family
from functrax.lowering.cost import cost_rules
from functrax.lowering.numpy.rules import numpy_rules
from functrax.lowering.triton.backend import OPAQUE_STEPS
from functrax.lowering.triton.indexing import index_rules, select_rules
from functrax.lowering.triton.rules import reduce_rules, triton_rules
from functrax.lowering.triton.rules_special_functions import arg_reduce_rules
from functrax.passes.inline import inlinable
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
EXEMPT["shard_map"] = ("call-like primitive mapped over the devices of a mesh (one thread "
                       "per device); tested in tests/test_shard_map.py")
EXEMPT["pvary"] = ("a type-only identity inside shard_map bodies with check_vma (made by "
                   "bind, never by the user on a plain array); tested in "
                   "tests/test_shard_map_vma.py")
EXEMPT.update(dict.fromkeys(("debug_callback", "debug_print"), (
    "a host callback with no results (debug.callback / debug.print): what it prints and "
    "when is tested in tests/test_debugging.py")))
EXEMPT["sharding_constraint"] = ("the identity laying a value out over a mesh "
                                 "(lax.with_sharding_constraint): its placement needs several "
                                 "devices; tested on 8 virtual CPU devices in "
                                 "tests/test_jit_shardings.py")
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
    # user-defined primitives (functrax.extend.core, e.g. tests/test_extend.py's) add their
    # rules to the same table
    from functrax.extend.core import Primitive as UserPrimitive
    registered = set(primitive_registry.values())
    extra = [p.name for p in numpy_rules
             if p not in registered and not isinstance(p, UserPrimitive)]
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


# --- families, cost rules and Triton rules ---

def test_every_primitive_declares_a_family():
    for name, prim in PRIMS:
        assert isinstance(prim.family, Family), f"primitive '{name}' has no family"


_LAPACK = "a LAPACK decomposition: no cost model (one flop per output element, the default)"
_KEY_PRIMS = ("random_seed", "random_bits", "random_split", "random_fold_in", "random_wrap",
              "random_unwrap", "random_clone")
_PHYSICALIZED = ("a typed-key primitive: passes/physicalize.py (the first step of "
                 "pipeline.optimize and of each backend) rewrites it onto the keys' uint32 "
                 "data (threefry2x32, shape ops) before any cost model or backend sees it")
# primitive name -> why it has no cost rule
EXEMPT_COST = {
    **dict.fromkeys(("cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"), _LAPACK),
    **dict.fromkeys(("hessenberg", "tridiagonal", "householder_product", "schur", "eig",
                     "tridiagonal_solve", "geqp3"), _LAPACK),
    "threefry2x32": "an integer hash: one flop per output element (the default)",
    "custom_lin": "only in linearized jaxprs, which are transposed before anything runs",
    **dict.fromkeys(_KEY_PRIMS, _PHYSICALIZED),
}


@pytest.mark.parametrize("name,prim", PRIMS, ids=[n for n, _ in PRIMS])
def test_has_cost_rule(name, prim):
    if name in EXEMPT_COST:
        assert prim not in cost_rules, f"'{name}' has a cost rule now: remove it from EXEMPT_COST"
        return
    assert prim in cost_rules or prim in inlinable, (
        f"primitive '{name}' (family {prim.family}) has no cost rule: give its family one in "
        "functrax/lowering/cost.py, register one for it, or list it in EXEMPT_COST")


def _triton_home(prim) -> bool:
    family = prim.family
    if family in ELEMENTWISE_FAMILIES:
        return any((k[0] if isinstance(k, tuple) else k) is prim for k in triton_rules)
    if family in (Family.SHAPE, Family.INDEXING):
        return prim in index_rules or prim in select_rules
    if family is Family.REDUCTION:
        return prim in arg_reduce_rules or any(k[0] is prim for k in reduce_rules)
    if family is Family.CONTRACTION:
        return prim is P.dot_general_p  # MATMUL groups (matmul_groups.py)
    if family is Family.CONVOLUTION:
        return prim is P.conv_general_dilated_p  # CONV groups (conv_groups.py)
    return prim in OPAQUE_STEPS


_INLINED = "call-like: passes.pipeline.optimize inlines it before the Triton backend plans"
_COLLECTIVE = "a collective: run by the pmap runtime over the devices, never by one program"
# primitive name -> why the Triton backend has no rule for it (it runs as a listed fallback)
EXEMPT_TRITON = {
    **dict.fromkeys(("jit", "custom_jvp_call", "custom_vjp_call", "remat2"), _INLINED),
    "custom_lin": "only in linearized jaxprs, which are transposed before anything runs",
    "xla_pmap": "a call mapped over devices: the pmap runtime runs one program per device",
    "shard_map": "a call mapped over a mesh: the pmap runtime runs one program per device",
    "pvary": "only inside shard_map bodies, which the pmap runtime runs per device",
    **dict.fromkeys(("psum", "pmax", "pmin", "all_gather", "all_to_all", "ppermute",
                     "axis_index", "reduce_scatter"), _COLLECTIVE),
    **dict.fromkeys(("cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "hessenberg",
                     "tridiagonal", "householder_product", "schur", "eig",
                     "tridiagonal_solve", "geqp3"),
                    "a LAPACK decomposition: a listed numpy fallback"),
    **dict.fromkeys(("real", "imag", "complex"),
                    "complex operands or results: Triton has no complex type"),
    "linear_call": ("holds two jaxprs (callee, transpose) over different operands: a listed "
                    "numpy step running the callee"),
    "custom_linear_solve": ("a solve with user-given solver jaxprs: a listed numpy step "
                            "running the solve jaxpr (its body runs on the backend it names)"),
    "optimization_barrier": ("an identity the fusion plan does not look through: a listed "
                             "numpy step between kernels"),
    "top_k": "a partial sort: a listed numpy fallback (sort's kernel sorts whole rows)",
    "fft": "complex dtypes: Triton has no complex type (a listed numpy fallback)",
    "iota": "an index with no operand: the code generator emits it inline (codegen.py)",
    "reduce_window": ("reduce_window with a general computation (a traced scalar sub-jaxpr "
                      "per window element): a listed numpy fallback; the sum/max/min monoids "
                      "have kernels (lowering/triton/windows.py)"),
    "reduce": ("lax.reduce with a general computation (a traced scalar sub-jaxpr): a listed "
               "numpy fallback; its monoids bind reduce_sum/_max/... , which have kernels"),
    **dict.fromkeys(_KEY_PRIMS, _PHYSICALIZED),
    **dict.fromkeys(("igamma", "igammac", "igamma_grad_a", "random_gamma_grad",
                     "regularized_incomplete_beta", "zeta", "polygamma"),
                    "an iterative special function (series / continued fraction summed until "
                    "each element converges): an opaque group, a listed numpy fallback "
                    "(UNFUSIBLE_PRIMITIVES in lowering/fusion/tables.py)"),
}


@pytest.mark.parametrize("name,prim", PRIMS, ids=[n for n, _ in PRIMS])
def test_has_triton_rule(name, prim):
    if name in EXEMPT_TRITON:
        assert not _triton_home(prim), (f"'{name}' has a Triton rule now: remove it from "
                                        "EXEMPT_TRITON")
        return
    assert _triton_home(prim), (
        f"primitive '{name}' (family {prim.family}) has no Triton rule: add a template to "
        "functrax/lowering/triton/rules.py (or the table of its family), or list it in "
        "EXEMPT_TRITON with the reason it runs as a numpy fallback")


def test_cost_and_triton_exemptions_are_current():
    stale = sorted((set(EXEMPT_COST) | set(EXEMPT_TRITON)) - set(primitive_registry))
    assert not stale, f"exemptions list primitives that no longer exist: {stale}"
    assert all(r.strip() for r in list(EXEMPT_COST.values()) + list(EXEMPT_TRITON.values()))
