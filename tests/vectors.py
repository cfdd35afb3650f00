"""Where the JAX reference vectors are: ``../shared/vectors/`` beside the clone when it is
there (the project's reference data), else the copies in ``tests/data/`` (kept in the
repository so a clone anywhere runs every check instead of skipping it; identical, except that
the copy of ``jax_jaxprs.md`` keeps only the printed output, not the JAX script above it)."""
from __future__ import annotations

import pathlib

_HERE = pathlib.Path(__file__).resolve().parent
SHARED = _HERE.parent.parent / "shared" / "vectors"
LOCAL = _HERE / "data"


def vector_path(name: str) -> pathlib.Path:
    """The reference file ``name`` (e.g. ``"jax_jaxprs.md"``)."""
    shared = SHARED / name
    return shared if shared.exists() else LOCAL / name
