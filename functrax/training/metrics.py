"""Monitoring a training run: its directory, scalar logs, curves, throughput, NaN checks.

- :class:`RunDirectory` lays out one run (``checkpoints/``, ``events/``, ``plots/``,
  ``config.json`` with the config, git commit, command line and versions).
- :class:`MetricsLogger` appends one JSON line per :meth:`~MetricsLogger.log` call to
  ``metrics.jsonl`` (flushed at once, so a crash keeps everything logged) and, with
  tensorboardX installed, writes TensorBoard event files into ``events/``;
  :func:`read_metrics` reads the lines back and :func:`plot_metrics` draws them to a PNG.
- :class:`Throughput` measures examples per second; :func:`check_finite` stops a run at the
  first NaN/Inf loss, naming the step and the first non-finite gradient by its key path.

The optional packages (``tensorboardX``, ``matplotlib``: the ``examples`` extra) are imported
inside the functions that use them; without them logging goes on and plotting says why it
drew nothing.
"""
from __future__ import annotations

import collections
import json
import os
import time
import warnings

import numpy as np

from functrax.training.run_dir import METRICS_FILE, RunDirectory, git_info
from functrax.tree_util import keystr, tree_flatten_with_path

__all__ = ["MetricsLogger", "NonFiniteError", "RunDirectory", "Throughput", "check_finite",
           "git_info", "plot_metrics", "read_metrics"]

_tensorboard_warned = False  # "tensorboardX is not installed" is said once per process


# --- scalar logs ---


def _run_paths(run_dir_or_path):
    """``(directory, metrics file, events dir, plots dir)`` of a RunDirectory or a path."""
    if isinstance(run_dir_or_path, RunDirectory):
        r = run_dir_or_path
        return r.path, r.metrics_file, r.events, r.plots
    path = os.path.abspath(os.fspath(run_dir_or_path))
    return (path, os.path.join(path, METRICS_FILE), os.path.join(path, "events"),
            os.path.join(path, "plots"))


def _scalar(name, value) -> float:
    try:
        arr = np.asarray(value)
    except Exception as e:
        raise TypeError(f"MetricsLogger.log: metric {name!r} is not a number "
                        f"({type(value).__name__}): {e}") from e
    if arr.size != 1:
        raise ValueError(f"MetricsLogger.log: metric {name!r} must be a scalar, got shape "
                         f"{arr.shape}; reduce it first (e.g. .mean())")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"MetricsLogger.log: metric {name!r} must be a real number, got "
                        f"dtype {arr.dtype}")
    return float(arr.reshape(()))


def _summary_writer(events_dir):
    """A tensorboardX ``SummaryWriter`` on ``events_dir``, or None (said once) without it."""
    global _tensorboard_warned
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        if not _tensorboard_warned:
            _tensorboard_warned = True
            warnings.warn("MetricsLogger: tensorboardX is not installed, so no TensorBoard "
                          "event files are written (metrics.jsonl still is). Install it with "
                          "`pip install tensorboardX` (or the `examples` extra), or pass "
                          "tensorboard=False to silence this note.", stacklevel=3)
        return None
    os.makedirs(events_dir, exist_ok=True)
    return SummaryWriter(events_dir, flush_secs=10)


