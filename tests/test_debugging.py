"""functrax.debug (print / callback / breakpoint) and the debugging API of the top level:
exact printed lines and their order under every transformation, effects kept by the
optimizer, the config context managers (restored on exit and on exceptions), debug_nans /
debug_infs, rank and dtype promotion checks, tracer-leak checking, typeof, live_arrays,
device_get, named_scope / named_call, ensure_compile_time_eval.

Printed forms follow ../shared/vectors/jax_reprs.md (JAX 0.10.2).
"""
from __future__ import annotations

import io
import logging
import re
import warnings

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.config import config
from functrax.passes.pipeline import optimize

dprint = functrax.debug.print


def lines(capsys):
    return capsys.readouterr().out.splitlines()


# --- debug.print: the JAX vectors ---

def test_jit_debug_print_vector(capsys):
    @functrax.jit
    def f(x):
        dprint("x = {}", x)
        dprint("x={x} y={y}", x=x, y=x * 2)
        return x
    f(fnp.arange(3.0))
    assert lines(capsys) == ["x = [0. 1. 2.]", "x=[0. 1. 2.] y=[0. 2. 4.]"]
    f(fnp.arange(3.0))  # a cached program prints at every call
    assert lines(capsys) == ["x = [0. 1. 2.]", "x=[0. 1. 2.] y=[0. 2. 4.]"]


def test_vmap_debug_print_vector(capsys):
    functrax.vmap(lambda v: dprint("v {}", v))(fnp.arange(2.0))
    assert lines(capsys) == ["v 0.0", "v 1.0"]


def test_make_jaxpr_debug_print_vector():
    text = str(functrax.make_jaxpr(lambda x: dprint("x {}", x) or x)(1.0))
    assert text == """\
{ lambda ; a:f32[]. let
    debug_print[
      fmt=x {}
      has_placeholders=True
      in_tree=PyTreeDef(((*,), {}))
      logging_record=None
      np_printoptions=(('edgeitems', 3), ('threshold', 1000), ('floatmode', 'maxprec'), \
('precision', 8), ('suppress', False), ('linewidth', 75), ('nanstr', 'nan'), ('infstr', 'inf'), \
('sign', '-'), ('formatter', None), ('legacy', False), ('override_repr', None))
      ordered=False
      partitioned=False
      static_args=()
    ] a
  in (a,) }"""


# --- debug.print under every transformation ---

def test_eager_print(capsys):
    dprint("{} and {}", 1, fnp.float32(2.5))
    assert lines(capsys) == ["1 and 2.5"]


def test_jit_of_vmap_prints_one_line_per_lane_in_order(capsys):
    """The issue's acceptance: jit(vmap(f)) prints one line per lane, lanes in order."""
    def f(x):
        dprint("lane x={}", x)
        y = fnp.sin(x)
        dprint("lane y={y:.3f}", y=y)
        return y
    xs = fnp.arange(4.0)
    want = [f"lane x={float(v)}" for v in range(4)] + [
        f"lane y={np.sin(np.float32(v)):.3f}" for v in range(4)]
    functrax.jit(functrax.vmap(f))(xs)
    assert lines(capsys) == want
    functrax.jit(functrax.vmap(functrax.jit(f)))(xs)
    assert lines(capsys) == want
    functrax.vmap(functrax.jit(f))(xs)
    assert lines(capsys) == want


def test_vmap_with_unbatched_and_nested_axes(capsys):
    f = functrax.vmap(functrax.vmap(lambda a, b: dprint("{} {}", a, b)), in_axes=(0, None))
    f(fnp.arange(4.0).reshape(2, 2), fnp.array([7.0, 8.0]))
    # the inner vmap unrolls first (its trace is current), each inner lane over the outer
    # lanes, as JAX's batching rule does
    assert lines(capsys) == ["0.0 7.0", "2.0 7.0", "1.0 8.0", "3.0 8.0"]


def _loss(x):
    dprint("x={}", x)
    y = fnp.sin(x)
    dprint("y={}", y)
    return fnp.sum(y * y)


