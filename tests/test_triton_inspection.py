"""Inspecting the Triton backend: ``as_text``, ``cost_analysis``, the ``triton_dump_dir``
flag, and the kernel cache seen from ``jit(f, backend="triton")`` calls.

Costs are checked against numbers computed by hand from the programs' shapes: flops from
the equations (``dot_general`` 2*M*N*K, elementwise and reductions one per element,
transcendentals apart), bytes from what each fused kernel reads and writes.
"""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

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
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.triton import backend as tbackend
from functrax.lowering.triton import cache as tcache
from functrax.lowering.triton import compile as tcompile
from functrax.lowering.triton import inspection
from functrax.lowering.triton import runtime
from tests.triton_harness import compiled, dense_relu, ew_chain, program_of, softmax_rows

F32 = 4  # bytes
fresh_cache = th.fresh_cache  # autouse: a kernel cache of each test's own
normal = th.normal_from(np.random.default_rng(0))


@pytest.fixture(autouse=True)
def dump_flag_off():
    """The ``triton_dump_dir`` flag off before and after each test."""
    functrax.config.update("triton_dump_dir", None)
    yield
    functrax.config.update("triton_dump_dir", None)


@pytest.fixture
def generations(monkeypatch):
    """Counts the kernel sources generated (``codegen.generate`` calls of build_kernel)."""
    count = {"n": 0}
    real = runtime.generate

    def counting(group, config=None):
        count["n"] += 1
        return real(group, config)

    monkeypatch.setattr(runtime, "generate", counting)
    return count


# --- programs ---

def update_at(x, i):
    """dynamic_update_slice at a traced start: not lowered to Triton, a numpy fallback."""
    return lax.dynamic_update_slice(x, fnp.array([1.0, 2.0]), (i,))


def fallback_between(x, i):
    return update_at(fnp.exp(x), i) * 2.0


def mixed(x, y, w, b, i):
    return softmax_rows(fnp.exp(fnp.sin(x) * 2.0) + y), dense_relu(x, w, b), update_at(y, i)


def two_parts(x, y):
    return softmax_rows(x), fnp.exp(y) * 2.0


def sections(text):
    """``as_text`` split into the preamble, one section per kernel, and the fallback list."""
    body, _, fallbacks = text.partition("\nnumpy fallbacks:\n")
    head, *kernels = body.split("\nkernel ")
    return head, kernels, fallbacks


# --- as_text ---

