"""``CheckpointManager``: numbered checkpoints under one directory, written atomically (and
asynchronously), keeping the last N and the best K (see :mod:`functrax.training.checkpoints`
for the format and its guarantees)."""
from __future__ import annotations

import math
import os
import re
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor

from functrax.training import checkpoints_io as cio
from functrax.training.checkpoints_format import CheckpointError, check_step, snapshot, to_json

__all__ = ["CheckpointManager"]


_STEP_RE = re.compile(r"step_(\d+)\Z")


def _step_name(step: int) -> str:
    return f"step_{step:08d}"


def _metric_number(name, v, fn):
    if type(v) in (int, float):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{fn}: metric {name!r} must be a number, got {type(v).__name__} "
                        f"{v!r}") from None


class CheckpointManager:
    """Saves numbered checkpoints under one directory, keeps the last N and the best K.

    Each step is a checkpoint directory ``<directory>/step_<08d>/`` (format: see
    :mod:`functrax.training.checkpoints`). Saves are atomic; with ``async_save`` they are
    written, in order, by a background thread after ``save`` copied the leaves to host memory.
    After a checkpoint is committed, older ones beyond the retention policy are deleted: a
    step is kept if it is among the ``keep_last`` most recent, among the ``keep_best`` best by
    ``best_metric``, or the latest. With neither ``keep_last`` nor ``keep_best`` every
    checkpoint is kept.

    Args:
      directory: the root directory (created if needed). Leftover ``.tmp-*`` directories of
        interrupted saves in it are removed: one manager writes to a directory at a time.
      keep_last: optional int >= 1, how many recent checkpoints to keep.
      keep_best: optional int >= 1, how many best checkpoints to keep (default 1 when
        ``best_metric`` is given).
      best_metric: name of the metric (in ``save(..., metrics=...)``) ranking checkpoints.
      best_mode: ``"max"`` (higher is better) or ``"min"``.
      async_save: write in a background thread (default True).
    Raises:
      ValueError: for invalid retention arguments.

    >>> import tempfile, numpy as np
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with CheckpointManager(d, keep_last=1, best_metric="loss", best_mode="min") as m:
    ...         for step, loss in enumerate([3.0, 1.0, 2.0, 4.0]):
    ...             m.save(step, {"x": np.float32(step)}, metrics={"loss": loss})
    ...         m.wait_until_finished()
    ...         m.all_steps(), m.best_step(), m.metrics(1)
    ([1, 3], 1, {'loss': 1.0})
    """

    def __init__(self, directory, *, keep_last=None, keep_best=None, best_metric=None,
                 best_mode="max", async_save=True):
        fn = "CheckpointManager"
        for name, v in (("keep_last", keep_last), ("keep_best", keep_best)):
            if v is not None and (type(v) is not int or v < 1):
                raise ValueError(f"{fn}: {name} must be None or an int >= 1, got {v!r}")
        if best_mode not in ("max", "min"):
            raise ValueError(f"{fn}: best_mode must be 'max' or 'min', got {best_mode!r}")
        if keep_best is not None and best_metric is None:
            raise ValueError(f"{fn}: keep_best={keep_best} needs best_metric, the name of the "
                             "metric that ranks checkpoints")
        if best_metric is not None and keep_best is None:
            keep_best = 1
        self.directory = os.path.abspath(os.fspath(directory))
        self.keep_last, self.keep_best = keep_last, keep_best
        self.best_metric, self.best_mode, self.async_save = best_metric, best_mode, async_save
        os.makedirs(self.directory, exist_ok=True)
        self._remove_tmp_dirs()
        self._lock = threading.Lock()
        self._metrics: dict = {}     # step -> metrics dict (a cache of the manifests)
        self._pending: list = []     # (step, Future) of queued async saves, in order
        self._queued: set = set()
        self._executor = (ThreadPoolExecutor(1, thread_name_prefix="functrax-checkpoint")
                          if async_save else None)
        self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"CheckpointManager({self.directory!r}, keep_last={self.keep_last}, "
                f"keep_best={self.keep_best}, best_metric={self.best_metric!r}, "
                f"best_mode={self.best_mode!r}, async_save={self.async_save})")

    # --- steps on disk ---

    def _remove_tmp_dirs(self):
        for name in os.listdir(self.directory):
            if name.startswith(cio.TMP_PREFIX):
                shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)

    def step_path(self, step: int) -> str:
        """The directory of ``step``'s checkpoint (whether or not it exists)."""
        return os.path.join(self.directory, _step_name(step))

    def all_steps(self) -> list:
        """The steps of the complete checkpoints on disk, ascending (temporary directories
        and directories without a manifest are not checkpoints).

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     CheckpointManager(d).all_steps()
        []
        """
        steps = []
        for name in os.listdir(self.directory):
            m = _STEP_RE.match(name)
            if (m and name == _step_name(int(m.group(1)))
                    and os.path.isfile(os.path.join(self.directory, name, cio.MANIFEST))):
                steps.append(int(m.group(1)))
        return sorted(steps)

    def latest_step(self):
        """The highest committed step, or None (pending async saves are not counted until
        written: see :meth:`wait_until_finished`)."""
        steps = self.all_steps()
        return steps[-1] if steps else None

    def _manifest(self, step, fn):
        step = check_step(step, fn)
        if step in self._queued:
            self.wait_until_finished()
        return self._read_manifest(step, fn)

    def _read_manifest(self, step, fn):
        path = self.step_path(step)
        if not os.path.isdir(path):
            raise FileNotFoundError(f"{fn}: no checkpoint for step {step} in {self.directory}; "
                                    f"saved steps: {self.all_steps()}")
        return cio.read_manifest(path, fn=fn)

    def metrics(self, step) -> dict:
        """The metrics saved with ``step`` (``{}`` if none).

        Raises:
          FileNotFoundError: if there is no checkpoint for ``step``.
        """
        fn = "CheckpointManager.metrics"
        step = check_step(step, fn)
        if step in self._queued:
            self.wait_until_finished()
        return dict(self._cached_metrics(step, fn))

    def _cached_metrics(self, step, fn):
        """The metrics of a committed step, read once from its manifest (never waits: the
        writer thread calls it)."""
        with self._lock:
            cached = self._metrics.get(step)
        if cached is None:
            cached = self._read_manifest(step, fn).get("metrics") or {}
            with self._lock:
                self._metrics[step] = cached
        return cached

    def metadata(self, step):
        """The metadata saved with ``step`` (None if none).

        Raises:
          FileNotFoundError: if there is no checkpoint for ``step``.
        """
        return self._manifest(step, "CheckpointManager.metadata").get("metadata")

    def _ranked(self) -> list:
        """Steps with a usable ``best_metric``, best first (later steps win ties)."""
        if self.best_metric is None:
            return []
        scored = []
        for s in self.all_steps():
            try:
                v = self._cached_metrics(s, "CheckpointManager.best_step").get(self.best_metric)
            except (FileNotFoundError, CheckpointError):  # deleted meanwhile, or damaged
                continue
            if isinstance(v, (int, float)) and not math.isnan(v):
                scored.append((v if self.best_mode == "max" else -v, s))
        return [s for _, s in sorted(scored, reverse=True)]

    def best_step(self):
        """The step with the best ``best_metric`` (per ``best_mode``), or None (no metric
        configured, or no checkpoint has it)."""
        ranked = self._ranked()
        return ranked[0] if ranked else None

    # --- saving ---

    def _check_metrics(self, metrics, fn):
        if metrics is None:  # e.g. a mid-epoch save: kept by keep_last, never ranked best
            return {}
        if not isinstance(metrics, dict):
            raise TypeError(f"{fn}: metrics must be a dict of numbers, got "
                            f"{type(metrics).__name__}")
        out = {str(k): _metric_number(k, v, fn) for k, v in metrics.items()}
        if self.best_metric is not None and self.best_metric not in out:
            raise ValueError(f"{fn}: metrics has no {self.best_metric!r} (the manager's "
                             f"best_metric); got {sorted(out)}. Pass metrics={{"
                             f"{self.best_metric!r}: value}}, metrics=None (a checkpoint "
                             "never ranked as best) or build the manager without best_metric.")
        return out

    def save(self, step, tree, *, metrics=None, metadata=None) -> None:
        """Saves ``tree`` as ``step`` (asynchronously when ``async_save``).

        The leaves are copied to host numpy arrays before ``save`` returns, so changing the
        caller's arrays afterwards does not change the checkpoint. Retention runs after the
        new checkpoint is committed.

        Args:
          step: a non-negative int not saved before.
          tree: the pytree (see :func:`save_checkpoint` for the leaves it may hold).
          metrics: optional dict of numbers (a dict must hold ``best_metric`` when one is
            configured; ``None`` saves a checkpoint that is kept only as one of the last
            ``keep_last`` and never ranked best, e.g. a mid-epoch save).
          metadata: optional JSON-serializable data.
        Raises:
          FileExistsError: if ``step`` is saved or queued already.
          TypeError / ValueError: for bad leaves, metrics or metadata.
          Exception: the error of an earlier asynchronous save that failed.

        >>> import tempfile, numpy as np
        >>> with tempfile.TemporaryDirectory() as d, CheckpointManager(d) as m:
        ...     m.save(10, {"w": np.zeros(3)}, metrics={"acc": 0.5})
        ...     m.wait_until_finished()
        ...     m.latest_step()
        10
        """
        fn = "CheckpointManager.save"
        if self._closed:
            raise RuntimeError(f"{fn}: the manager is closed; make a new CheckpointManager")
        self._collect_errors(block=False)
        step = check_step(step, fn)
        if step in self._queued or os.path.lexists(self.step_path(step)):
            raise FileExistsError(f"{fn}: step {step} is already saved or being saved in "
                                  f"{self.directory}; save a new step (or delete "
                                  f"{self.step_path(step)} first)")
        metrics = self._check_metrics(metrics, fn)
        snap = snapshot(tree, copy=self.async_save, fn=fn)
        meta = to_json(metadata, what="metadata", fn=fn)
        if self._executor is None:
            return self._write(step, snap, meta, metrics)
        with self._lock:
            self._queued.add(step)
        self._pending.append((step, self._executor.submit(self._write, step, snap, meta,
                                                          metrics)))

    def _write(self, step, snap, meta, metrics):
        try:
            cio.write_checkpoint(self.step_path(step), snap, step=step, metadata=meta,
                                 metrics=metrics, fn="CheckpointManager.save")
            with self._lock:
                self._metrics[step] = metrics
            self._prune()
        finally:
            with self._lock:
                self._queued.discard(step)

    def _prune(self):
        """Deletes the committed checkpoints the retention policy does not keep."""
        if self.keep_last is None and self.keep_best is None:
            return
        steps = self.all_steps()
        keep = set(steps[-1:])
        if self.keep_last is not None:
            keep.update(steps[-self.keep_last:])
        if self.keep_best is not None:
            keep.update(self._ranked()[:self.keep_best])
        for s in steps:
            if s not in keep:
                self._delete(s)

    def _delete(self, step):
        """Renames the step's directory to a temporary name (atomic: a crash never leaves a
        half-deleted checkpoint that looks complete), then removes it."""
        tmp = cio.make_tmp_dir(self.directory, f"delete-{_step_name(step)}")
        os.rename(self.step_path(step), os.path.join(tmp, "x"))
        shutil.rmtree(tmp, ignore_errors=True)
        with self._lock:
            self._metrics.pop(step, None)

    def _collect_errors(self, *, block: bool):
        """Drops finished saves; raises the first error of a failed one (once)."""
        errors, still = [], []
        for step, fut in self._pending:
            if block or fut.done():
                exc = fut.exception()
                if exc is not None:
                    errors.append((step, exc))
            else:
                still.append((step, fut))
        self._pending = still
        if errors:
            step, exc = errors[0]
            others = [s for s, _ in errors[1:]]
            note = (f"raised by CheckpointManager's background writer while saving step "
                    f"{step} to {self.step_path(step)}"
                    + (f"; the saves of steps {others} failed too" if others else ""))
            if hasattr(exc, "add_note"):
                exc.add_note(note)
            raise exc

    def wait_until_finished(self) -> None:
        """Blocks until every queued save is written.

        Raises:
          Exception: the error of an asynchronous save that failed (raised once).
        """
        self._collect_errors(block=True)

    def close(self) -> None:
        """Waits for pending saves and stops the writer thread (idempotent).

        Raises:
          Exception: the error of an asynchronous save that failed.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self.wait_until_finished()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)

    # --- restoring ---

    def restore(self, step=None, target=None):
        """Restores ``step`` (None: the latest, after pending saves are written).

        Args:
          step: the step to restore, or None for :meth:`latest_step`.
          target: optional pytree of the expected structure (see :func:`restore_checkpoint`).
        Returns:
          The restored tree.
        Raises:
          FileNotFoundError: if there is no checkpoint (for ``step``).
          CheckpointError: for a damaged checkpoint or a mismatch with ``target``.
        """
        fn = "CheckpointManager.restore"
        if step is None:
            self.wait_until_finished()
            step = self.latest_step()
            if step is None:
                raise FileNotFoundError(f"{fn}: no checkpoints in {self.directory}")
        step = check_step(step, fn)
        if step in self._queued:
            self.wait_until_finished()
        path = self.step_path(step)
        if not os.path.isdir(path):
            raise FileNotFoundError(f"{fn}: no checkpoint for step {step} in {self.directory}; "
                                    f"saved steps: {self.all_steps()}")
        return cio.restore(path, target, fn=fn, expect_step=step)