@pytest.mark.parametrize("transform", ["grad", "jit_grad", "grad_jit", "value_and_grad"])
def test_grad_prints_primal_values_once(capsys, transform):
    x = fnp.array([0.5, 1.0])
    g = {"grad": functrax.grad(_loss), "jit_grad": functrax.jit(functrax.grad(_loss)),
         "grad_jit": functrax.grad(functrax.jit(_loss)),
         "value_and_grad": functrax.value_and_grad(_loss)}[transform]
    g(x)
    assert lines(capsys) == ["x=[0.5 1. ]", f"y={np.sin(np.float32([0.5, 1.0]))}"]


def test_jvp_and_linearize_print_primals(capsys):
    functrax.jvp(_loss, (fnp.array([0.5]),), (fnp.array([1.0]),))
    assert lines(capsys) == ["x=[0.5]", f"y={np.sin(np.float32([0.5]))}"]
    _, f_jvp = functrax.linearize(_loss, fnp.array([0.5]))
    f_jvp(fnp.array([1.0]))  # the linear map prints nothing
    assert lines(capsys) == ["x=[0.5]", f"y={np.sin(np.float32([0.5]))}"]


def test_second_order_prints_primals(capsys):
    functrax.grad(functrax.grad(lambda x: (dprint("x {}", x), x ** 3)[1]))(2.0)
    assert lines(capsys) == ["x 2.0"]


def _body(c, x):
    dprint("c={} x={}", c, x)
    return c + x, c * 2


def test_scan_prints_once_per_iteration(capsys):
    want = ["c=0.0 x=1.0", "c=1.0 x=2.0", "c=3.0 x=3.0"]
    xs = fnp.array([1.0, 2.0, 3.0])
    lax.scan(_body, 0.0, xs)
    assert lines(capsys) == want
    functrax.jit(lambda xs: lax.scan(_body, 0.0, xs))(xs)
    assert lines(capsys) == want
    lax.scan(_body, 0.0, xs, reverse=True)
    assert lines(capsys) == ["c=0.0 x=3.0", "c=3.0 x=2.0", "c=5.0 x=1.0"]


def test_vmap_of_scan_prints_lanes_per_iteration(capsys):
    functrax.jit(functrax.vmap(lambda xs: lax.scan(_body, 0.0, xs)))(
        fnp.array([[1.0, 2.0], [10.0, 20.0]]))
    assert lines(capsys) == ["c=0.0 x=1.0", "c=0.0 x=10.0", "c=1.0 x=2.0", "c=10.0 x=20.0"]


def test_grad_of_scan_prints_forward_iterations(capsys):
    f = lambda xs: lax.scan(_body, 0.0, xs)[0]  # noqa: E731
    functrax.grad(f)(fnp.array([1.0, 2.0]))
    assert lines(capsys) == ["c=0.0 x=1.0", "c=1.0 x=2.0"]


def test_while_fori_and_cond_bodies(capsys):
    def body(i):
        dprint("i={}", i)
        return i + 1
    functrax.jit(lambda n: lax.while_loop(lambda i: i < n, body, 0))(3)
    assert lines(capsys) == ["i=0", "i=1", "i=2"]
    lax.fori_loop(0, 2, lambda i, c: (dprint("fori {}", i), c + i)[1], 0)
    assert lines(capsys) == ["fori 0", "fori 1"]
    cond = functrax.jit(lambda p, x: lax.cond(
        p, lambda x: (dprint("true {}", x), x)[1], lambda x: (dprint("false {}", x), -x)[1], x))
    cond(True, 1.0)
    cond(False, 2.0)
    assert lines(capsys) == ["true 1.0", "false 2.0"]


def test_nested_jits_and_checkpoint(capsys):
    inner = functrax.jit(lambda x: (dprint("inner {}", x), x * 2)[1])
    outer = functrax.jit(lambda x: inner(inner(x)) + (dprint("outer {}", x), 0.0)[1])
    outer(1.0)
    assert lines(capsys) == ["inner 1.0", "inner 2.0", "outer 1.0"]
    functrax.grad(functrax.checkpoint(lambda x: (dprint("ckpt {}", x), x * x)[1]))(3.0)
    assert lines(capsys)[0] == "ckpt 3.0"


