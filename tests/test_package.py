"""Packaging checks: version, public API, no jax/torch imports, README and CI agree."""
import os
import re

import pytest

import functrax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED_DIRS = ("functrax", "tests", "examples", "benchmarks", "kernels")
FORBIDDEN_IMPORT = re.compile(r"^\s*(import|from)\s+(jax|torch)\b", re.MULTILINE)


def _read(relpath):
    with open(os.path.join(ROOT, relpath), encoding="utf-8") as f:
        return f.read()


def _python_files():
    for d in SCANNED_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, d)):
            dirnames[:] = [n for n in dirnames if n != "__pycache__"]
            for name in filenames:
                if name.endswith(".py"):
                    yield os.path.join(dirpath, name)


def _readme_commands():
    """The command lines of the README's first fenced code block."""
    match = re.search(r"^```[a-z]*\n(.*?)^```", _read("README.md"), re.MULTILINE | re.DOTALL)
    assert match, "README.md has no fenced code block"
    return [line.strip() for line in match.group(1).splitlines() if line.strip()]


def test_version():
    assert isinstance(functrax.__version__, str)
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", functrax.__version__), functrax.__version__


@pytest.mark.parametrize("name", ["make_jaxpr", "eval_shape", "numpy", "lax", "tree_util"])
def test_public_api(name):
    assert hasattr(functrax, name), f"functrax.{name} is missing"


def test_public_submodules_are_the_modules():
    import functrax.lax
    import functrax.numpy
    import functrax.tree_util
    assert functrax.numpy.__name__ == "functrax.numpy"
    assert functrax.lax.__name__ == "functrax.lax"
    assert functrax.tree_util.__name__ == "functrax.tree_util"
    assert callable(functrax.make_jaxpr) and callable(functrax.eval_shape)


@pytest.mark.parametrize("text, forbidden", [
    ("import jax\n", True), ("import torch.nn as nn\n", True),
    ("x = 1\n  from jax import numpy as jnp\n", True), ("from torch import tensor\n", True),
    ("import jaxlib_free_module\n", False), ("# we do not import jax here\n", False),
    ("import numpy as np\n", False), ("from functrax import lax\n", False),
])
def test_forbidden_import_pattern(text, forbidden):
    assert bool(FORBIDDEN_IMPORT.search(text)) == forbidden


# the one file that may import jax: the benchmark against JAX, whose JAX worker runs in a
# separate environment given by hand (JAX is never a dependency of functrax or its tests)
JAX_BENCHMARK = os.path.join("benchmarks", "vs_jax.py")


def test_no_jax_or_torch_imports():
    files = list(_python_files())
    assert any(f.endswith(os.path.join("functrax", "core", "jaxpr.py")) for f in files)
    offenders = []
    for path in files:
        if os.path.relpath(path, ROOT) == JAX_BENCHMARK:
            text = _read(JAX_BENCHMARK)
            assert "torch" not in text and "import functrax" in text  # still functrax's
            continue
        with open(path, encoding="utf-8") as f:
            for m in FORBIDDEN_IMPORT.finditer(f.read()):
                offenders.append(f"{os.path.relpath(path, ROOT)}: {m.group(0).strip()}")
    assert not offenders, "jax/torch must never be imported:\n" + "\n".join(offenders)


def test_readme_opens_with_the_two_commands():
    commands = _readme_commands()
    assert commands == [
        'pip install -e ".[examples]" && python examples/train_cnn.py',
        'pip install -e ".[test,examples]" && python -m pytest',
    ], commands


def test_ci_runs_the_readme_test_command():
    test_command = _readme_commands()[1]
    ci = _read(os.path.join(".ci", "run"))
    ci_lines = [line for line in ci.splitlines() if not line.lstrip().startswith("#")]
    assert any(test_command in line for line in ci_lines), (
        f".ci/run does not run the README's test command {test_command!r}")
    assert "set -euo pipefail" in ci
    assert os.access(os.path.join(ROOT, ".ci", "run"), os.X_OK), ".ci/run is not executable"


def test_readme_python_scripts_run(tmp_path, monkeypatch):
    """Every ```python block of the README that is a script (not a doctest) runs as shown."""
    blocks = re.findall(r"^```python\n(.*?)^```", _read("README.md"), re.MULTILINE | re.DOTALL)
    scripts = [b for b in blocks if not b.lstrip().startswith(">>>")]
    assert scripts, "the README has no script example"
    monkeypatch.chdir(tmp_path)  # the examples may write files (checkpoints)
    for code in scripts:
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
