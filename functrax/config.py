"""Global configuration flags, set with ``functrax.config.update(name, value)``.

JAX's spellings work too: ``config.update("jax_enable_x64", True)``, ``config.jax_enable_x64``.
Most flags are also context managers (:class:`State`, JAX's ``jax.debug_nans(True)``, ...),
which restore the previous value on exit, also when the body raises.

>>> import functrax
>>> functrax.config.update("enable_x64", True)
>>> functrax.config.update("jax_enable_x64", False)
>>> with debug_nans(True):
...     config.debug_nans
True
"""
from __future__ import annotations

import os

__all__ = ["config", "Config", "State", "check_tracer_leaks", "checking_leaks", "debug_nans",
           "debug_infs", "numpy_rank_promotion", "numpy_dtype_promotion",
           "default_matmul_precision", "enable_x64", "log_compiles", "enable_checks",
           "explain_cache_misses", "ensure_compile_time_eval", "MATMUL_PRECISIONS",
           "default_prng_impl", "enable_custom_prng", "legacy_prng_key"]


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

    def _name(self, name: str) -> str:
        """``name`` or, for JAX's spelling (``jax_enable_x64``), the flag it names."""
        if name not in self._values and name.startswith("jax_") and name[4:] in self._values:
            return name[4:]
        return name

    def update(self, name: str, value):
        """Set flag ``name`` (e.g. ``"enable_x64"`` or JAX's ``"jax_enable_x64"``) to
        ``value``.

        Raises:
          AttributeError: for an unknown flag, listing the known ones.
        """
        name = self._name(name)
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
        values = self.__dict__["_values"]
        try:
            return values[name]
        except KeyError:
            if name.startswith("jax_") and name[4:] in values:
                return values[name[4:]]
            raise AttributeError(f"functrax.config has no flag {name!r}") from None

    def read(self, name):
        return self._values[name]

    @property
    def values(self) -> dict:
        """The flags and their current values (a copy)."""
        return dict(self._values)


_NO_DEFAULT = object()


class _Override:
    """``with``: set a flag, restore its previous value on exit (also on an exception)."""

    def __init__(self, name, value):
        self.name, self.value = name, value
        self._saved = []

    def __enter__(self):
        self._saved.append(config.read(self.name))
        config.update(self.name, self.value)
        return self

    def __exit__(self, *exc):
        config.update(self.name, self._saved.pop())
        return False

    def __call__(self, fun):  # as a decorator: the flag is set while ``fun`` runs
        import functools

        @functools.wraps(fun)
        def wrapped(*args, **kwargs):
            with _Override(self.name, self.value):
                return fun(*args, **kwargs)
        return wrapped


class State:
    """A flag as a context manager, as JAX's config states: ``with functrax.debug_nans(True):``
    sets the flag for the block; ``.value`` reads it. A boolean flag's context manager sets
    True when called without a value.

    >>> with numpy_rank_promotion("raise"):
    ...     numpy_rank_promotion.value
    'raise'
    """

    def __init__(self, name: str, default_context_value=_NO_DEFAULT):
        self.name = name
        self.__name__ = f"jax_{name}"
        self._default = default_context_value

    @property
    def value(self):
        return config.read(self.name)

    def __call__(self, new_val=_NO_DEFAULT) -> _Override:
        if new_val is _NO_DEFAULT:
            if self._default is _NO_DEFAULT:
                raise TypeError(f"Context manager for {self.__name__} config option requires "
                                "an argument representing the new value for the config "
                                "option.")
            new_val = self._default
        validate = config._validators.get(self.name)
        if validate is not None:
            validate(new_val)
        return _Override(self.name, new_val)

    def __bool__(self):
        return bool(self.value)

    def __repr__(self):
        return f"State({self.__name__}={self.value!r})"


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


# --- flags of the debugging and promotion API (each also a State context manager) ---

def _enum(name, values, optional=False):
    def validate(value):
        if optional and value is None:
            return
        if type(value) is not str or value not in values:
            none = "None or " if optional else ""
            raise ValueError(f"new enum value must be {none}in {list(values)}, got {value} "
                             f"of type {type(value)}. (config option jax_{name})")
    return validate


def _bool(name):
    def validate(value):
        if not isinstance(value, (bool, int)) or isinstance(value, float):
            raise TypeError(f"jax_{name} must be a bool, got {value!r} of type "
                            f"{type(value).__name__}")
    return validate


# JAX's jax_default_matmul_precision values (the legacy names and the dot-algorithm presets)
MATMUL_PRECISIONS = (
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "TF32_TF32_F32",
    "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64",
)


def _device_or_none(value):
    if value is None or isinstance(value, str) or all(
            hasattr(value, a) for a in ("platform", "id")):
        return
    raise ValueError(f"jax_default_device must be a Device (an entry of functrax.devices()), a "
                     f"platform name ('cpu', 'gpu') or None, got {value!r} of type "
                     f"{type(value).__name__}")


config._validators["debug_nans"] = _bool("debug_nans")
config.define("debug_infs", False, "Raise FloatingPointError when a primitive (eagerly) or a "
              "jitted function (on its outputs) produces an inf.", validate=_bool("debug_infs"))
config.define("check_tracer_leaks", False, "Raise UnexpectedTracerError at the end of a "
              "transformation that let one of its tracers escape (slow: a garbage collection "
              "per trace).", validate=_bool("check_tracer_leaks"), trace_context=True)
