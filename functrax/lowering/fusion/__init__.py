"""The fusion planner, shared by every backend: a pure function from an optimized jaxpr to a
``FusionPlan`` of groups (elementwise chains with views as index arithmetic, reductions with
prologue and epilogue, matmuls and convolutions with epilogue, opaque single equations).

- ``planner``: ``plan_fusion`` and the greedy grouping (re-exports the public names);
- ``tables``: how each primitive fuses, derived from its family;
- ``analysis`` + ``views`` / ``reductions`` / ``matmul`` / ``conv`` / ``gather`` /
  ``bitcast``: the iteration-space analysis of a group, one part per kind of equation
  (tables keyed by primitive: view-axis rules, data-dependent views);
- ``types`` / ``config``: the plan's data types, the planner's configuration and errors.
"""
