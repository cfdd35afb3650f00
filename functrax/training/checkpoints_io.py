"""Writing and reading checkpoint directories: atomic saves, verified loads.

:func:`write_checkpoint` writes a :class:`~functrax.training.checkpoints_format.Snapshot`
into a temporary sibling directory, fsyncs every file, writes ``manifest.json`` last, renames
the directory into place and fsyncs its parent. :func:`read_manifest` and :func:`restore_leaf`
read it back, checking every file's size and sha256 before parsing it with
``np.load(..., allow_pickle=False)``. The public API is :mod:`functrax.training.checkpoints`.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import secrets
import shutil
import time

import numpy as np

from functrax import dtypes, tree_util
from functrax.core import Array, is_concrete_array
from functrax.core.tracing import ShapeDtypeStruct
from functrax.training.checkpoints_format import (
    FORMAT_NAME, FORMAT_VERSION, CheckpointError, Snapshot, build_tree, describe_entry,
    dtype_from_name, key_array, key_json, python_value, to_functrax, where,
)

MANIFEST = "manifest.json"
TMP_PREFIX = ".tmp-"
NPY_MAGIC = b"\x93NUMPY"


# --- writing ---


class _HashingWriter:
    """A write-only file wrapper counting the bytes and hashing them as they are written."""

    def __init__(self, f):
        self.f, self.size, self.sha256 = f, 0, hashlib.sha256()

    def write(self, b):
        self.sha256.update(b)
        self.size += len(b)
        return self.f.write(b)


def _write_leaf(dirpath: str, filename: str, array: np.ndarray) -> tuple[int, str]:
    """Writes ``array`` with ``np.save`` (no pickle) to ``dirpath/filename`` and fsyncs it.

    Returns: the file's size in bytes and its sha256 (hex).
    """
    with open(os.path.join(dirpath, filename), "xb") as f:
        w = _HashingWriter(f)
        np.save(w, array, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    return w.size, w.sha256.hexdigest()


def _write_manifest(dirpath: str, manifest: dict) -> None:
    """Writes ``manifest.json`` (the last file of a checkpoint) and fsyncs it."""
    with open(os.path.join(dirpath, MANIFEST), "x", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())


def fsync_dir(path: str) -> None:
    """fsyncs a directory (its entries); a no-op where directories cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _file_name(i: int, path) -> str:
    """``00003.params.w.npy``: the leaf's index, then its key path made file-name safe."""
    readable = tree_util.keystr(path, simple=True, separator=".")
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", readable).strip("._")[:80]
    return f"{i:05d}.{readable}.npy" if readable else f"{i:05d}.npy"


def make_tmp_dir(parent: str, name: str) -> str:
    """A new, empty ``.tmp-<name>-<random>`` directory in ``parent``."""
    while True:
        tmp = os.path.join(parent, f"{TMP_PREFIX}{name}-{secrets.token_hex(4)}")
        try:
            os.mkdir(tmp)
            return tmp
        except FileExistsError:
            continue


def write_checkpoint(directory: str, snap: Snapshot, *, step, metadata, metrics,
                     fn: str) -> str:
    """Writes ``snap`` atomically as the checkpoint directory ``directory``.

    Returns: the checkpoint's absolute path.
    Raises:
      FileExistsError: if ``directory`` exists. OSError: from the file system (the temporary
        directory is removed then; a crash leaves it behind, never a complete-looking one).
    """
    final = os.path.abspath(os.fspath(directory))
    parent, name = os.path.split(final)
    if os.path.lexists(final):
        raise FileExistsError(f"{fn}: {final} already exists; a checkpoint is never "
                              "overwritten. Delete it first or save under another name/step.")
    os.makedirs(parent, exist_ok=True)
    tmp = make_tmp_dir(parent, name)
    try:
        entries = []
        for i, leaf in enumerate(snap.leaves):
            entry = {"path": where(leaf.path) if leaf.path else "",
                     "key_path": [key_json(k, leaf.path, fn) for k in leaf.path], **leaf.info}
            if leaf.data is not None:
                entry["file"] = _file_name(i, leaf.path)
                entry["bytes"], entry["sha256"] = _write_leaf(tmp, entry["file"], leaf.data)
            entries.append(entry)
        manifest = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "step": step,
                    "time": time.time(), "metadata": metadata, "metrics": metrics,
                    "structure": snap.structure, "leaves": entries}
        _write_manifest(tmp, manifest)
        fsync_dir(tmp)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(parent)
    return final


# --- reading and verifying ---