def test_as_text_header_equations_and_source_per_kernel():
    x, y, w, b = normal(4, 8), normal(8), normal(8, 3), normal(3)
    c = compiled(mixed, x, y, w, b, np.int32(3))
    prog = program_of(c)
    kinds = [s.group.kind for s in prog.steps]
    assert kinds == [GroupKind.REDUCTION, GroupKind.MATMUL, GroupKind.OPAQUE]
    text = c.as_text()
    head, kernels, fallbacks = sections(text)
    assert head.startswith("# triton backend: 2 kernel(s), 1 numpy fallback(s)")
    assert str(prog.jaxpr) in head  # the whole optimized program, names as printed there
    assert len(kernels) == len(prog.steps)
    for i, (step, sec) in enumerate(zip(prog.steps, kernels)):
        g = step.group
        assert sec.startswith(f"{i}: {g.kind.value}{list(g.shape)}")
        lines = sec.splitlines()
        ins = next(ln for ln in lines if ln.startswith("  inputs: "))
        outs = next(ln for ln in lines if ln.startswith("  outputs: "))
        assert len(ins.split()) - 1 == len(g.inputs) and len(outs.split()) - 1 == len(g.outputs)
        for v in g.inputs:
            assert f":{v.aval.str_short()}" in ins
        assert f"  equations ({len(g.eqns)}):" in sec
        start = lines.index(f"  equations ({len(g.eqns)}):") + 1
        block = lines[start:]
        block = block[:next((j for j, ln in enumerate(block) if ln.startswith("  source (")),
                            len(block))]
        eq_lines = [ln.strip() for ln in block if " = " in ln]
        assert [ln.split(" = ")[1].split("[")[0].split(" ")[0] for ln in eq_lines] == \
            [e.primitive.name for e in g.eqns]
        if step.kernel is not None:
            src = step.kernel.source
            assert f"triton kernel {src.name}" in lines[0]
            assert f"  config: grid={src.grid}" in sec
            for k, v in src.constexprs.items():
                assert f"{k}={v!r}" in sec if isinstance(v, str) else f"{k}={v}" in sec
            assert f"source ({src.name}_{src.key[:16]}.py):" in sec
        else:
            assert "fallback: numpy (" in lines[0] and "config:" not in sec
    # the update constant is a; x, y, w, b, i are b, c, d, e, f in the printed jaxpr: the
    # reduction group reads x and y with their avals
    assert "  inputs: b:f32[4,8] c:f32[8]" in kernels[0]
    assert "  inputs: b:f32[4,8] d:f32[8,3] e:f32[3]" in kernels[1]
    # a generated kernel: its whole module; a hand-written one: its @triton.jit functions only
    assert prog.steps[0].kernel.source.text.strip() in kernels[0]
    assert "hand-written kernels.matmul.matmul_kernel" in kernels[1]
    assert "def matmul_kernel(" in kernels[1] and "def _epilogue(" in kernels[1]
    assert "def pick_config(" not in kernels[1] and "__all__" not in kernels[1]
    # fallbacks: listed with their reasons
    fb = prog.fallbacks[0]
    assert fallbacks.strip() == f"kernel 2 (opaque: dynamic_update_slice): {fb.reason}"
    assert fb.reason and "dynamic_update_slice" in fb.reason


def test_as_text_cost_lines_match_cost_analysis():
    x, y = normal(3, 4), normal(4)
    c = compiled(ew_chain, x, y)
    text, cost = c.as_text(), c.cost_analysis()
    k = cost["kernels"][0]
    assert (f"cost: flops={k['flops']:g} transcendentals={k['transcendentals']:g} "
            f"bytes accessed={k['bytes accessed']:g}") in text
    assert f"total flops={cost['flops']:g}" in text.splitlines()[0]


def test_numpy_backend_as_text_is_the_jaxpr():
    c = functrax.jit(ew_chain).lower(normal(3, 4), normal(4)).compile()
    assert c.as_text() == functrax.jit(ew_chain).lower(normal(3, 4), normal(4)).as_text()
    assert "kernels" not in c.cost_analysis()


# --- cost_analysis ---

def _check_totals(cost):
    for key in ("flops", "transcendentals", "bytes accessed", "bytes read", "bytes written"):
        assert cost[key] == sum(k[key] for k in cost["kernels"])
        assert isinstance(cost[key], float)
    for k in cost["kernels"]:
        assert k["bytes accessed"] == k["bytes read"] + k["bytes written"]


def test_cost_of_an_elementwise_chain_with_a_broadcast_input():
    m, n = 3, 4
    c = compiled(ew_chain, normal(m, n), normal(n))
    cost = c.cost_analysis()
    # mul add neg mul sub: 5 flops per element; tanh exp: 2 transcendentals per element;
    # reads x (m*n) and y (n: at its own size, not broadcast), writes m*n
    assert len(cost["kernels"]) == 1
    k = cost["kernels"][0]
    assert (k["flops"], k["transcendentals"]) == (5 * m * n, 2 * m * n)
    assert k["bytes read"] == F32 * (m * n + n) and k["bytes written"] == F32 * m * n
    per_input = sorted(k[f"bytes accessed{i}{{}}"] for i in range(2))
    assert per_input == [F32 * n, F32 * m * n] and "bytes accessed2{}" not in k
    assert k["bytes accessedout{}"] == F32 * m * n
    assert k["kind"] == "elementwise" and k["backend"] == "triton" and k["name"]
    _check_totals(cost)