def test_format_fields_pytrees_and_static_values(capsys):
    x = fnp.array([1.5, 2.0])
    f = functrax.jit(lambda x: dprint("{0} {1} {0} | {a[w]:.1f} | {s} {n}", x[0], x[1],
                                      a={"w": x[1]}, s="text", n=3))
    f(x)
    assert lines(capsys) == ["1.5 2.0 1.5 | 2.0 | text 3"]


def test_print_options_are_captured_when_traced(capsys):
    with np.printoptions(precision=2):
        f = functrax.jit(lambda x: dprint("{}", x))
        f(fnp.array([1.23456]))
    f(fnp.array([1.23456]))  # traced under precision=2
    assert lines(capsys) == ["[1.23]", "[1.23]"]


def test_format_errors():
    with pytest.raises(ValueError, match=r"Unused positional arguments to "
                                         r"`functrax.debug.print`: \[1\]"):
        dprint("no fields", 1)
    with pytest.raises(ValueError, match="Unused keyword arguments.*f-string"):
        dprint("x", x=1)
    with pytest.raises(TypeError, match="fmt must be a format string"):
        dprint(1.0)
    with pytest.raises(IndexError):
        dprint("{} {}", 1)


def test_skip_format_check_and_two_call_form(capsys):
    dprint("{}", 1, 2, skip_format_check=True)
    dprint(ordered=True)("two-call {}", 5)
    assert lines(capsys) == ["1", "two-call 5"]
    with pytest.raises(TypeError, match="two-call form"):
        dprint(None, 1)


def test_use_logging(caplog):
    with caplog.at_level(logging.INFO, logger="functrax"):
        functrax.jit(lambda x: dprint("logged {}", x, _use_logging=True))(1.0)
    assert [r.getMessage() for r in caplog.records] == ["logged 1.0"]
    assert caplog.records[0].filename == "test_debugging.py"


def test_ordered_prints_keep_program_order(capsys):
    def f(x):
        for i in range(4):
            dprint("step {} {}", i, x + i, ordered=i % 2 == 0)
        return x
    functrax.jit(f)(0.0)
    assert lines(capsys) == ["step 0 0.0", "step 1 1.0", "step 2 2.0", "step 3 3.0"]
    jaxpr = functrax.make_jaxpr(f)(0.0)
    assert {str(e) for e in jaxpr.effects} == {"Debug", "OrderedDebug"}


# --- debug.callback ---

def test_callback_eager_jit_vmap_and_kwargs(capsys):
    seen = []
    cb = lambda a, b=None: seen.append((np.asarray(a).tolist(), b))  # noqa: E731
    f = lambda x: functrax.debug.callback(cb, x, b="k")  # noqa: E731
    f(fnp.array(1.0))
    functrax.jit(f)(fnp.array(2.0))
    functrax.vmap(f)(fnp.array([3.0, 4.0]))
    assert seen == [(1.0, "k"), (2.0, "k"), (3.0, "k"), (4.0, "k")]
    assert f(1.0) is None


def test_callback_gets_concrete_arrays_and_may_compute_eagerly():
    got = []
    functrax.jit(lambda x: functrax.debug.callback(
        lambda v: got.append((type(v), float(fnp.sum(v) * 2))), x))(fnp.ones(3))
    assert got == [(functrax.Array, 6.0)]