def read_manifest(directory, *, fn: str) -> dict:
    """The parsed and checked manifest of the checkpoint directory ``directory``.

    Raises:
      FileNotFoundError: if ``directory`` does not exist.
      CheckpointError: if it has no manifest (not a complete checkpoint) or a bad one.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{fn}: no checkpoint directory at {directory!r}")
    path = os.path.join(directory, MANIFEST)
    if not os.path.isfile(path):
        raise CheckpointError(
            f"{fn}: {directory!r} is not a complete checkpoint: it has no {MANIFEST} (the "
            "manifest is written last, so an interrupted save leaves none). Restore another "
            "checkpoint, e.g. CheckpointManager(...).latest_step().")
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{fn}: the manifest {path} is corrupted ({e})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT_NAME:
        raise CheckpointError(f"{fn}: {path} is not a functrax checkpoint manifest (its "
                              f"'format' is not {FORMAT_NAME!r})")
    version = m.get("format_version")
    if type(version) is not int or version > FORMAT_VERSION:
        raise CheckpointError(f"{fn}: {path} has format version {version!r}; this functrax "
                              f"reads versions up to {FORMAT_VERSION}: upgrade functrax")
    if not isinstance(m.get("leaves"), list) or not isinstance(m.get("structure"), dict):
        raise CheckpointError(f"{fn}: the manifest {path} is malformed (no 'leaves' list or "
                              "'structure')")
    return m


def _leaf_file(directory: str, entry: dict, fn: str) -> str:
    name = entry.get("file")
    if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", ".."):
        raise CheckpointError(f"{fn}: leaf {entry.get('path')!r} of {directory!r} names the "
                              f"file {name!r}, which is not a file inside the checkpoint")
    return os.path.join(directory, name)


def _check_bytes(data: bytes, entry: dict, path: str, fn: str) -> None:
    """Raises CheckpointError unless ``data`` has the manifest's size and sha256."""
    leaf = entry.get("path")
    size, want = len(data), entry.get("bytes")
    if size != want:
        what = "truncated" if isinstance(want, int) and size < want else "the wrong size"
        raise CheckpointError(f"{fn}: file {path} (leaf {leaf}) is {what}: it has {size} bytes, "
                              f"the manifest records {want}. The checkpoint is damaged; "
                              "restore another step.")
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.get("sha256"):
        raise CheckpointError(f"{fn}: file {path} (leaf {leaf}) is corrupted: its sha256 is "
                              f"{digest}, the manifest records {entry.get('sha256')}. The "
                              "checkpoint is damaged; restore another step.")


def load_array(directory: str, entry: dict, *, fn: str) -> np.ndarray:
    """The verified data of an array leaf, in its real dtype (never unpickles).

    Raises:
      CheckpointError: for a missing, truncated, corrupted or unsafe file, or one that does
        not hold the manifest's shape/dtype.
    """
    path = _leaf_file(directory, entry, fn)
    leaf = entry.get("path")
    dtype = dtype_from_name(entry.get("dtype"), what=f"{fn}: leaf {leaf}")
    stored = dtype_from_name(entry.get("stored_dtype"), what=f"{fn}: leaf {leaf}")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise CheckpointError(f"{fn}: file {path} of leaf {leaf} is missing; the checkpoint "
                              "is damaged: restore another step.") from None
    _check_bytes(data, entry, path, fn)
    if not data.startswith(NPY_MAGIC):
        raise CheckpointError(f"{fn}: file {path} (leaf {leaf}) is not a .npy file")
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise CheckpointError(f"{fn}: file {path} (leaf {leaf}) cannot be read without "
                              f"unpickling or is malformed ({e}); checkpoints are never "
                              "unpickled, so it cannot be restored.") from None
    shape = tuple(entry.get("shape") or ())
    if arr.dtype != stored or arr.shape != shape:
        raise CheckpointError(f"{fn}: file {path} (leaf {leaf}) holds {arr.dtype}{list(arr.shape)}"
                              f" but the manifest records {stored.name}{list(shape)}")
    if stored != dtype:
        if stored.itemsize != dtype.itemsize:
            raise CheckpointError(f"{fn}: leaf {leaf}: stored dtype {stored} cannot hold "
                                  f"{dtype} bit-exactly (different widths)")
        arr = arr.view(dtype)
    return arr


# --- restoring one leaf ---


def restore_leaf(directory: str, entry: dict, *, fn: str, as_type: str | None = None):
    """The restored value of one manifest entry; ``as_type`` ("functrax", "numpy",
    "numpy_scalar") overrides the saved array type (a target's choice)."""
    kind = entry.get("kind")
    if kind == "python":
        return python_value(entry, fn=fn)
    if kind not in ("array", "numpy_scalar", "prng_key"):
        raise CheckpointError(f"{fn}: leaf {entry.get('path')} has unknown kind {kind!r}")
    value = load_array(directory, entry, fn=fn)
    if kind == "prng_key":
        return key_array(value, entry, fn)
    as_type = as_type or ("numpy_scalar" if kind == "numpy_scalar" else entry.get("array_type"))
    if as_type == "functrax":
        file = entry.get("file")
        return to_functrax(value, bool(entry.get("weak_type")), f"leaf {entry.get('path')} "
                           f"(file {os.path.join(directory, file)})", fn)
    return value[()] if as_type == "numpy_scalar" else value


# --- restoring a tree ---


