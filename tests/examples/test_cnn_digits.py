"""examples/cnn_digits.py runs as a script, briefly: the loss falls and the test accuracy beats
chance (10%) clearly, on scikit-learn's digits when installed, else on the synthetic stand-in
(which the script announces); ``--data sklearn`` without scikit-learn is a clear error.

BLAS is pinned to one thread: on a small machine shared with other jobs, OpenBLAS's
multi-threaded small products run many times slower (its threads spin waiting for cores)."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "cnn_digits.py")
STEP_RE = r"step\s+(\d+)/(\d+)\s+loss ([0-9.]+)"
HAVE_SKLEARN = importlib.util.find_spec("sklearn") is not None


def _run(*args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stdout + proc.stderr


def test_cnn_digits_learns():
    rc, out, log = _run("--steps", "150", "--log-every", "50", "--batch-size", "64",
                        "--lr", "0.01", "--seed", "0")
    assert rc == 0, log
    if HAVE_SKLEARN:
        assert "scikit-learn digits: 1438 train / 359 test images" in out, log
    else:
        assert "scikit-learn is not installed: using synthetic 8x8 digits" in out, log
        assert "synthetic digits: 1438 train / 359 test images" in out, log
    assert "CNN conv16-pool-conv32-pool-dense10, batch 64" in out, log
    steps = re.findall(STEP_RE, out)
    assert [(int(s), int(n)) for s, n, _ in steps] == [(50, 150), (100, 150), (150, 150)], log
    losses = [float(loss) for *_, loss in steps]
    assert losses[-1] < 0.5 * losses[0], log
    acc = re.search(r"^test accuracy: ([0-9.]+)%", out, re.M)
    assert acc and float(acc.group(1)) > 60.0, log


@pytest.mark.skipif(HAVE_SKLEARN, reason="scikit-learn is installed")
def test_cnn_digits_asks_for_sklearn_when_told_to_use_it():
    rc, out, log = _run("--data", "sklearn", "--steps", "1")
    assert rc != 0 and "--data sklearn: scikit-learn is not installed" in log, log
