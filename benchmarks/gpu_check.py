"""The GPU check: run once on a machine with a CUDA GPU (finishes in under 5 minutes).

    python benchmarks/gpu_check.py [--workers N] [--opspec-budget S] [--cases-per-spec K]
    python benchmarks/gpu_check.py --cpu-smoke      # on a machine without a GPU

With a GPU it

1. prints the device, its compute capability, and the triton / cuda-core versions;
2. runs the op-spec table (``tests/opspec``: the first ``K`` cases of every entry, in
   ``N`` worker processes, within ``S`` seconds) through ``jit(..., backend="triton")`` on
   GPU-resident inputs and compares with the numpy backend;
3. runs the composition programs (``tests/test_composition.py``) the same way;
4. times, each against a reference measured in the same run: a device copy (cuda-core
   memcpy, and cupy when installed) as the bandwidth reference (~4.3 TB/s on an H200), a
   fused elementwise chain, softmax and layernorm over rows (GB/s), matmul in float16 and
   float32 (TFLOP/s; cupy/cuBLAS when installed), the forward and backward pass of a small
   CNN (ms per step against the numpy backend, after a correctness check) and one 3x3
   convolution in float16 and float32 (TFLOP/s), and the MLP train step of
   ``examples/train_mlp.py`` (ms per step; the numpy backend on the CPU as reference);
5. runs pmap over the GPUs and a shard_map train step over a 2-D mesh of GPUs (skipped
   with fewer than 2 GPUs) against the CPU results, the latter in ms per step.

Every section is wrapped: a failure is reported and the rest still runs. A summary table
ends the output; the exit status is 1 when any correctness check failed or errored.
Without a GPU it says so and exits 0 (``--cpu-smoke`` first runs a tiny check through
Triton's interpreter; its failure exits 1).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

SUMMARY: list = []  # (section, status, detail)


def record(name, status, detail=""):
    SUMMARY.append((name, status, detail))
    print(f"[{status}] {name}: {detail}", flush=True)


def run_section(name, fn, *args):
    """Run one section; an exception is recorded as ERROR and the check goes on."""
    t0 = time.perf_counter()
    print(f"\n=== {name} ===", flush=True)
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - every section is isolated
        tail = "".join(traceback.format_exception(type(e), e, e.__traceback__))[-1500:]
        print(tail, flush=True)
        record(name, "ERROR", f"{type(e).__name__}: {str(e)[:200]}")
    print(f"({name}: {time.perf_counter() - t0:.1f} s)", flush=True)


# --- comparing results ---


def _leaves(x):
    from functrax.tree_util import tree_flatten
    return tree_flatten(x)[0]


def compare(got, want, atol, rtol) -> str | None:
    """None when the pytrees match, else what differs."""
    g_l, w_l = _leaves(got), _leaves(want)
    if len(g_l) != len(w_l):
        return f"{len(g_l)} outputs, reference has {len(w_l)}"
    for i, (g, w) in enumerate(zip(g_l, w_l)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {i}: {g.dtype}{list(g.shape)} vs reference {w.dtype}{list(w.shape)}"
        if g.dtype.kind in "biu":
            if not np.array_equal(g, w):
                return f"output {i}: {int(np.sum(g != w))} of {g.size} elements differ"
        else:
            wide = np.complex128 if "c" in (g.dtype.kind, w.dtype.kind) else np.float64
            g64, w64 = g.astype(wide), w.astype(wide)
            ok = np.isclose(g64, w64, atol=atol, rtol=rtol, equal_nan=True)
            if not ok.all():
                j = np.argmax(~ok.ravel())
                return (f"output {i}: {int((~ok).sum())} of {g.size} elements differ, e.g. "
                        f"{g64.ravel()[j]!r} vs {w64.ravel()[j]!r}")
    return None


def tolerances(spec_atol, spec_rtol, dtypes_, has_dot):
    if has_dot:  # float32 dots use TensorFloat-32 on the GPU (as JAX's default precision)
        return 3e-2, 3e-2
    if any(np.dtype(d).itemsize == 2 and np.dtype(d).kind in "fV" for d in dtypes_):
        return max(spec_atol, 1e-2), max(spec_rtol, 1e-2)
    return max(spec_atol, 1e-5), max(spec_rtol, 1e-5)


def check_on_gpu(name, f, args, atol=1e-5, rtol=1e-5, device=None):
    """``(status, detail)``: ``f`` under ``jit(backend="triton")`` on GPU inputs vs the numpy
    backend's ``jit(f)`` on host inputs."""
    import functrax
    try:
        want = functrax.jit(f)(*args)
    except Exception as e:  # noqa: BLE001 - not a jit case: not this check's business
        return "SKIP", f"numpy backend: {type(e).__name__}: {str(e)[:100]}"
    dev = device or functrax.devices("gpu")[0]
    gargs = functrax.device_put(args, dev)
    try:
        got = functrax.jit(f, backend="triton")(*gargs)
        _leaves(got) and _leaves(got)[0].block_until_ready()
    except Exception as e:  # noqa: BLE001
        return "FAIL", f"triton: {type(e).__name__}: {str(e)[:300]}"
    dts = [np.asarray(x).dtype for x in _leaves(want)]
    diff = compare(got, want, *tolerances(atol, rtol, dts, False))
    if diff is not None:
        jaxpr = str(functrax.make_jaxpr(f)(*args))
        if "dot_general" in jaxpr or "conv" in jaxpr:
            diff = compare(got, want, *tolerances(atol, rtol, dts, True))
    return ("FAIL", diff) if diff else ("OK", "")


