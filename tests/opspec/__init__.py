"""The op-spec table: one entry per public function/primitive under test.

Each family module (``elementwise.py``, ``reductions.py``, ...) defines ``SPECS``, a list of
:class:`OpSpec`; ``ALL_SPECS`` gathers them. Drivers in ``tests/test_opspec.py`` run every
entry eagerly against numpy, traced (with ``check_jaxpr``), and under hypothesis where the
spec asks for it. Later transforms (grad, vmap, jit, Triton) add drivers over the same table.
"""
from tests.opspec.spec import OpSpec, ALL_FAMILIES, all_specs  # noqa: F401
