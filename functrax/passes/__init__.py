"""IR passes over jaxprs, run by jit before execution: each pass is a pure function
``Jaxpr -> Jaxpr`` in its own module; ``pipeline.optimize`` runs them in order."""