# --- op-spec table ---


def _opspec_cases(per_spec):
    from tests.opspec import all_specs
    out = []
    for s in all_specs():
        for k, (shapes, dts, kw) in enumerate(s.cases()):
            if k >= per_spec:
                break
            out.append((s, shapes, dts, kw))
    return out


def _opspec_worker(indices, per_spec, deadline):
    """Run op-spec cases ``indices`` (a worker process); returns ``(label, status, detail)``."""
    os.environ.setdefault("FUNCTRAX_AUTOTUNE", "0")
    cases = _opspec_cases(per_spec)
    out = []
    for i in indices:
        s, shapes, dts, kw = cases[i]
        label = f"{s.name}{list(shapes)}"
        if time.time() > deadline:
            out.append((label, "NOT RUN", "time budget"))
            continue
        try:
            args = s.make_args(np.random.RandomState(0), shapes, dts)
            status, detail = check_on_gpu(label, lambda *xs, s=s, kw=kw: s.fn(*xs, **kw),
                                          tuple(args), s.atol, s.rtol)
        except Exception as e:  # noqa: BLE001
            status, detail = "FAIL", f"{type(e).__name__}: {str(e)[:300]}"
        out.append((label, status, detail))
    return out


def section_opspec(opts):
    n = len(_opspec_cases(opts.cases_per_spec))
    deadline = time.time() + opts.opspec_budget
    chunks = [list(range(i, n, opts.workers)) for i in range(opts.workers)]
    results = []
    if opts.workers > 1:
        import concurrent.futures
        import multiprocessing
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(opts.workers, mp_context=ctx) as pool:
            futs = [pool.submit(_opspec_worker, c, opts.cases_per_spec, deadline)
                    for c in chunks]
            for f in futs:
                results += f.result()
    else:
        results = _opspec_worker(list(range(n)), opts.cases_per_spec, deadline)
    _report_cases("opspec", results)


def _report_cases(name, results):
    counts = {}
    for label, status, detail in results:
        counts[status] = counts.get(status, 0) + 1
        if status == "FAIL":
            print(f"  FAIL {label}: {detail}", flush=True)
    skips = [r for r in results if r[1] == "SKIP"][:5]
    for label, _, detail in skips:
        print(f"  skip {label}: {detail}")
    detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    record(name, "FAIL" if counts.get("FAIL") else "OK", f"{len(results)} cases: {detail}")


