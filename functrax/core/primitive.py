"""``Primitive``: a named operation of the IR; only its abstract evaluation lives on it."""
from __future__ import annotations

from functrax.core.trace import current_trace


class Primitive:
    """A named operation of the IR. Only its abstract evaluation lives on it.

    ``abstract_eval(*avals, **params)`` returns the output aval (a list of them when
    ``multiple_results``). Every other meaning lives in a rule table keyed by the primitive.

    >>> sin_p = Primitive("sin_demo")
    """

    __slots__ = ("name", "multiple_results", "abstract_eval", "__weakref__")

    def __init__(self, name: str, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.abstract_eval = None

    def def_abstract_eval(self, rule):
        self.abstract_eval = rule
        return rule

    def bind(self, *args, **params):
        return current_trace().process_primitive(self, args, params)

    def __repr__(self):
        return self.name