def test_cost_of_softmax_is_one_read_and_one_write():
    m, n = 4, 8
    cost = compiled(softmax_rows, normal(m, n)).cost_analysis()
    # reduce_max (m*n) + max with -inf (m) + sub (m*n) + reduce_sum (m*n) + div (m*n); exp
    assert len(cost["kernels"]) == 1
    assert cost["flops"] == 4 * m * n + m and cost["transcendentals"] == m * n
    assert cost["bytes accessed"] == 2 * F32 * m * n  # x in, softmax out: nothing between
    assert cost["kernels"][0]["kind"] == "reduction"
    _check_totals(cost)


def test_cost_of_dense_relu():
    m, k, n = 3, 4, 5
    c = compiled(dense_relu, normal(m, k), normal(k, n), normal(n))
    cost = c.cost_analysis()
    assert len(cost["kernels"]) == 1 and cost["kernels"][0]["kind"] == "matmul"
    assert cost["flops"] == 2 * m * n * k + 2 * m * n  # the dot, the bias add, the relu
    assert cost["transcendentals"] == 0
    assert cost["bytes read"] == F32 * (m * k + k * n + n)
    assert cost["bytes written"] == F32 * m * n
    _check_totals(cost)


def test_cost_per_kernel_around_a_fallback():
    n = 6
    cost = compiled(fallback_between, normal(n), np.int32(2)).cost_analysis()
    ks = cost["kernels"]
    assert [k["kind"] for k in ks] == ["elementwise", "opaque", "elementwise"]
    assert [k["backend"] for k in ks] == ["triton", "numpy", "triton"]
    assert ks[1]["name"] is None and "dynamic_update_slice" in ks[1]["reason"]
    assert (ks[0]["flops"], ks[0]["transcendentals"]) == (0, n)
    assert (ks[2]["flops"], ks[2]["transcendentals"]) == (n, 0)
    for k in (ks[0], ks[2]):  # each reads its n-vector and writes one: the update between
        assert k["bytes accessed"] == 2 * F32 * n
    _check_totals(cost)


@pytest.mark.parametrize("fn, shapes", [(ew_chain, [(3, 4), (4,)]), (softmax_rows, [(4, 8)]),
                                        (dense_relu, [(3, 4), (4, 5), (5,)]),
                                        (mixed, [(4, 8), (8,), (8, 3), (3,), None])])
def test_fusion_keeps_flops_and_saves_bytes(fn, shapes):
    args = [normal(*s) if s is not None else np.int32(1) for s in shapes]
    unfused = functrax.jit(fn).lower(*args).cost_analysis()
    fused = compiled(fn, *args).cost_analysis()
    assert fused["flops"] == unfused["flops"]
    assert fused["transcendentals"] == unfused["transcendentals"]
    assert fused["bytes accessed"] < unfused["bytes accessed"]


# --- triton_dump_dir ---

def test_dump_dir_writes_each_kernel_and_a_manifest(tmp_path):
    dump = tmp_path / "dump"
    functrax.config.update("triton_dump_dir", str(dump))
    x, y = normal(3, 4), normal(5)
    f = functrax.jit(two_parts, backend="triton")
    out = f(x, y)
    np.testing.assert_allclose(out[1], np.exp(y) * 2.0, rtol=1e-6)
    prog = program_of(f.lower(x, y).compile())
    assert len(prog.kernels) == 2
    files = sorted(p for p in os.listdir(dump) if p.endswith(".py"))
    want = sorted(f"{k.source.name}_{k.source.key[:16]}.py" for k in prog.kernels)
    assert files == want
    manifest = json.loads((dump / inspection.MANIFEST).read_text())["kernels"]
    assert len(manifest) == 2
    by_file = {e["file"]: e for e in manifest.values()}
    for i, step in enumerate(prog.steps):
        src = step.kernel.source
        name = f"{src.name}_{src.key[:16]}.py"
        text = (dump / name).read_text()
        assert text == src.text
        compile(text, name, "exec")  # a valid Python module
        e = by_file[name]
        assert e["name"] == src.name and e["key"] == src.key and e["group_index"] == i
        assert e["kind"] == step.group.kind.value and e["grid"] == list(src.grid)
        assert len(e["equations"]) == len(step.group.eqns)
        assert [ln.split(" = ")[1].split("[")[0].split(" ")[0] for ln in e["equations"]] == \
            [q.primitive.name for q in step.group.eqns]
        assert [s.split(":")[1] for s in e["inputs"]] == \
            [v.aval.str_short() for v in step.group.inputs]


