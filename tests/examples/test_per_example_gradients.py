"""examples/per_example_gradients.py runs as a script: vmap(grad) per-example gradients agree
with a Python loop of grad, and the DP-SGD steps lower the loss."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "per_example_gradients.py")


def test_per_example_gradients_runs_and_agrees():
    env = dict(os.environ)
    # Find functrax from this checkout even when it is not pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"example exited {proc.returncode}:\n{out}"
    assert "agree: True" in proc.stdout, out
    diffs = re.findall(r"max abs difference[^:]*: ([0-9.eE+-]+)", proc.stdout)
    assert len(diffs) == 2 and all(float(d) <= 1e-5 for d in diffs), out
    assert "(64, 8, 32)" in proc.stdout, out  # one gradient per example, batch axis first
    before = float(re.search(r"mean loss before DP-SGD: ([0-9.]+)", proc.stdout).group(1))
    after = float(re.search(r"mean loss after 5 DP-SGD steps: ([0-9.]+)", proc.stdout).group(1))
    assert after < before, out