def test_callback_jaxpr_and_errors():
    text = str(functrax.make_jaxpr(lambda x: functrax.debug.callback(print, x))(1.0))
    assert re.search(r"debug_callback\[\s*callback=<function debug_callback\.<locals>\."
                     r"_flat_callback at 0x[0-9a-f]+>\s*effect=Debug\s*partitioned=False\s*\] a",
                     text), text
    ordered = functrax.make_jaxpr(
        lambda x: functrax.debug.callback(print, x, ordered=True, partitioned=True))(1.0)
    assert "effect=OrderedDebug" in str(ordered) and "partitioned=True" in str(ordered)
    with pytest.raises(TypeError, match="first argument to functrax.debug.callback must be "
                                        "callable"):
        functrax.debug.callback(1.0)
    seen = []
    functrax.debug.callback(ordered=True)(seen.append, 3)  # the two-call form
    assert [int(s) for s in seen] == [3]


# --- effects survive the optimizer ---

def _count(closed, name):
    n = 0
    for e in closed.jaxpr.eqns if hasattr(closed, "jaxpr") else closed.eqns:
        n += e.primitive.name == name
        for sub in functrax.core.sub_jaxprs(e.params):
            n += _count(sub, name)
    return n


def test_optimize_keeps_unused_and_duplicate_prints(capsys):
    def f(x):
        y = x * 2.0          # read only by the prints: not dead
        dprint("y {}", y)
        dprint("y {}", y)    # identical: not merged by CSE
        dprint("c {}", 3.0)  # constant operand: not folded, printed at run time
        return x
    closed = functrax.make_jaxpr(f)(1.0)
    opt = optimize(closed)
    assert _count(opt, "debug_print") == 3 and _count(opt, "mul") == 1
    g = functrax.jit(f)
    g(1.0)
    g(2.0)
    assert lines(capsys) == ["y 2.0", "y 2.0", "c 3.0", "y 4.0", "y 4.0", "c 3.0"]


def test_dce_keeps_loops_and_calls_holding_effects(capsys):
    def f(x):
        lax.scan(lambda c, _: ((dprint("scan {}", c), c + 1.0)[1], c), x, None, length=2)
        functrax.jit(lambda v: (dprint("jit {}", v), v)[1])(x)
        lax.cond(x > 0, lambda v: (dprint("cond {}", v), v)[1], lambda v: v, x)
        return x * 0
    opt = optimize(functrax.make_jaxpr(f)(1.0))
    assert [e.primitive.name for e in opt.eqns].count("scan") == 1
    assert _count(opt, "debug_print") == 3
    functrax.jit(f)(1.0)
    assert lines(capsys) == ["scan 1.0", "scan 2.0", "jit 1.0", "cond 1.0"]


def test_effects_are_the_irs_notion():
    closed = functrax.make_jaxpr(lambda x: lax.scan(
        lambda c, _: (c, dprint("{}", c, ordered=True)), x, None, length=1))(1.0)
    (scan,) = closed.eqns
    assert [str(e) for e in scan.effects] == ["OrderedDebug"]
    assert functrax.core.has_effects(scan) and functrax.core.has_ordered_effects(scan)
    pure = functrax.make_jaxpr(lambda x: fnp.sin(x))(1.0)
    assert pure.effects == frozenset() and not functrax.core.has_effects(pure.eqns[0])


# --- breakpoint ---

def _cli(commands):
    return dict(stdin=io.StringIO("".join(c + "\n" for c in commands)), stdout=io.StringIO())


def test_breakpoint_cli_eager_and_jit():
    def make(io_):
        def f(x):
            y = x * 2
            functrax.debug.breakpoint(**io_)
            return y
        return f
    eager = _cli(["p x", "p y", "c"])
    make(eager)(fnp.float32(2.0))
    assert eager["stdout"].getvalue() == (
        "Entering jdb:\n(jdb) Array(2., dtype=float32)\n(jdb) Array(4., dtype=float32)\n"
        "(jdb) ")
    staged = _cli(["p x + y", "pp {'y': y}", "c"])
    functrax.jit(make(staged))(3.0)
    assert staged["stdout"].getvalue() == (
        "Entering jdb:\n(jdb) Array(9., dtype=float32)\n(jdb) {'y': Array(6., dtype=float32)}"
        "\n(jdb) ")


