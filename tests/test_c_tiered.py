"""The default CPU backend ``"auto"`` (``functrax/lowering/c/tiered.py``) and
``config.cpu_backend``: the numpy executor serves the first call at once, the C program
takes over once built on the background thread; ``"c"`` and ``"numpy"`` pin one; pmap
follows the same default; without a compiler everything stays on numpy, silently; a compile
error warns once (or raises with ``c_compile_errors="raise"``); exiting never waits for a
compile.

The rest of the suite pins ``FUNCTRAX_CPU_BACKEND=numpy`` (``conftest.py``); these tests set
the flag themselves.
"""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import jit
from functrax.lowering.c import backend as cb
from functrax.lowering.c.tiered import TieredProgram
from functrax.lowering.c.toolchain import toolchain
from functrax.lowering.numpy.executor import compile_jaxpr

HAVE_CC = toolchain().available
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no working C compiler on this machine")


@pytest.fixture(autouse=True)
def _no_program_cache():
    """These tests watch the tiers switch: a program found in the program cache (compiled
    by an earlier run) would run on C from the first call (test_c_program_cache.py)."""
    functrax.config.update("c_program_cache", False)
    yield
    functrax.config.update("c_program_cache", True)


@pytest.fixture
def cpu_backend():
    saved = functrax.config.cpu_backend

    def set_(name):
        functrax.config.update("cpu_backend", name)
    yield set_
    functrax.config.update("cpu_backend", saved)


def _f(x, y):
    return functrax.nn.softmax(fnp.tanh(x) @ y, axis=-1) * 3.0


def _args():
    rng = np.random.default_rng(0)
    return rng.normal(size=(8, 16)).astype(np.float32), rng.normal(size=(16, 4)).astype(
        np.float32)


def test_auto_serves_numpy_first_then_switches_to_c(cpu_backend):
    cpu_backend("auto")
    x, y = _args()
    f = jit(_f)
    first = f(x, y)
    exe = f.lower(x, y).compile()._entry.exe
    assert isinstance(exe, TieredProgram) and exe.first_call_s is not None
    built = exe.wait(timeout=300)
    assert built is not None
    later = f(x, y)
    np.testing.assert_allclose(np.asarray(later), np.asarray(first), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(first), jit(_f, backend="numpy")(x, y), rtol=1e-6)
    if HAVE_CC:
        assert exe.on_c and isinstance(built, cb.CProgram) and not built.on_numpy
        assert exe.ready_s >= exe.first_call_s
        assert "void fx_" in f.lower(x, y).compile().as_text()
    else:
        assert not exe.on_c and built is exe.numpy


def test_c_and_numpy_pin_the_backend_and_are_part_of_the_cache_key(cpu_backend):
    x, y = _args()
    f = jit(_f)
    cpu_backend("numpy")
    a = f(x, y)
    assert type(f.lower(x, y).compile()._entry.exe) is type(compile_jaxpr(
        f.lower(x, y).jaxpr))
    cpu_backend("c")
    b = f(x, y)  # re-traced: the flag is part of the trace context
    assert isinstance(f.lower(x, y).compile()._entry.exe, cb.CProgram)
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="cpu_backend must be 'auto'"):
        functrax.config.update("cpu_backend", "gcc")


def test_tiny_programs_stay_on_numpy_without_compiling(cpu_backend):
    """Below a C call's fixed cost the numpy executor is faster: nothing is compiled."""
    cpu_backend("auto")
    f = jit(lambda x: x * 2.0 + 1.0)
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), x * 2 + 1)
    exe = f.lower(x).compile()._entry.exe
    assert exe.wait(timeout=60) is exe.numpy and exe._c is None and not exe.on_c
    assert "a tiny program" in f.lower(x).compile().as_text()
    from functrax.lowering.c.tiered import worth_compiling
    big = jit(lambda x: x * 2.0 + 1.0).lower(np.ones(1 << 15, np.float32)).jaxpr.jaxpr
    loop = jit(lambda x: functrax.lax.fori_loop(0, 3, lambda i, c: c + 1.0, x)).lower(x)
    assert worth_compiling(big) and worth_compiling(loop.jaxpr.jaxpr)


