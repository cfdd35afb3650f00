"""Block-size autotuning of generated kernels on the GPU, persisted across processes.

Each kernel kind has a short list of candidate :class:`~codegen.KernelConfig` s
(``codegen.GPU_CANDIDATES``: block caps and ``num_warps``). On a GPU, a generated kernel is
an :class:`AutotunedKernel`: at its first call it times every distinct candidate on the
actual arguments (the registered GPU's ``time_launch``, see ``gpu_hooks``; for CUDA,
stream-synchronized wall time over a few launches), keeps the fastest, and records the
choice as JSON (``cache.AutotuneStore``) under :func:`tuning_key` — a hash of the kernel's
source at the reference config (so block sizes do not enter it), its avals and the device
name. A later process finds the record and times nothing.

Small kernels (fewer than :data:`MIN_TUNE_ELEMENTS` elements in their iteration space) are
launch-bound: they take the first candidate untimed. ``FUNCTRAX_AUTOTUNE=0`` turns tuning
off. On the CPU (Triton's interpreter) nothing is tuned: the code generator uses the
largest block the shape allows (``codegen.INTERPRETER_CONFIG``).

The selection logic (:func:`select_config`) takes the timer as an argument, so it is tested
on the CPU with a fake one.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os

from functrax.lowering.triton import gpu_hooks
from functrax.lowering.triton.cache import AutotuneStore, default_cache
from functrax.lowering.triton.codegen import GPU_CANDIDATES, generate

__all__ = ["AutotunedKernel", "select_config", "tuning_key", "should_tune", "default_store",
           "MIN_TUNE_ELEMENTS", "stats"]

MIN_TUNE_ELEMENTS = 1 << 16
stats = {"tuned": 0, "loaded": 0, "timed": 0}
_STORE: AutotuneStore | None = None


def default_store() -> AutotuneStore:
    """The process-wide store, in the kernel cache directory."""
    global _STORE
    if _STORE is None:
        _STORE = AutotuneStore()
    return _STORE


def tuning_key(reference_text: str, avals, device_name: str) -> str:
    """The hex key of a tuning record: kernel source (at the reference config), avals and
    device name.

    >>> len(tuning_key("src", ["f32[4]"], "NVIDIA H200"))
    64
    """
    payload = json.dumps([reference_text, [str(a) for a in avals], str(device_name)])
    return hashlib.sha256(payload.encode()).hexdigest()


def _record(config) -> dict:
    """The config as stored (JSON types: tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(config)))


def select_config(key: str, candidates, measure, store: AutotuneStore):
    """The fastest of ``candidates``, from ``store`` when ``key`` was tuned before.

    Args:
      key: from :func:`tuning_key`.
      candidates: ``KernelConfig`` s, in preference order (ties go to the earlier one).
      measure: ``measure(config) -> seconds``; an exception rules the candidate out (a
        config the kernel cannot use, e.g. too much shared memory).
      store: where choices persist.

    Returns:
      ``(config, tuned)``: the chosen config and whether it was measured now.

    Raises:
      RuntimeError: when every candidate failed, with each one's error.
    """
    candidates = list(candidates)
    if not candidates:
        raise ValueError("select_config: no candidates")
    record = store.get(key)
    if record is not None:
        for c in candidates:
            if _record(c) == record.get("config"):
                stats["loaded"] += 1
                return c, False
    times, errors = [], []
    for c in candidates:
        try:
            t = float(measure(c))
            stats["timed"] += 1
        except Exception as e:  # noqa: BLE001 - a failing candidate is skipped, and named
            t = math.inf
            errors.append(f"{c}: {type(e).__name__}: {e}")
        times.append(t)
    best = min(range(len(candidates)), key=lambda i: (times[i], i))
    if math.isinf(times[best]):
        raise RuntimeError("autotuning failed: every candidate config failed:\n  "
                           + "\n  ".join(errors))
    store.put(key, {"config": _record(candidates[best]),
                    "times_s": [t if math.isfinite(t) else None for t in times],
                    "candidates": [_record(c) for c in candidates]})
    stats["tuned"] += 1
    return candidates[best], True


