"""A number of virtual CPU devices for the tests of one module (multi-device tests)."""
from __future__ import annotations

import contextlib

import functrax
from functrax.runtime.devices import clear_backends


@contextlib.contextmanager
def cpu_devices(n: int):
    """``n`` virtual CPU devices inside the block (the device list is made again), the
    previous count afterwards, so the other test modules keep theirs. Use it in a module's
    autouse fixture::

        @pytest.fixture(autouse=True, scope="module")
        def eight_devices():
            with cpu_devices(8):
                yield
    """
    prev = functrax.config.read("num_cpu_devices")
    clear_backends()
    functrax.config.update("num_cpu_devices", n)
    try:
        yield
    finally:
        clear_backends()
        functrax.config.update("num_cpu_devices", prev)
