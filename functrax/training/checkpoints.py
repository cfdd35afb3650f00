"""Training checkpoints: save and restore pytrees of arrays atomically, with verification.

(Not to be confused with :func:`functrax.checkpoint`, which is rematerialization.)

Format. A checkpoint is a directory (``<dir>/step_<08d>/`` under a
:class:`CheckpointManager`) holding one ``.npy`` file per array leaf and a
``manifest.json``: the format name and version, the step, the user's metadata and metrics, the
tree's structure, and per leaf its key path (``keystr`` form and a structured
``[[kind, key], ...]`` form), its file name, shape, dtype name, stored dtype, byte size and the
sha256 of its file. Why this format:

- ``.npy`` + JSON is readable by any numpy (``np.load(f, allow_pickle=False)``) and any JSON
  reader, without functrax: a checkpoint outlives the code that wrote it;
- it needs no dependency beyond numpy (ml_dtypes only for their dtypes);
- it never executes code: nothing is pickled, files are loaded with ``allow_pickle=False``
  after their size and sha256 were checked against the manifest, and no class is imported
  by name (NamedTuples come back as look-alike namedtuples unless a ``target`` gives the real
  types).

Dtypes ``.npy`` cannot describe without pickle (bfloat16 and the other ml_dtypes) are stored as
the unsigned int of the same width, the real dtype in the manifest, and restored bit-exactly.
Python scalar leaves (bool/int/float/str: a step counter, a data-iterator position) live in the
manifest (floats as ``float.hex``) and come back as the same Python type. Typed PRNG key arrays
are stored as their key data plus the implementation's name and come back as key arrays; raw
``uint32`` keys are ordinary arrays.

Guarantees. A save writes into a temporary sibling directory (``.tmp-step_...``), fsyncs every
file, writes the manifest last, renames the directory into place and fsyncs the parent: a
crash never leaves a checkpoint that looks complete (one without a manifest is "not a complete
checkpoint", temporary directories are ignored and a new manager removes them). A restore
checks every file's size and sha256 and every leaf's shape and dtype.

>>> import tempfile, numpy as np
>>> with tempfile.TemporaryDirectory() as d:
...     with CheckpointManager(d, keep_last=2) as mgr:
...         for step in range(3):
...             mgr.save(step, {"w": np.full(2, step, np.float32), "step": step})
...         mgr.wait_until_finished()
...         mgr.all_steps(), mgr.restore()
([1, 2], {'step': 2, 'w': array([2., 2.], dtype=float32)})
"""
from __future__ import annotations

from functrax.training import checkpoints_io as cio
from functrax.training.checkpoints_format import CheckpointError, check_step, snapshot, to_json
from functrax.training.checkpoints_manager import CheckpointManager

__all__ = ["CheckpointError", "CheckpointManager", "read_manifest", "restore_checkpoint",
           "save_checkpoint"]


# --- one checkpoint directory ---


def save_checkpoint(directory, tree, *, step=None, metadata=None) -> str:
    """Saves ``tree`` atomically as the checkpoint directory ``directory``.

    Args:
      directory: the checkpoint's directory; it must not exist (its parent is created).
      tree: a pytree of arrays (functrax or numpy), numpy scalars, typed PRNG keys and Python
        bool/int/float/str, in dicts (str keys), lists, tuples, NamedTuples, None and
        registered pytree nodes.
      step: optional int recorded in the manifest.
      metadata: optional JSON-serializable data recorded in the manifest.
    Returns:
      The checkpoint's absolute path.
    Raises:
      FileExistsError: if ``directory`` exists.
      TypeError: for an unsupported leaf (naming its key path) or non-JSON metadata.

    >>> import os, tempfile, numpy as np
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = save_checkpoint(os.path.join(d, "ckpt"), {"w": np.ones(2)}, step=3)
    ...     restore_checkpoint(path)
    {'w': array([1., 1.])}
    """
    fn = "save_checkpoint"
    snap = snapshot(tree, copy=False, fn=fn)
    meta = to_json(metadata, what="metadata", fn=fn)
    return cio.write_checkpoint(directory, snap, step=check_step(step, fn, optional=True),
                                metadata=meta, metrics=None, fn=fn)


def read_manifest(directory) -> dict:
    """The manifest of a checkpoint directory (step, metadata, metrics, leaves) as a dict.

    Raises:
      FileNotFoundError: if ``directory`` does not exist.
      CheckpointError: if it is not a complete checkpoint or its manifest is malformed.

    >>> import os, tempfile, numpy as np
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = save_checkpoint(os.path.join(d, "c"), [np.int32(1)], metadata={"lr": 0.1})
    ...     m = read_manifest(path)
    >>> m["metadata"], m["leaves"][0]["path"], m["leaves"][0]["dtype"]
    ({'lr': 0.1}, '[0]', 'int32')
    """
    return cio.read_manifest(directory, fn="read_manifest")


def restore_checkpoint(directory, target=None):
    """Restores the checkpoint in ``directory``, verifying every file.

    Args:
      directory: a checkpoint directory written by :func:`save_checkpoint` or a manager.
      target: optional pytree giving the expected structure: its leaves are arrays (functrax
        or numpy), ``ShapeDtypeStruct``s, numpy scalars, typed PRNG keys or Python scalars.
        Leaves are matched by key path; each must exist with the target's shape and dtype.
    Returns:
      With ``target``: a tree of the target's structure (functrax arrays for functrax arrays
      and ShapeDtypeStructs, numpy for numpy). Without: the saved tree rebuilt from the
      manifest as dicts, lists, tuples and namedtuple look-alikes (registered nodes as dicts
      or lists), with leaves of their saved types.
    Raises:
      FileNotFoundError: if ``directory`` does not exist.
      CheckpointError: for an incomplete checkpoint (no manifest), a missing, truncated,
        corrupted or pickled file, or a leaf missing from / extra to / mismatching ``target``
        (naming the key path, expected and found shape/dtype, and the file).

    >>> import os, tempfile, numpy as np
    >>> import functrax.numpy as fnp
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = save_checkpoint(os.path.join(d, "c"), {"w": fnp.zeros(2), "n": 4})
    ...     restore_checkpoint(path, target={"w": fnp.ones(2), "n": 0})
    {'n': 4, 'w': Array([0., 0.], dtype=float32)}
    """
    return cio.restore(directory, target, fn="restore_checkpoint")
