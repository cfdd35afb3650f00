"""The fusion planner (functrax/lowering/fusion/planner.py).

Every plan is checked for the partition invariants (each non-view equation in exactly one
group, views only where read, groups in execution order, inputs and outputs exact, each group
a valid iteration space) and executed group by group on numpy values, passing only the
groups' declared outputs between them, against ``eval_jaxpr`` of the unplanned jaxpr.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import functrax
import functrax.numpy as fnp
from functrax import lax, nn, random
from functrax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from functrax.core import Primitive
from functrax.lowering.fusion import planner as fusion
from functrax.lowering.fusion.planner import (
    FusionConfig, GroupKind, classify, describe_plan, group_layout, plan_fusion,
)
from functrax.lowering.fusion.types import FusionGroup
from functrax.passes.pipeline import optimize
from functrax.primitives import primitive_registry

F32 = np.float32
RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.normal(size=shape).astype(F32)


def lower(f, *args):
    return functrax.jit(f).lower(*args).jaxpr


def kinds(plan):
    return [g.kind for g in plan.groups]


# --- the invariants and the reference interpreter ---


def check_invariants(plan, config=None):
    j = plan.jaxpr
    pos = {id(e): i for i, e in enumerate(j.eqns)}
    count = {}
    for g in plan.groups:
        idx = [pos[id(e)] for e in g.eqns]
        assert idx == sorted(idx) and len(set(idx)) == len(idx), "eqns in program order"
        for e in g.eqns:
            count[id(e)] = count.get(id(e), 0) + 1
    for e in j.eqns:
        n = count.get(id(e), 0)
        if classify(e)[0] == "view":
            assert n >= 1, f"view {e} is in no group"
        else:
            assert n == 1, f"{e} is in {n} groups"
    available = set(j.constvars) | set(j.invars)
    producers = {}
    for k, g in enumerate(plan.groups):
        defined = [v for e in g.eqns for v in e.outvars]
        reads = []
        for v in (v for e in g.eqns for v in e.invars):
            if type(v) is Var and v not in defined and v not in reads:
                reads.append(v)
        assert list(g.inputs) == reads, "inputs: exactly what the group reads from outside"
        for v in g.inputs:
            assert v in available, f"group {k} reads a value no earlier group wrote"
        for v in g.outputs:
            assert v in defined and v not in producers, "each value written once"
            producers[v] = k
            available.add(v)
        if g.kind is GroupKind.OPAQUE:
            assert len(g.eqns) == 1
        layout = group_layout(g, config)
        assert (layout.kind, layout.shape, layout.reduce_axes) == (
            g.kind, g.shape, g.reduce_axes)
    later_reads = {v for g in plan.groups for v in g.inputs}
    outs = {v for v in j.outvars if type(v) is Var}
    for v in producers:
        assert v in later_reads or v in outs, "no useless outputs"
    for v in outs:
        assert v in available, "every jaxpr output is written"


def run_plan(plan, consts, *args):
    """Execute the plan group by group: only declared outputs cross group boundaries."""
    j = plan.jaxpr
    env = dict(zip(j.constvars, consts))
    env.update(zip(j.invars, args))
    for g in plan.groups:
        local = {v: env[v] for v in g.inputs}
        for e in g.eqns:
            vals = [v.val if type(v) is Literal else local[v] for v in e.invars]
            out = e.primitive.bind(*vals, **e.params)
            local.update(zip(e.outvars, out if e.primitive.multiple_results else [out]))
        env.update((v, local[v]) for v in g.outputs)
    return [v.val if type(v) is Literal else env[v] for v in j.outvars]


def check_plan(closed, *args, config=None):
    plan = plan_fusion(closed, config)
    check_invariants(plan, config)
    want = functrax.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    got = run_plan(plan, closed.consts, *args)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    return plan


# --- the tables ---


def test_every_primitive_family_has_exactly_one_fusion_treatment():
    for name, prim in primitive_registry.items():
        homes = [prim.family in fusion.FAMILY_CATEGORIES, prim.family in fusion.UNFUSIBLE_FAMILIES]
        assert sum(homes) == 1, f"primitive '{name}' (family {prim.family}) has {sum(homes)}"
        category, reason = fusion.fusion_category(prim)
        assert (category == "opaque") == (reason is not None), name
    reasons = list(fusion.UNFUSIBLE_FAMILIES.values()) + list(fusion.UNFUSIBLE_PRIMITIVES.values())
    assert all(isinstance(r, str) and r for r in reasons)
    assert all(fusion.fusion_category(p)[0] != "opaque" for p in fusion.CONDITIONAL)


def test_unknown_primitive_is_opaque_with_a_reason():
    mystery = Primitive("mystery_op")
    mystery.def_abstract_eval(lambda x: x)
    a = Var(ShapedArray((4,), F32))
    b, c, d = (Var(ShapedArray((4,), F32)) for _ in range(3))
    eqns = [JaxprEqn([a], [b], primitive_registry["sin"], {}),
            JaxprEqn([b], [c], mystery, {}),
            JaxprEqn([c], [d], primitive_registry["exp"], {})]
    plan = plan_fusion(Jaxpr([], [a], [d], eqns))
    assert kinds(plan) == [GroupKind.ELEMENTWISE, GroupKind.OPAQUE, GroupKind.ELEMENTWISE]
    cat, reason = classify(eqns[1])
    assert cat == "opaque" and "unknown primitive 'mystery_op'" in reason
    check_invariants(plan)


# --- the patterns of the issue ---


def test_elementwise_chain_with_broadcast_is_one_group():
    x, y = rand(8, 16), rand(16)
    plan = check_plan(lower(lambda x, y: fnp.exp(fnp.sin(x) * 2) + y, x, y), x, y)
    assert kinds(plan) == [GroupKind.ELEMENTWISE]
    assert plan.groups[0].shape == (8, 16)
    assert [v.aval.shape for v in plan.groups[0].inputs] == [(8, 16), (16,)]


def _softmax_by_hand(x):
    m = fnp.max(x, axis=-1, keepdims=True)
    e = fnp.exp(x - m)
    return e / fnp.sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("softmax", [lambda x: nn.softmax(x, axis=-1), _softmax_by_hand],
                         ids=["nn.softmax", "by_hand"])
def test_softmax_over_rows_is_one_group(softmax):
    x = rand(8, 16)
    plan = check_plan(lower(softmax, x), x)
    (g,) = plan.groups
    assert g.kind is GroupKind.REDUCTION and g.shape == (8, 16) and g.reduce_axes == (1,)
    assert [e.primitive.name for e in g.eqns].count("exp") == 1
    assert group_layout(g).persistent


def _layernorm(x, gamma, beta):
    mu = fnp.mean(x, -1, keepdims=True)
    var = fnp.mean((x - mu) ** 2, -1, keepdims=True)
    return (x - mu) / fnp.sqrt(var + 1e-5) * gamma + beta


def test_layernorm_is_one_group():
    x, g, b = rand(8, 16), rand(16), rand(16)
    plan = check_plan(lower(_layernorm, x, g, b), x, g, b)
    assert kinds(plan) == [GroupKind.REDUCTION]
    assert plan.groups[0].reduce_axes == (1,)


def test_dense_relu_is_one_matmul_group():
    x, w, b = rand(8, 16), rand(16, 4), rand(4)
    plan = check_plan(lower(lambda x, w, b: nn.relu(x @ w + b), x, w, b), x, w, b)
    (g,) = plan.groups
    assert g.kind is GroupKind.MATMUL and g.shape == (8, 4)
    assert [e.primitive.name for e in g.eqns][0] == "dot_general"


def test_matmul_operand_producers_are_separate_but_transposes_are_absorbed():
    x, w = rand(8, 16), rand(16, 4)
    plan = check_plan(lower(lambda x, w: fnp.tanh(fnp.exp(x) @ w), x, w), x, w)
    assert kinds(plan) == [GroupKind.ELEMENTWISE, GroupKind.MATMUL]
    xt = rand(16, 8)
    plan = check_plan(lower(lambda xt, w: xt.T @ w * 2.0, xt, w), xt, w)
    assert kinds(plan) == [GroupKind.MATMUL]
    assert "transpose" in [e.primitive.name for e in plan.groups[0].eqns]


def test_matmul_operand_view_other_than_transpose_is_materialized():
    x, w = rand(16), rand(16, 4)
    plan = check_plan(lower(lambda x, w: fnp.broadcast_to(x, (8, 16)) @ w, x, w), x, w)
    assert kinds(plan) == [GroupKind.ELEMENTWISE, GroupKind.MATMUL]


def test_reduction_epilogue_and_prologue_fuse():
    x = rand(8, 16)
    plan = check_plan(lower(lambda x: fnp.sqrt(fnp.sum(fnp.exp(x) ** 2, axis=1)) + 1.0, x), x)
    (g,) = plan.groups
    assert g.kind is GroupKind.REDUCTION and g.shape == (8, 16) and g.reduce_axes == (1,)


def test_long_rows_are_streamed_one_pass_only():
    x = rand(8, 16)
    cfg = FusionConfig(max_row=8)
    plan = check_plan(lower(lambda x: fnp.sum(fnp.exp(x), axis=1) * 2.0, x), x, config=cfg)
    (g,) = plan.groups
    assert not group_layout(g, cfg).persistent and group_layout(g, cfg).row_size == 16
    plan = check_plan(lower(_softmax_by_hand, x), x, config=cfg)
    assert len(plan.groups) > 1
    assert all(g.kind is not GroupKind.OPAQUE for g in plan.groups)


def test_reductions_over_other_axes_share_a_group_only_when_mixed_reductions():
    x = rand(4, 6)
    f = lambda x: (fnp.sum(nn.softmax(x, axis=1), axis=0), fnp.mean(x))  # noqa: E731
    plan = check_plan(lower(f, x), x)
    assert len(plan.groups) == 3  # softmax rows, the column sum, the mean
    for g in plan.groups:  # every reduction reduces exactly the group's reduce axes
        for e in g.eqns:
            if e.primitive.name == "reduce_sum":
                assert tuple(e.params["axes"]) == g.reduce_axes or g.shape != (4, 6)
    mixed = FusionConfig(mixed_reductions=True)
    plan = check_plan(lower(f, x), x, config=mixed)
    assert kinds(plan) == [GroupKind.REDUCTION]
    assert plan.groups[0].reduce_axes == (0, 1)
    plan = check_plan(lower(f, x), x, config=FusionConfig(max_row=6, mixed_reductions=True))
    assert len(plan.groups) > 1


def test_expensive_producer_used_by_two_groups_is_computed_once():
    x, w = rand(8, 16), rand(16, 4)

    def f(x, w):
        e = fnp.exp(x)
        return e @ w, fnp.sum(e, axis=1)
    plan = check_plan(lower(f, x, w), x, w)
    names = [e.primitive.name for g in plan.groups for e in g.eqns]
    assert names.count("exp") == 1
    assert len(plan.groups) == 2


def test_cheap_views_are_duplicated_into_their_readers():
    x, w = rand(8, 16), rand(16, 16)

    def f(x, w):
        b = fnp.broadcast_to(fnp.sum(x, axis=0), (8, 16))  # a view read by two kernels
        return (x @ w) + b, fnp.tanh(x @ w.T) * b
    closed = lower(f, x, w)
    plan = check_plan(closed, x, w)
    bcast = [e for e in closed.eqns if e.primitive.name == "broadcast_in_dim"]
    assert sum(e in g.eqns for g in plan.groups for e in bcast) >= 2
    assert all(v.aval.shape != (8, 16) or v in closed.jaxpr.invars
               for g in plan.groups for v in g.inputs)


def test_computed_value_reindexed_twice_is_split():
    x = rand(6, 6)
    plan = check_plan(lower(lambda x: fnp.sin(x) + fnp.sin(x).T, x), x)
    assert len(plan.groups) == 2
    plan = check_plan(lower(lambda x: x + x.T, x), x)  # views of an input are just loads
    assert kinds(plan) == [GroupKind.ELEMENTWISE]


def test_views_of_inputs_fuse_as_loads():
    x, y = rand(4, 6), rand(3, 8)

    def f(x, y):
        a = fnp.flip(x, 1)[:, 1:5]                   # rev + slice of an input
        b = y.reshape(4, 6)[:, ::-1][:, 1:5]          # reshape of an input
        c = fnp.pad(x, ((0, 0), (1, 1)))[:, 2:6]      # pad (no interior) of an input
        c = c + lax.pad(x, 0.5, ((-1, 1, 0), (1, -8, 1)))  # interior and negative padding
        return fnp.exp(a) * b + c + lax.iota(F32, 4)
    plan = check_plan(lower(f, x, y), x, y)
    assert kinds(plan) == [GroupKind.ELEMENTWISE]


def test_concatenate_of_inputs_fuses_as_loads():
    x, y = rand(4, 6), rand(4, 3)

    def f(x, y):
        c = fnp.concatenate([x, y, fnp.flip(x, 1)], axis=1)  # of inputs and their views
        return fnp.exp(c) * 2.0, fnp.sum(fnp.concatenate([x, x], 0) ** 2, axis=0)
    closed = lower(f, x, y)
    plan = check_plan(closed, x, y)
    assert GroupKind.OPAQUE not in kinds(plan)
    cats = [e for e in closed.eqns if e.primitive.name == "concatenate"]
    assert len(cats) == 2 and all(classify(e) == ("view", None) for e in cats)
    written = {v for g in plan.groups for v in g.inputs + g.outputs}
    assert not written & {e.outvars[0] for e in cats}  # no copy: read where it is used
    many = [rand(2) for _ in range(fusion.MAX_CONCAT_OPERANDS + 1)]
    closed = lower(lambda *xs: fnp.exp(fnp.concatenate(xs)), *many)
    plan = check_plan(closed, *many)
    assert kinds(plan) == [GroupKind.OPAQUE, GroupKind.ELEMENTWISE]
    assert "operands" in classify(plan.groups[0].eqns[0])[1]


def test_concatenate_of_computed_values_reads_them_from_memory():
    x, y = rand(4, 6), rand(4, 3)
    closed = lower(lambda x, y: fnp.tanh(fnp.concatenate([fnp.sin(x), y], 1)), x, y)
    plan = check_plan(closed, x, y)
    assert GroupKind.OPAQUE not in kinds(plan) and len(plan.groups) == 2
    (cat,) = [g for g in plan.groups if "concatenate" in [e.primitive.name for e in g.eqns]]
    assert "sin" not in [e.primitive.name for e in cat.eqns]
    with pytest.raises(fusion.IllegalGroup, match="concatenate"):
        group_layout(FusionGroup(GroupKind.ELEMENTWISE, tuple(closed.eqns),
                                 tuple(closed.jaxpr.invars), tuple(closed.jaxpr.outvars),
                                 (4, 9)))


def test_dynamic_update_slice_with_literal_starts_is_a_view():
    x, u = rand(5, 6), rand(2, 3)
    f = lambda x, u: fnp.exp(lax.dynamic_update_slice(fnp.sin(x), u * 2.0, (1, 2)))  # noqa
    plan = check_plan(lower(f, x, u), x, u)
    # the update (u * 2) is computed in its own group; the window select follows sin(x)
    assert GroupKind.OPAQUE not in kinds(plan)
    plan = check_plan(lower(lambda x, u: lax.dynamic_update_slice(fnp.sin(x), u, (1, 2))
                            * 3.0, x, u), x, u)
    assert kinds(plan) == [GroupKind.ELEMENTWISE]
    i = np.int32(1)
    closed = lower(lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0)), x, u, i)
    plan = check_plan(closed, x, u, i)
    (g,) = [g for g in plan.groups if g.kind is GroupKind.OPAQUE]
    assert "traced start indices" in classify(g.eqns[0])[1]


def test_view_outputs_are_written():
    x = rand(4, 6)
    plan = check_plan(lower(lambda x: (x.T, fnp.sin(x).reshape(24)), x), x)
    assert all(g.kind is GroupKind.ELEMENTWISE for g in plan.groups)


def test_unfusible_ops_are_opaque_and_listed():
    x, i = rand(4, 8), np.array([2, 0, 1], np.int32)
    key = random.PRNGKey(0)

    def f(x, i, key):
        s = fnp.sort(fnp.sin(x), axis=1)
        c = fnp.cumsum(s, axis=1)
        g = c[i]
        k = lax.cond(fnp.sum(x) > 0, lambda v: v * 2.0, lambda v: v - 1.0, g)
        p = lax.pad(k, 0.0, ((0, 0, 1), (0, 0, 0)))
        d = lax.dynamic_slice(p, (i[0], 0), (2, 8))
        n = random.normal(key, (2, 8))
        return fnp.exp(d + n)
    closed = lower(f, x, i, key)
    plan = check_plan(closed, x, i, key)
    opaque = [g.eqns[0].primitive.name for g in plan.groups if g.kind is GroupKind.OPAQUE]
    for name in ["sort", "cumsum", "cond", "threefry2x32"]:
        assert name in opaque, name
        assert fusion.fusion_category(primitive_registry[name])[0] == "opaque"
    # gather and a traced dynamic_slice are data-dependent views (loads at computed indices)
    for name in ["gather", "dynamic_slice"]:
        assert name not in opaque, name
        assert fusion.fusion_category(primitive_registry[name])[0] == "view", name
        (g,) = [g for g in plan.groups if name in [e.primitive.name for e in g.eqns]]
        assert g.kind is GroupKind.ELEMENTWISE
    # pad with interior padding is index arithmetic (a view written out for dynamic_slice)
    (pad,) = [g for g in plan.groups if "pad" in [e.primitive.name for e in g.eqns]]
    assert pad.kind is GroupKind.ELEMENTWISE
    for g in plan.groups:
        if g.kind is GroupKind.OPAQUE:
            assert classify(g.eqns[0])[1]
    static = lower(lambda x: lax.dynamic_slice(x, (1, 2), (2, 3)) * 2.0, x)
    assert kinds(check_plan(static, x)) == [GroupKind.ELEMENTWISE]


def test_scan_and_while_are_opaque():
    x = rand(4)

    def f(x):
        y, _ = lax.scan(lambda c, v: (c + v, c * v), 0.0, fnp.exp(x))
        return lax.while_loop(lambda v: v < 100.0, lambda v: v * 2.0 + 1.0, y)
    plan = check_plan(optimize(functrax.make_jaxpr(f)(x)), x)
    assert {"scan", "while"} <= {g.eqns[0].primitive.name for g in plan.groups
                                 if g.kind is GroupKind.OPAQUE}


def test_disabled_gives_one_group_per_equation():
    x, y = rand(8, 16), rand(16)
    closed = lower(lambda x, y: fnp.exp(fnp.sin(x) * 2) + y, x, y)
    plan = check_plan(closed, x, y, config=FusionConfig(enabled=False))
    assert len(plan.groups) == 4  # sin, mul, exp, add (the broadcast goes with the add)


def test_describe_is_readable():
    x, w, b = rand(8, 16), rand(16, 4), rand(4)
    plan = plan_fusion(lower(lambda x, w, b: nn.softmax(nn.relu(x @ w + b)), x, w, b))
    text = plan.describe()
    assert text.splitlines() == [
        "kernel 0: matmul[8, 4]: dot_general broadcast_in_dim add max",
        text.splitlines()[1]]
    assert text.splitlines()[1].startswith("kernel 1: reduction[8, 4]: reduce_max")
    detail = describe_plan(plan)
    assert "kernel 1: reduction[8, 4] reduce (1,): reduce_max" in detail
    assert "  in:  a:f32[8,16] b:f32[16,4] c:f32[4]" in detail
    assert plan.num_kernels == 2


def test_doctests():
    import doctest
    result = doctest.testmod(fusion)
    assert result.attempted >= 3 and result.failed == 0


def test_layout_gives_every_computed_value_its_axes():
    x, g, b = rand(8, 16), rand(16), rand(16)
    (grp,) = plan_fusion(lower(_layernorm, x, g, b)).groups
    layout = group_layout(grp)
    assert layout.persistent and layout.row_size == 16
    for e in grp.eqns:
        v = e.outvars[0]
        if e.primitive.name == "reduce_sum":
            assert layout.var_axes[v] == (0,)          # one value per row
        elif v.aval.shape == (8, 16) and e.primitive.name != "broadcast_in_dim":
            assert layout.var_axes[v] == (0, 1)
    assert all(v not in layout.var_axes for v in grp.inputs)


def test_matmul_takes_the_bias_gradient_of_its_operand():
    dy, x = rand(8, 4), rand(8, 16)
    f = lambda dy, x: (x.T @ dy, fnp.sum(dy, axis=0))  # noqa: E731
    plan = check_plan(lower(f, dy, x), dy, x)
    (g,) = plan.groups
    assert g.kind is GroupKind.MATMUL and g.shape == (16, 4)
    assert group_layout(g).var_axes[g.outputs[-1]] == (1,)  # along the output's columns
    plan = check_plan(lower(f, dy, x), dy, x, config=FusionConfig(matmul_side_reductions=False))
    assert kinds(plan) == [GroupKind.MATMUL, GroupKind.REDUCTION]
    g = lambda dy, x: (x.T @ dy, fnp.sum(dy, axis=1))  # noqa: E731  (not along K)
    assert len(check_plan(lower(g, dy, x), dy, x).groups) == 2
    sq = rand(6, 6)  # one value as both operands: each reduction runs along its own K
    for axis, out_dim in [(1, 0), (0, 1)]:
        plan = check_plan(lower(lambda a: (a @ a, fnp.sum(a, axis=axis)), sq), sq)
        (g,) = plan.groups
        assert group_layout(g).var_axes[g.outputs[1]] == (out_dim,)


def test_reduction_is_not_recomputed_along_an_unrelated_loop():
    x = rand(8, 16)
    f = lambda x: fnp.sum(x, axis=1)[:, None, None] * fnp.ones((8, 3, 5))  # noqa: E731
    plan = check_plan(lower(f, x), x)
    assert kinds(plan) == [GroupKind.REDUCTION, GroupKind.ELEMENTWISE]


def test_bad_arguments():
    with pytest.raises(TypeError, match="plan_fusion: expected a ClosedJaxpr or a Jaxpr"):
        plan_fusion(lambda x: x)
    x = rand(3)
    with pytest.raises(TypeError, match="config must be a FusionConfig"):
        plan_fusion(lower(fnp.sin, x), config={"max_row": 4})


# --- an MLP train step ---

SIZES = (16, 32, 32, 10)


def _mlp_step(params, x, labels):
    def predict(params, x):
        for layer in params[:-1]:
            x = nn.relu(x @ layer["w"] + layer["b"])
        return x @ params[-1]["w"] + params[-1]["b"]

    def loss_fn(params):
        log_probs = nn.log_softmax(predict(params, x))
        return -fnp.mean(fnp.sum(log_probs * nn.one_hot(labels, SIZES[-1]), axis=-1))
    loss, grads = functrax.value_and_grad(loss_fn)(params)
    new = functrax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return loss, new


def mlp_kernel_counts(sizes, batch, config=None):
    """(plan, closed, [(forward, backward) kernels per dense layer], other kernels)."""
    params = [{"b": rand(n), "w": rand(m, n) * 0.3} for m, n in zip(sizes[:-1], sizes[1:])]
    x, labels = rand(batch, sizes[0]), np.arange(batch, dtype=np.int32) % sizes[-1]
    closed = lower(_mlp_step, params, x, labels)
    plan = plan_fusion(closed, config)
    j = closed.jaxpr
    flat_in = j.invars  # params are flattened in order b, w per layer, then x, labels
    flat_out = j.outvars[1:]
    label_var = flat_in[-1]
    per_layer, attributed = [], set()
    for layer in range(len(sizes) - 1):
        b, w = flat_in[2 * layer], flat_in[2 * layer + 1]
        new_b, new_w = flat_out[2 * layer], flat_out[2 * layer + 1]
        touching = [g for g in plan.groups if label_var not in g.inputs and (
            {b, w} & set(g.inputs) or {new_b, new_w} & set(g.outputs))]
        fwd = [g for g in touching if {b, w} <= set(g.inputs) and not set(flat_out) & set(
            g.outputs)]
        per_layer.append((len(fwd), len(touching) - len(fwd)))
        attributed.update(id(g) for g in touching)
    return plan, closed, per_layer, len(plan.groups) - len(attributed)


def test_mlp_train_step_kernels_per_dense_layer():
    plan, closed, per_layer, n_loss = mlp_kernel_counts(SIZES, 8)
    check_invariants(plan)
    params = [{"b": rand(n), "w": rand(m, n) * 0.3} for m, n in zip(SIZES[:-1], SIZES[1:])]
    x, labels = rand(8, SIZES[0]), np.arange(8, dtype=np.int32) % SIZES[-1]
    flat = [a for p in params for a in (p["b"], p["w"])] + [x, labels]
    check_plan(closed, *flat)
    print("\nMLP train step", SIZES, "batch 8:\n" + describe_plan(plan))
    print("kernels per dense layer (forward, backward):", per_layer, "loss kernels:", n_loss)
    assert all(f == 1 and bw <= 2 for f, bw in per_layer), per_layer
    assert n_loss == 2  # log-softmax rows (+ their gradient), the mean over the batch
    assert all(g.kind in (GroupKind.MATMUL, GroupKind.REDUCTION) for g in plan.groups)
    plan, _, per_layer, n_loss = mlp_kernel_counts(SIZES, 8, FusionConfig(mixed_reductions=True))
    print("with mixed_reductions:", per_layer, "loss kernels:", n_loss)
    assert all(f == 1 and bw <= 2 for f, bw in per_layer) and n_loss == 1


def test_mlp_train_step_full_size_shapes():
    plan, _, per_layer, n_loss = mlp_kernel_counts((784, 512, 512, 10), 128)
    check_invariants(plan)
    print("\nMLP 784-512-512-10 batch 128: per layer", per_layer, "loss", n_loss,
          "total", plan.num_kernels)
    assert all(f == 1 and bw <= 2 for f, bw in per_layer), per_layer
    assert n_loss == 2


# --- random programs ---

KINDS = ["unary", "binary", "reduce", "matmul", "transpose", "softmax", "where", "bcast",
         "reshape", "slice", "rev", "layernorm", "argmax", "cumsum", "concat"]
UNARY = [fnp.sin, fnp.exp, fnp.tanh, fnp.negative, fnp.abs]
BINARY = [fnp.add, fnp.multiply, fnp.subtract, fnp.maximum]
REDUCE = [fnp.sum, fnp.max, fnp.mean, fnp.min]


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _layernorm_rows(u):
    mu = fnp.mean(u, -1, keepdims=True)
    return (u - mu) / fnp.sqrt(fnp.mean((u - mu) ** 2, -1, keepdims=True) + 1e-3)


def _apply(kind, u, pool, b, c):
    """One random op on ``u`` (None when it does not apply to ``u``'s shape)."""
    if kind == "unary":
        return UNARY[b % len(UNARY)](u)
    if kind == "binary":
        cands = [v for v in pool if _broadcastable(u.shape, v.shape)]
        return BINARY[c % len(BINARY)](u, cands[b % len(cands)])
    if kind == "where":
        return fnp.where(u > 0, u, 0.5 * u)
    if u.ndim == 0:
        return None
    if kind == "matmul":
        cands = [v for v in pool if v.ndim == 2 and v.shape[0] == u.shape[-1]]
        return u @ cands[b % len(cands)] if cands else None
    simple = {
        "reduce": lambda: REDUCE[c % len(REDUCE)](u, axis=b % u.ndim, keepdims=bool(c // 4 % 2)),
        "transpose": lambda: u.T if u.ndim == 2 else None,
        "softmax": lambda: nn.softmax(u, axis=b % u.ndim),
        "bcast": lambda: fnp.broadcast_to(u, (3,) + u.shape) * 1.5 if u.ndim == 1 else None,
        "reshape": lambda: u.reshape(-1) if b % 2 else u.reshape(u.shape + (1,)),
        "slice": lambda: u[..., 1:] if u.shape[-1] > 1 else None,
        "rev": lambda: fnp.flip(u, -1),
        "layernorm": lambda: _layernorm_rows(u),
        "argmax": lambda: fnp.argmax(u, axis=-1).astype(fnp.float32),
        "cumsum": lambda: fnp.cumsum(u, axis=-1),
        "concat": lambda: fnp.concatenate([u, u * 2], axis=-1),
    }
    return simple[kind]()


def build_program(ops, n_out, grad):
    def f(x, y, z, w):
        pool = [x, y, z, w]
        for kind, a, b, c in ops:
            out = _apply(kind, pool[a % len(pool)], pool, b, c)
            if out is not None:
                pool.append(out)
        outs = tuple((pool[4:] or [pool[0] + 1.0])[-n_out:])
        return sum(fnp.sum(fnp.tanh(o)) for o in outs) if grad else outs
    return functrax.value_and_grad(f, argnums=(0, 1, 2, 3)) if grad else f


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 50), st.integers(0, 50),
                              st.integers(0, 50)), min_size=1, max_size=10),
       n_out=st.integers(1, 3), max_row=st.sampled_from([2, 4, 12, 8192]), grad=st.booleans(),
       mixed=st.booleans())
def test_random_programs_plan_and_execute(ops, n_out, max_row, grad, mixed):
    """Random elementwise / view / reduction / matmul programs (and their gradients)."""
    args = (rand(3, 4), rand(4), rand(3, 4), rand(4, 4))
    closed = optimize(functrax.make_jaxpr(build_program(ops, n_out, grad))(*args))
    check_plan(closed, *args, config=FusionConfig(max_row=max_row, mixed_reductions=mixed))


def test_plan_of_an_unoptimized_jaxpr_keeps_call_likes_opaque():
    x = rand(4)
    closed = functrax.make_jaxpr(lambda x: functrax.jit(fnp.sin)(x) * 2.0)(x)
    plan = check_plan(closed, x)
    assert plan.groups[0].kind is GroupKind.OPAQUE
    assert isinstance(closed, ClosedJaxpr)
