"""Generated kernel modules on disk, keyed by a hash of their text, imported once.

``@triton.jit`` reads its function's source from a real file, so each generated kernel is
written to ``<cache dir>/k_<sha256>.py`` and imported from there. The cache directory is
``$FUNCTRAX_CACHE_DIR/triton`` when ``FUNCTRAX_CACHE_DIR`` is set, else
``~/.cache/functrax/triton``. The text is the key: generating the same group twice (even
from two separate traces) writes and imports nothing new.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import threading

__all__ = ["KernelCache", "default_cache_dir", "default_cache", "AutotuneStore"]


def default_cache_dir() -> str:
    """``$FUNCTRAX_CACHE_DIR/triton``, or ``~/.cache/functrax/triton``."""
    root = os.environ.get("FUNCTRAX_CACHE_DIR")
    if root:
        return os.path.join(root, "triton")
    return os.path.join(os.path.expanduser("~"), ".cache", "functrax", "triton")


class KernelCache:
    """Writes kernel sources to ``directory`` and imports each distinct text once.

    Attributes:
      stats: counters ``writes`` (files written), ``imports`` (modules executed) and
        ``hits`` (requests served from memory).

    >>> cache = KernelCache("/tmp/functrax-doc-cache")  # doctest: +SKIP
    >>> fn = cache.load(source)                          # doctest: +SKIP
    """

    def __init__(self, directory: str | None = None):
        self._directory = directory
        self._modules: dict = {}
        self._lock = threading.Lock()
        self.stats = {"writes": 0, "imports": 0, "hits": 0}

    @property
    def directory(self) -> str:
        return self._directory or default_cache_dir()

    def path(self, source) -> str:
        return os.path.join(self.directory, f"k_{source.key}.py")

    def load(self, source):
        """The ``@triton.jit`` function of ``source`` (a ``codegen.KernelSource``)."""
        key = source.key
        with self._lock:
            module = self._modules.get(key)
            if module is not None:
                self.stats["hits"] += 1
                return getattr(module, source.name)
            path = self.path(source)
            self._write(path, source.text)
            module = self._import(f"functrax_triton_kernels.k_{key[:40]}", path)
            self._modules[key] = module
            return getattr(module, source.name)

    def clear(self):
        """Forget imported modules (files stay on disk)."""
        with self._lock:
            self._modules.clear()

    def _write(self, path: str, text: str):
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == text:
                    return
        except OSError:
            pass
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)  # atomic: concurrent writers of one key write equal text
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        self.stats["writes"] += 1

    def _import(self, name: str, path: str):
        from functrax.lowering.triton.gpu_hooks import ensure_triton_env
        ensure_triton_env()  # TRITON_INTERPRET must be decided before triton is imported
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # inspect.getsource (used by @triton.jit) looks here
        try:  # compiled from the text here: no bytecode is written into the cache
            with open(path, "rb") as f:
                code = spec.loader.source_to_code(f.read(), path)
            exec(code, module.__dict__)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        self.stats["imports"] += 1
        return module


_DEFAULT: KernelCache | None = None


def default_cache() -> KernelCache:
    """The process-wide cache (in ``default_cache_dir()``)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = KernelCache()
    return _DEFAULT


class AutotuneStore:
    """Autotuning choices persisted as JSON: ``<directory>/autotune/<key>.json``.

    ``key`` is a hex digest (see ``autotune.tuning_key``); the record is a JSON object (the
    chosen config and the measured times). Unreadable or corrupt files read as missing, so a
    bad file only costs a new tuning run.

    >>> store = AutotuneStore("/tmp/functrax-doc-cache")  # doctest: +SKIP
    >>> store.put("ab12", {"config": {"max_block": 1024}})  # doctest: +SKIP
    """

    def __init__(self, directory: str | None = None):
        self._directory = directory
        self.stats = {"reads": 0, "writes": 0}

    @property
    def directory(self) -> str:
        return os.path.join(self._directory or default_cache_dir(), "autotune")

    def path(self, key: str) -> str:
        if not key or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"AutotuneStore: key must be a hex digest, got {key!r}")
        return os.path.join(self.directory, f"{key}.json")

    def get(self, key: str):
        """The stored record of ``key`` (a dict), or None."""
        try:
            with open(self.path(key), encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            return None
        self.stats["reads"] += 1
        return record if isinstance(record, dict) else None

    def put(self, key: str, record: dict):
        """Write ``record`` for ``key`` (atomically: concurrent writers leave one whole file)."""
        path = self.path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(record, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        self.stats["writes"] += 1
