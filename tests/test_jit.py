"""jit: decorator forms, static arguments, the compilation cache and its accounting, jit as a
call primitive under every transformation, the ahead-of-time API (trace / lower / compile /
cost_analysis), disable_jit, donation and tracer errors. Texts follow JAX's."""
from __future__ import annotations

import logging
import math
import warnings
from functools import partial

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import check_jaxpr, config, grad, hessian, jit, make_jaxpr, vmap
from functrax.errors import TracerBoolConversionError, UnexpectedTracerError
from functrax.lowering.cost import cost_analysis
from functrax.transforms.jit import RecompileWarning
from functrax.tree_util import register_pytree_node_class


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


@pytest.fixture
def flag():
    """Set config flags for one test; every flag is restored afterwards."""
    saved = {}

    def set_flag(name, value):
        saved.setdefault(name, getattr(config, name))
        config.update(name, value)
    yield set_flag
    for name, value in saved.items():
        config.update(name, value)


# --- decorator forms ---


def test_decorator_forms_give_the_same_result():
    def f(x, n):
        return fnp.sin(x) * n

    x = fnp.arange(3.0)
    want = np.sin(np.arange(3.0, dtype=np.float32)) * 2
    assert_close(jit(f)(x, 2), want)
    assert_close(jit(static_argnums=1)(f)(x, 2), want)
    assert_close(partial(jit, static_argnums=(1,))(f)(x, 2), want)

    @jit
    def g(x):
        return fnp.sin(x) * 2
    assert_close(g(x), want)


def test_jit_keeps_name_and_doc():
    def documented(x):
        """Doubles x."""
        return 2 * x
    j = jit(documented)
    assert j.__name__ == "documented" and j.__doc__ == "Doubles x."
    assert j.__wrapped__ is documented


def test_jit_of_a_non_callable_raises():
    with pytest.raises(TypeError, match="expected a function"):
        jit(3)


def test_method_with_static_self():
    class Scale:
        def __init__(self, k):
            self.k = k

        @partial(jit, static_argnums=0)
        def apply(self, x):
            return x * self.k

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return isinstance(other, Scale) and other.k == self.k

    assert_close(Scale(3.0).apply(fnp.ones(2)), [3.0, 3.0])
    assert_close(Scale(4.0).apply(fnp.ones(2)), [4.0, 4.0])
    assert Scale.apply._cache_size() == 2


