"""functrax (C backend, numpy backend) against JAX on CPU, the workloads of issue 16.

Run with ``python benchmarks/vs_jax.py [--jax-python PATH] [--number N] [--repeat R]
[--only NAME,...] [--modes 1thread,allcores]``.

JAX is never a dependency: give the Python of a separate environment where it is installed
(``python -m venv /opt/jaxbench && /opt/jaxbench/bin/pip install jax``) with
``--jax-python`` or ``$FUNCTRAX_BENCH_JAX_PYTHON`` (``/opt/jaxbench/bin/python`` is tried
too); without one the JAX column is left out. Each implementation runs in a child process of
its own (a fresh process per timing mode), on the same data (numpy's generator, fixed
seeds): ``ft-c`` (``jit(f, backend="c")``), ``ft-np`` (``jit(f)``, the numpy backend) and
``jax`` (``jax.jit(f)``). The workloads are written once, against a namespace that is either
``functrax`` or ``jax`` (functrax has JAX's API):

- ``gelu``: fused ``gelu(x) * y + z`` on 4M float32;
- ``softmax``: softmax over 4096x1024 rows; ``layernorm``: layernorm rows with scale and bias;
- ``mlp_step``: a 784-512-512-10 MLP, batch 128, ``value_and_grad`` of softmax
  cross-entropy and an SGD update;
- ``per_example``: ``vmap(grad)`` per-example gradients of a 256-256-10 MLP, batch 64;
- ``rnn``: ``value_and_grad`` of a scan (Elman, tanh) RNN, 100 steps, hidden 128, batch 32;
- ``hvp``: a Hessian-vector product (forward over reverse) of the MLP loss;
- ``compile_cold`` / ``compile_cached``: tracing and compiling the MLP step (and running it
  once) with an empty disk cache / from the disk cache (functrax's C program cache; JAX's
  persistent compilation cache), in fresh processes: the best of ``--repeat`` processes;
- ``pmap_step``: a data-parallel MLP step over 4 CPU devices (``pmap`` with ``pmean`` of
  the gradients; ``FUNCTRAX_NUM_CPU_DEVICES`` / XLA's host device count).

Two modes: ``1thread``, the process pinned to one core with every thread pool at one thread
(OpenMP, BLAS, XLA's intra-op pool), timed in process CPU time; ``allcores``, default
thread counts, wall time. Outputs are compared across implementations (relative max
difference); the table prints milliseconds per call and the ratios functrax / JAX and
functrax C / functrax numpy. A report, never a test.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

WORKLOADS = ("gelu", "softmax", "layernorm", "mlp_step", "per_example", "rnn", "hvp",
             "compile_cold", "compile_cached", "pmap_step")
IMPLS = ("ft-c", "ft-np", "jax")


# --- the workloads, written once against a JAX-like namespace ---


def _mlp_init(rng, sizes, np):
    return [(rng.normal(size=(m, n)).astype(np.float32) * np.float32(1 / np.sqrt(m)),
             np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]


def _mlp_loss(ns, params, x, y):
    jnp = ns.numpy
    h = x
    for w, b in params[:-1]:
        h = ns.nn.relu(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    return -jnp.mean(jnp.sum(ns.nn.log_softmax(logits) * y, axis=-1))


def _batch(rng, n, d, k, np):
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = np.eye(k, dtype=np.float32)[rng.integers(0, k, n)]
    return x, y


def build(name, ns, jit, np, pmap=None):
    """``(fn, args)`` of workload ``name``: ``fn(*args)`` is what is timed."""
    jnp, lax = ns.numpy, ns.lax
    rng = np.random.default_rng(0)
    if name == "gelu":
        args = [rng.normal(size=4 * 1024 * 1024).astype(np.float32) for _ in range(3)]
        return jit(lambda x, y, z: ns.nn.gelu(x) * y + z), args
    if name == "softmax":
        return (jit(lambda x: ns.nn.softmax(x, axis=-1)),
                [rng.normal(size=(4096, 1024)).astype(np.float32)])
    if name == "layernorm":
        def layernorm(x, g, b):
            m = x.mean(-1, keepdims=True)
            v = ((x - m) ** 2).mean(-1, keepdims=True)
            return (x - m) / jnp.sqrt(v + 1e-5) * g + b
        return jit(layernorm), [rng.normal(size=(4096, 1024)).astype(np.float32),
                                rng.normal(size=1024).astype(np.float32),
                                rng.normal(size=1024).astype(np.float32)]
    if name in ("mlp_step", "compile_cold", "compile_cached"):
        params = _mlp_init(rng, (784, 512, 512, 10), np)
        x, y = _batch(rng, 128, 784, 10, np)

        def step(params, x, y):
            loss, g = ns.value_and_grad(lambda p: _mlp_loss(ns, p, x, y))(params)
            return loss, ns.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)
        return jit(step), [params, x, y]
    if name == "per_example":
        params = _mlp_init(rng, (256, 256, 10), np)
        x, y = _batch(rng, 64, 256, 10, np)
        per = ns.vmap(ns.grad(lambda p, x, y: _mlp_loss(ns, p, x[None], y[None])),
                      in_axes=(None, 0, 0))
        return jit(per), [params, x, y]
    if name == "rnn":
        t, h, b, d = 100, 128, 32, 16
        params = (rng.normal(size=(d, h)).astype(np.float32) * np.float32(0.3),
                  rng.normal(size=(h, h)).astype(np.float32) * np.float32(1 / np.sqrt(h)),
                  np.zeros(h, np.float32), rng.normal(size=(h,)).astype(np.float32))
        xs = rng.normal(size=(t, b, d)).astype(np.float32)
        target = rng.normal(size=(t, b)).astype(np.float32)

        def loss(params, xs, target):
            u, w, bias, v = params

            def cell(hs, x):
                hs = jnp.tanh(x @ u + hs @ w + bias)
                return hs, hs @ v
            _, ys = lax.scan(cell, jnp.zeros((b, h), jnp.float32), xs)
            return jnp.mean((ys - target) ** 2)
        return jit(ns.value_and_grad(loss)), [params, xs, target]
    if name == "hvp":
        params = _mlp_init(rng, (784, 512, 512, 10), np)
        x, y = _batch(rng, 128, 784, 10, np)
        vec = ns.tree_util.tree_map(lambda p: np.ones_like(p), params)

        def hvp(params, vec, x, y):
            g = lambda p: ns.grad(lambda q: _mlp_loss(ns, q, x, y))(p)  # noqa: E731
            return ns.jvp(g, (params,), (vec,))[1]
        return jit(hvp), [params, vec, x, y]
    if name == "pmap_step":
        n = 4
        params = _mlp_init(rng, (784, 512, 10), np)
        x, y = _batch(rng, 128 * n, 784, 10, np)
        x, y = x.reshape(n, 128, 784), y.reshape(n, 128, 10)

        def step(params, x, y):
            loss, g = ns.value_and_grad(lambda p: _mlp_loss(ns, p, x, y))(params)
            g = lax.pmean(g, "d")
            return lax.pmean(loss, "d"), ns.tree_util.tree_map(lambda p, d: p - 0.1 * d,
                                                                params, g)
        return (pmap or ns.pmap)(step, axis_name="d", in_axes=(None, 0, 0)), [params, x, y]
    raise ValueError(name)


# --- one implementation, one mode, in this process ---


def _pin_one_thread():
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


def _namespace(impl):
    if impl == "jax":
        import jax
        import jax.numpy  # noqa: F401
        import jax.nn  # noqa: F401
        jax.config.update("jax_platforms", "cpu")
        return jax, jax.jit, jax.pmap
    import functools
    import functrax
    backend = "c" if impl == "ft-c" else "numpy"
    return (functrax, functools.partial(functrax.jit, backend=backend),
            functools.partial(functrax.pmap, backend=backend))


def _block(out, ns):
    leaves = ns.tree_util.tree_leaves(out)
    for leaf in leaves:
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return leaves


def worker(impl, mode, names, number, repeat, out_dir):
    import time
    import numpy as np
    if mode == "1thread" and impl.startswith("ft"):
        import functrax
        functrax.config.update("c_num_threads", 1)
    ns, jit, pmap = _namespace(impl)
    clock = time.process_time if mode == "1thread" else time.perf_counter
    report = {}
    for name in names:
        if name == "compile_cold" or name == "compile_cached":
            continue  # measured by the parent in fresh processes
        fn, args = build(name, ns, jit, np, pmap)
        outs = _block(fn(*args), ns)  # compile and warm up
        np.savez(os.path.join(out_dir, f"{impl}_{name}.npz"),
                 *[np.asarray(o, np.float64) for o in outs])
        best = float("inf")
        for _ in range(repeat):
            t0 = clock()
            for _ in range(number):
                _block(fn(*args), ns)
            best = min(best, (clock() - t0) / number * 1e3)
        report[name] = best
    print(json.dumps(report))


def compile_worker(impl):
    """Seconds to trace and compile the MLP step (then run it once), in this process."""
    import time
    import numpy as np
    ns, jit, _ = _namespace(impl)
    fn, args = build("mlp_step", ns, jit, np)
    t0 = time.perf_counter()
    _block(fn(*args), ns)
    print(json.dumps({"s": time.perf_counter() - t0}))


# --- the parent: run every implementation and mode, print the table ---


def _env(impl, mode, cache_dir):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(var, None)
        if mode == "1thread":
            env[var] = "1"
    flags = env.get("XLA_FLAGS", "")
    if mode == "1thread":
        flags += " --xla_cpu_multi_thread_eigen=false"
    env["XLA_FLAGS"] = (flags + " --xla_force_host_platform_device_count=4").strip()
    env["FUNCTRAX_NUM_CPU_DEVICES"] = "4"
    env["FUNCTRAX_CACHE_DIR"] = os.path.join(cache_dir, "functrax")
    env["JAX_COMPILATION_CACHE_DIR"] = os.path.join(cache_dir, "jax")
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    return env


def _python(impl, jax_python):
    return jax_python if impl == "jax" else sys.executable


def _run(cmd, env, pin):
    pre = ["taskset", "-c", "0"] if pin and _has_taskset() else []
    out = subprocess.run(pre + cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _has_taskset():
    from shutil import which
    return which("taskset") is not None


def _compare(out_dir, impls, name):
    import numpy as np
    base = os.path.join(out_dir, f"{impls[0]}_{name}.npz")
    if not os.path.exists(base):
        return ""
    ref = [v for _, v in sorted(np.load(base).items(), key=lambda kv: int(kv[0][4:]))]
    worst = 0.0
    for impl in impls[1:]:
        p = os.path.join(out_dir, f"{impl}_{name}.npz")
        if not os.path.exists(p):
            continue
        got = [v for _, v in sorted(np.load(p).items(), key=lambda kv: int(kv[0][4:]))]
        for a, b in zip(ref, got):
            scale = max(float(np.max(np.abs(a))), 1e-30)
            worst = max(worst, float(np.max(np.abs(a - b))) / scale)
    return f"{worst:.1e}"


def _compile_time(kind, impl, mode, tmp, cmd, repeat) -> float:
    """Best of ``repeat`` fresh processes: each with an empty cache (cold), or each reading
    the cache a first process filled (cached)."""
    best = float("inf")
    if kind == "compile_cached":
        env = _env(impl, mode, os.path.join(tmp, f"warm_{impl}"))
        _run(cmd, env, pin=False)
    for r in range(repeat):
        if kind == "compile_cold":
            env = _env(impl, mode, os.path.join(tmp, f"cold_{impl}_{r}"))
        best = min(best, _run(cmd, env, pin=False)["s"])
    return best


def _measure(a, names, impls, jax_python, script, rows):
    """Run the workers of every mode and implementation; appends the table rows."""
    with tempfile.TemporaryDirectory() as tmp:
        for mode in a.modes.split(","):
            out_dir = os.path.join(tmp, mode)
            os.makedirs(out_dir)
            times = {}
            for impl in impls:
                cache = os.path.join(tmp, f"cache_{impl}_{mode}")
                env = _env(impl, mode, cache)
                cmd = [_python(impl, jax_python), script, "--worker", impl, mode,
                       "--only", ",".join(names), "--number", str(a.number),
                       "--repeat", str(a.repeat), "--out-dir", out_dir]
                times[impl] = _run(cmd, env, pin=mode == "1thread")
                for kind in ("compile_cold", "compile_cached"):
                    if kind in names and mode == "allcores":
                        times[impl][kind] = 1e3 * _compile_time(
                            kind, impl, mode, tmp, [_python(impl, jax_python), script,
                                                    "--compile-worker", impl], a.repeat)
            for name in names:
                if not any(name in times[i] for i in impls):
                    continue
                row = [name, mode] + [times[i].get(name) for i in impls]
                rows.append((row, _compare(out_dir, impls, name)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jax-python", default=os.environ.get("FUNCTRAX_BENCH_JAX_PYTHON"))
    ap.add_argument("--number", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--modes", default="1thread,allcores")
    ap.add_argument("--worker", nargs=2, metavar=("IMPL", "MODE"))
    ap.add_argument("--compile-worker", metavar="IMPL")
    ap.add_argument("--out-dir")
    ap.add_argument("--load", type=int, default=0,
                    help="busy processes (pure-Python loops) running during the timings")
    a = ap.parse_args()
    names = [n for n in a.only.split(",") if n]
    if a.worker:
        if a.worker[1] == "1thread":
            _pin_one_thread()
        return worker(a.worker[0], a.worker[1], names, a.number, a.repeat, a.out_dir)
    if a.compile_worker:
        return compile_worker(a.compile_worker)
    jax_python = a.jax_python
    if jax_python is None and os.path.exists("/opt/jaxbench/bin/python"):
        jax_python = "/opt/jaxbench/bin/python"
    impls = [i for i in IMPLS if i != "jax" or jax_python]
    script = os.path.abspath(__file__)
    rows = []
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(a.load)]
    try:
        _measure(a, names, impls, jax_python, script, rows)
    finally:
        for h in hogs:
            h.kill()
    if a.load:
        print(f"with {a.load} busy process(es) running on the machine")
    head = ["workload", "mode"] + [f"{i} ms" for i in impls]
    if "jax" in impls:
        head += ["c/jax", "np/jax"]
    head += ["c/np", "max rel diff"]
    print(("{:<15}{:<10}" + "{:>11}" * (len(head) - 3) + "  {:>12}").format(*head))
    for row, diff in rows:
        t = dict(zip(impls, row[2:]))
        cells = [f"{v:.2f}" if v is not None else "-" for v in row[2:]]
        ratio = lambda p, q: f"{t[p] / t[q]:.2f}" if t.get(p) and t.get(q) else "-"  # noqa
        if "jax" in impls:
            cells += [ratio("ft-c", "jax"), ratio("ft-np", "jax")]
        cells += [ratio("ft-c", "ft-np")]
        print(("{:<15}{:<10}" + "{:>11}" * len(cells) + "  {:>12}").format(
            row[0], row[1], *cells, diff))


if __name__ == "__main__":
    main()
