"""``functrax.example_libraries``: the small example libraries of ``jax.example_libraries``.

- :mod:`functrax.example_libraries.stax`: neural-network layers as ``(init_fun, apply_fun)``
  pairs and the combinators ``serial``, ``parallel`` and ``shape_dependent``;
- :mod:`functrax.example_libraries.optimizers`: optimizers as ``(init_fun, update_fun,
  get_params)`` triples over pytrees, learning-rate schedules and gradient clipping.

As in JAX, the package imports neither module: write
``from functrax.example_libraries import stax, optimizers``.
"""
