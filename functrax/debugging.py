"""Top-level debugging and introspection helpers of the public API (JAX's names):
``typeof``, ``live_arrays``, ``device_get``, ``named_scope``, ``named_call``,
``default_device`` and ``print_environment_info``. The config context managers
(``debug_nans``, ``checking_leaks``, ``numpy_rank_promotion``, ...) are the flags of
:mod:`functrax.config`; ``functrax.debug`` holds ``print`` / ``callback`` / ``breakpoint``.

>>> import functrax, functrax.numpy as fnp
>>> functrax.typeof(fnp.ones(3))
ShapedArray(float32[3])
"""
from __future__ import annotations

import contextlib
import functools
import gc
import platform
import sys
import threading

import numpy as np

from functrax import core
from functrax.config import State, config
from functrax.core import Tracer, is_concrete_array
from functrax.runtime import devices as _devices
from functrax.tree_util import tree_map

__all__ = ["typeof", "live_arrays", "device_get", "named_scope", "named_call",
           "current_name_stack", "default_device", "print_environment_info"]


def typeof(x) -> core.ShapedArray:
    """The abstract value (type) of ``x``: ``ShapedArray(float32[3])``; printed, ``float32[3]``.

    Raises:
      TypeError: for a value that is not an array (a list, a string, ...).

    >>> typeof(1.0)
    ShapedArray(float32[], weak_type=True)
    """
    if isinstance(x, Tracer):
        return x.aval
    return core.get_aval(x)


_VALUE_SLOT = core.Array.__dict__["_value"]  # the buffer slot, whatever a subclass adds


def _deleted(a) -> bool:
    """Whether ``a`` was donated to a jitted function (its buffer is gone)."""
    from functrax.transforms.jit import DeletedBuffer
    try:
        value = _VALUE_SLOT.__get__(a, type(a))
    except AttributeError:  # a GPU array: its buffer lives on the device
        return False
    return type(value) is DeletedBuffer


def live_arrays(platform: str | None = None) -> list:
    """Every ``Array`` alive now (referenced from somewhere), donated (deleted) ones excluded;
    only those on ``platform`` (``"cpu"``, ``"gpu"``) when given.

    The registry is the garbage collector's list of tracked objects (no strong reference,
    no cost per array; a call walks every live object once).

    >>> import functrax.numpy as fnp
    >>> x = fnp.ones(3)
    >>> any(a is x for a in live_arrays())
    True
    """
    found = []
    for obj in gc.get_objects():
        if is_concrete_array(obj) and not _deleted(obj):
            if platform is None or obj.device.platform == platform:
                found.append(obj)
    return found


def device_get(x):
    """``x`` (a pytree) with every array as a numpy array on the host; other leaves as
    they are.

    Raises:
      TracerArrayConversionError: for a traced value (no value yet).

    >>> import functrax.numpy as fnp
    >>> device_get({"a": fnp.ones(2)})
    {'a': array([1., 1.], dtype=float32)}
    """
    def get(leaf):
        if is_concrete_array(leaf) or isinstance(leaf, Tracer):
            return np.asarray(leaf)
        return leaf
    return tree_map(get, x)


# --- name scopes: accepted as JAX's, not printed (JAX prints none in its jaxprs) ---

_SCOPES = threading.local()


def current_name_stack() -> str:
    """The enclosing ``named_scope`` names, outermost first, joined by ``/``."""
    return "/".join(getattr(_SCOPES, "stack", ()))


@contextlib.contextmanager
def named_scope(name: str):
    """Context manager adding ``name`` to the name stack of the operations traced inside
    (JAX shows it in profiles and HLO metadata only; jaxprs print the same).

    Raises:
      TypeError: when ``name`` is not a string.

    >>> with named_scope("layer1"):
    ...     current_name_stack()
    'layer1'
    """
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    stack = getattr(_SCOPES, "stack", ())
    _SCOPES.stack = stack + (name,)
    try:
        yield
    finally:
        _SCOPES.stack = stack


def named_call(fun, *, name: str | None = None):
    """``fun`` running inside ``named_scope(name)`` (default: ``fun.__name__``).

    >>> named_call(lambda x: x + 1, name="inc")(1)
    2
    """
    if name is None:
        name = getattr(fun, "__name__", type(fun).__name__)

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with named_scope(name):
            return fun(*args, **kwargs)
    return named


# --- the default device: where jit runs and eager results live ---

default_device = State("default_device")
default_device.__doc__ = (
    "Context manager (``with functrax.default_device(functrax.devices()[0]):``) and config "
    "flag ``default_device``: jit runs on it (a GPU: the Triton backend, outputs staying "
    "there) and eager results are placed on it; ``device_put(x)`` puts ``x`` there.")


def _resolve(device):
    if isinstance(device, str):
        return _devices.devices(None if device == "cpu" else device)[0]
    return device


def _on_config_update(name, value):
    if name != "default_device":
        return
    device = _resolve(value) if value is not None else None
    if device is None or device.platform == "cpu":
        core.set_eager_placement(None)
    else:
        from functrax.runtime.gpu_devices import put_leaf
        core.set_eager_placement(lambda a: put_leaf(a, device))


config._watchers.append(_on_config_update)


def print_environment_info(return_string: bool = False):
    """The versions of functrax and its dependencies, the devices and the platform (printed,
    or returned with ``return_string=True``)."""
    # the package is imported by now (this is its attribute); read it without an import
    # (which would be a cycle between functrax and this module)
    version = getattr(sys.modules.get("functrax"), "__version__", "unknown")
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:  # pragma: no cover - triton is a dependency
        triton_version = "not installed"
    devs = _devices.local_devices()
    text = (f"functrax:    {version}\n"
            f"numpy:       {np.__version__}\n"
            f"triton:      {triton_version}\n"
            f"python:      {sys.version}\n"
            f"device info: {devs[0].platform}-{len(devs)}, {len(devs)} local devices\n"
            f"process_count: {_devices.process_count()}\n"
            f"platform: {platform.uname()}\n")
    if return_string:
        return text
    print(text)
