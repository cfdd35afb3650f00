"""Devices, placement and the GPU runtime's logic, on a machine without a GPU.

What runs for real here: device listing and its errors, ``default_backend``,
``device_put`` / ``Array.device`` on the CPU, jit's backend selection, the autotuner's
selection and persistence (with a fake timer), the GPU launcher's argument list (with a fake
cuda-core and the PTX of a kernel really compiled for sm_90), and the whole GPU path of
``jit`` (GPU-resident inputs -> ``GpuProgram`` -> ``TritonKernel`` on device buffers ->
GPU-resident outputs) over a *fake* GPU: numpy-backed buffers and kernels run by Triton's
interpreter. Nothing here touches CUDA; ``benchmarks/gpu_check.py`` is the check that does.
"""
from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # noqa: E402 - before anything imports triton

import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import triton  # noqa: E402 - a required dependency, after TRITON_INTERPRET=1

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax.runtime import gpu_devices as gpu  # noqa: E402
from functrax import nn
from functrax.runtime import cuda, gpu_buffer  # noqa: E402
from functrax.lowering.fusion.planner import plan_fusion  # noqa: E402
from functrax.lowering.triton import autotune, cache as tcache, gpu_hooks, runtime  # noqa: E402
from functrax.runtime import gpu_launch, gpu_registration  # noqa: E402
from functrax.lowering.triton.codegen import GPU_CANDIDATES, KernelConfig  # noqa: E402
from functrax.passes.pipeline import optimize  # noqa: E402
from tests import fake_gpu as fake_gpu_lib  # noqa: E402
from tests.fake_gpu import FakeGpuBuffer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_GPU = "Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are " \
         "present. Platforms present are: cpu"


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCTRAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tcache, "_DEFAULT", None)
    monkeypatch.setattr(autotune, "_STORE", None)


# --- devices and placement on the CPU ---


@pytest.mark.parametrize("name", ["gpu", "cuda"])
def test_gpu_devices_raise_jax_error_without_gpu(name):
    assert runtime.cuda_device_count() == 0
    with pytest.raises(RuntimeError) as e:
        functrax.devices(name)
    assert str(e.value) == NO_GPU.replace("'gpu'", f"'{name}'").replace("of gpu", f"of {name}")
    with pytest.raises(RuntimeError, match="Unknown backend: 'tpu' requested"):
        functrax.local_devices(backend="tpu")
    with pytest.raises(RuntimeError, match="Unknown backend"):
        functrax.device_count("gpu")


def test_default_backend_and_cpu_devices():
    assert functrax.default_backend() == "cpu"
    assert functrax.devices("cpu") == functrax.devices()
    assert repr(functrax.devices()[0]) == "CpuDevice(id=0)"


def test_array_device_on_cpu():
    x = fnp.arange(3.0)
    assert x.device == functrax.devices()[0] and repr(x.device) == "CpuDevice(id=0)"
    assert x.devices() == {functrax.devices()[0]}
    assert (x * 2).device.platform == "cpu"


def test_device_put_on_cpu_copies_and_canonicalizes():
    host = np.arange(4.0)  # float64 -> float32, as every functrax array
    y = functrax.device_put(host)
    assert isinstance(y, functrax.Array) and y.dtype == np.float32
    assert y.device == functrax.devices()[0]
    host[0] = 99.0  # no alias of the numpy input
    np.testing.assert_array_equal(np.asarray(y), [0.0, 1.0, 2.0, 3.0])
    z = functrax.device_put({"a": 1.0, "b": [fnp.ones(2)]}, functrax.devices()[0])
    assert z["a"].weak_type and z["b"][0].device.platform == "cpu"
    a = fnp.ones(3)
    assert functrax.device_put(a) is a


def test_device_put_errors():
    with pytest.raises(TypeError, match="device_put: device must be a Device"):
        functrax.device_put(np.ones(2), "gpu")
    with pytest.raises(TypeError, match="device_put: expected arrays"):
        functrax.device_put(["a string"])


def test_device_put_under_jit_is_the_identity():
    f = functrax.jit(lambda x: functrax.device_put(x) * 2)
    np.testing.assert_allclose(np.asarray(f(fnp.ones(2))), [2.0, 2.0])


