"""examples/train_transformer.py: a character-level transformer on the standard library's
sources. As a script (a tiny, short run): the loss falls clearly, a sample is printed and the
run directory gets its config, metrics and checkpoint. As a module: the model maps
``(seq,)`` tokens to ``(seq, vocab)`` logits and is causal (a later token never changes the
logits at earlier positions), and generation extends the prompt by the requested length.

BLAS is pinned to one thread for the subprocess: on a small shared machine, OpenBLAS's
multi-threaded small products are much slower."""
import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import random

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "train_transformer.py")
LOSS_RE = r"^loss: start ([0-9.]+) -> end ([0-9.]+)"


@pytest.fixture(scope="module")
def example():
    name = "_example_train_transformer"
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while building classes
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)


def _run(*args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONIOENCODING="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=300, env=env, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stdout + proc.stderr


def test_script_trains_and_samples(tmp_path):
    workdir = tmp_path / "run"
    rc, out, log = _run("--steps", "200", "--batch", "16", "--seq-len", "32", "--d-model", "32",
                        "--layers", "1", "--heads", "2", "--sample-chars", "80", "--seed", "0",
                        "--log-every", "50", "--workdir", str(workdir))
    assert rc == 0, f"train_transformer.py exited {rc}:\n{log}"
    vocab = re.search(r"vocabulary (\d+) characters", out)
    assert vocab and int(vocab.group(1)) > 50, log
    assert "1 layers, d_model 32, 2 heads, seq_len 32" in out, log

    m = re.search(LOSS_RE, out, re.M)
    assert m, log
    start, end = float(m.group(1)), float(m.group(2))
    # an untrained model predicts about uniformly: ln(vocab)
    assert abs(start - np.log(int(vocab.group(1)))) < 0.5, log
    assert end < start - 1.5 and end < 0.65 * start, log

    sample = re.search(r"^sample \(temperature [0-9.]+, 80 characters.*?\n-{60}\n(.*)\n-{60}$",
                       out, re.M | re.S)
    assert sample, log
    text = sample.group(1)
    assert text.startswith("def ") and len(text) == len("def ") + 80, log

    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 50, 100, 150, 200], log
    assert records[-1]["loss"] < records[0]["loss"], log
    config = json.loads((workdir / "config.json").read_text())["config"]
    assert config["steps"] == 200 and config["d_model"] == 32, config
    assert (workdir / "checkpoints" / "step_200").is_dir(), log


def test_model_shape_and_causality(example):
    vocab, seq = 11, 8
    model = example.make_model(vocab, seq_len=seq, d_model=16, layers=2, heads=2, seed=3)
    tokens = np.array([1, 4, 2, 7, 0, 9, 3, 5], np.int32)
    logits = np.asarray(model(fnp.asarray(tokens)))
    assert logits.shape == (seq, vocab)
    assert np.all(np.isfinite(logits))

    changed = tokens.copy()
    changed[5] = 10
    logits2 = np.asarray(model(fnp.asarray(changed)))
    np.testing.assert_allclose(logits2[:5], logits[:5], rtol=0, atol=1e-6)
    assert np.abs(logits2[5:] - logits[5:]).max() > 1e-4  # the changed token is seen

    # a shorter sequence gives the logits of the prefix (learned positions from 0)
    short = np.asarray(model(fnp.asarray(tokens[:5])))
    np.testing.assert_allclose(short, logits[:5], rtol=1e-5, atol=1e-5)

    # batched through vmap, as in training
    batched = np.asarray(functrax.vmap(model)(fnp.asarray(np.stack([tokens, changed]))))
    np.testing.assert_allclose(batched[0], logits, rtol=1e-5, atol=1e-5)


def test_generate_extends_the_prompt(example):
    vocab = example.Vocab("def abc(x):\n    return x\n")
    model = example.make_model(len(vocab), seq_len=8, d_model=16, layers=1, heads=2)
    out = example.generate(model, vocab, "def ", 12, random.key(0), temperature=1.0)
    assert out.startswith("def ") and len(out) == 16
    assert set(out) <= set(vocab.chars)
    # the prompt may be longer than the window: only the last seq_len characters are used
    out = example.generate(model, vocab, "def abc(x): ret", 3, random.key(1))
    assert len(out) == len("def abc(x): ret") + 3


def test_loss_starts_near_uniform(example):
    vocab = 40
    model = example.make_model(vocab, seq_len=16, d_model=16, layers=1, heads=2)
    windows = fnp.asarray(np.random.default_rng(0).integers(0, vocab, (4, 17)).astype(np.int32))
    loss = float(example.loss_fn(model, windows))
    assert abs(loss - np.log(vocab)) < 0.2
