"""pmap across processes over MPI: ``mpiexec -n 2`` (from the ``mpich`` wheel of the test
extra) on the data-parallel example and on scripts in tests/mpi_scripts/ (every collective
against numpy across 2 processes x 2 virtual devices, gradients through pmap; a peer that
dies or hangs ends the other with CollectiveTimeoutError), plus functrax.distributed's
errors in this process (which never initializes MPI).

The MPI tests skip only when mpi4py is not importable; with mpi4py but no ``mpiexec`` they
fail.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import functrax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "mpi_scripts")
EXAMPLE = os.path.join(ROOT, "examples", "pmap_data_parallel.py")
ROW = re.compile(r"^\s*(\d+)\s+([0-9.]+)\s+([0-9.]+)\s*$")
COLLECTIVES = ["psum", "pmean", "pmax", "pmin", "psum_int32", "psum_float16", "psum_tree",
               "psum_const", "axis_index", "all_gather", "all_gather_tiled_axis1",
               "ppermute_ring", "ppermute_partial", "all_to_all_tiled", "all_to_all",
               "psum_scatter", "psum_scatter_tiled", "jit_of_pmap", "pmap_of_jit",
               "vmap_in_pmap", "grad_unmapped_input", "grad_mapped_input",
               "pmap_of_grad_pmean", "sharded_feeds_pmap", "nested_pmap",
               "nested_outer_only_raises"]


def _find_mpiexec() -> str:
    """The ``mpiexec`` of this Python environment (where the mpich wheel puts it), else the
    one on PATH."""
    for d in (os.path.join(sys.prefix, "bin"), os.path.dirname(sys.executable)):
        path = os.path.join(d, "mpiexec")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    path = shutil.which("mpiexec")
    if path is None:
        pytest.fail("mpi4py is installed but no mpiexec was found (in "
                    f"{os.path.join(sys.prefix, 'bin')} or on PATH): install the test extra "
                    "(pip install -e '.[test]'), whose mpich wheel provides mpiexec")
    return path


@pytest.fixture(scope="module")
def mpiexec():
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install 'functrax[mpi]')")
    exe = _find_mpiexec()
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    return exe, "HYDRA" in (out.stdout + out.stderr).upper()


def _launch(mpiexec, args, n=2, devices=None, timeout=120, extra=(), outdir=None):
    """Run ``mpiexec -n n python args``: (exit status, stdout of each rank, everything, s).

    With MPICH's mpiexec and ``outdir``, each rank's output goes to a file of its own (the
    ranks' lines may interleave mid-line in the common stdout); otherwise the one stdout is
    returned for every rank.
    """
    exe, hydra = mpiexec
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    env.pop("FUNCTRAX_NUM_CPU_DEVICES", None)
    if devices is not None:
        env["FUNCTRAX_NUM_CPU_DEVICES"] = str(devices)
    env.setdefault("HYDRA_LAUNCHER", "fork")  # MPICH: local processes, no ssh needed
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    split = hydra and outdir is not None
    if split:
        extra = [*extra, "-outfile-pattern", os.path.join(str(outdir), "out.%r"),
                 "-errfile-pattern", os.path.join(str(outdir), "err.%r")]
    t0 = time.monotonic()
    proc = subprocess.run([exe, *extra, "-n", str(n), sys.executable, *args],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    took = time.monotonic() - t0
    outs = [proc.stdout] * n
    log = proc.stdout + proc.stderr
    if split:
        def read(name):
            path = os.path.join(str(outdir), name)
            return open(path).read() if os.path.exists(path) else ""
        outs = [read(f"out.{r}") for r in range(n)]
        log += "".join(f"--- rank {r} ---\n{outs[r]}{read(f'err.{r}')}" for r in range(n))
    return proc.returncode, outs, log, took


# --- the data-parallel example on 2 processes ---


@pytest.mark.parametrize("devices", [1, 2])
def test_example_on_two_processes(mpiexec, devices, tmp_path):
    rc, outs, log, _ = _launch(mpiexec, [EXAMPLE, "--steps", "8", "--batch-size", "64",
                                         "--devices", str(devices)], outdir=tmp_path)
    assert rc == 0, f"mpiexec -n 2 pmap_data_parallel.py exited {rc}:\n{log}"
    n_all = 2 * devices
    assert f"on {n_all} devices in 2 processes ({devices} each" in outs[0], log
    assert f"{n_all} shards of {64 // n_all}" in outs[0], log
    sums = []
    for r in (0, 1):
        assert f"[rank {r}] replicas identical: yes" in outs[r], log
        assert f"[rank {r}] OK:" in outs[r], log
        sums.append(re.search(rf"\[rank {r}\] params checksum: ([0-9a-f]+)", outs[r]).group(1))
    assert sums[0] == sums[1], log
    table = np.array([[float(g) for g in m.groups()]
                      for m in map(ROW.match, outs[0].splitlines()) if m])
    assert table.shape == (8, 3), log
    np.testing.assert_allclose(table[:, 1], table[:, 2], rtol=1e-5, atol=1e-6)


def test_example_loss_matches_single_process(mpiexec, tmp_path):
    """The 2-process loss curve is the single-process (4 virtual devices) one."""
    rc, outs, log, _ = _launch(mpiexec, [EXAMPLE, "--steps", "4", "--batch-size", "64"],
                               outdir=tmp_path)
    assert rc == 0, log
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("FUNCTRAX_NUM_CPU_DEVICES", None)
    single = subprocess.run([sys.executable, EXAMPLE, "--steps", "4", "--batch-size", "64",
                             "--devices", "4"], capture_output=True, text=True, timeout=120,
                            env=env, cwd=ROOT)
    assert single.returncode == 0, single.stdout + single.stderr

    def losses(text):
        return np.array([float(m.group(2)) for m in map(ROW.match, text.splitlines()) if m])

    a, b = losses(outs[0]), losses(single.stdout)
    assert a.shape == b.shape == (4,), (log, single.stdout)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# --- collectives across processes ---


def test_collectives_across_two_processes_of_two_devices(mpiexec, tmp_path):
    rc, _, log, _ = _launch(mpiexec, [os.path.join(SCRIPTS, "collectives.py"), str(tmp_path)],
                            devices=2)
    assert rc == 0, f"collectives.py exited {rc}:\n{log}"
    for r in (0, 1):
        lines = (tmp_path / f"rank{r}.txt").read_text().splitlines()
        assert lines == [f"PASS {name}" for name in COLLECTIVES] + [f"ALL OK rank {r}"], log


# --- a dead or hung peer ends the other rank with the timeout error ---


def _check_timeout(rc, log, took, timeout_s):
    assert rc != 0, log
    assert "CollectiveTimeoutError" in log and "collective_timeout_s" in log, log
    assert "psum over axis ('i',) across MPI processes timed out after" in log, log
    assert "UNREACHABLE" not in log, log
    assert took < timeout_s + 25, f"took {took:.1f} s:\n{log}"


def test_dead_peer_raises_timeout_error(mpiexec):
    """Rank 1 exits (os._exit) before a collective; rank 0 ends with the timeout error.
    (MPICH's mpiexec would otherwise kill rank 0 as soon as rank 1 is gone.)"""
    exe, hydra = mpiexec
    if not hydra:
        pytest.skip("needs MPICH's mpiexec (Hydra) for -disable-auto-cleanup")
    rc, _, log, took = _launch(mpiexec, [os.path.join(SCRIPTS, "dead_peer.py"), "exit", "2"],
                               extra=["-disable-auto-cleanup"], timeout=60)
    assert "rank 1: exiting before the second collective" in log, log
    _check_timeout(rc, log, took, 2)


def test_hung_peer_raises_timeout_and_aborts_the_job(mpiexec):
    """Rank 1 stays alive but never reaches the collective: rank 0 times out and aborts the
    MPI job, which ends rank 1 too (long before its 120 s sleep)."""
    rc, _, log, took = _launch(mpiexec, [os.path.join(SCRIPTS, "dead_peer.py"), "hang", "2"],
                               timeout=60)
    _check_timeout(rc, log, took, 2)


# --- functrax.distributed in this (single, non-MPI) process ---


def test_import_functrax_does_not_import_mpi4py():
    code = "import sys, functrax; assert 'mpi4py' not in sys.modules; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_initialize_after_devices_were_used_raises():
    functrax.devices()
    with pytest.raises(RuntimeError, match="must be called before any functrax devices"):
        functrax.distributed.initialize()
    assert not functrax.distributed.is_initialized()


def test_initialize_without_mpi4py_names_the_extra(monkeypatch):
    from functrax.runtime.devices import clear_backends
    clear_backends()
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import mpi4py raises ImportError
    with pytest.raises(ImportError, match=r"functrax\[mpi\]"):
        functrax.distributed.initialize()
    assert not functrax.distributed.is_initialized()
    clear_backends()


def test_initialize_rejects_unsupported_arguments():
    with pytest.raises(ValueError, match="coordinator_address"):
        functrax.distributed.initialize(coordinator_address="localhost:1234")
    assert not functrax.distributed.is_initialized()
    functrax.distributed.shutdown()  # a no-op when not initialized


def test_axis_across_processes_needs_initialize():
    """The communicator of an axis spanning processes is the one ``initialize`` registers
    (``pmap_runtime.register_process_communicator``); without it, a clear error."""
    from functrax.runtime import pmap_runtime as rt
    axis = rt.GlobalAxis(2, [0, 1], [0])
    with pytest.raises(RuntimeError, match=r"needs functrax.distributed.initialize\(\)"):
        rt.run_replicas(lambda i: i, "i", [functrax.devices()[:1]], axis)
    seen = []
    previous = rt.register_process_communicator(
        lambda a: seen.append(a) or rt.ThreadCommunicator())
    try:
        assert previous is None
        assert rt.run_replicas(lambda i: i + 1, "i", [functrax.devices()[:1]], axis) == [1]
        assert seen == [axis]
    finally:
        rt.register_process_communicator(previous)