def section_composition(opts):
    import tests.test_composition as tc
    results = []
    for name, f, builder in tc.ALL_PROGRAMS:
        args = tc.args_for(builder)
        status, detail = check_on_gpu(name, f, tuple(args), 2e-5, 2e-5)
        results.append((name, status, detail))
    _report_cases("composition", results)


# --- timing ---


def _sync():
    from functrax.runtime.gpu_buffer import context
    context(0).sync()


def best_ms(fn, reps=20, warmup=3, rounds=3):
    """Best over ``rounds`` of the mean ms per call of ``fn`` (stream-synchronized)."""
    for _ in range(warmup):
        fn()
    _sync()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        _sync()
        best = min(best, (time.perf_counter() - t0) / reps * 1e3)
    return best


def _cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # noqa: BLE001 - cupy is only a reference
        return None


COPY_GBS = {}


def section_copy(opts):
    from functrax.runtime.gpu_buffer import GpuBuffer
    nbytes = 1 << 30
    buf = GpuBuffer((nbytes // 4,), np.float32)
    ms = best_ms(buf.copy, reps=10)
    gbs = 2 * nbytes / ms / 1e6
    COPY_GBS["cuda-core"] = gbs
    line = f"device copy of 1 GiB (cuMemcpyDtoD): {ms:.3f} ms, {gbs:.0f} GB/s " \
           f"({gbs / 4300:.2f} of 4.3 TB/s)"
    cp = _cupy()
    if cp is not None:
        a = cp.empty(nbytes // 4, cp.float32)
        b = cp.empty_like(a)
        t = best_ms(lambda: b.__setitem__(slice(None), a), reps=10)
        COPY_GBS["cupy"] = 2 * nbytes / t / 1e6
        line += f"; cupy copy {COPY_GBS['cupy']:.0f} GB/s"
    record("bench copy", "INFO", line)


def _bandwidth_line(name, ms, nbytes):
    gbs = nbytes / ms / 1e6
    ref = max(COPY_GBS.values()) if COPY_GBS else 4300.0
    return f"{name}: {ms:.3f} ms, {gbs:.0f} GB/s = {gbs / ref:.2f} x measured copy bandwidth"


def _jit_gpu(f, *host_args):
    import functrax
    dev = functrax.devices("gpu")[0]
    g = functrax.device_put(host_args, dev)
    jf = functrax.jit(f, backend="triton")
    prog = jf.lower(*g).compile()._entry.exe
    return jf, g, prog


def _time_program(jf, g):
    return best_ms(lambda: jf(*g), reps=20)


def _kernel_only_ms(prog, g):
    """Time the program's single kernel alone (no jit call overhead), when it has one."""
    if len(prog.kernels) != 1 or prog.fallbacks:
        return None
    from functrax.core import Literal
    from functrax.runtime.gpu_buffer import GpuBuffer
    from functrax.lowering.triton import runtime
    p = prog.program
    step = next(s for s in p.steps if s.kernel is not None)
    env = dict(zip(p._constvars, p._consts))
    env.update(zip(p._invars, [x.gpu_buffer for x in g]))
    vals = [np.asarray(v.val, v.aval.dtype) if type(v) is Literal else env[v]
            for v in step.group.inputs]
    ins = [runtime.to_device(v, 0) for v in vals]
    k = step.kernel
    if len(ins) != len(k.source.in_avals):  # a hand-written kernel with its own arguments
        return None
    k(*ins)  # autotunes / compiles
    chosen = getattr(k, "chosen", None) or k
    outs = [GpuBuffer(a.shape, a.dtype) for a in chosen.source.out_avals]
    return best_ms(lambda: runtime.launch(chosen, ins, outs), reps=50)


def section_elementwise(opts):
    import functrax.numpy as fnp
    x = np.random.RandomState(0).standard_normal((16384, 16384)).astype(np.float32)
    y = np.random.RandomState(1).standard_normal((16384,)).astype(np.float32)
    jf, g, prog = _jit_gpu(lambda x, y: fnp.exp(fnp.sin(x) * 2.0) + y, x, y)
    nbytes = 2 * x.nbytes + y.nbytes
    record("bench elementwise", "INFO",
           _bandwidth_line("exp(sin(x)*2)+y, 16384^2 f32, jit call", _time_program(jf, g),
                           nbytes) + f" [{len(prog.kernels)} kernel(s)]")
    k = _kernel_only_ms(prog, g)
    if k:
        record("bench elementwise kernel", "INFO", _bandwidth_line("kernel only", k, nbytes))


def _rows_bench(name, f, cols=4096, rows=16384):
    x = np.random.RandomState(0).standard_normal((rows, cols)).astype(np.float32)
    jf, g, prog = _jit_gpu(f, x)
    nbytes = 2 * x.nbytes
    extra = f" [{len(prog.kernels)} kernel(s), {len(prog.fallbacks)} fallback(s)]"
    record(f"bench {name}", "INFO", _bandwidth_line(f"{name} {rows}x{cols} f32, jit call",
                                                    _time_program(jf, g), nbytes) + extra)
    k = _kernel_only_ms(prog, g)
    if k:
        record(f"bench {name} kernel", "INFO", _bandwidth_line("kernel only", k, nbytes))


def section_softmax(opts):
    from functrax import nn
    _rows_bench("softmax", lambda x: nn.softmax(x, axis=-1))


def section_layernorm(opts):
    import functrax.numpy as fnp

    def layernorm(x):
        mu = fnp.mean(x, axis=-1, keepdims=True)
        var = fnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / fnp.sqrt(var + 1e-5)
    _rows_bench("layernorm", layernorm)


def section_matmul(opts):
    n = 8192
    cp = _cupy()
    for dtype in (np.float16, np.float32):
        rng = np.random.RandomState(0)
        a = rng.standard_normal((n, n)).astype(dtype)
        b = rng.standard_normal((n, n)).astype(dtype)
        jf, g, prog = _jit_gpu(lambda a, b: a @ b, a, b)
        ms = _time_program(jf, g)
        tflops = 2 * n ** 3 / ms / 1e9
        line = f"{np.dtype(dtype).name} {n}^3: {ms:.2f} ms, {tflops:.0f} TFLOP/s"
        if cp is not None:
            ca, cb = cp.asarray(a), cp.asarray(b)
            t = best_ms(lambda: ca @ cb, reps=5)
            line += f"; cupy/cuBLAS {2 * n ** 3 / t / 1e9:.0f} TFLOP/s (ratio {t / ms:.2f})"
        # correctness on a corner of the product (float64 reference)
        got = np.asarray(jf(*g))[:64, :64].astype(np.float64)
        want = a[:64].astype(np.float64) @ b[:, :64].astype(np.float64)
        err = np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-30)
        status = "OK" if err < 2e-2 else "FAIL"
        record(f"bench matmul {np.dtype(dtype).name}", status,
               line + f" [{len(prog.kernels)} kernel(s)], max rel err {err:.1e}")


DN_NHWC = ("NHWC", "HWIO", "NHWC")


def _cnn_loss(params, x):
    """A small CNN (NHWC): conv + bias + relu, a strided grouped conv + bias + gelu, a conv,
    the mean square."""
    from functrax import lax, nn
    import functrax.numpy as fnp
    w1, b1, w2, b2, w3 = params
    y = nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=DN_NHWC)
                + b1)
    y = nn.gelu(lax.conv_general_dilated(y, w2, (2, 2), "SAME", dimension_numbers=DN_NHWC,
                                         feature_group_count=2) + b2)
    z = lax.conv_general_dilated(y, w3, (1, 1), "SAME", dimension_numbers=DN_NHWC)
    return fnp.mean(z ** 2)