def test_pmap_follows_the_default(cpu_backend):
    cpu_backend("auto")
    n = min(2, functrax.local_device_count())
    xs = np.arange(n * 6, dtype=np.float32).reshape(n, 6)
    step = functrax.pmap(lambda v: fnp.tanh(v) - functrax.lax.pmean(v, "i"), axis_name="i")
    first = step(xs)
    from functrax.transforms import pmap as pm
    tiered = [exe for per in pm._compiled.values() for exe in per.values()
              if isinstance(exe, TieredProgram)]
    assert tiered
    for exe in tiered:
        exe.wait(timeout=300)
    later = step(xs)
    want = np.tanh(xs) - xs.mean(0)
    np.testing.assert_allclose(np.asarray(first), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(later), want, rtol=1e-5, atol=1e-6)


@needs_cc
def test_compile_error_warns_once_then_numpy_or_raises(cpu_backend, monkeypatch):
    from functrax.lowering.c import tiered

    def failing():
        raise cb.CompileError("cc: this is not C")

    closed = jit(lambda x: fnp.cos(x) + 3.0).lower(fnp.ones(5)).jaxpr
    prog = TieredProgram(closed, compile_fn=failing)
    prog.run(np.ones(5, np.float32))
    assert prog._done.wait(300)
    with pytest.raises(cb.CompileError, match="this is not C"):
        prog.run(np.ones(5, np.float32))  # the error, raised once by the next call
    np.testing.assert_allclose(prog.run(np.ones(5, np.float32))[0], np.cos(1.0) + 3, rtol=1e-6)
    assert not prog.on_c
    # the default compile_c: warns once and the program stays on numpy
    real = tiered.compile_c

    def broken(c, donated=()):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(cb, "_link", lambda *a: (_ for _ in ()).throw(cb.CompileError("bad")))
            return real(c, donated)
    monkeypatch.setattr(tiered, "compile_c", broken)
    p2 = TieredProgram(jit(lambda x: fnp.sin(x) * 7.0).lower(fnp.ones((200, 100))).jaxpr)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert p2.wait(300).on_numpy
    assert any(issubclass(x.category, cb.CCompileWarning) for x in w)
    np.testing.assert_allclose(p2.run(np.ones((200, 100), np.float32))[0], np.sin(1.0) * 7,
                               rtol=1e-6)
    assert not p2.on_c


_CHILD = r"""
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("always")
import functrax, functrax.numpy as fnp
f = functrax.jit(lambda x: fnp.exp(x) * 2.0 + 1.0)
x = np.linspace(0, 1, 7).astype(np.float32)
out = np.asarray(f(x))
exe = f.lower(x).compile()._entry.exe
ok = bool(np.allclose(out, np.exp(x) * 2 + 1, rtol=1e-6))
if sys.argv[1] == "wait":
    exe.wait(300)
    ok = ok and bool(np.allclose(np.asarray(f(x)), out, rtol=1e-6))
if sys.argv[1] == "exit":  # a compile that would take ten minutes, running at exit
    from functrax.lowering.c.tiered import TieredProgram
    slow = TieredProgram(f.lower(x).jaxpr, compile_fn=lambda: time.sleep(600))
    ok = ok and bool(np.allclose(slow.run(x)[0], out, rtol=1e-6))
    time.sleep(0.5)  # the worker thread is inside the compile now
print(json.dumps({"ok": ok, "on_c": exe.on_c, "type": type(exe).__name__}))
"""


def _child(mode, env_updates, timeout=300):
    env = dict(os.environ, FUNCTRAX_CPU_BACKEND="auto")
    env.update(env_updates)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(functrax.__file__)),
                                         env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", _CHILD, mode], env=env, capture_output=True,
                         text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def test_without_a_compiler_auto_stays_on_numpy_silently(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    res = _child("wait", {"CC": str(tmp_path / "no-such-cc"), "PATH": str(empty),
                          "FUNCTRAX_CACHE_DIR": str(tmp_path / "cache")})
    assert '"ok": true' in res.stdout and '"on_c": false' in res.stdout
    assert "Warning" not in res.stderr, res.stderr


def test_exit_does_not_wait_for_a_background_compile(tmp_path):
    """The process exits while a (ten-minute) compile runs on the worker thread: it must not
    join it (subprocess.TimeoutExpired after two minutes otherwise)."""
    res = _child("exit", {"FUNCTRAX_CACHE_DIR": str(tmp_path / "cache")}, timeout=120)
    assert '"ok": true' in res.stdout and '"type": "TieredProgram"' in res.stdout