def test_gpu_device_repr_and_equality():
    d0, d0b, d1 = gpu.GpuDevice(0, 0, "NVIDIA H200"), gpu.GpuDevice(0), gpu.GpuDevice(1)
    assert repr(d0) == "CudaDevice(id=0)" and d0.platform == "gpu"
    assert d0.device_kind == "NVIDIA H200"
    assert d0 == d0b and d0 != d1 and hash(d0) == hash(d0b)
    assert d0 != functrax.devices()[0]


# --- jit backend selection ---


def test_jit_backend_selection_on_cpu():
    from functrax.lowering.numpy.executor import Executable
    from functrax.lowering.triton.backend import TritonProgram
    f = lambda x: fnp.exp(x) * 2.0
    x = fnp.linspace(0.0, 1.0, 8)
    assert isinstance(functrax.jit(f).lower(x).compile()._entry.exe, Executable)
    c = functrax.jit(f, backend="triton").lower(x).compile()
    assert isinstance(c._entry.exe, TritonProgram)  # the interpreter's program, no GPU
    out = functrax.jit(f, backend="triton")(x)
    assert type(out) is functrax.Array and out.device.platform == "cpu"
    np.testing.assert_allclose(np.asarray(out), np.exp(np.asarray(x)) * 2, rtol=1e-6)


def test_jit_gpu_backend_without_gpu_raises_jax_error():
    with pytest.raises(RuntimeError, match="Unknown backend: 'gpu' requested"):
        functrax.jit(lambda x: x, backend="gpu")
    with pytest.raises(RuntimeError, match="Unknown backend: 'cuda' requested"):
        functrax.jit(lambda x: x, backend="cuda")
    with pytest.raises(RuntimeError, match="Unknown backend: 'gpu' requested"):
        functrax.jit(lambda x: x, device=gpu.GpuDevice(0))


# --- cuda-core missing / no GPU ---


def test_missing_cuda_core_names_the_extra(monkeypatch):
    monkeypatch.setattr(cuda, "_MODULES", {})
    monkeypatch.setitem(sys.modules, "cuda.core", None)
    monkeypatch.setitem(sys.modules, "cuda.core.experimental", None)
    with pytest.raises(ImportError, match=r"pip install 'functrax\[gpu\]'"):
        gpu_buffer.cuda_core()
    with pytest.raises(ImportError, match="cuda-core"):
        gpu_buffer.GpuBuffer((2,), np.float32)


def test_gpu_buffer_without_gpu_says_so(monkeypatch):
    pytest.importorskip("cuda.core")
    monkeypatch.setattr(gpu_buffer, "_CONTEXTS", {})
    with pytest.raises((RuntimeError, ImportError), match="cannot open CUDA device 0|cuda"):
        gpu_buffer.GpuBuffer((2,), np.float32)