def test_breakpoint_cli_frames_and_errors():
    io_ = {}

    def inner(x):
        functrax.debug.breakpoint(**io_)
        return x

    def outer(z):
        return inner(z + 1)
    s = _cli(["p undefined_name", "down", "up", "p z", "up", "down", "down", "where", "c"])
    io_.update(s)
    functrax.jit(outer)(1.0)
    out = s["stdout"].getvalue()
    assert "NameError: name 'undefined_name' is not defined" in out
    assert "Array(1., dtype=float32)" in out and "At bottommost frame." in out
    assert "-> " in out and "test_debugging.py" in out
    io_.update(_cli(["q"]))
    with pytest.raises(SystemExit):
        inner(1.0)


def test_breakpoint_stub_backend_sees_concrete_frames():
    from functrax.debug import register_debugger
    calls = []
    register_debugger("stub", lambda frames, thread_id, **kw: calls.append(
        ({k: v for k, v in frames[0].locals.items() if k in ("x", "y", "tag")}, kw)))

    def f(x):
        y = fnp.sin(x)
        tag = "static"  # noqa: F841 - a static local the debugger sees
        functrax.debug.breakpoint(backend="stub", num_frames=1, extra=1)
        return y
    functrax.vmap(functrax.jit(f))(fnp.array([0.0, 1.0]))
    assert [float(c[0]["x"]) for c in calls] == [0.0, 1.0]  # once per lane
    assert all(type(c[0]["y"]) is functrax.Array and c[0]["tag"] == "static" for c in calls)
    assert calls[0][1] == {"extra": 1}
    with pytest.raises(ValueError, match="unknown debugger backend 'nope'"):
        functrax.debug.breakpoint(backend="nope")
    assert functrax.debug.breakpoint(backend="stub", token=7) == 7


# --- config context managers: set inside, restored on exit and on an exception ---

_CONTEXTS = [
    ("debug_nans", lambda: functrax.debug_nans(True), True),
    ("debug_infs", lambda: functrax.debug_infs(), True),
    ("check_tracer_leaks", lambda: functrax.checking_leaks(), True),
    ("check_tracer_leaks", lambda: functrax.check_tracer_leaks(True), True),
    ("numpy_rank_promotion", lambda: functrax.numpy_rank_promotion("raise"), "raise"),
    ("numpy_dtype_promotion", lambda: functrax.numpy_dtype_promotion("strict"), "strict"),
    ("default_matmul_precision", lambda: functrax.default_matmul_precision("float32"),
     "float32"),
    ("enable_x64", lambda: functrax.enable_x64(True), True),
    ("log_compiles", lambda: functrax.log_compiles(True), True),
    ("enable_checks", lambda: functrax.enable_checks(True), True),
    ("explain_cache_misses", lambda: functrax.explain_cache_misses(True), True),
    ("disable_jit", lambda: functrax.disable_jit(), True),
    ("eager_constant_folding", lambda: functrax.ensure_compile_time_eval(), True),
    ("default_device", lambda: functrax.default_device(functrax.devices()[0]),
     functrax.devices()[0]),
    ("enable_x64", lambda: functrax.experimental.enable_x64(), True),
]


@pytest.mark.parametrize("flag,make,value", _CONTEXTS, ids=[c[0] for c in _CONTEXTS])
def test_context_manager_restores_on_exit_and_exception(flag, make, value):
    before = config.read(flag)
    with make():
        assert config.read(flag) == value
    assert config.read(flag) == before
    with pytest.raises(KeyError):
        with make():
            raise KeyError("boom")
    assert config.read(flag) == before


def test_states_validate_and_accept_jax_spellings():
    assert functrax.numpy_rank_promotion.value == "allow"
    with pytest.raises(TypeError, match="requires an argument"):
        functrax.numpy_rank_promotion()
    with pytest.raises(ValueError, match=r"new enum value must be in \['allow', 'warn', "
                                         r"'raise'\], got bad"):
        functrax.numpy_rank_promotion("bad")
    with pytest.raises(ValueError, match="must be None or in"):
        functrax.default_matmul_precision("fast-ish")
    config.update("jax_enable_x64", True)
    try:
        assert config.jax_enable_x64 is True and config.enable_x64 is True
        assert fnp.ones(1, dtype=np.float64).dtype == np.float64
    finally:
        config.update("jax_enable_x64", False)
    with pytest.raises(AttributeError, match="unknown flag"):
        config.update("jax_no_such_flag", 1)
    with functrax.enable_x64(True):
        assert config.values["enable_x64"] is True


