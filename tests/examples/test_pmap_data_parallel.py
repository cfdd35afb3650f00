"""examples/pmap_data_parallel.py runs as a script on 2 and 4 virtual CPU devices: every
replica ends with identical parameters, and the data-parallel loss curve matches
single-device training on the same global batches (parsed from its table and checked here
again), and the loss goes down."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "pmap_data_parallel.py")
ROW = re.compile(r"^\s*(\d+)\s+([0-9.]+)\s+([0-9.]+)\s*$")


def _run(*args):
    env = dict(os.environ)
    # Find functrax from this checkout even when it is not pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    env.pop("FUNCTRAX_NUM_CPU_DEVICES", None)
    proc = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("devices", [2, 4])
def test_data_parallel_matches_single_device(devices):
    rc, out, log = _run("--devices", str(devices), "--steps", "12", "--batch-size", "64")
    assert rc == 0, f"pmap_data_parallel.py exited {rc}:\n{log}"
    assert f"on {devices} devices" in out and f"{devices} shards of {64 // devices}" in out, log
    assert "replicas identical: yes" in out and "OK:" in out, log
    rows = [ROW.match(line) for line in out.splitlines()]
    table = np.array([[float(g) for g in m.groups()] for m in rows if m])
    assert table.shape == (12, 3), log
    np.testing.assert_array_equal(table[:, 0], np.arange(1, 13))
    np.testing.assert_allclose(table[:, 1], table[:, 2], rtol=1e-5, atol=1e-6)
    assert table[-3:, 2].mean() < table[0, 2], log


def test_indivisible_batch_is_reported():
    rc, out, log = _run("--devices", "3", "--steps", "1", "--batch-size", "64")
    assert rc == 2 and "must be divisible by the 3 devices" in out, log
