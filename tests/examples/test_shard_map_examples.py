"""The shard_map examples run as scripts (8 or 4 virtual CPU devices, which each script asks
for itself when none are configured) and match single-device training of the same global
batches: examples/shard_map_tensor_parallel.py (Megatron tensor parallelism on a 2x4
("data", "model") mesh), examples/shard_map_zero.py (ZeRO: Adam state split over 8
devices, psum_scatter / all_gather) and examples/shard_map_pipeline.py (a GPipe pipeline
over 4 stages with ppermute). Each test checks the exit status, the loss table (parsed and
compared here again), the printed maximum parameter difference and the memory per device."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW = re.compile(r"^\s*(\d+)\s+([0-9.]+)\s+([0-9.]+)\s*$")
PARAM_DIFF = re.compile(r"max \|\S+ params - single-device params\| = (\S+) \(allclose .*: "
                        r"(yes|NO)\)")
LOSS_DIFF = re.compile(r"max \|\S+ loss - single-device loss\| = (\S+)")


def _run(script, *args, devices=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    env.pop("FUNCTRAX_NUM_CPU_DEVICES", None)  # the script sets its own default
    if devices is not None:
        env["FUNCTRAX_NUM_CPU_DEVICES"] = str(devices)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stdout + proc.stderr


def _check_training(out, log, steps):
    """The loss table (shard_map vs single device), the loss and parameter differences."""
    rows = [ROW.match(line) for line in out.splitlines()]
    table = np.array([[float(g) for g in m.groups()] for m in rows if m])
    assert table.shape == (steps, 3), log
    np.testing.assert_array_equal(table[:, 0], np.arange(1, steps + 1))
    np.testing.assert_allclose(table[:, 1], table[:, 2], rtol=1e-5, atol=1e-6)
    assert table[-1, 2] < table[0, 2], log  # it trains
    m = PARAM_DIFF.search(out)
    assert m and m.group(2) == "yes" and float(m.group(1)) <= 1e-6, log
    m = LOSS_DIFF.search(out)
    assert m and float(m.group(1)) <= 1e-6, log


def test_tensor_parallel_matches_single_device():
    rc, out, log = _run("shard_map_tensor_parallel.py", "--steps", "6", "--seed", "1")
    assert rc == 0, f"shard_map_tensor_parallel.py exited {rc}:\n{log}"
    assert "{'data': 2, 'model': 4} of 8 devices" in out, log
    _check_training(out, log, 6)
    # w1 (16, 64), b1 (64,), w2 (64, 8) split 4 ways over "model"; b2 (8,) replicated
    replicated = 4 * (16 * 64 + 64 + 64 * 8 + 8)
    per_device = 4 * (16 * 64 + 64 + 64 * 8) // 4 + 4 * 8
    m = re.search(r"parameter bytes per device: (\d+) sharded vs (\d+) replicated", out)
    assert m and (int(m.group(1)), int(m.group(2))) == (per_device, replicated), log
    assert "Adam mu/nu too: yes" in out, log  # Adam barely sees a gradient scale error
    assert "every device holds the same amount" in out, log
    assert "w1: global (16, 64) P(None, 'model') -> per-device block (16, 16)" in out, log
    assert "w2: global (64, 8) P('model', None) -> per-device block (16, 8)" in out, log
    assert "OK: tensor-parallel training matches single-device training" in out, log


def test_zero_matches_single_device():
    rc, out, log = _run("shard_map_zero.py", "--steps", "6")
    assert rc == 0, f"shard_map_zero.py exited {rc}:\n{log}"
    n = 16 * 32 + 32 + 32 * 32 + 32 + 32 * 4 + 4  # 1732 parameters, padded to 1736
    padded = -(-n // 8) * 8
    assert f"({n} parameters, padded to {padded} = 8 x {padded // 8})" in out, log
    _check_training(out, log, 6)
    assert "Adam mu/nu too: yes" in out, log  # Adam barely sees a gradient scale error
    m = re.search(r"Adam state \(mu, nu\) bytes per device: (\d+) sharded vs (\d+) "
                  r"replicated \(ratio ([0-9.]+); x8 = (\d+)", out)
    assert m, log
    sharded, replicated, ratio, padded_bytes = (int(m.group(1)), int(m.group(2)),
                                                float(m.group(3)), int(m.group(4)))
    assert replicated == 2 * 4 * n and padded_bytes == 2 * 4 * padded, log
    assert sharded * 8 == padded_bytes and sharded == 2 * 4 * (padded // 8), log
    assert abs(ratio - 1 / 8) < 1e-3, log
    assert "OK: ZeRO training matches single-device training" in out, log


@pytest.mark.parametrize("layers", [4, 8])
def test_pipeline_matches_single_device(layers):
    rc, out, log = _run("shard_map_pipeline.py", "--steps", "5", "--layers", str(layers))
    assert rc == 0, f"shard_map_pipeline.py exited {rc}:\n{log}"
    assert f"{layers} layers 16->16 on 4 stages ({layers // 4} per stage)" in out, log
    assert "6 microbatches of 8; 9 ticks" in out, log
    _check_training(out, log, 5)
    m = re.search(r"weight bytes per device: (\d+) .* vs (\d+) .*ratio ([0-9.]+)", out)
    assert m, log
    per_layer = 4 * (16 * 16 + 16)
    assert (int(m.group(1)), int(m.group(2))) == (layers // 4 * per_layer, layers * per_layer)
    assert float(m.group(3)) == 0.25, log
    assert "OK: pipeline training matches single-device training" in out, log


def test_too_few_devices_is_reported():
    rc, out, log = _run("shard_map_zero.py", "--steps", "1", devices=2)
    assert rc == 2 and "needs 8 devices, found 2" in out, log
