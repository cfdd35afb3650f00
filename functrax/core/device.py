"""The abstract device: what arrays live on and replicas run on.

The runtime layer (``functrax/runtime/``) makes the device lists (virtual CPU devices, CUDA
GPUs as a subclass); the core only needs the type, e.g. for ``Array.device``.
"""
from __future__ import annotations


class Device:
    """A device that arrays live on and pmap replicas run on (a virtual CPU device unless
    ``platform`` says otherwise).

    >>> Device(2)
    CpuDevice(id=2)
    """

    __slots__ = ("id", "process_index", "platform", "device_kind")

    def __init__(self, id: int, process_index: int = 0, platform: str = "cpu"):
        self.id = int(id)
        self.process_index = int(process_index)
        self.platform = platform
        self.device_kind = platform

    @property
    def host_id(self) -> int:
        return self.process_index

    def _key(self):
        return (self.platform, self.id, self.process_index)

    def __eq__(self, other):
        return type(other) is Device and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"{self.platform.capitalize()}Device(id={self.id})"

    __str__ = __repr__