def _cnn_args(batch=32, size=32):
    rng = np.random.RandomState(0)
    shapes = [(3, 3, 3, 32), (32,), (3, 3, 16, 64), (64,), (3, 3, 64, 64)]
    params = [(rng.standard_normal(s) * (2.0 / np.prod(s[:-1])) ** 0.5).astype(np.float32)
              for s in shapes]
    return params, rng.standard_normal((batch, size, size, 3)).astype(np.float32)


def section_conv(opts):
    """conv fwd+bwd of a small CNN on the Triton backend (implicit-GEMM kernels) vs the
    numpy backend: correctness, then ms per step; then one 3x3 conv in TFLOP/s."""
    import functrax
    from functrax import lax
    params, x = _cnn_args()
    step = functrax.value_and_grad(_cnn_loss)
    host = (params, x)
    dev = functrax.devices("gpu")[0]
    g = functrax.device_put(host, dev)
    jf = functrax.jit(step, backend="triton")
    prog = jf.lower(*g).compile()._entry.exe
    got, want = jf(*g), functrax.jit(step)(*host)
    diff = compare(got, want, 3e-2, 3e-2)  # float32 convolutions use tf32 on the GPU
    ms_gpu = best_ms(lambda: jf(*g), reps=10)
    t0 = time.perf_counter()
    for _ in range(3):
        functrax.jit(step)(*host)
    ms_cpu = (time.perf_counter() - t0) / 3 * 1e3
    n_conv = sum(g_.kind.value == "conv" for g_ in prog.plan.groups)
    record("bench conv cnn fwd+bwd", "FAIL" if diff else "OK",
           (diff + "; " if diff else "") +
           f"batch {x.shape[0]} of {x.shape[1]}x{x.shape[2]}x3, 3 convs: {ms_gpu:.2f} ms/step "
           f"on the GPU vs {ms_cpu:.1f} ms/step numpy backend (x{ms_cpu / ms_gpu:.1f}); "
           f"{len(prog.kernels)} kernels ({n_conv} conv), {len(prog.fallbacks)} fallbacks")
    rng = np.random.RandomState(1)
    for dtype in (np.float16, np.float32):
        xs = rng.standard_normal((32, 56, 56, 64)).astype(dtype)
        ws = (rng.standard_normal((3, 3, 64, 64)) * 0.05).astype(dtype)
        f = lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME",  # noqa: E731
                                                  dimension_numbers=DN_NHWC)
        jc, gc, pc = _jit_gpu(f, xs, ws)
        ms = _time_program(jc, gc)
        flops = 2 * xs.size * 64 * 9
        want = np.asarray(functrax.jit(f)(xs[:2], ws)).astype(np.float64)
        got = np.asarray(jc(*gc))[:2].astype(np.float64)
        err = np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-30)
        record(f"bench conv 3x3 {np.dtype(dtype).name}", "OK" if err < 2e-2 else "FAIL",
               f"NHWC 32x56x56x64 * 3x3x64x64 SAME: {ms:.3f} ms, "
               f"{flops / ms / 1e9:.1f} TFLOP/s [{len(pc.kernels)} kernel(s)], "
               f"max rel err {err:.1e}")


