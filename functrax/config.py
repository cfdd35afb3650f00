"""Global configuration flags, set with ``functrax.config.update(name, value)``.

>>> import functrax
>>> functrax.config.update("enable_x64", True)
"""
from __future__ import annotations

import os

__all__ = ["config", "Config", "enable_checks", "explain_cache_misses"]


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


# --- checks and cache-miss explanations (functrax.enable_checks / explain_cache_misses) ---

def _bool_flag(name):
    def validate(value):
        if not isinstance(value, (bool, int)) or isinstance(value, float):
            raise TypeError(f"jax_{name} must be a bool, got {value!r} of type "
                            f"{type(value).__name__}")
    return validate


config.define("enable_checks", False, "Type-check every jaxpr jit traces (check_jaxpr).",
              validate=_bool_flag("enable_checks"), trace_context=True)
config.define("explain_cache_misses", False, "Log why jit traces a function again (as "
              "log_compiles, with the reason).", validate=_bool_flag("explain_cache_misses"))


class _FlagContext:
    """A boolean flag as JAX's config context manager: ``with functrax.enable_checks():``
    (or ``(True)`` / ``(False)``) sets it for the block and restores it on exit, also when
    the block raises; ``.value`` reads it.

    >>> with enable_checks(True):
    ...     config.enable_checks
    True
    """

    def __init__(self, name: str):
        self.name = name
        self.__name__ = f"jax_{name}"

    @property
    def value(self):
        return config.read(self.name)

    def __call__(self, new_val=True):
        import contextlib
        config._validators[self.name](new_val)

        @contextlib.contextmanager
        def ctx():
            prev = config.read(self.name)
            config.update(self.name, new_val)
            try:
                yield
            finally:
                config.update(self.name, prev)
        return ctx()

    def __repr__(self):
        return f"State({self.__name__}={self.value!r})"


enable_checks = _FlagContext("enable_checks")
explain_cache_misses = _FlagContext("explain_cache_misses")