def test_trace_context_flags_retrace_jit():
    f = functrax.jit(lambda a, b: a + b)
    a, b = fnp.ones(3), fnp.ones((2, 3))
    f(a, b)  # compiled under "allow"
    with functrax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
            f(a, b)
    g = functrax.jit(lambda a, b: a @ b)
    m = fnp.ones((2, 2))
    assert "precision" not in g.lower(m, m).as_text()
    with functrax.default_matmul_precision("float32"):
        assert ("precision=(<Precision.HIGHEST: 2>, <Precision.HIGHEST: 2>)"
                in g.lower(m, m).as_text())


# --- debug_nans / debug_infs ---

def test_debug_nans_eager_names_the_primitive():
    with functrax.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in "
                                                     r"div$"):
            fnp.zeros(2) / fnp.zeros(2)
        assert float((fnp.ones(1) / fnp.zeros(1))[0]) == np.inf  # infs are not checked
    assert np.isnan(float(fnp.zeros(()) / fnp.zeros(())))  # off again


def test_debug_infs_and_ints_unchecked():
    with functrax.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in "
                                                     r"div"):
            fnp.ones(1) / fnp.zeros(1)
        assert int(fnp.array(7) // 2) == 3


def test_debug_nans_under_jit_reruns_op_by_op():
    f = functrax.jit(lambda x: fnp.sum(fnp.log(x) * 2.0))
    assert np.isnan(float(f(fnp.array([-1.0, 1.0]))))
    with functrax.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in "
                                                     r"log$"):
            f(fnp.array([-1.0, 1.0]))
        assert float(f(fnp.array([1.0]))) == 0.0
        const = functrax.jit(lambda x: (x, fnp.float32(np.nan)))
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in "
                                                     r"jit\(<lambda>\)\. Because .*did not "
                                                     r"produce invalid values"):
            const(1.0)


def test_debug_nans_config_spelling():
    config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="nan"):
            fnp.sqrt(fnp.array(-1.0))
    finally:
        config.update("jax_debug_nans", False)


# --- rank and dtype promotion ---

def test_rank_promotion_raise_warn_allow():
    a, b = fnp.ones(3), fnp.ones((2, 3))
    with functrax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match=re.escape(
                "Operands could not be broadcast together for add on shapes (3,) (2, 3) and "
                "with the config option jax_numpy_rank_promotion='raise'. For more "
                "information, see https://docs.jax.dev/en/latest/rank_promotion_warning.html.")):
            a + b
        assert (a + 1.0).shape == (3,) and (b * fnp.ones((1, 3))).shape == (2, 3)
        with pytest.raises(ValueError, match="for where on shapes"):
            fnp.where(b > 0, a, b)
    with functrax.numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match=r"Following NumPy automatic rank promotion for "
                                             r"multiply on shapes \(3,\) \(2, 3\)"):
            a * b
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (a + b).shape == (2, 3)


def test_strict_dtype_promotion():
    i, f = fnp.ones(3, dtype=np.int32), fnp.ones(3)
    with functrax.numpy_dtype_promotion("strict"):
        assert (i + 1).dtype == np.int32 and (f * 2.0).dtype == np.float32
        assert (f + f).dtype == np.float32
        with pytest.raises(functrax.dtypes.TypePromotionError, match=re.escape(
                "Input dtypes ('int32', 'float32') have no available implicit dtype promotion "
                "path when jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to "
                "the desired output type, or set jax_numpy_dtype_promotion=standard.")):
            i + f
        with pytest.raises(ValueError, match="'int32', \"<class 'float'>\""):
            i * 2.5
        with pytest.raises(functrax.dtypes.TypePromotionError):
            functrax.jit(lambda a, b: a + b)(i, f)
    assert (i + f).dtype == np.float32
    assert issubclass(functrax.dtypes.TypePromotionError, ValueError)


