"""The core: abstract values, primitives, traces and tracers, the jaxpr IR and its printer,
evaluation, type checking and the abstract device (the layer above the utilities).

- ``avals``: ``ShapedArray``, ``get_aval``;
- ``jaxpr``: ``Var``/``Literal``/``JaxprEqn``/``Jaxpr``/``ClosedJaxpr``, ``eval_jaxpr``, printing;
- ``array``: the eager ``Array``;
- ``trace``: ``Trace``/``Tracer``, the current trace, named axes, ``EvalTrace`` and
  the eager rules (the default backend registers its table);
- ``primitive``: ``Primitive`` (name, family, abstract evaluation, ``bind``);
- ``check``: ``check_jaxpr``;
- ``device``: the abstract ``Device``;
- ``tracing``: the staging trace, ``make_jaxpr``, ``eval_shape``.

Design (as modern JAX's "stackless" core): see :mod:`functrax.core.trace`.
"""
from functrax.core.avals import (  # noqa: F401
    ShapedArray, get_aval, is_extended_aval, physical_aval, raise_to_shaped, scalar_aval,
    typematch,
)
from functrax.core.jaxpr import (  # noqa: F401
    ClosedJaxpr, Effect, Jaxpr, JaxprEqn, Literal, Var, effect_rules, eqn_effects, eval_jaxpr,
    has_effects, has_ordered_effects, jaxpr_as_fun, jaxpr_effects, no_effects, sub_jaxprs,
)
from functrax.core.device import Device  # noqa: F401
from functrax.core.array import Array, is_concrete_array, to_numpy_value  # noqa: F401
from functrax.core.trace import (  # noqa: F401
    EVAL_TRACE, AxisFrame, EvalTrace, as_array, Trace, TraceState, Tracer, abstract_eval,
    abstract_eval_cached, axis_env, axis_frame, check_special, current_trace, eager_rule,
    ensure_no_leaks, extend_axis_env, is_arraylike, new_trace, no_abstract_eval_cache,
    register_eager_rules, register_extended_eval, set_current_trace, set_eager_placement,
    special_checks_enabled, eager_array_rules, vma_axes, vma_of, vma_prebind_rules,
    vma_rules, pvary_hook, VMA,
)
from functrax.core.primitive import ELEMENTWISE_FAMILIES, Family, Primitive  # noqa: F401
from functrax.core.check import (  # noqa: F401
    axis_binding_rules, check_if_enabled, check_jaxpr,
)
