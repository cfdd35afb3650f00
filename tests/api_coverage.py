"""Coverage of JAX 0.10.2's public API (``tests/data/jax_api_names.json``, a copy of
``../shared/vectors/jax_api_names.json``) by functrax, per module.

``python -m tests.api_coverage`` prints, for every JAX module of the file, how many of its
target names the functrax module of the same path has, and the names it lacks, except those
listed in :data:`NOT_PROVIDED` with the reason (a reason is a promise to keep: the test
checks that each such name really is absent). ``tests/test_api_coverage.py`` prints the same
report and holds the modules whose issue has landed to their coverage targets.
"""
from __future__ import annotations

import importlib
import json
import os

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                       "jax_api_names.json")

# "jax.module.name" -> why functrax does not provide it
NOT_PROVIDED: dict = {
    "jax.debug_key_reuse": ("the key-reuse checker (JAX's static analysis of jaxprs for a key "
                            "consumed twice) is not implemented; errors.KeyReuseError exists "
                            "for it"),
    **dict.fromkeys(("jax.debug.inspect_array_sharding", "jax.debug.visualize_array_sharding",
                     "jax.debug.visualize_sharding"), "sharding: a later issue"),
    # (Mesh / NamedSharding / PartitionSpec, shard_map, make_array_*, jit's in/out_shardings
    # and lax.with_sharding_constraint landed with issue 18)
}


def load() -> dict:
    """JAX module -> its target names (the file's ``names``)."""
    with open(VECTORS, encoding="utf-8") as f:
        return {m: list(v["names"]) for m, v in json.load(f)["modules"].items()}


def functrax_module(jax_module: str):
    """The functrax counterpart of a JAX module path (``jax.numpy.fft`` ->
    ``functrax.numpy.fft``), or None when it does not exist."""
    name = "functrax" + jax_module[len("jax"):]
    try:
        return importlib.import_module(name)
    except ImportError:
        parent, _, leaf = name.rpartition(".")
        try:
            return getattr(importlib.import_module(parent), leaf, None)
        except ImportError:
            return None


def coverage(jax_module: str, names: list) -> tuple:
    """``(present, missing, excused)`` name lists of one module."""
    mod = functrax_module(jax_module)
    present, missing, excused = [], [], []
    for n in names:
        if mod is not None and hasattr(mod, n):
            present.append(n)
        elif f"{jax_module}.{n}" in NOT_PROVIDED:
            excused.append(n)
        else:
            missing.append(n)
    return present, missing, excused


def report(prefixes=None) -> str:
    """The per-module table (modules starting with one of ``prefixes``; all when None)."""
    rows, total, have = [], 0, 0
    for mod, names in load().items():
        if prefixes and not any(mod == p or mod.startswith(p + ".") for p in prefixes):
            continue
        present, missing, excused = coverage(mod, names)
        total += len(names)
        have += len(present)
        pct = 100.0 * len(present) / max(len(names), 1)
        line = f"{mod:42s} {len(present):4d}/{len(names):<4d} {pct:6.1f}%"
        if missing:
            shown = ", ".join(missing[:12]) + (" ..." if len(missing) > 12 else "")
            line += f"  missing: {shown}"
        if excused:
            line += f"  (not provided, with reasons: {len(excused)})"
        rows.append(line)
    rows.append(f"{'all':42s} {have:4d}/{total:<4d} {100.0 * have / max(total, 1):6.1f}%")
    return "\n".join(rows)


if __name__ == "__main__":
    print(report())