def test_kernels_without_gpu_or_interpreter_raise(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    group = _group(lambda x: x * 2.0, np.ones(4, np.float32))
    kernel = runtime.build_kernel(group)
    with pytest.raises(NotImplementedError, match="no CUDA GPU is visible"):
        kernel(np.ones(4, np.float32))


# --- autotuning: selection and persistence with a fake timer ---


def _group(f, *args):
    closed = optimize(functrax.make_jaxpr(f)(*args))
    (g,) = plan_fusion(closed).groups
    return g


def _fake_timer(best_block, calls):
    def measure(kernel, args):
        calls.append(kernel.source.constexprs)
        return abs(np.log2(kernel.source.constexprs["BLOCK"] / best_block)) + 1.0
    return measure


def test_autotune_picks_fastest_and_persists(tmp_path):
    x = np.linspace(-1, 1, 8192, dtype=np.float32)
    group = _group(lambda x: fnp.sin(x) * 2.0, x)
    store = tcache.AutotuneStore(str(tmp_path))
    calls = []
    k = autotune.AutotunedKernel(group, store=store, measure=_fake_timer(2048, calls),
                                 device_name=lambda a: "Fake GPU", tune=True)
    assert k.source.constexprs["BLOCK"] == 1024  # the first candidate before the first call
    (out,) = k(x)
    np.testing.assert_allclose(out, np.sin(x) * 2.0, rtol=1e-6)
    assert k.config.max_block == 2048 and k.source.constexprs["BLOCK"] == 2048
    assert len(calls) == len(GPU_CANDIDATES[group.kind])  # each distinct candidate timed once
    files = os.listdir(os.path.join(str(tmp_path), "autotune"))
    assert len(files) == 1
    # a new process (a new kernel object) reads the choice: nothing is timed
    calls2 = []
    k2 = autotune.AutotunedKernel(group, store=store, measure=_fake_timer(512, calls2),
                                  device_name=lambda a: "Fake GPU", tune=True)
    k2.select((x,))
    assert calls2 == [] and k2.config.max_block == 2048
    # another device is tuned again
    k3 = autotune.AutotunedKernel(group, store=store, measure=_fake_timer(512, calls2),
                                  device_name=lambda a: "Other GPU", tune=True)
    k3.select((x,))
    assert k3.config.max_block == 512 and calls2


def test_autotune_key_ignores_block_sizes_but_not_avals():
    x = np.ones(8192, np.float32)
    g1, g2 = _group(lambda x: x * 3.0, x), _group(lambda x: x * 3.0, np.ones(4096, np.float32))
    k1 = autotune.AutotunedKernel(g1, tune=False)
    k1b = autotune.AutotunedKernel(g1, candidates=GPU_CANDIDATES[g1.kind][::-1], tune=False)
    k2 = autotune.AutotunedKernel(g2, tune=False)
    key = lambda k: autotune.tuning_key(k.default.source.text, k.default.source.in_avals, "g")
    assert k1.default.source.text == k1b.default.source.text  # block sizes are constexprs
    assert key(k1) != key(k2)


def test_small_kernels_are_not_timed():
    group = _group(lambda x: x + 1.0, np.ones(64, np.float32))
    assert not autotune.should_tune(group)
    calls = []
    k = autotune.AutotunedKernel(group, measure=_fake_timer(2048, calls))
    (out,) = k(np.ones(64, np.float32))
    assert calls == [] and k.config == GPU_CANDIDATES[group.kind][0]
    np.testing.assert_allclose(out, np.full(64, 2.0))


def test_select_config_skips_failures_and_survives_corrupt_records(tmp_path):
    store = tcache.AutotuneStore(str(tmp_path))
    cands = [KernelConfig(max_block=b) for b in (256, 512, 1024)]

    def measure(c):
        if c.max_block == 512:
            raise RuntimeError("out of shared memory")
        return {256: 2.0, 1024: 1.0}[c.max_block]
    assert autotune.select_config("ab", cands, measure, store) == (cands[2], True)
    assert autotune.select_config("ab", cands, measure, store) == (cands[2], False)
    with open(store.path("ab"), "w") as f:
        f.write("{not json")
    assert autotune.select_config("ab", cands, measure, store) == (cands[2], True)
    with pytest.raises(RuntimeError, match="every candidate config failed"):
        autotune.select_config("cd", cands, lambda c: 1 / 0, store)
    with pytest.raises(ValueError, match="hex digest"):
        store.path("../x")


# --- the launcher's argument list, with a fake cuda-core ---


def test_ptx_param_count_of_a_real_sm90_kernel():
    """The hidden trailing parameters of the installed Triton's kernels (2 in >= 3.5)."""
    from functrax.lowering.triton import compile as tcompile
    group = _group(lambda x, y: fnp.exp(x) + y, np.ones(64, np.float32),
                   np.ones(64, np.float32))
    kernel = runtime.build_kernel(group)
    compiled = tcompile.compile_source(kernel.source, kernel.fn)
    n = gpu_launch.ptx_param_count(compiled.ptx, compiled.name)
    assert n - 3 in (0, 1, 2)  # in0, in1, out0 + global/profile scratch pointers
    major, minor = (int(v) for v in triton.__version__.split(".")[:2])
    if (major, minor) >= (3, 5):
        assert n == 5


class _FakeCore:
    """The parts of cuda-core the launcher uses, recording the launch."""

    def __init__(self):
        self.launches = []
        core = self

        class LaunchConfig:
            def __init__(self, grid, block, shmem_size):
                self.grid, self.block, self.shmem_size = grid, block, shmem_size

        class ObjectCode:
            @staticmethod
            def from_cubin(cubin):
                return types.SimpleNamespace(get_kernel=lambda name: ("kernel", name))

        self.LaunchConfig, self.ObjectCode = LaunchConfig, ObjectCode
        self.launch = lambda stream, config, kernel, *args: core.launches.append(
            (stream, config, kernel, args))


def test_launch_gpu_argument_list(monkeypatch):
    fake = _FakeCore()
    ptx = (".visible .entry k(\n .param .u64 .ptr .global .align 1 k_param_0,\n"
           " .param .u64 k_param_1,\n .param .u64 k_param_2,\n .param .u64 k_param_3\n)")
    md = types.SimpleNamespace(name="k", num_warps=8, num_ctas=1, shared=1024,
                               global_scratch_size=0, global_scratch_align=1,
                               profile_scratch_size=0, profile_scratch_align=1)
    compiled = types.SimpleNamespace(metadata=md, asm={"cubin": b"\0", "ptx": ptx})
    ctx = types.SimpleNamespace(device_id=0, compute_capability=90, stream="stream0")
    monkeypatch.setattr(cuda, "_MODULES", {"core": fake})
    monkeypatch.setattr(gpu_buffer, "context", lambda i=0: ctx)
    monkeypatch.setattr(gpu_launch, "_compile", lambda kernel, cc: compiled)
    monkeypatch.setattr(gpu_launch, "_MEMO", {})
    monkeypatch.setattr(gpu_buffer, "is_gpu_buffer", lambda b: True)
    group = _group(lambda x: x * 2.0, np.ones(5000, np.float32))
    kernel = runtime.build_kernel(group, KernelConfig(max_block=1024, num_warps=8))
    bufs = [types.SimpleNamespace(device_id=0, data_ptr=lambda p=p: p) for p in (4096, 8192)]
    gpu_launch.launch_gpu(kernel, bufs[:1], bufs[1:])
    ((stream, config, kern, args),) = fake.launches
    assert stream == "stream0" and kern == ("kernel", "k")
    assert config.grid == (5, 1, 1) and config.block == (256, 1, 1) and config.shmem_size == 1024
    assert [int(a) for a in args] == [4096, 8192, 0, 0]  # buffers, null scratch pointers
    assert all(type(a) is np.uint64 for a in args)


# --- the GPU path of jit over a fake GPU ---


@pytest.fixture
def fake_gpu(monkeypatch):
    return fake_gpu_lib.install(monkeypatch)


def test_fake_gpu_devices_and_placement(fake_gpu):
    (dev,) = functrax.devices("gpu")
    assert repr(dev) == "CudaDevice(id=0)" and functrax.default_backend() == "gpu"
    assert functrax.devices("cuda") == [dev] and functrax.device_count("gpu") == 1
    x = functrax.device_put(np.arange(6.0).reshape(2, 3), dev)
    assert type(x) is gpu.GpuArray and x.device == dev and x.devices() == {dev}
    assert type(x.gpu_buffer) is FakeGpuBuffer and x.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(x), np.arange(6.0).reshape(2, 3))
    assert functrax.device_put(x, dev) is x
    back = functrax.device_put(x, functrax.devices("cpu")[0])
    assert type(back) is functrax.Array and back.device.platform == "cpu"
    np.testing.assert_array_equal(np.asarray(fnp.sum(x)), 15.0)  # eager ops read it back
    assert functrax.device_put(np.ones(2)).device == dev  # the default device is the GPU


