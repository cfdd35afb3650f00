"""examples/rnn_scan.py runs as a script, trains its scan RNN, and the loss goes down."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "rnn_scan.py")


def _run(*args):
    env = dict(os.environ)
    # Find functrax from this checkout even when it is not pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"rnn_scan.py exited {proc.returncode}:\n{out}"
    return proc.stdout


def test_rnn_scan_loss_decreases():
    out = _run("--epochs", "4", "--seed", "1", "--train", "1024")
    epochs = re.findall(r"epoch\s+(\d+)/4\s+loss ([0-9.]+)\s+test acc\s+([0-9.]+)%", out)
    assert [int(e) for e, _, _ in epochs] == [1, 2, 3, 4], out
    losses = [float(loss) for _, loss, _ in epochs]
    assert losses[-1] < 0.7 * losses[0], out
    assert float(epochs[-1][2]) > 80.0, out  # signs of the running sum mostly right
