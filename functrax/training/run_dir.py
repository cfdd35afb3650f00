"""``RunDirectory``: the layout of one training run and its ``config.json`` (the config, git
commit, command line, start time and versions). Re-exported by
:mod:`functrax.training.metrics`.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys

import numpy as np

__all__ = ["METRICS_FILE", "RunDirectory", "git_info"]

METRICS_FILE = "metrics.jsonl"
_GIT_TIMEOUT_S = 5.0


def _git(args, cwd):
    """``git <args>``'s stripped stdout in ``cwd``, or None (no git, not a repository, slow)."""
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                             timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_info(cwd=None) -> dict:
    """``{"commit": <HEAD sha or None>, "dirty": <tracked files modified, or None>}`` of the
    git working tree holding ``cwd`` (default: the current directory)."""
    commit = _git(["rev-parse", "HEAD"], cwd)
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd) if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _to_json(x):
    """``json.dump``'s fallback: numpy values as Python ones, anything else as ``str``."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (set, frozenset)):
        return sorted(x, key=repr)
    return str(x)


def _versions() -> dict:
    import functrax  # the package's version; at call time, so the import order never matters
    return {"functrax": getattr(functrax, "__version__", None),
            "python": platform.python_version(), "numpy": np.__version__}


class RunDirectory:
    """The directory of one training run, with its layout and ``config.json``.

    Creates ``path`` and ``checkpoints/``, ``events/`` (TensorBoard) and ``plots/`` inside it
    (existing ones are kept), and writes ``config.json``::

      {"config": <config>, "git": {"commit": <sha or null>, "dirty": <bool or null>},
       "argv": sys.argv, "start_time": <ISO 8601, UTC>, "versions": {"functrax", "python",
       "numpy"}}

    A second ``RunDirectory`` on the same path (a resumed run) rewrites ``config.json``.

    Args:
      path: the run's directory.
      config: a JSON-serializable dict (numpy scalars and arrays are converted; other
        objects are written as their ``str``).
      git_cwd: where to ask git for the commit (default: the current directory). git runs
        with a short timeout; without git or outside a repository the fields are null.

    Attributes:
      path, checkpoints, events, plots: the directories (``str``).
      config_file, metrics_file: ``config.json`` and ``metrics.jsonl`` in ``path``.
      info: the dict written to ``config.json``.

    Raises:
      TypeError: ``config`` is not a dict.
      OSError: the directory cannot be created.

    >>> import tempfile
    >>> run = RunDirectory(tempfile.mkdtemp(), config={"lr": 0.1})
    >>> run.contents()
    ['config.json']
    >>> sorted(os.listdir(run.path))
    ['checkpoints', 'config.json', 'events', 'plots']
    """

    def __init__(self, path, config=None, *, git_cwd=None):
        if config is not None and not isinstance(config, dict):
            raise TypeError(f"RunDirectory: config must be a dict, got {type(config).__name__}")
        self.path = os.path.abspath(os.fspath(path))
        self.checkpoints = os.path.join(self.path, "checkpoints")
        self.events = os.path.join(self.path, "events")
        self.plots = os.path.join(self.path, "plots")
        self.config_file = os.path.join(self.path, "config.json")
        self.metrics_file = os.path.join(self.path, METRICS_FILE)
        for d in (self.path, self.checkpoints, self.events, self.plots):
            os.makedirs(d, exist_ok=True)
        self.info = {
            "config": dict(config or {}), "git": git_info(git_cwd), "argv": list(sys.argv),
            "start_time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "versions": _versions()}
        tmp = self.config_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.info, f, indent=2, default=_to_json)
            f.write("\n")
        os.replace(tmp, self.config_file)

    def __fspath__(self):
        return self.path

    def contents(self) -> list:
        """The run's files as sorted paths relative to :attr:`path` (directories omitted)."""
        out = []
        for dirpath, dirnames, filenames in os.walk(self.path):
            dirnames.sort()
            out += [os.path.relpath(os.path.join(dirpath, f), self.path) for f in filenames]
        return sorted(out)

    def summary(self) -> str:
        """A printable listing: the path, then one ``<size>  <file>`` line per file."""
        lines = [f"run directory {self.path}:"]
        for rel in self.contents():
            size = os.path.getsize(os.path.join(self.path, rel))
            lines.append(f"  {size:>10,d} B  {rel}")
        return "\n".join(lines)

    def __repr__(self):
        return f"RunDirectory({self.path!r})"
