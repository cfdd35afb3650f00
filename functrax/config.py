"""Global configuration flags, set with ``functrax.config.update(name, value)``.

>>> import functrax
>>> functrax.config.update("enable_x64", True)
"""
from __future__ import annotations

import os

__all__ = ["config", "Config"]


def _env_bool(name: str, default: bool) -> bool:
    val = os.environ.get(name)
    if val is None:
        return default
    return val.strip().lower() in ("1", "true", "yes", "on")


class Config:
    """A small registry of named flags with defaults, readable as attributes."""

    def __init__(self):
        self._values = {}
        self._defaults = {}
        self._watchers = []
        self._validators = {}
        self._context_names = []
        self._context = ()

    def define(self, name: str, default, doc: str = "", validate=None, trace_context=False):
        """Add flag ``name``; ``validate(value)`` (optional) raises on a bad value. A
        ``trace_context`` flag changes how functions trace or compile, so its value is part
        of every compilation cache key (as JAX's trace context)."""
        self._defaults[name] = default
        self._values[name] = default
        if validate is not None:
            self._validators[name] = validate
        if trace_context:
            self._context_names.append(name)
            self._refresh_context()

    def _refresh_context(self):
        self._context = tuple(self._values[n] for n in self._context_names)

    def trace_context(self) -> tuple:
        """The values of the trace-context flags: a new tuple object after each change of
        one (compare with ``is``)."""
        return self._context

    def update(self, name: str, value):
        """Set flag ``name`` (e.g. ``"enable_x64"``) to ``value``.

        Raises:
          AttributeError: for an unknown flag, listing the known ones.
        """
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise AttributeError(f"functrax.config.update: unknown flag {name!r}; "
                                 f"known flags: {known}")
        validate = self._validators.get(name)
        if validate is not None:
            validate(value)
        self._values[name] = value
        if name in self._context_names:
            self._refresh_context()
        for w in self._watchers:
            w(name, value)

    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"functrax.config has no flag {name!r}") from None

    def read(self, name):
        return self._values[name]


config = Config()
config.define("enable_x64", _env_bool("FUNCTRAX_ENABLE_X64", False),
              "Enable 64-bit types (float64, int64) as JAX's jax_enable_x64 does.",
              trace_context=True)
config.define("log_compiles", False, "Log every jit compilation with its reason and time.")
config.define("debug_nans", False, "Raise when a primitive produces a NaN.")


def _check_dir_or_none(value):
    if value is not None and not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"functrax.config.update: triton_dump_dir must be a directory path "
                        f"(str or os.PathLike) or None, got {type(value).__name__} {value!r}")


config.define("triton_dump_dir", os.environ.get("FUNCTRAX_TRITON_DUMP_DIR") or None,
              "A directory to which the Triton backend writes every kernel it builds (one "
              "<name>_<hash>.py per kernel and a manifest.json of their groups' equations); "
              "None (the default) dumps nothing.", validate=_check_dir_or_none,
              trace_context=True)


def _check_num_threads(value):
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or value < 1):
        raise ValueError(f"functrax.config.update: c_num_threads must be a positive int or "
                         f"None (all cores), got {value!r}")


def _check_compile_errors(value):
    if value not in ("warn", "raise"):
        raise ValueError(f"functrax.config.update: c_compile_errors must be 'warn' (fall back "
                         f"to the numpy backend with a warning) or 'raise', got {value!r}")


def _check_c_dump_dir(value):
    if value is not None and not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"functrax.config.update: c_dump_dir must be a directory path "
                        f"(str or os.PathLike) or None, got {type(value).__name__} {value!r}")


config.define("c_num_threads", None,
              "OpenMP threads of the C backend's kernels on large iteration spaces; None (the "
              "default) uses every core of the machine.", validate=_check_num_threads)
config.define("c_compile_errors", os.environ.get("FUNCTRAX_C_COMPILE_ERRORS") or "warn",
              "What the C backend does when the C compiler rejects a program: 'warn' (the "
              "default: warn once naming the kernel and the compiler's message, then run the "
              "program on the numpy backend) or 'raise' (a CompileError).",
              validate=_check_compile_errors)
config.define("c_dump_dir", os.environ.get("FUNCTRAX_C_DUMP_DIR") or None,
              "A directory to which the C backend writes the source of every program it "
              "builds (<hash>.c); None (the default) dumps nothing.", validate=_check_c_dump_dir)
