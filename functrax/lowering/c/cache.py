"""Compiled C programs on disk, keyed by what they depend on, loaded once per process.

A library is ``<cache dir>/p_<sha256>.so`` where the hash covers the source, the compiler's
identity, its flags and the CPU's features (:meth:`Toolchain.key`). The cache directory is
``$FUNCTRAX_CACHE_DIR/c`` when ``FUNCTRAX_CACHE_DIR`` is set, else ``~/.cache/functrax/c``
(beside the Triton kernels). A library is compiled to a temporary file in that directory
and renamed into place (``os.replace``), so a concurrent process never loads a half-written
one; two processes compiling the same source both produce a valid file.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
import threading

from functrax.lowering.c.toolchain import Toolchain, compile_shared, default_cache_dir

__all__ = ["LibraryCache", "default_cache_dir", "default_cache", "library_key"]


def library_key(source: str, tc: Toolchain) -> str:
    """sha256 of (source, compiler identity, flags, CPU features)."""
    return hashlib.sha256((tc.key() + "\n\0" + source).encode()).hexdigest()


class LibraryCache:
    """Compiles each distinct source once (per machine) and loads each library once (per
    process).

    Attributes:
      stats: ``compiles`` (compiler runs), ``disk_hits`` (libraries loaded from disk without
        compiling) and ``hits`` (requests served from memory).
    """

    def __init__(self, directory: str | None = None):
        self._directory = directory
        self._libs: dict = {}
        self._lock = threading.Lock()
        self._building: dict = {}  # key -> the lock held while that library compiles
        self.stats = {"compiles": 0, "disk_hits": 0, "hits": 0}

    @property
    def directory(self) -> str:
        return self._directory or default_cache_dir()

    def path(self, key: str) -> str:
        return os.path.join(self.directory, f"p_{key}.so")

    def load(self, source: str, tc: Toolchain):
        """The ``ctypes.CDLL`` of ``source`` compiled by ``tc`` (compiling it if needed).

        Raises:
          CompileError: when the compiler rejects the source.
        """
        key = library_key(source, tc)
        with self._lock:
            lib = self._libs.get(key)
            if lib is not None:
                self.stats["hits"] += 1
                return lib
            building = self._building.setdefault(key, threading.Lock())
        with building:  # one compile per key; other keys compile at the same time
            with self._lock:
                lib = self._libs.get(key)
                if lib is not None:
                    self.stats["hits"] += 1
                    return lib
            path = self.path(key)
            if os.path.exists(path):
                with self._lock:
                    self.stats["disk_hits"] += 1
            else:
                self._compile(source, tc, path)
            lib = ctypes.CDLL(path)
            with self._lock:
                self._libs[key] = lib
                self._building.pop(key, None)
            return lib

    def load_file(self, name: str):
        """The ``ctypes.CDLL`` of the library file ``name`` (``p_<key>.so``) of this cache,
        loaded once per process; None when no such file is there (any more)."""
        if not (name.startswith("p_") and name.endswith(".so")) or os.sep in name:
            return None
        key = name[2:-3]
        with self._lock:
            lib = self._libs.get(key)
            if lib is not None:
                self.stats["hits"] += 1
                return lib
        path = self.path(key)
        if not os.path.exists(path):
            return None
        lib = ctypes.CDLL(path)
        with self._lock:
            self.stats["disk_hits"] += 1
            return self._libs.setdefault(key, lib)

    def _compile(self, source, tc, path):
        os.makedirs(self.directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp_", suffix=".so")
        os.close(fd)
        try:
            with self._lock:
                self.stats["compiles"] += 1
            compile_shared(tc.cc, tc.flags, source, tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def clear(self):
        """Forget the loaded libraries (files stay on disk; loaded code stays mapped)."""
        with self._lock:
            self._libs.clear()


_DEFAULT: list = []


def default_cache() -> LibraryCache:
    """The process-wide cache (in :func:`default_cache_dir`, read when first used)."""
    if not _DEFAULT:
        _DEFAULT.append(LibraryCache())
    return _DEFAULT[0]