def test_fake_gpu_jit_selects_triton_and_keeps_outputs_on_device(fake_gpu):
    from functrax.lowering.triton.gpu_program import GpuProgram
    dev = functrax.devices("gpu")[0]
    rng = np.random.RandomState(0)
    x, y = rng.randn(4, 8).astype(np.float32), rng.randn(8).astype(np.float32)
    f = functrax.jit(lambda x, y: (fnp.exp(fnp.sin(x) * 2.0) + y, nn.softmax(x, axis=-1)))
    want = f(x, y)  # host inputs: the numpy backend
    gx, gy = functrax.device_put((x, y), dev)
    got = f(gx, gy)  # GPU-resident inputs: the Triton backend
    assert all(type(o) is gpu.GpuArray and o.device == dev for o in got)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
    assert fake_gpu  # kernels were launched on device buffers
    entry = next(iter(f._cache.values()))
    assert isinstance(entry.gpu_exe, GpuProgram) and entry.exe is not entry.gpu_exe
    # backend="triton" with host inputs also runs on the (fake) GPU and returns GPU arrays
    h = functrax.jit(lambda x: x * 3.0 + 1.0, backend="triton")
    out = h(x)
    assert type(out) is gpu.GpuArray
    np.testing.assert_allclose(np.asarray(out), x * 3.0 + 1.0, rtol=1e-6)
    assert type(h(x)) is gpu.GpuArray  # the fast path does not take device programs
    for kw in ({"backend": "gpu"}, {"device": dev}):
        out = functrax.jit(lambda x: x - 1.0, **kw)(x)
        assert type(out) is gpu.GpuArray
        np.testing.assert_allclose(np.asarray(out), x - 1.0)


