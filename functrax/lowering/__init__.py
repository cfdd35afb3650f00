"""The lowering layer: how an optimized jaxpr runs on a backend.

- ``backends``: the registry of backends (``"numpy"``, ``"triton"``, ``"c"``) that ``jit`` looks
  names up in; each backend package registers itself when imported;
- ``fusion/``: the backend-independent fusion plan (which equations form one kernel);
- ``numpy/``: the reference backend (one numpy rule per primitive, the generated-code executor);
- ``triton/``: the Triton backend (each fusion group rendered as a Triton kernel);
- ``c/``: the C backend (each elementwise / reduction group rendered as a C function, one
  shared library per program compiled by the system C compiler);
- ``cost``: the static cost model (``Compiled.cost_analysis()``).

Lowering never imports the transforms or the public API (``tests/test_layers.py``).
"""