def section_mlp(opts):
    import functrax
    from functrax import optim, random
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import train_mlp as tm
    sizes = (2, 1024, 1024, tm.SIZES[-1])
    params = tm.init_params(random.PRNGKey(0), sizes)
    optimizer = optim.adam(1e-3)
    opt_state = optimizer.init(params)
    batch = 4096
    rng = np.random.RandomState(0)
    x = rng.standard_normal((batch, 2)).astype(np.float32)
    labels = rng.randint(0, tm.SIZES[-1], batch).astype(np.int32)
    idx = np.arange(batch, dtype=np.int32)
    step = tm.make_train_step(optimizer)  # a plain jit: GPU-resident inputs pick triton
    host = (params, opt_state, x, labels, idx)
    dev = functrax.devices("gpu")[0]
    g = functrax.device_put(host, dev)
    _, _, loss_gpu = step(*g)
    _, _, loss_cpu = step(*host)
    diff = abs(float(loss_gpu) - float(loss_cpu))
    ms_gpu = best_ms(lambda: step(*g), reps=10)
    t0 = time.perf_counter()
    for _ in range(3):
        step(*host)
    ms_cpu = (time.perf_counter() - t0) / 3 * 1e3
    prog = functrax.jit(step.fun, backend="triton").lower(*g).compile()._entry.exe
    status = "OK" if diff <= 1e-2 * max(1.0, abs(float(loss_cpu))) else "FAIL"
    record("bench mlp train step", status,
           f"2-1024-1024-3 adam, batch {batch}: {ms_gpu:.2f} ms/step on the GPU vs "
           f"{ms_cpu:.2f} ms/step numpy backend (x{ms_cpu / ms_gpu:.1f}); "
           f"{len(prog.kernels)} kernels, {len(prog.fallbacks)} fallbacks; "
           f"|loss diff| {diff:.1e}")


