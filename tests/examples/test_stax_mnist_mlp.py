"""examples/stax_mnist_mlp.py runs as a script at a tiny size (a narrow MLP, a few hundred
examples): one progress line per epoch, the loss falls and the accuracy ends well above
chance (10%)."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "stax_mnist_mlp.py")
EPOCH_RE = (r"epoch (\d+)/(\d+)\s+loss ([0-9.]+)\s+train acc\s+([0-9.]+)%\s+"
            r"test acc\s+([0-9.]+)%")


def test_stax_mnist_mlp_learns():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, SCRIPT, "--hidden", "64", "--train-size", "512",
                           "--test-size", "256", "--batch-size", "64", "--epochs", "4"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "MLP 784-64-64-10" in proc.stdout, log
    epochs = re.findall(EPOCH_RE, proc.stdout)
    assert [(int(e), int(n)) for e, n, *_ in epochs] == [(e, 4) for e in range(1, 5)], log
    losses = [float(row[2]) for row in epochs]
    train_acc = [float(row[3]) for row in epochs]
    test_acc = [float(row[4]) for row in epochs]
    assert losses[-1] < 0.6 * losses[0], log
    assert train_acc[-1] > 60.0 and train_acc[-1] > train_acc[0], log
    assert test_acc[-1] > 35.0, log