def test_default_matmul_precision_recorded():
    x = fnp.ones((2, 2))
    with functrax.default_matmul_precision("highest"):
        eqn = functrax.make_jaxpr(fnp.matmul)(x, x).eqns[0]
        highest = (lax.Precision.HIGHEST, lax.Precision.HIGHEST)
        assert eqn.params["precision"] == highest
        conv = functrax.make_jaxpr(lambda a, w: lax.conv_general_dilated(a, w, (1,), "VALID"))(
            fnp.ones((1, 1, 4)), fnp.ones((1, 1, 2))).eqns[0]
        assert conv.params["precision"] == highest
        explicit = functrax.make_jaxpr(lambda a, b: lax.dot(a, b, precision="bfloat16"))(x, x)
        default = (lax.Precision.DEFAULT, lax.Precision.DEFAULT)
        assert explicit.eqns[0].params["precision"] == default
    assert functrax.make_jaxpr(fnp.matmul)(x, x).eqns[0].params["precision"] is None


# --- checking_leaks ---

def test_checking_leaks_raises_at_the_end_of_the_transform():
    leaked = []
    store = lambda x: leaked.append(x) or x * 2  # noqa: E731
    cases = [lambda: functrax.jit(store)(1.0), lambda: functrax.vmap(store)(fnp.ones(2)),
             lambda: functrax.grad(store)(1.0),
             lambda: functrax.jvp(store, (1.0,), (1.0,)),
             lambda: functrax.make_jaxpr(store)(1.0)]
    for case in cases:
        with functrax.checking_leaks():
            with pytest.raises(functrax.UnexpectedTracerError,
                               match=r"(?s)^Leaked trace .*Leaked tracer\(s\):\n\nTraced<"
                                     r"float32\[\]>with<.*It is referenced by: a list"):
                case()
        leaked.clear()
    functrax.jit(store)(1.0)  # without the check the leak goes unnoticed until used
    with pytest.raises(functrax.UnexpectedTracerError):
        fnp.sin(leaked[0])


def test_checking_leaks_has_no_false_positives():
    x = fnp.arange(3.0)
    with functrax.checking_leaks():
        functrax.jit(lambda x: fnp.sin(x) * 2)(x)
        functrax.grad(lambda x: fnp.sum(fnp.tanh(x) ** 2))(x)
        functrax.hessian(lambda x: fnp.sum(x ** 3))(x)
        functrax.vmap(functrax.grad(lambda v: v * fnp.cos(v)))(x)
        functrax.jit(lambda xs: lax.scan(lambda c, v: (c + v, c * v), 0.0, xs))(x)
        functrax.grad(lambda x: lax.cond(x > 0, fnp.sin, fnp.cos, x))(1.0)
        functrax.grad(functrax.checkpoint(lambda v: fnp.sum(fnp.exp(v))))(x)
        functrax.jit(lambda x: dprint("{}", x))(x)


# --- ensure_compile_time_eval, typeof, live_arrays, device_get, named scopes ---

def test_ensure_compile_time_eval_gives_concrete_values_under_jit():
    seen = []

    @functrax.jit
    def f(x):
        with functrax.ensure_compile_time_eval():
            n = fnp.sum(fnp.arange(4))
            seen.append(type(n))
            y = x * 2  # a traced operand: staged as usual
        return y * int(n)
    assert float(f(1.0)) == 12.0 and seen == [functrax.Array]
    jaxpr = functrax.make_jaxpr(f.fun)(1.0)
    assert [e.primitive.name for e in jaxpr.eqns] == ["mul", "mul"]


