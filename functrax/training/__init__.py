"""``functrax.training``: the parts of a training loop around a jitted step.

- checkpoints (:mod:`functrax.training.checkpoints`): atomic, verified, asynchronous saving
  and restoring of pytrees, a :class:`CheckpointManager` keeping the last N and the best K;
- data (:mod:`functrax.training.data`): a deterministic, resumable :class:`DataLoader` with
  prefetch and per-device sharding;
- monitoring (:mod:`functrax.training.metrics`, :mod:`functrax.training.run_dir`): a
  :class:`RunDirectory` (config with the git commit, metrics, events, checkpoints, plots),
  a :class:`MetricsLogger` (JSON lines and TensorBoard), :class:`Throughput`, curves as PNG
  and :func:`check_finite` (a non-finite loss stops training naming the step and leaf).
"""
from functrax.training.checkpoints import (
    CheckpointError, CheckpointManager, read_manifest, restore_checkpoint, save_checkpoint,
)
from functrax.training.data import DataLoader, DataLoaderIterator
from functrax.training.metrics import (
    MetricsLogger, NonFiniteError, Throughput, check_finite, plot_metrics, read_metrics,
)
from functrax.training.run_dir import RunDirectory

__all__ = ["CheckpointError", "CheckpointManager", "DataLoader", "DataLoaderIterator",
           "MetricsLogger", "NonFiniteError", "RunDirectory", "Throughput", "check_finite",
           "plot_metrics", "read_manifest", "read_metrics", "restore_checkpoint",
           "save_checkpoint"]
