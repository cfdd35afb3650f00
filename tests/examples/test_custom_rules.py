"""examples/custom_rules.py runs as a script and its custom_jvp / custom_vjp rules produce the
expected values under grad, vmap and jit (checked here again against numpy)."""
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "custom_rules.py")
TRANSFORMS = ("[grad(f)(x) for x in xs]", "vmap(grad(f))(xs)", "jit(vmap(grad(f)))(xs)")


def _run():
    env = dict(os.environ)
    # Find functrax from this checkout even when it is not pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"custom_rules.py exited {proc.returncode}:\n{out}"
    return proc.stdout


def _sections(out):
    """``{section title: {row label: numpy array}}`` from the script's printed tables."""
    sections, current = {}, None
    for line in out.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = sections.setdefault(line[:-1], {})
        m = re.match(r"  (\S.*?)\s{2,}\[(.*)\]$", line)
        if m and current is not None:
            current[m.group(1)] = np.array(m.group(2).split(), dtype=np.float64)
    return sections


def _section(sections, prefix):
    (title,) = [t for t in sections if t.startswith(prefix)]
    return sections[title]


def test_custom_rules_values_under_grad_vmap_jit():
    out = _run()
    assert "all values as expected" in out and "MISMATCH" not in out, out
    sections = _sections(out)
    xs = np.array([-100.0, -3.0, 0.0, 0.5, 3.0, 100.0])
    sigmoid = 0.5 * (1.0 + np.tanh(0.5 * xs))

    naive = _section(sections, "naive")
    stable = _section(sections, "stable")
    custom = _section(sections, "custom_jvp softplus")
    for label in TRANSFORMS:
        assert np.isnan(naive[label][-1]), out  # the naive gradient at x = 100
        assert stable[label][2] == 0.0, out  # the kinks cancel at x = 0
        np.testing.assert_allclose(custom[label], sigmoid, rtol=1e-3, atol=1e-4)
    assert np.isinf(naive["vmap(f)(xs)"][-1]), out
    np.testing.assert_allclose(custom["vmap(f)(xs)"], np.logaddexp(xs, 0.0), rtol=1e-3,
                               atol=1e-4)
    np.testing.assert_allclose(custom["jit(vmap(grad(grad(f))))(xs)"],
                               sigmoid * (1 - sigmoid), rtol=1e-3, atol=1e-4)

    ts = np.linspace(0.0, 6.0, 7)
    clipped = _section(sections, "3 * sin(clip_gradient")
    for label in TRANSFORMS:
        np.testing.assert_allclose(clipped[label], np.clip(3 * np.cos(ts), -1, 1),
                                   rtol=1e-3, atol=1e-4)

    xr = np.array([-1.6, -0.5, 0.2, 0.5, 1.4, 2.5])
    assert all((_section(sections, "round(x)")[label] == 0).all() for label in TRANSFORMS)
    assert all((_section(sections, "round_ste(x):")[label] == 1).all() for label in TRANSFORMS)
    squared = _section(sections, "round_ste(x) ** 2")
    for label in TRANSFORMS:
        np.testing.assert_array_equal(squared[label], 2 * np.round(xr))

    plain = re.search(r"fit with round: +loss ([0-9.]+) -> ([0-9.]+)", out)
    ste = re.search(r"fit with round_ste: loss ([0-9.]+) -> ([0-9.]+)", out)
    assert plain.group(1) == plain.group(2), out  # zero gradient: no progress
    assert float(ste.group(2)) < 0.01 * float(ste.group(1)), out
