"""The C backend's program cache: compiled programs recorded on disk by the traced program
(``functrax.lowering.c.program_cache``), the jaxpr fingerprint it keys on, and the scratch
arena of block functions (buffers whose lives do not overlap share bytes)."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.core.fingerprint import fingerprint
from functrax.lowering.c import backend as cb, blocks, program_cache as pc
from functrax.lowering.c.cache import LibraryCache
from functrax.lowering.c.tiered import TieredProgram, compile_tiered_traced
from functrax.lowering.c.toolchain import toolchain
from functrax.passes.pipeline import optimize

HAVE_CC = toolchain().available
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no working C compiler")


@pytest.fixture(autouse=True)
def _fresh_kernels(monkeypatch):
    """Each test compiles into its own cache directory: kernels another test loaded (from
    another directory) are not reused by name."""
    monkeypatch.setattr(cb, "_LOADED", {})


# --- the fingerprint ---


def _mlp_step(params, x, y):
    def loss(p):
        h = functrax.nn.relu(x @ p[0] + p[1])
        return -(functrax.nn.log_softmax(h @ p[2]) * y).sum()
    g = functrax.grad(loss)(params)
    return [p - 0.1 * d for p, d in zip(params, g)]


def _mlp_args(rng, n=8, d=6, h=5, k=3):
    params = [rng.normal(size=(d, h)).astype(np.float32), np.zeros(h, np.float32),
              rng.normal(size=(h, k)).astype(np.float32)]
    return params, rng.normal(size=(n, d)).astype(np.float32), \
        np.eye(k, dtype=np.float32)[rng.integers(0, k, n)]


def test_fingerprint_is_stable_and_tells_programs_apart():
    rng = np.random.default_rng(0)
    args = _mlp_args(rng)
    a = fingerprint(functrax.make_jaxpr(_mlp_step)(*args))
    assert a is not None and a == fingerprint(functrax.make_jaxpr(_mlp_step)(*args))
    # another shape, dtype, weak type, constant or param: another fingerprint
    other = [fingerprint(functrax.make_jaxpr(_mlp_step)(*_mlp_args(rng, n=9))),
             fingerprint(functrax.make_jaxpr(lambda x: x * 2.0)(np.ones(3, np.float32))),
             fingerprint(functrax.make_jaxpr(lambda x: x * 3.0)(np.ones(3, np.float32))),
             fingerprint(functrax.make_jaxpr(lambda x: x * 2.0)(np.ones(3, np.int32))),
             fingerprint(functrax.make_jaxpr(lambda x: x * 2.0)(1.0)),
             fingerprint(functrax.make_jaxpr(lambda x: x * 2.0)(np.float32(1.0))),
             fingerprint(functrax.make_jaxpr(lambda x: x.sum(0))(np.ones((3, 3), np.float32))),
             fingerprint(functrax.make_jaxpr(lambda x: x.sum(1))(np.ones((3, 3), np.float32))),
             fingerprint(functrax.make_jaxpr(lambda x: x + np.arange(3.0, dtype=np.float32))(
                 np.ones(3, np.float32))),
             fingerprint(functrax.make_jaxpr(lambda x: x + np.arange(1.0, 4.0, dtype=np.float32))(
                 np.ones(3, np.float32)))]
    assert None not in other and len(set(other + [a])) == len(other) + 1


def test_fingerprint_covers_sub_jaxprs_and_skips_custom_derivative_rules():
    def f(c):
        return lax.scan(lambda c, x: (c * x + 1.0, c), c, np.arange(4.0, dtype=np.float32))

    def g(c):
        return lax.scan(lambda c, x: (c * x + 2.0, c), c, np.arange(4.0, dtype=np.float32))
    x = np.float32(1.0)
    assert fingerprint(functrax.make_jaxpr(f)(x)) != fingerprint(functrax.make_jaxpr(g)(x))

    def make():  # a new custom_jvp function object each time: its rules are not keyed
        @functrax.custom_jvp
        def h(x):
            return fnp.sin(x)
        h.defjvp(lambda p, t: (h(p[0]), fnp.cos(p[0]) * t[0]))
        return h
    xs = np.ones(3, np.float32)
    assert fingerprint(functrax.make_jaxpr(make())(xs)) == fingerprint(
        functrax.make_jaxpr(make())(xs))


def test_fingerprint_is_none_for_a_python_callback():
    def f(x):
        return functrax.pure_callback(lambda v: np.sin(v), x, x)
    assert fingerprint(functrax.make_jaxpr(f)(np.ones(3, np.float32))) is None


# --- recording and loading programs ---


def _compile_and_record(fun, args, cache):
    closed = functrax.make_jaxpr(fun)(*args)
    key = pc.program_key(closed)
    assert key is not None
    opt = optimize(closed)
    program = cb.compile_c(opt, cache=cache)
    assert pc.save(key, program, cache)
    return closed, key, program, opt


def _flat(args):
    return [np.asarray(a) for a in functrax.tree_util.tree_leaves(args)]


def _programs():
    rng = np.random.default_rng(1)

    def rnn(w, xs):
        def cell(h, x):
            h = fnp.tanh(x @ w + h)
            return h, h.sum()
        return lax.scan(cell, fnp.zeros(4, np.float32), xs)

    def consts_and_literals(x):
        table = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
        return (fnp.exp(x) @ table).sum(0), 2.0, x.T

    return {
        "mlp_step": (_mlp_step, _mlp_args(rng)),
        "rnn": (rnn, (rng.normal(size=(4, 4)).astype(np.float32),
                      rng.normal(size=(7, 4)).astype(np.float32))),
        "consts_and_literals": (consts_and_literals,
                                (rng.normal(size=(5, 3)).astype(np.float32),)),
        "while": (lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5),
                                           (0, x)), (np.ones(6, np.float32),)),
    }


@needs_cc
@pytest.mark.parametrize("name", list(_programs()))
def test_a_recorded_program_loads_and_runs_bit_for_bit(tmp_path, name):
    fun, args = _programs()[name]
    cache = LibraryCache(str(tmp_path))
    closed, key, program, opt = _compile_and_record(fun, args, cache)
    assert not program.fallbacks
    loaded = pc.load(key, closed, lambda: opt, cache=cache)
    assert isinstance(loaded, pc.CachedProgram)
    want, got = program.run(*_flat(args)), loaded.run(*_flat(args))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert w.dtype == g.dtype and w.shape == g.shape
        np.testing.assert_array_equal(g, w)
    # inspection works on a loaded program (its description is computed again)
    assert loaded.as_text() == program.as_text()
    assert loaded.cost_analysis() == program.cost_analysis()


@needs_cc
def test_a_damaged_entry_is_a_miss_and_is_replaced(tmp_path):
    fun, args = _programs()["consts_and_literals"]
    cache = LibraryCache(str(tmp_path))
    closed, key, program, opt = _compile_and_record(fun, args, cache)
    record = tmp_path / "programs" / f"{key}.json"
    consts = tmp_path / "programs" / f"{key}.npz"
    assert record.exists() and consts.exists()
    good = record.read_bytes()

    def miss():
        return pc.load(key, closed, lambda: opt, cache=LibraryCache(str(tmp_path))) is None

    record.write_bytes(good[: len(good) // 2])  # truncated
    assert miss()
    d = json.loads(good)
    d["invars"][0][1][0] = [6, 3]  # types that do not match the traced program's
    record.write_text(json.dumps(d))
    assert miss()
    record.write_bytes(good)
    saved = consts.read_bytes()
    consts.write_bytes(saved[:40])  # truncated constants
    assert miss()
    consts.write_bytes(saved)
    assert not miss()
    libs = [p for p in tmp_path.iterdir() if p.name.startswith("p_")]
    for p in libs:
        p.rename(p.with_suffix(".gone"))
    assert miss()  # a library deleted by hand
    for p in libs:
        p.with_suffix(".gone").rename(p)
    assert not miss()


@needs_cc
def test_programs_with_numpy_fallbacks_are_not_recorded(tmp_path):
    fun = lambda x: fnp.sort(x) * 2.0  # noqa: E731  (sort runs on numpy)
    closed = functrax.make_jaxpr(fun)(np.ones(5, np.float32))
    program = cb.compile_c(optimize(closed), cache=LibraryCache(str(tmp_path)))
    assert program.fallbacks
    assert not pc.save(pc.program_key(closed), program, LibraryCache(str(tmp_path)))


@needs_cc
def test_the_key_follows_the_trace_context_and_the_switch():
    closed = functrax.make_jaxpr(lambda x: fnp.tanh(x) * 2.0)(np.ones(5, np.float32))
    key = pc.program_key(closed)
    from functrax.config import _Override
    with _Override("cpu_backend", "c"):
        assert pc.program_key(closed) not in (None, key)
    with _Override("c_program_cache", False):
        assert pc.program_key(closed) is None
    assert pc.program_key(closed) == key


_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import functrax, functrax.numpy as fnp
    from functrax.lowering.c import program_cache
    from functrax.lowering.c.tiered import TieredProgram
    backend = sys.argv[1]
    rng = np.random.default_rng(0)
    w = rng.normal(size=(64, 64)).astype(np.float32)
    x = rng.normal(size=(32, 64)).astype(np.float32)
    f = functrax.jit(lambda w, x: fnp.tanh(x @ w).sum(0) * 2.0, backend=backend)
    out = np.asarray(f(w, x))
    exe = f.lower(w, x).compile()._entry.exe
    on_c = exe.on_c if isinstance(exe, TieredProgram) else True
    if isinstance(exe, TieredProgram):
        exe.wait()
    print(json.dumps({"out": out.tolist(), "stats": program_cache.STATS, "first_on_c": on_c}))
""")


