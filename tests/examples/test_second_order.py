"""examples/second_order.py runs as a script: the four Hessian-vector products agree (with
each other and with a closed-form numpy Hessian), and Newton's method converges
quadratically on the logistic loss."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "second_order.py")


def _run():
    env = dict(os.environ)
    # Find functrax from this checkout even when it is not pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"second_order.py exited {proc.returncode}:\n{out}"
    return proc.stdout


def test_second_order_hvps_agree_and_newton_converges_quadratically():
    out = _run()
    diffs = re.findall(r"max rel\. difference ([0-9.eE+-]+)", out)
    # 2 functions x (4 HVP variants + vmap-ed HVP) + closed form + the CG step
    assert len(diffs) == 12, out
    assert all(float(d) <= 1e-10 for d in diffs), out
    assert "all HVP variants agree: True" in out, out

    steps = re.findall(r"step (\d+): loss ([0-9.]+)\s+\|grad\| ([0-9.eE+-]+)", out)
    assert [int(s) for s, _, _ in steps] == list(range(7)), out
    losses = [float(loss) for _, loss, _ in steps]
    norms = [float(g) for _, _, g in steps]
    assert abs(losses[0] - 0.6931471805599453) < 1e-12, out  # log 2 at w = 0
    assert all(b <= a + 1e-15 for a, b in zip(losses, losses[1:])), out
    # quadratic convergence: |g_{k+1}| <= C |g_k|^2 once close, ending at round-off
    close = [(a, b) for a, b in zip(norms, norms[1:]) if 1e-9 < a < 1e-2]
    assert len(close) >= 2 and all(b <= 20.0 * a * a for a, b in close), out
    assert norms[-1] < 1e-12, out
    closed = float(re.search(r"closed-form numpy \|grad\| at the final weights: ([0-9.eE+-]+)",
                             out).group(1))
    assert closed < 1e-10, out
    assert "quadratic convergence: True" in out, out
