"""examples/train_mlp.py runs as a script, trains, and its loss goes down."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "train_mlp.py")


def _run(*args):
    env = dict(os.environ)
    # Find functrax from this checkout even when it is not pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"train_mlp.py exited {proc.returncode}:\n{out}"
    return proc.stdout


def test_train_mlp_loss_decreases_and_reports_accuracy():
    out = _run("--epochs", "4", "--seed", "1")
    epochs = re.findall(r"epoch\s+(\d+)/4\s+loss ([0-9.]+)\s+train acc\s+([0-9.]+)%", out)
    assert [int(e) for e, _, _ in epochs] == [1, 2, 3, 4], out
    losses = [float(loss) for _, loss, _ in epochs]
    assert losses[-1] < 0.9 * losses[0], out
    accuracies = [float(acc) for _, _, acc in epochs]
    assert accuracies[-1] > accuracies[0], out
    assert re.search(r"final test accuracy: [0-9.]+%", out), out