def section_info(opts):
    import triton

    from functrax.runtime import cuda, gpu_buffer
    ctx = gpu_buffer.context(0)
    core = cuda.cuda_core()
    record("device", "INFO", f"{ctx.name}, sm_{ctx.compute_capability}, triton "
           f"{triton.__version__}, cuda-core {getattr(core, '__version__', '?')} "
           f"({core.__name__}), cupy {'yes' if _cupy() else 'no'}")


# --- pmap on the GPU(s) ---


def section_pmap(opts):
    """pmap over every GPU (one on the usual check machine): psum / pmean / pmax /
    all_gather / ppermute / psum_scatter against numpy, through NCCL when nccl4py
    initializes (else host-staged; the detail says which), then with host-staged
    collectives; a GPU-sharded output fed to a second pmap; grad of a GPU pmap."""
    import functrax
    import functrax.numpy as fnp
    from functrax import lax
    from functrax.config import config
    from functrax.lowering.triton import gpu_hooks
    from functrax.runtime import pmap_gpu
    gpus = functrax.devices("gpu")
    n = len(gpus)
    rng = np.random.RandomState(0)
    x = rng.standard_normal((n, 64, 32)).astype(np.float32)
    w = rng.standard_normal((32,)).astype(np.float32)
    perm = [(i, (i + 1) % n) for i in range(n)]

    def f(x):
        return (lax.psum(fnp.sin(x), "i"), lax.pmean(x, "i"), lax.pmax(x, "i"),
                lax.all_gather(x, "i", axis=1), lax.ppermute(x * 2.0, "i", perm),
                lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True))
    total = x.sum(0)
    want = (np.broadcast_to(np.sin(x).sum(0), x.shape), np.broadcast_to(x.mean(0), x.shape),
            np.broadcast_to(x.max(0), x.shape),
            np.broadcast_to(np.moveaxis(x, 0, 1), (n, 64, n, 32)), np.roll(x * 2, 1, axis=0),
            np.stack(np.split(total, n, axis=1)))
    try:
        for mode in ("auto", "host"):
            config.update("pmap_gpu_collectives", mode)
            pf = functrax.pmap(f, "i", devices=gpus)
            got = pf(x)
            for g in got:
                g.block_until_ready()
            bad = {type(b).__name__ for g in got for b in g.gpu_buffers()
                   if not gpu_hooks.is_buffer(b)}  # (the registered class: GpuBuffer)
            diff = compare(got, want, 1e-5, 1e-5)
            if bad:
                diff = f"shards are {bad}, not GpuBuffers"
            how = pmap_gpu.program_text(pf).splitlines()[1]
            record(f"pmap collectives ({mode})", "FAIL" if diff else "OK",
                   f"{n} GPU(s); {diff or how[:160]}")
    finally:
        config.update("pmap_gpu_collectives", "auto")
    # a GPU-sharded output into a second pmap, and grad of a GPU pmap
    p1 = functrax.pmap(lambda x: fnp.exp(x * 0.1) - lax.pmean(x, "i"), "i", devices=gpus)
    p2 = functrax.pmap(lambda y, w: lax.psum(y * w, "i"), "i", in_axes=(0, None),
                       devices=gpus)
    y = p1(x)
    z = p2(y, w)
    ref_y = np.exp(x * 0.1) - x.mean(0)
    diff = compare((y, z), (ref_y, np.broadcast_to((ref_y * w).sum(0), x.shape)), 1e-5, 1e-4)
    record("pmap chained", "FAIL" if diff else "OK", diff or "sharded output -> second pmap")

    def loss(x):
        out = functrax.pmap(lambda v: fnp.sin(v) - lax.pmean(v, "i"), "i", devices=gpus)(x)
        return fnp.sum(out ** 2)
    gx = functrax.grad(loss)(x)
    dy = 2 * (np.sin(x) - x.mean(0))
    diff = compare(gx, dy * np.cos(x) - dy.sum(0) / n, 1e-4, 1e-4)
    record("pmap grad", "FAIL" if diff else "OK", diff or "grad of pmap with pmean")