def test_typeof():
    assert repr(functrax.typeof(fnp.ones(3))) == "ShapedArray(float32[3])"
    assert str(functrax.typeof(fnp.ones(3))) == "float32[3]"  # the vector's printed form
    assert repr(functrax.typeof(1.0)) == "ShapedArray(float32[], weak_type=True)"
    got = []
    functrax.jit(lambda x: got.append(functrax.typeof(x)) or x)(np.ones((2, 1), np.int32))
    assert repr(got[0]) == "ShapedArray(int32[2,1])"
    with pytest.raises(TypeError):
        functrax.typeof("text")


def test_live_arrays_and_donation():
    x = fnp.arange(5.0) + 1
    assert any(a is x for a in functrax.live_arrays())
    assert not any(a is x for a in functrax.live_arrays("gpu"))
    ident = id(x)
    del x
    assert not any(id(a) == ident for a in functrax.live_arrays())
    y = fnp.arange(3.0) * 2
    functrax.jit(lambda v: v + 1, donate_argnums=0)(y)
    assert not any(a is y for a in functrax.live_arrays())  # deleted by the donation


def test_device_get():
    tree = {"a": fnp.ones(2), "b": (fnp.zeros((), dtype=np.int32), 3, "s")}
    got = functrax.device_get(tree)
    assert type(got["a"]) is np.ndarray and got["a"].tolist() == [1.0, 1.0]
    assert type(got["b"][0]) is np.ndarray and got["b"][1:] == (3, "s")
    with pytest.raises(functrax.TracerArrayConversionError):
        functrax.jit(functrax.device_get)(1.0)


def test_named_scope_and_named_call_are_harmless():
    from functrax.debugging import current_name_stack
    names = []

    def layer(x):
        names.append(current_name_stack())
        return fnp.tanh(x)

    def f(x):
        with functrax.named_scope("block"):
            with functrax.named_scope("inner"):
                y = layer(x)
        return functrax.named_call(layer, name="head")(y)
    plain = functrax.make_jaxpr(lambda x: fnp.tanh(fnp.tanh(x)))(1.0)
    scoped = functrax.make_jaxpr(f)(1.0)
    assert str(scoped) == str(plain)
    assert scoped.pretty_print(name_stack=True) == str(plain)
    assert names == ["block/inner", "head"] and current_name_stack() == ""
    assert functrax.named_call(layer)(0.0) == 0.0 and names[-1] == "layer"
    with pytest.raises(TypeError, match="named_scope name argument must be a string"):
        with functrax.named_scope(1):
            pass


def test_default_device_cpu_and_device_put():
    dev = functrax.devices()[0]
    with functrax.default_device(dev):
        assert functrax.device_put(np.ones(2)).device == dev
        assert float(functrax.jit(lambda x: x + 1)(1.0)) == 2.0
    with pytest.raises(ValueError, match="jax_default_device must be a Device"):
        functrax.default_device(3)


def test_enable_checks_log_compiles_and_explain_cache_misses(caplog, monkeypatch):
    checked = []
    orig = functrax.core.check_jaxpr
    monkeypatch.setattr(functrax.core, "check_jaxpr", lambda j: checked.append(j) or orig(j))
    f = functrax.jit(lambda x: x * 3)
    with functrax.enable_checks(True):
        f(1.0)
    assert len(checked) == 1
    g = functrax.jit(lambda x: x - 1)
    with caplog.at_level(logging.WARNING, logger="functrax"):
        with functrax.explain_cache_misses(True):
            g(1.0)
            g(np.ones(2, np.float32))
        with functrax.log_compiles(True):
            g(np.ones(3, np.int32))
    text = caplog.text
    # the reasons of a cache miss are tested in tests/test_toplevel_api.py
    assert "TRACING CACHE MISS" in text and "seen f32[]" in text and "f32[2]" in text
    assert "Compiling <lambda> for jit" in text


def test_print_environment_info(capsys):
    text = functrax.print_environment_info(return_string=True)
    assert text.startswith(f"functrax:    {functrax.__version__}\n") and "numpy:" in text
    functrax.print_environment_info()
    assert "device info: cpu-" in capsys.readouterr().out
