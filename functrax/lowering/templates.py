"""The expression-template table a code-generating backend (Triton, C) keeps per primitive.

A backend's rules module owns one :class:`TemplateTable`: ``rules[prim]`` or
``rules[(prim, variant)]`` holds a template (a string, a tuple of steps, or a function of the
rule context returning one); ``variant_of[prim]`` picks the variant from the context (by
default the dtype class of the first operand). Only the template language differs between
backends; the lookup, its error and the registration are this one piece of code.

>>> t = TemplateTable("Demo", "demo.rules", lambda dt: "float", NotImplementedError)
>>> t.deftemplate("neg", "-{0}")
>>> t.rules["neg"]
'-{0}'
"""
from __future__ import annotations

__all__ = ["TemplateTable"]


class TemplateTable:
    """Templates by primitive (and variant) for the backend ``backend``.

    Args:
      backend: the backend's name in error messages (``"Triton"``, ``"C"``).
      where: the dotted path of the table, named in the error's fix.
      dtype_class: ``dtype -> variant name`` (the default variant of an equation).
      error: the exception class raised for a missing rule (the backend's UnsupportedError).
    """

    def __init__(self, backend: str, where: str, dtype_class, error):
        self.backend, self.where, self.dtype_class, self.error = backend, where, dtype_class, error
        self.rules: dict = {}
        self.variant_of: dict = {}  # prim -> fn(ctx) -> variant name

    def variant(self, prim, ctx) -> str:
        fn = self.variant_of.get(prim)
        if fn is not None:
            return fn(ctx)
        return self.dtype_class(ctx.in_avals[0].dtype if ctx.in_avals else ctx.out_aval.dtype)

    def lookup(self, prim, ctx):
        """The template of an equation (resolved to a string or tuple of strings).

        Raises:
          the backend's UnsupportedError when no entry exists for the primitive (or its
          variant).
        """
        v = self.variant(prim, ctx)
        rule = self.rules.get((prim, v), self.rules.get(prim))
        if rule is None:
            raise self.error(
                f"the {self.backend} backend has no rule for primitive '{prim}' (variant "
                f"{v!r}, operand types {', '.join(a.str_short() for a in ctx.in_avals)}); add "
                f"an entry to {self.where} or run it on the numpy backend")
        return rule(ctx) if callable(rule) else rule

    def has_rule(self, prim, ctx) -> bool:
        try:
            self.lookup(prim, ctx)
        except self.error:
            return False
        return True

    def deftemplate(self, prim, template, *variants):
        """Register ``template`` for ``prim`` (for each of ``variants``, or for all)."""
        if not variants:
            self.rules[prim] = template
        for v in variants:
            self.rules[(prim, v)] = template