def test_method_of_a_pytree_class():
    @register_pytree_node_class
    class Linear:
        def __init__(self, w):
            self.w = w

        def tree_flatten(self):
            return (self.w,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

        @jit
        def __call__(self, x):
            return self.w @ x

    lin = Linear(fnp.asarray(np.eye(2, dtype=np.float32) * 2))
    assert_close(lin(fnp.ones(2)), [2.0, 2.0])


def test_method_with_a_non_array_self_names_the_path():
    class Plain:
        @jit
        def m(self, x):
            return x
    with pytest.raises(TypeError) as e:
        Plain().m(fnp.ones(2))
    msg = str(e.value)
    assert "Error interpreting argument to m as an abstract array" in msg
    assert "passed to the function at path self." in msg


def test_closure_over_array_becomes_a_constvar():
    w = fnp.arange(3.0)
    f = jit(lambda x: x * w)
    assert_close(f(fnp.ones(3)), [0.0, 1.0, 2.0])
    closed = f.trace(fnp.ones(3)).jaxpr
    assert len(closed.jaxpr.constvars) == 1
    assert_close(closed.consts[0], np.arange(3.0))


def test_closure_over_python_value_is_baked_in_at_trace_time():
    state = {"n": 2.0}
    f = jit(lambda x: x * state["n"])
    assert_close(f(fnp.ones(2)), [2.0, 2.0])
    state["n"] = 5.0   # as in JAX: the cached trace keeps the value it saw
    assert_close(f(fnp.ones(2)), [2.0, 2.0])
    f.clear_cache()
    assert_close(f(fnp.ones(2)), [5.0, 5.0])


# --- static arguments ---


def test_non_hashable_static_argument():
    f = jit(lambda x, s: x, static_argnums=1)
    with pytest.raises(ValueError) as e:
        f(1.0, [1, 2])
    msg = str(e.value)
    assert msg.startswith("Non-hashable static arguments are not supported. An error occurred "
                          "while trying to hash an object of type <class 'list'>, [1, 2]")
    assert "TypeError: unhashable type: 'list'" in msg


def test_static_argnames_inferred_from_argnums_and_back():
    def f(x, op, scale=1.0):
        return op(x) * scale

    by_num = jit(f, static_argnums=1)
    assert by_num.static_argnames == ("op",)
    assert_close(by_num(fnp.zeros(2), op=fnp.cos), [1.0, 1.0])   # passed by keyword
    by_name = jit(f, static_argnames="op")
    assert by_name.static_argnums == (1,)
    assert_close(by_name(fnp.zeros(2), fnp.cos), [1.0, 1.0])    # passed by position
    assert_close(by_name(fnp.zeros(2), fnp.cos, scale=fnp.asarray(3.0)), [3.0, 3.0])


def test_dynamic_keyword_arguments():
    f = jit(lambda x, *, y, z: x * y - z)
    assert_close(f(fnp.ones(2), z=fnp.ones(2), y=fnp.full(2, 3.0)), [2.0, 2.0])
    assert f._cache_size() == 1


@pytest.mark.parametrize("value, path", [
    ("abc", "y"),
    ({"a": [1.0, "s"]}, "y['a'][1]"),
])
def test_non_array_non_static_argument_names_its_path(value, path):
    def f(x, y):
        return x

    with pytest.raises(TypeError) as e:
        jit(f)(fnp.ones(2), value)
    msg = str(e.value)
    assert msg.startswith("Error interpreting argument to f as an abstract array. The "
                          "problematic value is of type <class 'str'> and was passed to the "
                          f"function at path {path}.")
    assert "static_argnums or static_argnames" in msg


# --- the cache ---


def test_cache_keys_on_shapes_and_static_values():
    f = jit(lambda x, n: x * n, static_argnums=1)
    for args in [(fnp.ones(3), 2), (fnp.ones(3), 2), (fnp.ones(3), 3), (fnp.ones(4), 3)]:
        assert_close(f(*args), np.ones(args[0].shape) * args[1])
    assert f._cache_size() == 3


def test_separate_jit_wrappers_of_one_function_share_its_traces():
    traces = []

    def f(x, n):
        traces.append(n)
        return x * n
    x = fnp.ones(3)
    assert_close(jit(f, static_argnums=1)(x, 2), [2.0] * 3)
    assert_close(jit(f, static_argnums=1)(x, 2), [2.0] * 3)  # a new wrapper: no new trace
    assert traces == [2]
    jit(f, static_argnums=1)(x, 3)  # a new static value traces again
    jit(f)(x, 2)  # other options (n traced): their own traces
    assert len(traces) == 3 and type(traces[-1]) is not int
    # a different function with the same code is not shared
    jit(lambda x, n: traces.append(n) or x * n, static_argnums=1)(x, 2)
    assert len(traces) == 4


def test_clear_caches_and_trace_context_flags_trace_again(tmp_path):
    traces = []

    def f(x):
        traces.append(1)
        return x + 1
    g = jit(f)
    g(fnp.ones(2))
    g(fnp.ones(2))
    assert len(traces) == 1
    functrax.clear_caches()
    g(fnp.ones(2))
    assert len(traces) == 2
    try:  # a flag of the trace context (as JAX's): its own traces
        config.update("triton_dump_dir", str(tmp_path))
        g(fnp.ones(2))
        assert len(traces) == 3
    finally:
        config.update("triton_dump_dir", None)
    g(fnp.ones(2))  # the first context's traces are still there
    assert len(traces) == 3


def test_weak_typed_scalars_do_not_recompile_but_strong_arrays_do():
    f = jit(lambda x, y: x * y)
    x = fnp.ones(3)
    assert_close(f(x, 2.0), [2.0] * 3)
    assert_close(f(x, 3.0), [3.0] * 3)
    assert f._cache_size() == 1
    out = f(x, fnp.asarray(3.0, "float32"))
    assert f._cache_size() == 2 and out.dtype == np.float32


def test_weak_type_of_the_result_follows_the_arguments():
    f = jit(lambda y: y * 2)
    assert f(2.0).weak_type and not f(fnp.asarray(2.0, "float32")).weak_type


def test_recompile_warning_fires_once_and_explains(flag):
    flag("jit_recompile_warn_threshold", 2)

    @partial(jit, static_argnames="n")
    def f(x, n):
        return x * n

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        f(fnp.ones(3), n=2)
        f(fnp.ones(4), n=2)
        assert not w
        f(fnp.ones(4), n=3)
        f(fnp.ones(5), n=3)
        f(fnp.ones(6), n=3)
    recompiles = [x for x in w if issubclass(x.category, RecompileWarning)]
    assert len(recompiles) == 1
    msg = str(recompiles[0].message)
    assert "'f' has been compiled 3 times" in msg
    assert "static argument 'n': 2 -> 3" in msg


def test_recompile_warning_names_the_changed_shape(flag):
    flag("jit_recompile_warn_threshold", 1)
    f = jit(lambda x: x + 1)
    f(fnp.ones(3))
    with pytest.warns(RecompileWarning, match=r"argument 'x': f32\[3\] -> f32\[4\]"):
        f(fnp.ones(4))


def test_log_compiles_reports_each_compilation_with_its_reason(flag, caplog):
    flag("log_compiles", True)
    f = jit(lambda x: x + 1)
    with caplog.at_level(logging.WARNING, logger="functrax"):
        f(fnp.ones(3))
        f(fnp.ones(3))
        f(fnp.ones(4))
    msgs = [r.getMessage() for r in caplog.records if r.name == "functrax"]
    assert len(msgs) == 2
    assert "first call" in msgs[0]
    assert "argument 'x': f32[3] -> f32[4]" in msgs[1]


def test_log_compiles_off_by_default(caplog):
    with caplog.at_level(logging.DEBUG, logger="functrax"):
        jit(lambda x: x + 1)(fnp.ones(2))
    assert not [r for r in caplog.records if r.name == "functrax"]


# --- jit is a call primitive ---

JAX_JIT_JAXPR = """\
{ lambda ; a:f32[3]. let
    b:f32[3] = jit[
      name=tanh
      jaxpr={ lambda ; a:f32[3]. let b:f32[3] = tanh a in (b,) }
    ] a
    c:f32[3] = add b 1.0:f32[]
  in (c,) }"""


def test_jit_prints_as_jax_does():
    closed = make_jaxpr(lambda x: jit(fnp.tanh)(x) + 1)(fnp.ones(3))
    assert str(closed) == JAX_JIT_JAXPR
    check_jaxpr(closed)


def _f(x):
    return fnp.sum(fnp.sin(x) ** 2 * x)


def _f_grad_np(x):
    return 2 * np.sin(x) * np.cos(x) * x + np.sin(x) ** 2


@pytest.mark.parametrize("name, build", [
    ("grad(jit)", lambda: grad(jit(_f))),
    ("jit(grad)", lambda: jit(grad(_f))),
    ("jit(grad(jit))", lambda: jit(grad(jit(_f)))),
    ("jit(jit(grad))", lambda: jit(jit(grad(_f)))),
])
def test_grad_and_jit_compose(name, build):
    x = np.array([0.3, -1.2, 2.0], np.float32)
    g = build()
    assert_close(g(fnp.asarray(x)), _f_grad_np(x))
    check_jaxpr(make_jaxpr(g)(fnp.asarray(x)))


def test_jit_of_jit_and_vmap():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = np.stack([np.sum(np.sin(r) ** 2 * r) for r in x])
    for fn in [vmap(jit(_f)), jit(vmap(_f)), jit(jit(vmap(jit(_f))))]:
        assert_close(fn(fnp.asarray(x)), want)
        check_jaxpr(make_jaxpr(fn)(fnp.asarray(x)))
    assert_close(jit(jit(_f))(fnp.asarray(x[0])), want[0])


def test_hessian_of_jit():
    x = fnp.asarray([0.5, 1.5])
    h = hessian(jit(lambda x: fnp.sum(x ** 3) * x[0]))
    x0, x1 = 0.5, 1.5
    want = [[12 * x0 ** 2, 3 * x1 ** 2], [3 * x1 ** 2, 6 * x1 * x0]]
    assert_close(h(x), want, rtol=1e-5)
    check_jaxpr(make_jaxpr(h)(x))


def test_grad_of_jit_keeps_jit_in_the_jaxpr():
    closed = make_jaxpr(grad(jit(_f)))(fnp.ones(3))
    names = [e.primitive.name for e in closed.eqns]
    assert "jit" in names
    check_jaxpr(closed)


def test_jit_abstract_eval_checks_operands():
    inner = make_jaxpr(fnp.sin)(fnp.ones(3))
    from functrax.transforms.jit import jit_p
    with pytest.raises(TypeError, match=r"operands \(f32\[4\]\) do not match"):
        make_jaxpr(lambda x: jit_p.bind(x, jaxpr=inner, name="sin"))(fnp.ones(4))


# --- ahead of time: trace, lower, compile, cost analysis ---


def _mlp(a, b):
    return fnp.tanh(a @ b) + 1.0


def test_trace_gives_jaxpr_and_out_info():
    t = jit(_mlp).trace(fnp.ones((8, 16)), fnp.ones((16, 4)))
    assert [e.primitive.name for e in t.jaxpr.eqns] == ["dot_general", "tanh", "add"]
    assert t.out_info.shape == (8, 4) and t.out_info.dtype == np.float32
    out = jit(lambda x: {"y": x, "z": (x.sum(),)}).trace(fnp.ones(2)).out_info
    assert out["y"].shape == (2,) and out["z"][0].shape == ()


def test_lower_shows_the_optimized_jaxpr():
    def f(x):
        unused = fnp.exp(x)  # noqa: F841 - removed by dce
        return jit(fnp.sin)(x) * 2

    lowered = jit(f).lower(fnp.ones(3))
    text = lowered.as_text()
    assert "jit[" not in text and "exp" not in text      # inlined, dead code gone
    assert "sin" in text and "mul" in text
    traced = str(jit(f).trace(fnp.ones(3)).jaxpr)
    assert "jit[" in traced and "exp" in traced     # the traced one is not optimized
    compiled = lowered.compile()
    assert compiled.as_text() == text
    assert_close(compiled(fnp.ones(3)), np.sin(np.ones(3)) * 2)


def test_cost_analysis_of_matmul_tanh_add():
    a, b = fnp.ones((8, 16)), fnp.ones((16, 4))
    compiled = jit(_mlp).lower(a, b).compile()
    cost = compiled.cost_analysis()
    assert set(cost) == {"flops", "transcendentals", "bytes accessed"}
    assert all(type(v) is float for v in cost.values())
    assert cost["flops"] == 2 * 8 * 16 * 4 + 8 * 4       # dot + the elementwise add
    assert cost["transcendentals"] == 8 * 4               # tanh
    dot_bytes = 4 * (8 * 16 + 16 * 4 + 8 * 4)
    tanh_bytes = 4 * (32 + 32)
    add_bytes = 4 * (32 + 1 + 32)                         # the 1.0 literal is a f32[] operand
    assert cost["bytes accessed"] == dot_bytes + tanh_bytes + add_bytes
    assert jit(_mlp).lower(a, b).cost_analysis() == cost


@pytest.mark.parametrize("fn, shapes, flops, trans", [
    (lambda x: fnp.sum(x, axis=0), [(5, 3)], 15, 0),
    (lambda x: fnp.exp(x) * fnp.log(x), [(4,)], 4, 8),
    (lambda x: x.reshape(2, 3).T, [(6,)], 0, 0),
    (lambda x: x ** 3, [(4,)], 8, 0),                       # x*x*x: two multiplies
    (lambda x, y: fnp.einsum("bij,bjk->bik", x, y), [(2, 3, 5), (2, 5, 7)], 2 * 2 * 3 * 7 * 5, 0),
])
def test_cost_table(fn, shapes, flops, trans):
    args = [fnp.ones(s) for s in shapes]
    cost = cost_analysis(jit(fn).lower(*args).jaxpr)
    assert cost["flops"] == flops and cost["transcendentals"] == trans
    assert cost["bytes accessed"] >= 4 * sum(math.prod(s) for s in shapes)


def test_cost_analysis_counts_through_call_primitives():
    closed = make_jaxpr(lambda x: jit(fnp.tanh)(x) * 2)(fnp.ones(5))
    cost = cost_analysis(closed)
    assert cost["transcendentals"] == 5 and cost["flops"] == 5


def test_cost_analysis_rejects_other_values():
    with pytest.raises(TypeError, match="expected a ClosedJaxpr or Jaxpr"):
        cost_analysis(lambda x: x)


def test_lower_and_compile_from_shape_dtype_structs():
    sa = functrax.ShapeDtypeStruct((8, 16), np.float32)
    sb = functrax.ShapeDtypeStruct((16, 4), np.float32)
    compiled = jit(_mlp).lower(sa, sb).compile()
    a = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    assert_close(compiled(fnp.asarray(a), fnp.asarray(b)), np.tanh(a @ b) + 1, rtol=1e-5)
    assert jit(_mlp).eval_shape(sa, sb).shape == (8, 4)


def test_calling_a_shape_dtype_struct_raises():
    sa = functrax.ShapeDtypeStruct((2,), np.float32)
    with pytest.raises(TypeError, match="ShapeDtypeStruct has no data"):
        jit(fnp.sin)(sa)


def test_compiled_rejects_other_shapes_and_dtypes():
    compiled = jit(_mlp).lower(fnp.ones((8, 16)), fnp.ones((16, 4))).compile()
    with pytest.raises(TypeError) as e:
        compiled(fnp.ones((2, 16)), fnp.ones((16, 4), "int32"))
    assert str(e.value) == (
        "Argument types differ from the types for which this computation was compiled. The "
        "mismatches are:\n"
        "Argument 'a' compiled with float32[8,16] and called with float32[2,16]\n"
        "Argument 'b' compiled with float32[16,4] and called with int32[16,4]")
    with pytest.raises(TypeError, match="input pytree"):
        compiled(fnp.ones((8, 16)))


def test_compiled_takes_only_the_non_static_arguments():
    f = jit(lambda n, x: x * n, static_argnums=0)
    compiled = f.trace(7, fnp.asarray(8)).lower().compile()
    assert int(compiled(fnp.asarray(5))) == 35


def test_compiled_cannot_be_transformed():
    compiled = jit(fnp.sin).lower(1.0).compile()
    with pytest.raises(TypeError, match="Cannot apply functrax transformations to a function "
                                        "lowered and compiled"):
        grad(compiled)(1.0)


# --- disable_jit, block_until_ready ---


def test_disable_jit_runs_python_each_call():
    calls = []

    @jit
    def f(x):
        calls.append(type(x))
        return x * 2

    f(fnp.ones(2))
    f(fnp.ones(2))
    assert len(calls) == 1 and calls[0] is not functrax.Array   # traced once
    with functrax.disable_jit():
        assert_close(f(fnp.ones(2)), [2.0, 2.0])
        f(fnp.ones(2))
    assert calls[1:] == [functrax.Array, functrax.Array]
    f(fnp.ones(2))
    assert len(calls) == 3   # jit is back on, cached


def test_disable_jit_allows_python_control_flow():
    @jit
    def f(x):
        return x if x > 0 else -x
    with functrax.disable_jit():
        assert float(f(fnp.asarray(-2.0))) == 2.0


def test_block_until_ready_returns_its_argument():
    tree = {"a": jit(fnp.sin)(fnp.ones(2)), "b": [1, None]}
    assert functrax.block_until_ready(tree) is tree


# --- donation ---


def test_donated_argument_is_deleted():
    f = jit(lambda x, y: x * 2 + y, donate_argnums=0)
    x, y = fnp.arange(3.0), fnp.ones(3)
    assert_close(f(x, y), [1.0, 3.0, 5.0])
    assert_close(y, [1.0, 1.0, 1.0])     # not donated, still usable
    assert x.shape == (3,)               # the type survives
    for use in [lambda: x + 1, lambda: np.asarray(x), lambda: str(x), lambda: float(x[0]),
                lambda: f(x, y)]:
        with pytest.raises(RuntimeError, match="deleted.*donated"):
            use()


def test_donate_argnames():
    f = jit(lambda x, y: x + y, donate_argnames="y")
    x, y = fnp.ones(2), fnp.ones(2)
    f(x, y)
    assert_close(x, [1.0, 1.0])
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(y)


# --- tracer errors ---


def test_leaked_tracer_raises_unexpected_tracer_error():
    leaked = []

    @jit
    def f(x):
        leaked.append(x)
        return x + 1

    f(fnp.ones(2))
    with pytest.raises(UnexpectedTracerError) as e:
        leaked[0] * 2
    assert "f" in str(e.value) and "jit" in str(e.value)


def test_python_if_inside_jit_names_function_and_argument():
    @jit
    def choose(x, y):
        if y > 0:
            return x
        return -x

    with pytest.raises(TracerBoolConversionError) as e:
        choose(1.0, 2.0)
    msg = str(e.value)
    assert "choose" in msg and "jit" in msg
    assert "argument y" in msg and "argument x" not in msg


def test_python_if_on_a_keyword_argument_names_it():
    @jit
    def f(x, *, z, a):
        return x if a > 0 else z
    with pytest.raises(TracerBoolConversionError, match="argument a"):
        f(1.0, z=2.0, a=3.0)


# --- closures over outer tracers ---


def test_jit_closing_over_a_grad_tracer():
    g = grad(lambda x: jit(lambda y: x * y)(2.0))
    assert float(g(3.0)) == 2.0
    assert float(grad(lambda x: jit(lambda y: fnp.sin(x) * y)(2.0))(0.0)) == 2.0


def test_jit_closing_over_a_vmap_tracer():
    out = vmap(lambda x: jit(lambda y: x + y)(1.0))(fnp.arange(3.0))
    assert_close(out, [1.0, 2.0, 3.0])


def test_jit_closing_over_outer_tracers_is_not_cached_with_them():
    inner = jit(lambda y: y * 2)
    f = jit(lambda x: inner(x) + jit(lambda y: x * y)(3.0))
    assert_close(f(fnp.ones(2)), [5.0, 5.0])
    assert_close(f(fnp.full(2, 2.0)), [10.0, 10.0])
    check_jaxpr(make_jaxpr(f)(fnp.ones(2)))


def test_unknown_backend_raises():
    with pytest.raises(RuntimeError, match="Unknown backend 'tpu'"):
        functrax.jit(lambda x: x, backend="tpu")
    assert float(functrax.jit(lambda x: x * 2, backend="cpu")(1.0)) == 2.0


def test_transformed_jit_reuses_its_traced_and_compiled_jaxprs(monkeypatch):
    import dataclasses

    from functrax.lowering import backends
    from functrax.transforms import jit_rules
    calls = {"batch": 0, "jvp": 0, "compile": 0}

    def counting(name, fn):
        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapped
    monkeypatch.setattr(jit_rules, "batch_jaxpr", counting("batch", jit_rules.batch_jaxpr))
    monkeypatch.setattr(jit_rules, "jvp_jaxpr", counting("jvp", jit_rules.jvp_jaxpr))
    numpy_backend = backends.get_backend("numpy")
    monkeypatch.setitem(backends._BACKENDS, "numpy", dataclasses.replace(
        numpy_backend, compile_host=counting("compile", numpy_backend.compile_host)))
    f = functrax.jit(lambda x: fnp.sin(x) * 2.0)
    g = functrax.vmap(f)
    x = fnp.ones((2, 3))
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(g(x)), np.sin(np.ones((2, 3))) * 2, rtol=1e-6)
        functrax.jvp(f, (fnp.ones(3),), (fnp.ones(3),))
    assert calls == {"batch": 1, "jvp": 1, "compile": 2}