def restore(directory, target, *, fn: str, expect_step=None):
    """The tree saved in ``directory``: rebuilt from the manifest, or into ``target``'s
    structure after checking every leaf (see ``restore_checkpoint``).

    Raises:
      FileNotFoundError / CheckpointError: see :func:`read_manifest`, :func:`load_array`;
        CheckpointError also for a manifest of another step or a mismatch with ``target``.
    """
    directory = os.fspath(directory)
    manifest = read_manifest(directory, fn=fn)
    if expect_step is not None and manifest.get("step") != expect_step:
        raise CheckpointError(f"{fn}: {directory!r} holds step {manifest.get('step')!r} "
                              f"according to its manifest, not {expect_step}")
    entries = manifest["leaves"]
    if target is None:
        leaves = [restore_leaf(directory, e, fn=fn) for e in entries]
        return build_tree(manifest["structure"], leaves, where_=repr(directory), fn=fn)
    pairs, treedef = tree_util.tree_flatten_with_path(target)
    by_path = {e.get("path") or "<root>": e for e in entries if isinstance(e, dict)}
    plan = _match_target(pairs, by_path, directory, fn)
    return treedef.unflatten([restore_leaf(directory, e, fn=fn, as_type=t) for t, e in plan])


# --- restoring into a target ---


def _target_kind(t, path, fn):
    """``(kind, shape, dtype, as_type)`` a target leaf expects."""
    if type(t) in (bool, int, float, str):
        return "python", None, type(t).__name__, None
    if isinstance(t, Array) and not is_concrete_array(t):
        raise TypeError(f"{fn}: target leaf {where(path)} is a traced value; pass concrete "
                        "arrays or ShapeDtypeStructs as target.")
    if isinstance(t, (Array, ShapeDtypeStruct)):
        if dtypes.issubdtype(t.dtype, dtypes.prng_key):
            return "prng_key", tuple(t.shape), t.dtype.impl.name, None
        return "array", tuple(t.shape), np.dtype(t.dtype), "functrax"
    if isinstance(t, np.ndarray):
        return "array", t.shape, t.dtype, "numpy"
    if isinstance(t, np.generic):
        return "array", (), t.dtype, "numpy_scalar"
    raise TypeError(f"{fn}: target leaf {where(path)} has type {type(t).__name__}; "
                    "target leaves must be arrays, ShapeDtypeStructs, numpy scalars, typed "
                    "PRNG keys or Python bool/int/float/str.")


def _describe_target(kind, shape, dtype, as_type) -> str:
    if kind == "python":
        return f"Python {dtype}"
    if kind == "prng_key":
        return f"PRNG key array{list(shape)} ({dtype})"
    return f"{np.dtype(dtype).name}{list(shape)} ({as_type.replace('_', ' ')})"


def _mismatch(kind, shape, dtype, entry) -> bool:
    found = entry.get("kind")
    if kind == "python":
        return found != "python" or entry.get("python_type") != dtype
    if kind == "prng_key":
        return (found != "prng_key" or tuple(entry.get("key_shape") or ()) != shape
                or entry.get("impl") != dtype)
    return (found not in ("array", "numpy_scalar") or tuple(entry.get("shape") or ()) != shape
            or entry.get("dtype") != dtype.name)


def _file_of(directory, entry) -> str:
    f = entry.get("file")
    return os.path.join(directory, f) if f else f"{MANIFEST} (a Python scalar)"


def _match_target(pairs, by_path, directory, fn):
    """``[(as_type, entry)]`` per target leaf; one CheckpointError lists every problem."""
    plan, problems = [], []
    for path, t in pairs:
        p = where(path)
        kind, shape, dtype, as_type = _target_kind(t, path, fn)
        expected = _describe_target(kind, shape, dtype, as_type)
        entry = by_path.get(p)
        if entry is None:
            problems.append(f"leaf {p}: the target expects {expected}, the checkpoint has no "
                            "such leaf")
        elif _mismatch(kind, shape, dtype, entry):
            problems.append(f"leaf {p}: the target expects {expected}, the checkpoint holds "
                            f"{describe_entry(entry)} (file {_file_of(directory, entry)})")
        else:
            plan.append((as_type, entry))
    target_paths = {where(path) for path, _ in pairs}
    for p, entry in by_path.items():
        if p not in target_paths:
            problems.append(f"leaf {p}: the checkpoint holds {describe_entry(entry)} "
                            f"(file {_file_of(directory, entry)}), the target has no such leaf")
    if problems:
        raise CheckpointError(
            f"{fn}: checkpoint {directory!r} does not match the target:\n  "
            + "\n  ".join(problems) + "\nPass a target with the saved structure, shapes and "
            "dtypes (restore without a target to see what was saved).")
    return plan


__all__ = ["MANIFEST", "TMP_PREFIX", "fsync_dir", "load_array", "make_tmp_dir",
           "read_manifest", "restore", "restore_leaf", "write_checkpoint"]