def test_dump_dir_none_disables_and_cached_kernels_are_dumped_too(tmp_path):
    x, y = normal(3, 4), normal(5)
    functrax.jit(two_parts, backend="triton")(x, y)  # built with the flag off
    dump = tmp_path / "dump"
    assert not dump.exists()
    functrax.config.update("triton_dump_dir", dump)  # os.PathLike is accepted
    functrax.jit(two_parts, backend="triton")(x, y)  # kernels from the in-memory cache
    assert len([p for p in os.listdir(dump) if p.endswith(".py")]) == 2
    functrax.config.update("triton_dump_dir", None)
    functrax.jit(two_parts, backend="triton")(normal(2, 6), y)  # a new kernel, not dumped
    assert len([p for p in os.listdir(dump) if p.endswith(".py")]) == 2


def test_dump_dir_accumulates_kernels_of_several_programs(tmp_path):
    dump = tmp_path / "dump"
    functrax.config.update("triton_dump_dir", str(dump))
    functrax.jit(ew_chain, backend="triton")(normal(3, 4), normal(4))
    functrax.jit(softmax_rows, backend="triton")(normal(2, 8))
    functrax.jit(softmax_rows, backend="triton")(normal(2, 8))  # same kernel: one entry
    manifest = json.loads((dump / inspection.MANIFEST).read_text())["kernels"]
    assert sorted(e["kind"] for e in manifest.values()) == ["elementwise", "reduction"]
    assert len([p for p in os.listdir(dump) if p.endswith(".py")]) == 2


def test_dump_dir_rejects_non_paths():
    with pytest.raises(TypeError, match="triton_dump_dir must be a directory path"):
        functrax.config.update("triton_dump_dir", 3)
    assert functrax.config.triton_dump_dir is None


# --- the kernel cache, seen from jit ---

def _counts(cache):
    return (tbackend.STATS["programs"], tbackend.STATS["kernels"], dict(cache.stats),
            tcompile.stats["compiles"])


def test_same_avals_compile_generate_and_import_nothing(fresh_cache, generations):
    f = functrax.jit(two_parts, backend="triton")
    x, y = normal(3, 4), normal(5)
    f(x, y)
    assert fresh_cache.stats == {"writes": 2, "imports": 2, "hits": 0}
    assert generations["n"] == 2
    before = _counts(fresh_cache)
    for _ in range(3):
        out = f(fnp.asarray(normal(3, 4)), normal(5))  # new values, same avals
    assert _counts(fresh_cache) == before and generations["n"] == 2
    np.testing.assert_allclose(out[0].sum(axis=-1), np.ones(3), rtol=1e-5)