def test_fake_gpu_fallback_steps_run_on_host_copies(fake_gpu):
    dev = functrax.devices("gpu")[0]
    x = np.array([3.0, 1.0, 2.0, 0.5], np.float32)
    f = functrax.jit(lambda x: fnp.sort(fnp.exp(x)) * 2.0)  # sort: a numpy fallback
    got = f(functrax.device_put(x, dev))
    assert type(got) is gpu.GpuArray
    np.testing.assert_allclose(np.asarray(got), np.sort(np.exp(x)) * 2.0, rtol=1e-6)


def test_fake_gpu_mlp_step_matches_numpy_backend(fake_gpu):
    dev = functrax.devices("gpu")[0]
    rng = np.random.RandomState(0)
    params = {"w": rng.randn(3, 4).astype(np.float32), "b": rng.randn(4).astype(np.float32)}
    x = rng.randn(5, 3).astype(np.float32)

    def loss(p, x):
        return fnp.mean(nn.relu(x @ p["w"] + p["b"]) ** 2)
    step = functrax.jit(lambda p, x: functrax.value_and_grad(loss)(p, x))
    want = step(params, x)
    got = step(*functrax.device_put((params, x), dev))
    for g, w in zip(functrax.tree_util.tree_leaves(got), functrax.tree_util.tree_leaves(want)):
        assert type(g) is gpu.GpuArray
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5)


# --- the GPU table of the Triton backend (gpu_hooks) and who registers into it ---


def test_import_registers_the_cuda_runtime():
    gpu = gpu_hooks.registered()
    assert gpu is gpu_registration.CUDA and not gpu.interpreted
    assert gpu.device_count is cuda.device_count and gpu.buffer is gpu_buffer.GpuBuffer
    assert gpu.launch is gpu_launch.launch_gpu and gpu.time_launch is gpu_launch.time_launch
    assert gpu_hooks.device_count() == cuda.device_count() == runtime.cuda_device_count() == 0
    assert not runtime.gpu_active() and not gpu_hooks.is_buffer(np.ones(2))


def test_fake_gpu_registration_is_undone_after_the_test():
    with pytest.MonkeyPatch.context() as mp:
        launches = fake_gpu_lib.install(mp, 2)
        assert gpu_hooks.device_count() == 2 and runtime.gpu_active()
        assert gpu_hooks.buffer_class() is FakeGpuBuffer and functrax.device_count("gpu") == 2
        x = functrax.device_put(np.ones(3, np.float32), functrax.devices("gpu")[1])
        out = functrax.jit(lambda x: x * 2.0)(x)
        assert type(out.gpu_buffer) is FakeGpuBuffer and out.device.id == 1
        assert launches and {d for _, d in launches} == {1}
    assert gpu_hooks.registered() is gpu_registration.CUDA and not runtime.gpu_active()
    with pytest.raises(RuntimeError, match="Unknown backend: 'gpu' requested"):
        functrax.devices("gpu")


def test_no_gpu_registered(monkeypatch):
    fake_gpu_lib.register(monkeypatch, gpu_hooks.NO_GPU)
    assert gpu_hooks.device_count() == 0 and not runtime.gpu_active()
    with pytest.raises(NotImplementedError, match="no GPU buffer class is registered"):
        gpu_hooks.buffer_class()
    with pytest.raises(NotImplementedError, match="provides no time_launch"):
        gpu_hooks.time_launch(lambda: None, 0)
    with pytest.raises(TypeError, match="expected a GpuSupport"):
        gpu_hooks.register_gpu(object())


