"""Host callbacks on the Triton backend (Triton's interpreter): a callback is a step of its
own, run on the host between kernels. The fusion plan splits around it (no kernel holds
equations from both sides), effectful ones keep program order, and over a fake GPU the
callback gets host copies of device buffers."""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.experimental import io_callback
from functrax.lowering.fusion.planner import plan_fusion
from functrax.lowering.triton.host_callbacks import HostCallbackStep
from functrax.runtime import gpu_devices as gpu
from tests import fake_gpu as fake_gpu_lib

fresh_cache = th.fresh_cache  # autouse: a kernel cache of each test's own
SDS = functrax.ShapeDtypeStruct


def _f(x):
    y = fnp.exp(x) * 2.0
    functrax.debug.print("y {}", y)
    z = fnp.sin(y) + 1.0
    functrax.debug.print("z {}", z, ordered=True)
    return z * 3.0


def test_print_runs_on_the_host_between_kernels(capsys):
    x = fnp.arange(3.0)
    got = functrax.jit(_f, backend="triton")(x)
    want = functrax.jit(_f)(x)
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == out[2:]  # the Triton run printed what the numpy backend printed
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    prog = th.program_of(th.compiled(_f, x))
    kinds = [("host" if isinstance(s, HostCallbackStep) else "kernel") for s in prog.steps]
    assert kinds == ["kernel", "host", "kernel", "host", "kernel"]
    assert not prog.fallbacks and len(prog.kernels) == 3
    host = [s for s in prog.steps if isinstance(s, HostCallbackStep)]
    assert all(s.kernel is None and len(s.group.eqns) == 1 for s in host)
    text = th.compiled(_f, x).as_text()
    assert text.count("host callback debug_print (Python on the host, between kernels)") == 2
    costs = th.compiled(_f, x).cost_analysis()["kernels"]
    assert [c["backend"] for c in costs] == ["triton", "host", "triton", "host", "triton"]


def test_plan_never_fuses_across_an_effect():
    closed = functrax.jit(_f).lower(fnp.arange(3.0)).jaxpr
    groups = plan_fusion(closed).groups
    names = [[e.primitive.name for e in g.eqns] for g in groups]
    assert names == [["exp", "mul"], ["debug_print"], ["sin", "add"], ["debug_print"], ["mul"]]


def test_io_and_pure_callbacks_feed_kernels_in_order():
    log = []

    def f(x):
        a = io_callback(lambda v: log.append(("a", np.asarray(v).tolist())) or np.asarray(v) * 2,
                        SDS((3,), np.float32), fnp.exp(x), ordered=True)
        b = functrax.pure_callback(lambda v: np.asarray(v) + 1, SDS((3,), np.float32),
                                   fnp.tanh(a))
        io_callback(lambda v: log.append(("c", np.asarray(v).tolist())), None, b,
                    ordered=True)
        return b * 2
    x = np.array([0.0, 0.5, 1.0], np.float32)
    got = functrax.jit(f, backend="triton")(x)
    want = functrax.jit(f)(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    assert [tag for tag, _ in log] == ["a", "c", "a", "c"]
    np.testing.assert_allclose(log[0][1], log[2][1], rtol=1e-6)


def test_print_in_a_scan_body_on_triton(capsys):
    def g(xs):
        return lax.scan(lambda c, x: (functrax.debug.print("c {}", c) or c + x, c), 0.0, xs)
    out = functrax.jit(g, backend="triton")(fnp.arange(3.0))
    assert capsys.readouterr().out.splitlines() == ["c 0.0", "c 0.0", "c 1.0"]
    assert float(out[0]) == 3.0


@pytest.fixture
def fake_gpu(monkeypatch):
    return fake_gpu_lib.install(monkeypatch)


def test_fake_gpu_callback_gets_host_copies(fake_gpu, capsys):
    seen = []

    def f(x):
        y = fnp.exp(x)
        functrax.debug.callback(lambda v: seen.append(type(np.asarray(v))), y)
        functrax.debug.print("y {}", y)
        return y * 2.0
    dev = functrax.devices("gpu")[0]
    x = np.array([0.0, 1.0], np.float32)
    got = functrax.jit(f)(functrax.device_put(x, dev))
    assert type(got) is gpu.GpuArray
    np.testing.assert_allclose(np.asarray(got), np.exp(x) * 2.0, rtol=1e-6)
    assert seen == [np.ndarray]
    assert capsys.readouterr().out == f"y {np.exp(x)}\n"


def test_fake_gpu_default_device_places_results_and_runs_jit_there(fake_gpu):
    dev = functrax.devices("gpu")[0]
    with functrax.default_device(dev):
        x = fnp.ones(3) * 2.0  # eager results live on the default device
        assert type(x) is gpu.GpuArray and x.device == dev
        y = functrax.jit(lambda v: v + 1.0)(np.ones(3, np.float32))  # jit runs there
        assert type(y) is gpu.GpuArray
        assert functrax.device_put(np.ones(2)).device == dev
    np.testing.assert_array_equal(np.asarray(y), [2.0, 2.0, 2.0])
    assert type(fnp.ones(2) * 2.0) is functrax.Array  # back on the host after the block
    assert any(a is x for a in functrax.live_arrays("gpu"))