def test_new_shape_of_one_kernel_builds_only_that_kernel(fresh_cache):
    f = functrax.jit(two_parts, backend="triton")
    x, y = normal(3, 4), normal(5)
    f(x, y)
    old = {s.kernel.source.name: s.kernel for s in program_of(f.lower(x, y).compile()).steps}
    files = set(os.listdir(fresh_cache.directory))
    programs = tbackend.STATS["programs"]

    y2 = normal(7)  # only the exp kernel's shape changes
    out = f(x, y2)
    np.testing.assert_allclose(out[1], np.exp(y2) * 2.0, rtol=1e-6)
    assert tbackend.STATS["programs"] == programs + 1
    assert fresh_cache.stats == {"writes": 3, "imports": 3, "hits": 1}
    new_files = set(os.listdir(fresh_cache.directory)) - files
    assert len(new_files) == 1
    steps = program_of(f.lower(x, y2).compile()).steps
    soft = next(s.kernel for s in steps if s.group.kind is GroupKind.REDUCTION)
    ew = next(s.kernel for s in steps if s.group.kind is GroupKind.ELEMENTWISE)
    assert soft.fn is old[soft.source.name].fn  # the very same imported kernel
    assert f"k_{ew.source.key}.py" in new_files

    f(x, y)  # back to the first shapes: the jit cache, nothing at all
    assert tbackend.STATS["programs"] == programs + 1 and fresh_cache.stats["imports"] == 3


def test_fresh_jit_function_reuses_the_cached_kernels(fresh_cache):
    x, y = normal(3, 4), normal(5)
    functrax.jit(two_parts, backend="triton")(x, y)
    mtimes = {p: os.stat(os.path.join(fresh_cache.directory, p)).st_mtime_ns
              for p in os.listdir(fresh_cache.directory)}
    # another function (jit(two_parts) again would share the first one's trace, as in JAX):
    g = functrax.jit(lambda x, y: two_parts(x, y), backend="triton")  # a new program ...
    out = g(x, y)
    # ... whose kernels come from the in-memory cache: nothing written or imported
    assert fresh_cache.stats == {"writes": 2, "imports": 2, "hits": 2}
    np.testing.assert_allclose(out[1], np.exp(y) * 2.0, rtol=1e-6)
    assert {p: os.stat(os.path.join(fresh_cache.directory, p)).st_mtime_ns
            for p in os.listdir(fresh_cache.directory)} == mtimes


def test_a_new_process_reuses_the_files_on_disk(fresh_cache, monkeypatch):
    x, y = normal(3, 4), normal(5)
    functrax.jit(two_parts, backend="triton")(x, y)
    files = sorted(os.listdir(fresh_cache.directory))
    # a second cache on the same directory stands for a new process in this one ...
    second = tcache.KernelCache(fresh_cache.directory)
    monkeypatch.setattr(tcache, "_DEFAULT", second)
    functrax.clear_caches()  # ... which has traced nothing yet
    out = functrax.jit(two_parts, backend="triton")(x, y)
    assert second.stats == {"writes": 0, "imports": 2, "hits": 0}  # import, never rewrite
    assert sorted(os.listdir(fresh_cache.directory)) == files
    np.testing.assert_allclose(out[1], np.exp(y) * 2.0, rtol=1e-6)


def test_a_real_second_process_writes_nothing(tmp_path):
    root = tmp_path / "root"
    script = textwrap.dedent("""
        import os, sys
        os.environ["TRITON_INTERPRET"] = "1"
        import numpy as np
        import functrax, functrax.numpy as fnp
        from functrax import nn
        from functrax.lowering.triton import cache
        f = functrax.jit(lambda x: nn.softmax(fnp.exp(x) * 2.0, axis=-1), backend="triton")
        out = f(np.ones((2, 8), np.float32))
        assert abs(float(np.asarray(out).sum()) - 2.0) < 1e-5
        s = cache.default_cache().stats
        print(s["writes"], s["imports"])
    """)
    env = dict(os.environ, FUNCTRAX_CACHE_DIR=str(root), TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
         env.get("PYTHONPATH", "")])
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=120) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    assert runs[0].stdout.split() == ["1", "1"]  # the first process writes its kernel
    assert runs[1].stdout.split() == ["0", "1"]  # the second only imports it
    assert len(os.listdir(root / "triton")) == 1