def test_registered_gpu_without_a_launcher(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    fake_gpu_lib.register(monkeypatch, gpu_hooks.GpuSupport(device_count=lambda: 1,
                                                            buffer=FakeGpuBuffer))
    assert runtime.gpu_active()
    group = _group(lambda x: x * 2.0, np.ones(4, np.float32))
    kernel = runtime.build_kernel(group, KernelConfig(max_block=1024, num_warps=8))
    with pytest.raises(NotImplementedError, match="no GPU launcher is registered"):
        kernel(np.ones(4, np.float32))
    calls = []
    assert runtime.register_gpu_launcher(lambda k, ins, outs: calls.append(
        (k.source.name, [type(b) for b in ins + outs]))) is None
    (out,) = kernel(np.ones(4, np.float32))
    assert type(out) is FakeGpuBuffer and calls == [(kernel.source.name, [FakeGpuBuffer] * 2)]


_TRITON_IMPORT_CHECK = """
import os, sys
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "triton":
            hooks = sys.modules.get("functrax.lowering.triton.gpu_hooks")
            cuda = sys.modules.get("functrax.runtime.cuda")
            assert hooks is not None and cuda is not None, "triton before the registration"
            assert hooks.registered().device_count is cuda.device_count
            assert os.environ.get("TRITON_INTERPRET") == "1", "no GPU: the interpreter"
            print("checked")
sys.meta_path.insert(0, Watch())
import MODULE
import triton
print("ok")
"""


@pytest.mark.parametrize("module", ["kernels", "kernels.softmax",
                                    "functrax.lowering.triton.runtime"])
def test_the_probe_is_registered_before_triton_is_imported(module):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = ROOT
    proc = subprocess.run([sys.executable, "-c", _TRITON_IMPORT_CHECK.replace("MODULE", module)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == ["checked", "ok"]


# --- the GPU check script ---


def test_gpu_check_cpu_smoke_runs_quickly():
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu_check.py"),
                           "--cpu-smoke"], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no CUDA GPU is visible" in proc.stdout
    assert "cpu smoke" in proc.stdout and "FAIL" not in proc.stdout
    assert time.perf_counter() - t0 < 20


def test_gpu_check_sections_on_fake_gpu(fake_gpu, monkeypatch):
    """The correctness sections of the check script, run over the fake GPU."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(gpu_check, "SUMMARY", [])
    monkeypatch.setattr(gpu_check, "_opspec_cases",
                        lambda per: [c for c in _first_cases() if c[0].name in _SOME_SPECS])
    opts = gpu_check.parse_args(["--workers", "1", "--opspec-budget", "60"])
    gpu_check.run_section("opspec", gpu_check.section_opspec, opts)
    statuses = {s[0]: s[1] for s in gpu_check.SUMMARY}
    assert statuses == {"opspec": "OK"}, gpu_check.SUMMARY


_SOME_SPECS = {"sin", "add", "sum", "matmul", "where"}


def _first_cases():
    from tests.opspec import all_specs
    return [(s, *next(iter(s.cases()))) for s in all_specs()]


_GPU_VISIBLE_CHECK = """
import os, sys, types
fake = types.ModuleType("functrax.runtime.cuda")  # a probe that sees one GPU
fake.device_count = lambda: 1
fake.device_name = lambda i: "fake"
fake.MISSING_CUDA_CORE = "cuda-core missing"
fake.cuda_core = fake.cuda_driver = lambda: None
fake.check = lambda result, what: result
sys.modules["functrax.runtime.cuda"] = fake
import functrax
import functrax.lowering.triton.runtime
print(os.environ.get("TRITON_INTERPRET", "unset"))
"""


def test_a_visible_gpu_keeps_triton_off_the_interpreter():
    # the interpreter is chosen only when the registered (real) probe sees no GPU: nothing
    # imported while functrax initializes may decide it earlier with the default probe
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = ROOT
    proc = subprocess.run([sys.executable, "-c", _GPU_VISIBLE_CHECK], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == ["unset"]