def should_tune(group) -> bool:
    """Whether ``group`` is big enough to time candidates for (and tuning is enabled)."""
    if os.environ.get("FUNCTRAX_AUTOTUNE", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return math.prod(group.shape) >= MIN_TUNE_ELEMENTS


def _gpu_device(args) -> int:
    return next((x.device_id for x in args if gpu_hooks.is_buffer(x)), 0)


def _gpu_measure(kernel, args) -> float:
    """Seconds per launch of ``kernel`` on the GPU, on (uploaded) ``args``."""
    from functrax.lowering.triton import runtime
    buffer = gpu_hooks.buffer_class()
    dev = _gpu_device(args)
    ins = [runtime.to_device(x, dev) for x in args]
    outs = [buffer(a.shape, a.dtype, dev) for a in kernel.source.out_avals]
    return gpu_hooks.time_launch(lambda: runtime.launch(kernel, ins, outs), dev)


def _gpu_device_name(args) -> str:
    return gpu_hooks.device_name(_gpu_device(args))


class AutotunedKernel:
    """A generated kernel whose config is chosen at its first call (see the module doc).

    Callable like ``runtime.TritonKernel``; ``source`` / ``fn`` are those of the chosen
    kernel (of the first candidate before the first call).

    Args:
      group: the fusion group.
      candidates: ``KernelConfig`` s (default: ``codegen.GPU_CANDIDATES`` of its kind).
      cache: a ``cache.KernelCache`` (default: the process-wide one).
      store: an ``AutotuneStore`` (default: :func:`default_store`).
      measure: ``measure(kernel, args) -> seconds`` (default: GPU timing).
      device_name: ``device_name(args) -> str`` (default: the CUDA device's name).
      tune: whether to time at all (default: :func:`should_tune`).
    """

    def __init__(self, group, candidates=None, cache=None, store=None, measure=None,
                 device_name=None, tune=None):
        self.group = group
        self.candidates = tuple(candidates or GPU_CANDIDATES[group.kind])
        self._cache = cache or default_cache()
        self._store = store
        self._measure = measure or _gpu_measure
        self._device_name = device_name or _gpu_device_name
        self._tune = should_tune(group) if tune is None else tune
        self._kernels: dict = {}
        self.default = self.build(self.candidates[0])  # raises UnsupportedError early
        self.chosen = None
        self.config = None

    def build(self, config):
        """The ``runtime.TritonKernel`` of this group at ``config`` (built once)."""
        kernel = self._kernels.get(config)
        if kernel is None:
            from functrax.lowering.triton.runtime import TritonKernel
            source = generate(self.group, config)
            kernel = self._kernels[config] = TritonKernel(source, self._cache.load(source))
        return kernel

    def distinct_candidates(self) -> list:
        """The candidates whose kernels differ (source, grid, warps or constexprs)."""
        seen, out = set(), []
        for c in self.candidates:
            try:
                s = self.build(c).source
            except Exception:  # noqa: BLE001 - a candidate the generator rejects is skipped
                continue
            ident = (s.key, s.grid, s.num_warps, tuple(sorted(s.constexprs.items())))
            if ident not in seen:
                seen.add(ident)
                out.append(c)
        return out

    def select(self, args):
        """Choose the config for ``args`` (times candidates or reads the stored choice)."""
        distinct = self.distinct_candidates() if self._tune else [self.candidates[0]]
        if len(distinct) <= 1:
            config = distinct[0] if distinct else self.candidates[0]
        else:
            key = tuning_key(self.default.source.text,
                             [a.str_short() for a in self.default.source.in_avals]
                             + [a.str_short() for a in self.default.source.out_avals],
                             self._device_name(args))
            config, _ = select_config(key, distinct,
                                      lambda c: self._measure(self.build(c), args),
                                      self._store or default_store())
        self.config = config
        self.chosen = self.build(config)
        return self.chosen

    @property
    def source(self):
        return (self.chosen or self.default).source

    @property
    def fn(self):
        return (self.chosen or self.default).fn

    def __call__(self, *args):
        kernel = self.chosen or self.select(args)
        return kernel(*args)

    def __repr__(self):
        state = f"chosen {self.config}" if self.chosen else f"{len(self.candidates)} candidates"
        return f"AutotunedKernel({self.default.source.name}, {state})"