# --- shard_map over a 2-D mesh of GPUs ---


def _shard_map_step(functrax, mesh):
    """value_and_grad (w.r.t. ``w``) of a loss computed by a shard_map over ``mesh``:
    a matmul split over "model", a loss psum'ed over both axes."""
    import functrax.numpy as fnp
    from functrax import P, lax

    def body(x, w, y):
        h = fnp.tanh(x @ w) - y
        return lax.psum(fnp.sum(h * h), ("data", "model"))

    f = functrax.shard_map(body, mesh=mesh, out_specs=P(),
                           in_specs=(P("data", None), P(None, "model"), P("data", "model")))
    return functrax.value_and_grad(lambda w, x, y: f(x, w, y) * 0.5)


def section_shard_map(opts):
    """shard_map over a 2-D mesh of GPUs ("data" 2 x "model" n//2): one train step (a
    matmul split over "model", a loss psum'ed over both axes, grad taken outside: the
    transposed shard_map runs on the GPUs too) against the same step on as many CPU
    devices; ms per step. Skipped (with a line saying so) with fewer than 2 GPUs."""
    import functrax
    from functrax.runtime import shard_map_gpu
    from functrax.runtime.devices import clear_backends
    gpus = functrax.devices("gpu")
    if len(gpus) < 2:
        record("shard_map", "SKIP", f"needs at least 2 GPUs for a 2-D mesh; {len(gpus)} "
               "visible")
        return
    shape = (2, len(gpus) // 2)
    k = shape[0] * shape[1]
    rng = np.random.RandomState(0)
    x = rng.standard_normal((64 * shape[0], 128)).astype(np.float32)
    w = (rng.standard_normal((128, 64 * shape[1])) * 0.1).astype(np.float32)
    y = rng.standard_normal((64 * shape[0], 64 * shape[1])).astype(np.float32)
    prev = functrax.config.read("num_cpu_devices")
    clear_backends()
    functrax.config.update("num_cpu_devices", k)
    try:
        cpu_mesh = functrax.make_mesh(shape, ("data", "model"),
                                      devices=functrax.devices("cpu")[:k])
        want = _shard_map_step(functrax, cpu_mesh)(w, x, y)
    finally:
        clear_backends()
        functrax.config.update("num_cpu_devices", prev)
    gpu_mesh = functrax.make_mesh(shape, ("data", "model"), devices=gpus[:k])
    step = _shard_map_step(functrax, gpu_mesh)
    got = step(w, x, y)
    diff = compare(got, want, 1e-4, 1e-4)
    how = shard_map_gpu.last_collectives().splitlines()[0][:160]
    record("shard_map step", "FAIL" if diff else "OK",
           f"mesh {shape} of GPUs vs CPU devices; {diff or how}")
    if diff:
        return

    def run_once():
        for leaf in functrax.tree_util.tree_leaves(step(w, x, y)):
            getattr(leaf, "block_until_ready", lambda: None)()
    ms = best_ms(run_once, reps=5, warmup=2, rounds=2)
    record("shard_map step time", "OK", f"{ms:.2f} ms per value_and_grad step on a {shape} "
           "mesh of GPUs")


# --- without a GPU ---


def cpu_smoke():
    """A tiny interpreter check of the Triton backend against the numpy backend."""
    import functrax
    import functrax.numpy as fnp
    from functrax import nn
    rng = np.random.RandomState(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = rng.standard_normal((8,)).astype(np.float32)
    params, img = _cnn_args(batch=2, size=8)
    programs = [("exp(sin(x)*2)+y", lambda x, y: fnp.exp(fnp.sin(x) * 2.0) + y, (x, y)),
                ("softmax rows", lambda x: nn.softmax(x, axis=-1), (x,)),
                ("cnn fwd+bwd", functrax.value_and_grad(_cnn_loss), (params, img))]
    ok = True
    for name, f, args in programs:
        want = functrax.jit(f)(*args)
        got = functrax.jit(f, backend="triton")(*args)
        diff = compare(got, want, 1e-5, 1e-5)
        record(f"cpu smoke {name}", "FAIL" if diff else "OK", diff or "interpreter matches numpy")
        ok = ok and diff is None
    dev = functrax.device_put(x).device
    record("cpu smoke placement", "OK" if dev.platform == "cpu" else "FAIL",
           f"device_put(x).device = {dev}, default_backend() = {functrax.default_backend()}")
    return ok and dev.platform == "cpu"


def print_summary():
    print("\n=== summary ===")
    width = max((len(s[0]) for s in SUMMARY), default=10)
    for name, status, detail in SUMMARY:
        print(f"{name:<{width}}  {status:<6} {detail}")


SECTIONS = [("info", section_info, True), ("opspec", section_opspec, True),
            ("composition", section_composition, True), ("pmap", section_pmap, True),
            ("shard_map", section_shard_map, True),
            ("bench copy", section_copy, False),
            ("bench elementwise", section_elementwise, False),
            ("bench softmax", section_softmax, False),
            ("bench layernorm", section_layernorm, False),
            ("bench matmul", section_matmul, False), ("bench conv", section_conv, False),
            ("bench mlp", section_mlp, False)]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cpu-smoke", action="store_true",
                   help="without a GPU: run a tiny check through Triton's interpreter")
    p.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1),
                   help="processes for the op-spec section (each compiles its kernels)")
    p.add_argument("--opspec-budget", type=float, default=120.0,
                   help="seconds for the op-spec section; cases left are listed as NOT RUN")
    p.add_argument("--cases-per-spec", type=int, default=1)
    p.add_argument("--only", default="", help="comma-separated section names to run")
    return p.parse_args(argv)


def main(argv=None) -> int:
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    from functrax.runtime.cuda import device_count
    if device_count() == 0:
        print("gpu_check: no CUDA GPU is visible (libcuda.so.1 missing or no device): "
              "nothing to check on a GPU here.")
        if opts.cpu_smoke:
            ok = cpu_smoke()
            print_summary()
            return 0 if ok else 1
        return 0
    t0 = time.perf_counter()
    only = {s.strip() for s in opts.only.split(",") if s.strip()}
    for name, fn, _ in SECTIONS:
        if not only or name in only:
            run_section(name, fn, opts)
    print_summary()
    print(f"total {time.perf_counter() - t0:.1f} s")
    return 1 if any(s[1] in ("FAIL", "ERROR") for s in SUMMARY) else 0


if __name__ == "__main__":
    sys.exit(main())