class MetricsLogger:
    """Logs scalars per step to ``metrics.jsonl`` and (optionally) TensorBoard.

    Args:
      run_dir_or_path: a :class:`RunDirectory`, or a directory (created if missing) that
        receives ``metrics.jsonl``, ``events/`` and ``plots/``.
      tensorboard: also write TensorBoard event files into ``events/`` with tensorboardX's
        ``SummaryWriter.add_scalar``. Without tensorboardX a warning says so once per process
        and the JSON lines go on.
      clock: the ``time`` of each record (default ``time.time``; tests inject one).

    Attributes:
      metrics_file: the path of ``metrics.jsonl`` (appended to: a resumed run continues it).
      writer: the ``SummaryWriter``, or None.

    >>> import tempfile
    >>> with MetricsLogger(tempfile.mkdtemp(), tensorboard=False, clock=lambda: 0.0) as log:
    ...     _ = log.log(1, loss=np.float32(0.5), acc=1)
    ...     log.read()
    [{'step': 1, 'time': 0.0, 'loss': 0.5, 'acc': 1.0}]
    """

    def __init__(self, run_dir_or_path, *, tensorboard=True, clock=time.time):
        self.path, self.metrics_file, self.events, self.plots = _run_paths(run_dir_or_path)
        os.makedirs(self.path, exist_ok=True)
        self._clock = clock
        self._file = open(self.metrics_file, "a", encoding="utf-8")
        self.writer = _summary_writer(self.events) if tensorboard else None

    def log(self, step, **scalars) -> dict:
        """Appends ``{"step": step, "time": clock(), <name>: float(value), ...}`` as one JSON
        line (flushed), and each scalar to TensorBoard under its name.

        Args:
          step: the training step (an integer).
          **scalars: the metrics; Python or numpy numbers, or one-element arrays (functrax
            arrays included). NaN and Inf are written as JSON's ``NaN``/``Infinity``.
        Returns:
          The record written.
        Raises:
          TypeError: a non-integer step or a non-numeric metric.
          ValueError: a metric with more than one element, or named ``time``; a closed logger.
        """
        if self._file is None:
            raise ValueError("MetricsLogger.log: the logger is closed; make a new one (it "
                             "appends to the same metrics.jsonl)")
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
            raise TypeError(f"MetricsLogger.log: step must be an integer, got {step!r}")
        if "time" in scalars:
            raise ValueError("MetricsLogger.log: 'time' is the record's wall-clock field; "
                             "name the metric differently (e.g. step_time)")
        record = {"step": int(step), "time": float(self._clock())}
        record.update((name, _scalar(name, v)) for name, v in scalars.items())
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        if self.writer is not None:
            for name in scalars:
                self.writer.add_scalar(name, record[name], global_step=record["step"])
        return record

    def flush(self):
        """Flushes the TensorBoard writer (the JSON lines are flushed on every ``log``)."""
        if self.writer is not None:
            self.writer.flush()

    def read(self) -> list:
        """The records of :attr:`metrics_file` (see :func:`read_metrics`)."""
        return read_metrics(self.metrics_file)

    def plot(self, path=None, metrics=None):
        """Draws the logged curves to a PNG (see :func:`plot_metrics`); by default into
        ``plots/metrics.png``. Returns its path, or None without matplotlib."""
        return plot_metrics(self.metrics_file, path or os.path.join(self.plots, "metrics.png"),
                            metrics)

    def close(self):
        """Closes ``metrics.jsonl`` and the TensorBoard writer (twice is harmless)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _metrics_file(path):
    if isinstance(path, RunDirectory):
        return path.metrics_file
    path = os.fspath(path)
    return os.path.join(path, METRICS_FILE) if os.path.isdir(path) else path


def read_metrics(path) -> list:
    """The records written by :class:`MetricsLogger`, in order.

    Args:
      path: a ``metrics.jsonl`` file, its run directory or a :class:`RunDirectory`.
    Returns:
      A list of dicts ``{"step", "time", <metric>: float, ...}``. A last line cut short (a
      crash while writing) is skipped.
    Raises:
      FileNotFoundError: no such file.
      ValueError: a malformed line other than the last (the message gives its number).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with MetricsLogger(d, tensorboard=False) as log:
    ...     _ = log.log(0, loss=2.0); _ = log.log(1, loss=1.0)
    >>> [(r["step"], r["loss"]) for r in read_metrics(d)]
    [(0, 2.0), (1, 1.0)]
    """
    file = _metrics_file(path)
    with open(file, encoding="utf-8") as f:
        lines = f.read().split("\n")
    records = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            if i == len(lines) - 1:  # no newline after it: a write cut short
                break
            raise ValueError(f"read_metrics: {file}, line {i + 1} is not a JSON record: {e}"
                             ) from e
    return records


# --- plots ---


def _metric_names(records, metrics, source):
    available = list(dict.fromkeys(k for r in records for k in r if k not in ("step", "time")))
    if metrics is None:
        return available
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    unknown = [m for m in metrics if m not in available]
    if unknown:
        raise ValueError(f"plot_metrics: no metric {unknown} in {source}; logged metrics: "
                         f"{available}")
    return metrics


def plot_metrics(source, path=None, metrics=None):
    """Saves the logged curves as a PNG: one subplot per metric against the step.

    Draws with matplotlib's Agg backend (a ``Figure`` with a ``FigureCanvasAgg``: pyplot and
    its global backend are left alone), imported here.

    Args:
      source: a ``metrics.jsonl`` file, its run directory, a :class:`RunDirectory`, or a list
        of records (as :func:`read_metrics` returns).
      path: the PNG to write (default: ``plots/metrics.png`` next to the metrics file).
      metrics: the names to draw (default: every logged metric, in first-logged order).
    Returns:
      ``path``; or None when matplotlib is not installed (a warning says so).
    Raises:
      ValueError: no records, or a metric that was never logged.

    >>> import tempfile  # doctest: +SKIP
    >>> plot_metrics([{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}],  # doctest: +SKIP
    ...              os.path.join(tempfile.mkdtemp(), "curves.png"))
    '/tmp/.../curves.png'
    """
    if isinstance(source, (list, tuple)):
        records, where = list(source), "the given records"
        if path is None:
            raise ValueError("plot_metrics: pass path= when plotting a list of records")
    else:
        where = _metrics_file(source)
        records = read_metrics(where)
        if path is None:
            path = os.path.join(os.path.dirname(os.path.abspath(where)), "plots", "metrics.png")
    names = _metric_names(records, metrics, where)
    if not records or not names:
        raise ValueError(f"plot_metrics: nothing to plot: {where} has no logged metrics")
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        warnings.warn("plot_metrics: matplotlib is not installed, so no plot was drawn "
                      f"(the metrics are in {where}). Install it with `pip install "
                      "matplotlib` (or the `examples` extra).", stacklevel=2)
        return None
    fig = Figure(figsize=(7.0, 2.2 * len(names) + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    for ax, name in zip(axes, names):
        pts = [(r["step"], r[name]) for r in records if name in r]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if len(pts) < 50 else None)
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("step")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, format="png", dpi=100)
    return path


# --- throughput ---


class Throughput:
    """Examples per second, over a sliding window of updates or since the start.

    Each :meth:`update` records ``(clock(), examples so far)``. :meth:`rate` is the number of
    examples of the last ``window`` updates divided by the time they took, i.e. from the
    clock reading ``window`` updates before the latest (or the start, if fewer) to the latest
    update: ``rate = (count_last - count_first) / (t_last - t_first)``. ``window=None``
    measures from the start (construction or :meth:`reset`). A window leaves out a slow start
    (the first step's compilation) once it has passed.

    Args:
      window: the number of updates the rate is measured over (a positive int), or None.
      clock: a function returning seconds (default ``time.perf_counter``; tests inject one).

    Attributes:
      total: examples counted since the start.

    >>> t = iter([0.0, 1.0, 3.0])
    >>> tp = Throughput(window=None, clock=lambda: next(t))
    >>> tp.update(10); tp.update(30)
    >>> tp.rate()   # 40 examples in 3 s
    13.333333333333334
    """

    def __init__(self, window=50, *, clock=time.perf_counter):
        if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                                   or window < 1):
            raise ValueError(f"Throughput: window must be a positive int (updates) or None, "
                             f"got {window!r}")
        self.window, self._clock = window, clock
        self.reset()

    def reset(self):
        """Starts again: no examples, the start at ``clock()`` now."""
        self.total = 0
        maxlen = None if self.window is None else self.window + 1
        self._points = collections.deque([(self._clock(), 0)], maxlen=maxlen)
        self._start = self._points[0]

    def update(self, num_examples):
        """Counts ``num_examples`` processed since the previous update (or the start)."""
        if num_examples < 0:
            raise ValueError(f"Throughput.update: num_examples must be >= 0, got "
                             f"{num_examples}")
        self.total += int(num_examples)
        self._points.append((self._clock(), self.total))

    def rate(self) -> float:
        """Examples per second (see the class); 0.0 before the first update or when no time
        has passed."""
        t1, c1 = self._points[-1]
        t0, c0 = self._start if self.window is None else self._points[0]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0


# --- NaN/Inf checks ---


class NonFiniteError(FloatingPointError):
    """A loss (or gradient) is NaN or Inf. Attributes: ``step``, ``loss`` (a float, or the
    array), ``path`` (the key path of the first non-finite gradient leaf, or None)."""

    def __init__(self, message, *, step=None, loss=None, path=None):
        super().__init__(message)
        self.step, self.loss, self.path = step, loss, path


def _nonfinite_count(x):
    """``(array, number of NaN/Inf elements)``; 0 for integer or non-numeric values."""
    try:
        arr = np.asarray(x)
    except Exception:
        return None, 0
    if arr.dtype.kind not in "fc":
        return arr, 0
    return arr, int(arr.size - np.count_nonzero(np.isfinite(arr)))


def _first_nonfinite_grad(grads):
    for path, leaf in tree_flatten_with_path(grads)[0]:
        arr, bad = _nonfinite_count(leaf)
        if bad:
            return keystr(path) or "<root>", (f"{keystr(path) or '<root>'} ({arr.dtype}"
                                              f"{list(arr.shape)}: {bad} of {arr.size} values "
                                              "NaN/Inf)")
    return None, None


def check_finite(step, loss, grads=None):
    """Raises :class:`NonFiniteError` when ``loss`` is NaN or Inf.

    The message names the step, the loss and the first non-finite leaf of ``grads`` by its
    key path (flattening order), or says that all gradients are finite. Only the loss
    decides whether to raise: a finite loss with non-finite gradients passes (the next
    step's loss shows it).

    Args:
      step: the step number (for the message).
      loss: a scalar (or an array: non-finite if any element is).
      grads: an optional pytree of gradients to search.
    Returns:
      None.
    Raises:
      NonFiniteError: the loss is not finite.

    >>> check_finite(3, 0.25)
    >>> try:
    ...     check_finite(4, float("nan"), {"w": np.array([1.0, np.inf])})
    ... except NonFiniteError as e:
    ...     print(str(e).split(". ")[0])
    step 4: the loss is nan; first non-finite gradient: ['w'] (float64[2]: 1 of 2 values NaN/Inf)
    """
    arr, bad = _nonfinite_count(loss)
    if not bad:
        return
    value = float(arr.reshape(())) if arr.size == 1 else arr
    shown = repr(value) if arr.size == 1 else f"an array of shape {arr.shape} with {bad} NaN/Inf"
    path, where = (None, None) if grads is None else _first_nonfinite_grad(grads)
    if grads is None:
        grad_note = "no gradients given"
    elif path is None:
        grad_note = "all gradients finite"
    else:
        grad_note = f"first non-finite gradient: {where}"
    raise NonFiniteError(
        f"step {step}: the loss is {shown}; {grad_note}. Lower the learning rate, check this "
        "step's inputs, or rerun with functrax.config.update('jax_debug_nans', True) to find "
        "the operation that first produced a NaN.", step=step, loss=value, path=path)
