"""functrax.optim against hand-written numpy updates (optax's formulas), jitted training,
schedules against closed forms, clipping, chaining, masking, and states as pytrees."""
from __future__ import annotations

import math

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import optim
from functrax.tree_util import tree_leaves, tree_map, tree_structure

# --- a quadratic over a dict of arrays: loss = sum 0.5 * a * (p - c)**2 ---

_RNG = np.random.RandomState(0)
A = {"w": _RNG.uniform(0.5, 2.0, (3,)), "b": _RNG.uniform(0.5, 2.0, (2, 2))}
C = {"w": _RNG.uniform(-1, 1, (3,)), "b": _RNG.uniform(-1, 1, (2, 2))}
P0 = {"w": _RNG.uniform(-2, 2, (3,)), "b": _RNG.uniform(-2, 2, (2, 2))}
KEYS = ("w", "b")
STEPS = 5


def _grads_np(p):
    return {k: A[k] * (p[k] - C[k]) for k in KEYS}


def _loss(p):
    return sum(fnp.sum(0.5 * fnp.asarray(A[k], fnp.float32) * (p[k] - C[k].astype(np.float32))
                       ** 2) for k in KEYS)


def _run_functrax(opt, steps=STEPS, jit=False):
    params = {k: fnp.asarray(P0[k], fnp.float32) for k in KEYS}
    state = opt.init(params)

    def step(params, state):
        grads = functrax.grad(_loss)(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state
    if jit:
        step = functrax.jit(step)
    history = []
    for _ in range(steps):
        params, state = step(params, state)
        history.append({k: np.asarray(params[k]) for k in KEYS})
    return history, state


def _run_numpy(step_fn, steps=STEPS):
    """``step_fn(p, g, t, state) -> (p, state)`` per leaf, ``t = 0, 1, ...``."""
    p = {k: P0[k].copy() for k in KEYS}
    states = {k: None for k in KEYS}
    history = []
    for t in range(steps):
        g = _grads_np(p)
        for k in KEYS:
            p[k], states[k] = step_fn(p[k], g[k], t, states[k])
        history.append({k: p[k].copy() for k in KEYS})
    return history


def _assert_history(got, want, rtol=2e-5, atol=2e-6):
    for i, (g, w) in enumerate(zip(got, want)):
        for k in KEYS:
            np.testing.assert_allclose(g[k], w[k], rtol=rtol, atol=atol,
                                       err_msg=f"step {i + 1}, leaf {k}")


# --- numpy references (written from optax's definitions) ---


def np_sgd(lr, momentum=None, nesterov=False, schedule=None):
    def step(p, g, t, s):
        rate = lr if schedule is None else schedule(t)
        if momentum is None:
            return p - rate * g, s
        tr = np.zeros_like(p) if s is None else s
        tr = g + momentum * tr
        u = g + momentum * tr if nesterov else tr
        return p - rate * u, tr
    return step


def np_adam(lr, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, wd=0.0, nesterov=False):
    def step(p, g, t, s):
        m, v = (np.zeros_like(p), np.zeros_like(p)) if s is None else s
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        n = t + 1
        if nesterov:
            m_hat = b1 * m / (1 - b1 ** (n + 1)) + (1 - b1) * g / (1 - b1 ** n)
        else:
            m_hat = m / (1 - b1 ** n)
        v_hat = v / (1 - b2 ** n)
        u = m_hat / (np.sqrt(v_hat + eps_root) + eps) + wd * p
        return p - lr * u, (m, v)
    return step


def np_rmsprop(lr, decay=0.9, eps=1e-8, centered=False, momentum=None, nesterov=False):
    def step(p, g, t, s):
        nu, mu, tr = (np.zeros_like(p),) * 3 if s is None else s
        nu = decay * nu + (1 - decay) * g * g
        mu = decay * mu + (1 - decay) * g
        denom = nu - mu * mu if centered else nu
        u = -lr * g / np.sqrt(denom + eps)
        if momentum is not None:
            tr = u + momentum * tr
            u = u + momentum * tr if nesterov else tr
        return p + u, (nu, mu, tr)
    return step


def np_adagrad(lr, init=0.1, eps=1e-7):
    def step(p, g, t, s):
        acc = np.full_like(p, init) if s is None else s
        acc = acc + g * g
        u = np.where(acc > 0, g / np.sqrt(acc + eps), 0.0)
        return p - lr * u, acc
    return step


CASES = [
    ("sgd", lambda: optim.sgd(0.1), np_sgd(0.1)),
    ("sgd_momentum", lambda: optim.sgd(0.1, momentum=0.9), np_sgd(0.1, 0.9)),
    ("sgd_nesterov", lambda: optim.sgd(0.05, momentum=0.8, nesterov=True),
     np_sgd(0.05, 0.8, True)),
    ("adam", lambda: optim.adam(0.1), np_adam(0.1)),
    ("adam_hparams", lambda: optim.adam(0.05, b1=0.8, b2=0.99, eps=1e-3, eps_root=1e-4),
     np_adam(0.05, 0.8, 0.99, 1e-3, 1e-4)),
    ("nadam", lambda: optim.nadam(0.1), np_adam(0.1, nesterov=True)),
    ("adam_nesterov", lambda: optim.adam(0.1, nesterov=True), np_adam(0.1, nesterov=True)),
    ("adamw", lambda: optim.adamw(0.1, weight_decay=0.1), np_adam(0.1, wd=0.1)),
    ("adamw_default_wd", lambda: optim.adamw(0.1), np_adam(0.1, wd=1e-4)),
    ("rmsprop", lambda: optim.rmsprop(0.01), np_rmsprop(0.01)),
    ("rmsprop_centered", lambda: optim.rmsprop(0.01, decay=0.8, eps=1e-4, centered=True),
     np_rmsprop(0.01, 0.8, 1e-4, centered=True)),
    ("rmsprop_momentum", lambda: optim.rmsprop(0.01, momentum=0.9),
     np_rmsprop(0.01, momentum=0.9)),
    ("rmsprop_nesterov", lambda: optim.rmsprop(0.01, momentum=0.5, nesterov=True),
     np_rmsprop(0.01, momentum=0.5, nesterov=True)),
    ("adagrad", lambda: optim.adagrad(0.1), np_adagrad(0.1)),
    ("adagrad_hparams", lambda: optim.adagrad(0.2, initial_accumulator_value=0.0, eps=1e-3),
     np_adagrad(0.2, 0.0, 1e-3)),
]


@pytest.mark.parametrize("name, make, ref", CASES, ids=[c[0] for c in CASES])
def test_optimizer_matches_numpy(name, make, ref):
    got, _ = _run_functrax(make())
    _assert_history(got, _run_numpy(ref), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name, make, ref", CASES[::3], ids=[c[0] for c in CASES[::3]])
def test_jitted_step_matches_numpy(name, make, ref):
    got, _ = _run_functrax(make(), jit=True)
    _assert_history(got, _run_numpy(ref), rtol=1e-4, atol=1e-5)


def test_adamw_mask_decays_only_masked_leaves():
    mask = {"w": True, "b": False}
    got, _ = _run_functrax(optim.adamw(0.1, weight_decay=0.5, mask=mask))
    with_wd = _run_numpy(np_adam(0.1, wd=0.5))
    without = _run_numpy(np_adam(0.1))
    want = [{"w": a["w"], "b": b["b"]} for a, b in zip(with_wd, without)]
    _assert_history(got, want, rtol=1e-4, atol=1e-5)
    # a mask function of the params gives the same
    got_fn, _ = _run_functrax(optim.adamw(0.1, weight_decay=0.5,
                                          mask=lambda p: {"w": True, "b": False}))
    _assert_history(got_fn, want, rtol=1e-4, atol=1e-5)


def test_masked_leaves_pass_unchanged_and_state_holds_masked_in_leaves():
    tx = optim.masked(optim.sgd(1.0, momentum=0.5), {"w": True, "b": False})
    params = {"w": fnp.ones(3), "b": fnp.ones(2)}
    state = tx.init(params)
    assert len(tree_leaves(state)) == 1  # only w's momentum
    grads = {"w": fnp.full(3, 2.0), "b": fnp.full(2, 3.0)}
    upd, state = tx.update(grads, state, params)
    np.testing.assert_allclose(upd["w"], -2.0)
    np.testing.assert_allclose(upd["b"], 3.0)  # untouched
    with pytest.raises(TypeError, match="Python bools"):
        optim.masked(optim.identity(), {"w": fnp.array(True), "b": False}).init(params)


# --- schedules ---


def np_exponential(init, steps, rate, begin=0, staircase=False, end=None):
    def f(t):
        d = t - begin
        if d <= 0:
            v = init
        else:
            e = d / steps
            v = init * rate ** (math.floor(e) if staircase else e)
        if end is not None:
            v = max(v, end) if rate < 1 else min(v, end)
        return v
    return f


def np_cosine(init, steps, alpha=0.0, exponent=1.0):
    return lambda t: init * ((1 - alpha) * (0.5 * (1 + math.cos(math.pi * min(t, steps) /
                                                              steps))) ** exponent + alpha)


def np_linear(init, end, steps, begin=0):
    return lambda t: init + (end - init) * min(max(t - begin, 0), steps) / steps


def np_warmup_cosine(init, peak, warm, decay, end=0.0):
    lin, cos = np_linear(init, peak, warm), np_cosine(peak, decay - warm, end / peak)
    return lambda t: lin(t) if t < warm else cos(t - warm)


SCHEDULES = [
    ("constant", optim.constant_schedule(0.3), lambda t: 0.3),
    ("exponential", optim.exponential_decay(1.0, 4, 0.5), np_exponential(1.0, 4, 0.5)),
    ("exponential_staircase_begin", optim.exponential_decay(2.0, 3, 0.7, transition_begin=2,
                                                            staircase=True),
     np_exponential(2.0, 3, 0.7, 2, True)),
    ("exponential_end", optim.exponential_decay(1.0, 2, 0.5, end_value=0.2),
     np_exponential(1.0, 2, 0.5, end=0.2)),
    ("exponential_growth_end", optim.exponential_decay(1.0, 2, 1.5, end_value=3.0),
     np_exponential(1.0, 2, 1.5, end=3.0)),
    ("cosine", optim.cosine_decay_schedule(1.0, 10), np_cosine(1.0, 10)),
    ("cosine_alpha_exponent", optim.cosine_decay_schedule(0.5, 8, alpha=0.1, exponent=2.0),
     np_cosine(0.5, 8, 0.1, 2.0)),
    ("linear", optim.linear_schedule(1.0, 0.1, 10), np_linear(1.0, 0.1, 10)),
    ("linear_begin", optim.linear_schedule(0.0, 1.0, 4, transition_begin=3),
     np_linear(0.0, 1.0, 4, 3)),
    ("polynomial", optim.polynomial_schedule(1.0, 0.0, 2, 10),
     lambda t: (1 - min(t, 10) / 10) ** 2),
    ("warmup_cosine", optim.warmup_cosine_decay_schedule(0.0, 1.0, 3, 12, end_value=0.1),
     np_warmup_cosine(0.0, 1.0, 3, 12, 0.1)),
    ("piecewise_constant", optim.piecewise_constant_schedule(1.0, {3: 0.5, 6: 0.1}),
     lambda t: 1.0 * (0.5 if t >= 3 else 1) * (0.1 if t >= 6 else 1)),
    ("join", optim.join_schedules([optim.constant_schedule(1.0), optim.linear_schedule(
        1.0, 0.0, 4)], [5]), lambda t: 1.0 if t < 5 else np_linear(1.0, 0.0, 4)(t - 5)),
]


@pytest.mark.parametrize("name, sched, ref", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_schedule_values(name, sched, ref):
    ts = range(0, 16)
    got = [float(sched(t)) for t in ts]
    np.testing.assert_allclose(got, [ref(t) for t in ts], rtol=1e-5, atol=1e-6, err_msg=name)
    # on an int32 count, traced under jit, as optimizers call it
    jitted = functrax.jit(lambda c: fnp.asarray(sched(c), fnp.float32))
    got_j = [float(jitted(fnp.asarray(t, fnp.int32))) for t in ts]
    np.testing.assert_allclose(got_j, [ref(t) for t in ts], rtol=1e-5, atol=1e-6,
                               err_msg=name)


def test_schedule_errors_and_constant_fallbacks():
    with pytest.raises(ValueError, match="positive decay_steps"):
        optim.cosine_decay_schedule(1.0, 0)
    with pytest.raises(ValueError, match="non-negative scale"):
        optim.piecewise_constant_schedule(1.0, {2: -1.0})
    with pytest.raises(ValueError, match="boundaries"):
        optim.join_schedules([optim.constant_schedule(1.0)], [3])
    assert float(optim.exponential_decay(0.7, 0, 0.5)(10)) == pytest.approx(0.7)
    assert float(optim.linear_schedule(0.7, 0.0, 0)(10)) == pytest.approx(0.7)


@pytest.mark.parametrize("jit", [False, True])
def test_schedule_as_learning_rate(jit):
    sched = optim.exponential_decay(0.2, 2, 0.5)
    got, state = _run_functrax(optim.sgd(sched), jit=jit)
    _assert_history(got, _run_numpy(np_sgd(None, schedule=np_exponential(0.2, 2, 0.5))))
    (_, sched_state) = state
    assert int(sched_state.count) == STEPS and sched_state.count.dtype == np.int32


def test_adam_with_schedule_matches_constant_at_constant_schedule():
    a, _ = _run_functrax(optim.adam(optim.constant_schedule(0.1)))
    b, _ = _run_functrax(optim.adam(0.1))
    _assert_history(a, b, rtol=1e-6, atol=1e-7)


# --- clipping, chain, apply_updates ---


def test_clip_by_global_norm():
    tx = optim.clip_by_global_norm(1.0)
    big = {"a": fnp.array([3.0, 0.0]), "b": (fnp.array([[4.0]]),)}
    out, state = tx.update(big, tx.init(big))
    assert state == optim.EmptyState()
    np.testing.assert_allclose(out["a"], [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(out["b"][0], [[0.8]], rtol=1e-6)
    np.testing.assert_allclose(float(optim.global_norm(out)), 1.0, rtol=1e-6)
    small = {"a": fnp.array([0.3, 0.0]), "b": (fnp.array([[0.4]]),)}
    out, _ = functrax.jit(tx.update)(small, tx.init(small))
    np.testing.assert_array_equal(out["a"], np.float32([0.3, 0.0]))
    np.testing.assert_array_equal(out["b"][0], np.float32([[0.4]]))
    g = {"x": np.array([1.0, -2.0, 2.0])}
    assert float(optim.global_norm(g)) == pytest.approx(3.0)


def test_clip_elementwise():
    tx = optim.clip(0.5)
    out, _ = tx.update({"a": fnp.array([-2.0, 0.1, 3.0])}, tx.init(None))
    np.testing.assert_array_equal(out["a"], np.float32([-0.5, 0.1, 0.5]))


def test_chain_composes_in_order_and_keeps_per_transform_state():
    tx = optim.chain(optim.clip_by_global_norm(1.0), optim.trace(decay=0.5),
                     optim.scale(-0.1))
    params = {"a": fnp.zeros(2)}
    state = tx.init(params)
    assert isinstance(state, tuple) and len(state) == 3
    assert isinstance(state[1], optim.TraceState)
    g = {"a": fnp.array([3.0, 4.0])}
    upd, state = tx.update(g, state, params)
    np.testing.assert_allclose(upd["a"], [-0.06, -0.08], rtol=1e-6)
    upd, state = tx.update(g, state, params)  # trace: 0.6 + 0.5 * 0.6
    np.testing.assert_allclose(upd["a"], [-0.09, -0.12], rtol=1e-6)
    # adam is chain(scale_by_adam, scale_by_learning_rate)
    a, _ = _run_functrax(optim.chain(optim.scale_by_adam(), optim.scale(-0.1)))
    b, _ = _run_functrax(optim.adam(0.1))
    _assert_history(a, b, rtol=1e-6, atol=1e-7)


def test_chain_errors():
    tx = optim.chain(optim.identity(), optim.scale(2.0))
    with pytest.raises(ValueError, match="tuple of 2 states"):
        tx.update({"a": fnp.ones(2)}, (optim.EmptyState(),))
    with pytest.raises(TypeError, match="GradientTransformation"):
        optim.chain(optim.identity(), lambda g: g)


def test_weight_decay_needs_params():
    tx = optim.adamw(0.1)
    params = {"a": fnp.ones(2)}
    with pytest.raises(ValueError, match="not passing `params`"):
        tx.update(params, tx.init(params))


def test_apply_updates_keeps_param_dtypes():
    params = {"f": fnp.ones(2, fnp.float32), "h": fnp.ones(2, fnp.float16)}
    updates = {"f": fnp.full(2, 0.5), "h": fnp.full(2, 0.5, fnp.float32)}
    new = optim.apply_updates(params, updates)
    assert new["f"].dtype == np.float32 and new["h"].dtype == np.float16
    np.testing.assert_array_equal(new["h"], np.float16([1.5, 1.5]))


def test_set_to_zero_and_identity_and_stateless():
    g = {"a": fnp.array([1.0, 2.0])}
    assert float(fnp.sum(optim.set_to_zero().update(g, optim.EmptyState())[0]["a"])) == 0
    np.testing.assert_array_equal(optim.identity().update(g, optim.EmptyState())[0]["a"],
                                  [1.0, 2.0])
    tx = optim.stateless(lambda u, p: tree_map(lambda x, y: x * y, u, p))
    out, _ = tx.update(g, tx.init(g), g)
    np.testing.assert_array_equal(out["a"], [1.0, 4.0])


# --- states are pytrees; whole train steps jit and train ---


ALL_OPTS = [
    ("sgd", lambda: optim.sgd(0.05)),
    ("sgd_momentum", lambda: optim.sgd(0.02, momentum=0.9)),
    ("sgd_nesterov", lambda: optim.sgd(0.02, momentum=0.9, nesterov=True)),
    ("adam", lambda: optim.adam(0.05)),
    ("adamw", lambda: optim.adamw(0.05, weight_decay=1e-3)),
    ("rmsprop", lambda: optim.rmsprop(0.05)),
    ("rmsprop_centered_momentum", lambda: optim.rmsprop(0.02, centered=True, momentum=0.5)),
    ("adagrad", lambda: optim.adagrad(0.3)),
    ("adam_cosine", lambda: optim.adam(optim.warmup_cosine_decay_schedule(0.0, 0.05, 5, 40))),
    ("clipped_sgd", lambda: optim.chain(optim.clip_by_global_norm(1.0), optim.sgd(0.05))),
]


@pytest.mark.parametrize("name, make", ALL_OPTS, ids=[o[0] for o in ALL_OPTS])
def test_state_is_a_pytree_and_update_jits(name, make):
    opt = make()
    params = {"w": fnp.ones((2, 3)), "b": fnp.zeros(3)}
    state = opt.init(params)
    leaves = tree_leaves(state)
    assert all(isinstance(x, functrax.Array) for x in leaves), [type(x) for x in leaves]
    doubled = tree_map(lambda x: x * 2, state)
    assert tree_structure(doubled) == tree_structure(state)
    grads = {"w": fnp.full((2, 3), 0.5), "b": fnp.full(3, -1.0)}
    eager_u, eager_s = opt.update(grads, state, params)
    jit_u, jit_s = functrax.jit(opt.update)(grads, state, params)
    assert tree_structure(jit_s) == tree_structure(eager_s)
    for a, b in zip(tree_leaves((eager_u, eager_s)), tree_leaves((jit_u, jit_s))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
        assert a.dtype == b.dtype


def _regression_data():
    rng = np.random.RandomState(1)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    w_true = np.float32([[1.5], [-2.0], [0.5]])
    y = x @ w_true + 0.3
    return fnp.asarray(x), fnp.asarray(y)


@pytest.mark.parametrize("name, make", ALL_OPTS, ids=[o[0] for o in ALL_OPTS])
def test_jitted_training_decreases_loss(name, make):
    x, y = _regression_data()
    opt = make()

    def loss(p):
        return fnp.mean((x @ p["w"] + p["b"] - y) ** 2)

    @functrax.jit
    def step(params, state):
        value, grads = functrax.value_and_grad(loss)(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, value

    params = {"w": fnp.zeros((3, 1)), "b": fnp.zeros(1)}
    state = opt.init(params)
    first = float(loss(params))
    for _ in range(40):
        params, state, _ = step(params, state)
    last = float(loss(params))
    assert np.isfinite(last) and last < 0.5 * first, (name, first, last)
