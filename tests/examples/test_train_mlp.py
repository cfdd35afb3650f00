"""examples/train_mlp.py runs as a script, its loss goes down and it reaches its stated test
accuracy (a shortened run: 14 epochs, target 90%); it reports a missed target with exit
status 1; ``--plot`` writes a PNG, or says clearly that matplotlib is missing."""
import importlib.util
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "train_mlp.py")
EPOCH_RE = (r"epoch\s+(\d+)/(\d+)\s+loss ([0-9.]+)\s+train acc\s+([0-9.]+)%\s+"
            r"test loss ([0-9.]+)\s+test acc\s+([0-9.]+)%")


def _run(*args):
    env = dict(os.environ)
    # Find functrax from this checkout even when it is not pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stdout + proc.stderr


def test_train_mlp_reaches_target_accuracy(tmp_path):
    plot = tmp_path / "loss.png"
    rc, out, log = _run("--epochs", "14", "--seed", "1", "--target", "0.9",
                        "--batch-size", "128", "--lr", "0.01", "--plot", str(plot))
    assert rc == 0, f"train_mlp.py exited {rc}:\n{log}"
    assert "target: 90% test accuracy" in out, log
    epochs = re.findall(EPOCH_RE, out)
    assert [(int(e), int(n)) for e, n, *_ in epochs] == [(e, 14) for e in range(1, 15)], log
    losses = [float(row[2]) for row in epochs]
    assert losses[-1] < 0.5 * losses[0], log
    test_accs = [float(row[5]) for row in epochs]
    assert test_accs[-1] >= 90.0 and test_accs[-1] > test_accs[0], log
    final = re.search(r"final test accuracy: ([0-9.]+)% \(target 90%: reached\)", out)
    assert final and float(final.group(1)) == test_accs[-1], log

    if importlib.util.find_spec("matplotlib") is None:
        assert "matplotlib is not installed" in out and not plot.exists(), log
    else:
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", log


def test_train_mlp_reports_a_missed_target():
    rc, out, log = _run("--epochs", "1", "--seed", "0", "--target", "0.999")
    assert rc == 1, f"expected exit status 1 for a missed target, got {rc}:\n{log}"
    assert re.search(r"final test accuracy: [0-9.]+% \(target 99.9%: NOT reached\)", out), log