def _child(tmp_path, backend):
    env = dict(os.environ, FUNCTRAX_CACHE_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(functrax.__file__)),
                                         env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", _CHILD, backend], env=env, text=True,
                         capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@needs_cc
@pytest.mark.parametrize("backend", ["c", "auto"])
def test_a_new_process_loads_the_program_jit_compiled(tmp_path, backend):
    """``jit`` in a second process finds the program the first one compiled: same result;
    on ``"auto"`` the first call already runs the C program (nothing compiles)."""
    first, second = _child(tmp_path, backend), _child(tmp_path, backend)
    assert first["stats"]["misses"] == 1 and first["stats"]["stores"] == 1
    assert second["stats"]["hits"] == 1 and second["stats"]["stores"] == 0
    if backend == "auto":  # the first process's first call ran on the numpy executor
        assert not first["first_on_c"] and second["first_on_c"]
        np.testing.assert_allclose(second["out"], first["out"], rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(np.asarray(second["out"]), np.asarray(first["out"]))


@needs_cc
def test_auto_backend_wraps_a_loaded_program(tmp_path, monkeypatch):
    fun, args = _programs()["mlp_step"]
    cache = LibraryCache(str(tmp_path))
    closed, key, program, opt = _compile_and_record(fun, args, cache)
    loaded = pc.load(key, closed, lambda: opt, cache=cache)
    monkeypatch.setattr(pc, "load", lambda *a, **k: loaded)
    exe = compile_tiered_traced(closed, lambda: opt)
    assert isinstance(exe, TieredProgram) and exe.on_c and exe.wait() is loaded
    for w, g in zip(program.run(*_flat(args)), exe.run(*_flat(args))):
        np.testing.assert_array_equal(g, w)
    assert exe.jaxpr is not None and "fx_program" in exe.as_text()


# --- the scratch arena ---


def test_arena_shares_bytes_between_buffers_whose_lives_do_not_overlap():
    b = blocks._Block()
    s = [b.alloc(n) for n in (1000, 1000, 500, 64)]
    b.emit(f"f({s[0]});")            # 0: S0 written
    b.emit(f"g({s[0]}, {s[1]});")    # 1: S0 read, S1 written
    b.emit(f"g({s[1]}, {s[2]});")    # 2: S0 dead: S2 may take its bytes
    offsets, size = blocks._arena(b)
    assert offsets[3] is None  # never named: no place
    assert offsets[2] == offsets[0] and offsets[1] != offsets[0]
    assert size == 2 * 1024


def test_arena_keeps_buffers_named_in_a_loop_alive_through_the_loop():
    b = blocks._Block()
    s = [b.alloc(256) for _ in range(3)]
    b.emit(f"f({s[0]});")                       # 0
    b.regions.append((1, 4))
    b.emit("{ for (;;) {")                      # 1
    b.emit(f"  g({s[1]});")                     # 2: S1 named once, inside the loop
    b.emit(f"  h({s[0]});")                     # 3: S0 read inside the loop
    b.emit("} }")                               # 4
    b.emit(f"k({s[2]});")                       # 5: after the loop, may reuse
    offsets, size = blocks._arena(b)
    assert offsets[0] != offsets[1]  # both live through the whole loop
    assert offsets[2] in (offsets[0], offsets[1]) and size == 512


@needs_cc
def test_program_block_scratch_is_one_arena_smaller_than_its_buffers():
    fun, args = _programs()["mlp_step"]
    closed = functrax.make_jaxpr(fun)(*args)
    program = cb.compile_c(optimize(closed))
    (step,) = program.steps
    assert len(step.kernel.scratch) == 1
    assert "SA + " in step.kernel.text