config.define("numpy_rank_promotion", "allow", "What functrax.numpy does when operands of "
              "different ranks broadcast: 'allow', 'warn' or 'raise'.",
              validate=_enum("numpy_rank_promotion", ("allow", "warn", "raise")),
              trace_context=True)
config.define("numpy_dtype_promotion", "standard", "Implicit dtype promotion in "
              "functrax.numpy: 'standard' (JAX's lattice) or 'strict' (only weakly typed Python "
              "scalars promote).",
              validate=_enum("numpy_dtype_promotion", ("standard", "strict")),
              trace_context=True)
config.define("default_matmul_precision", None, "The precision of dot_general and "
              "conv_general_dilated when their precision is None (recorded in the jaxpr).",
              validate=_enum("default_matmul_precision", MATMUL_PRECISIONS, optional=True),
              trace_context=True)
config.define("default_device", None, "The device jit runs on and eager results are placed "
              "on (None: the host, CpuDevice(id=0)).", validate=_device_or_none,
              trace_context=True)
config.define("eager_constant_folding", False, "Evaluate primitives whose operands are all "
              "concrete eagerly while tracing (functrax.ensure_compile_time_eval).",
              trace_context=True)
config.define("enable_checks", False, "Type-check every jaxpr jit traces (check_jaxpr).",
              validate=_bool("enable_checks"), trace_context=True)
config.define("explain_cache_misses", False, "Log why jit traces a function again (as "
              "log_compiles, with the reason).", validate=_bool("explain_cache_misses"))

check_tracer_leaks = State("check_tracer_leaks", True)
debug_nans = State("debug_nans", True)
debug_infs = State("debug_infs", True)
numpy_rank_promotion = State("numpy_rank_promotion")
numpy_dtype_promotion = State("numpy_dtype_promotion")
default_matmul_precision = State("default_matmul_precision")
enable_x64 = State("enable_x64", True)
log_compiles = State("log_compiles", True)
enable_checks = State("enable_checks", True)
explain_cache_misses = State("explain_cache_misses", True)

# --- PRNG flags (functrax.random reads them) ---


def _prng_impl(value):
    if value != "threefry2x32":
        raise ValueError(f"jax_default_prng_impl: functrax implements the 'threefry2x32' PRNG "
                         f"only ('rbg' and 'unsafe_rbg' are not provided), got {value!r}")


config.define("default_prng_impl", "threefry2x32", "The PRNG implementation of "
              "functrax.random.key and PRNGKey when impl is None.", validate=_prng_impl,
              trace_context=True)
config.define("enable_custom_prng", False, "Accepted for compatibility with JAX, where it is "
              "deprecated: typed key arrays (functrax.random.key) are always available.",
              validate=_bool("enable_custom_prng"))
config.define("legacy_prng_key", "allow", "What functrax.random does with a raw uint32 key "
              "(random.PRNGKey): 'allow', 'warn' or 'error'.",
              validate=_enum("legacy_prng_key", ("allow", "warn", "error")), trace_context=True)
default_prng_impl = State("default_prng_impl")
enable_custom_prng = State("enable_custom_prng", True)
legacy_prng_key = State("legacy_prng_key")


def checking_leaks():
    """Context manager checking for leaked tracers (``check_tracer_leaks(True)``).

    >>> with checking_leaks():
    ...     config.check_tracer_leaks
    True
    """
    return check_tracer_leaks(True)


def ensure_compile_time_eval():
    """Context manager: inside it, primitives whose operands are all concrete are evaluated
    eagerly, also while ``jit`` traces, so their results are concrete values (usable in
    Python control flow). Operations on traced values are staged as usual.

    >>> import functrax, functrax.numpy as fnp
    >>> @functrax.jit
    ... def f(x):
    ...     with ensure_compile_time_eval():
    ...         n = int(fnp.sum(fnp.arange(4)))
    ...     return x * n
    >>> f(1.0)
    Array(6., dtype=float32, weak_type=True)
    """
    return _Override("eager_constant_folding", True)


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
def _check_cpu_backend(value):
    if value not in ("auto", "c", "numpy"):
        raise ValueError(f"functrax.config.update: cpu_backend must be 'auto' (numpy at once, "
                         f"the C backend once compiled in the background), 'c' or 'numpy', got "
                         f"{value!r}")


config.define("cpu_backend", os.environ.get("FUNCTRAX_CPU_BACKEND") or "auto",
              "The backend of jit on the CPU when none is named: 'auto' (the default: the "
              "numpy executor serves the first calls while the C backend compiles the program "
              "on a background thread, then the C program; numpy only when no C compiler "
              "works), 'c' (the C program from the first call, which waits for the compiler) "
              "or 'numpy'.", validate=_check_cpu_backend, trace_context=True)
config.define("c_program_cache", _env_bool("FUNCTRAX_C_PROGRAM_CACHE", True),
              "Whether the C backend records compiled programs on disk, keyed by the traced "
              "program, so that a new process tracing the same function on the same types "
              "loads the program without running the passes, the planner, the code generator "
              "or the compiler (functrax.lowering.c.program_cache; beside the compiled "
              "libraries).")
config.define("c_dump_dir", os.environ.get("FUNCTRAX_C_DUMP_DIR") or None,
              "A directory to which the C backend writes the source of every program it "
              "builds (<hash>.c); None (the default) dumps nothing.", validate=_check_c_dump_dir)
