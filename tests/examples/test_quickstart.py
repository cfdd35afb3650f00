"""examples/quickstart.py runs as a script and prints a jaxpr with a matmul in it."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICKSTART = os.path.join(ROOT, "examples", "quickstart.py")


def test_quickstart_runs_and_prints_jaxpr():
    env = dict(os.environ)
    # Find functrax from this checkout even when it is not pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, QUICKSTART], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"quickstart exited {proc.returncode}:\n{out}"
    assert "{ lambda" in proc.stdout, out
    assert "dot_general" in proc.stdout, out
    assert "agree: True" in proc.stdout, out
