"""The data the fusion planner produces and every code generator consumes.

A :class:`FusionPlan` partitions the equations of an optimized, first-order jaxpr into
:class:`FusionGroup` s, each becoming one kernel (or one fallback call) on a backend. The plan
is backend-independent and a pure function of the jaxpr: backends only render groups.
"""
from __future__ import annotations

import dataclasses
import enum

from functrax.core import Jaxpr, JaxprEqn, Var


class GroupKind(enum.Enum):
    """What iteration space a group's kernel runs over."""

    ELEMENTWISE = "elementwise"  # one output shape; loads may broadcast/transposes as indexing
    REDUCTION = "reduction"      # prologue (elementwise) -> reduce over trailing axes -> epilogue
    MATMUL = "matmul"            # one dot_general (+ elementwise epilogue on its output)
    CONV = "conv"                # one conv_general_dilated (+ elementwise epilogue on its output)
    OPAQUE = "opaque"            # a single unfusible equation (sort, gather, scan, ...)


@dataclasses.dataclass(frozen=True)
class FusionGroup:
    """Equations executed together as one kernel.

    Attributes:
      kind: the iteration space (see GroupKind).
      eqns: the equations, in a valid execution order.
      inputs: vars read from outside the group (jaxpr inputs, consts or other groups' outputs).
      outputs: vars the group writes that are used outside it (or are jaxpr outputs).
      shape: the iteration shape: the output shape for ELEMENTWISE, the (kept + reduced) input
        shape for REDUCTION, the output shape for MATMUL and CONV, () for OPAQUE.
      reduce_axes: for REDUCTION, the reduced axes of ``shape``.
    """

    kind: GroupKind
    eqns: tuple
    inputs: tuple
    outputs: tuple
    shape: tuple = ()
    reduce_axes: tuple = ()

    def describe(self) -> str:
        names = " ".join(e.primitive.name for e in self.eqns)
        return f"{self.kind.value}{list(self.shape)}: {names}"


@dataclasses.dataclass(frozen=True)
class FusionPlan:
    """The groups of one jaxpr, in execution order."""

    jaxpr: Jaxpr
    groups: tuple

    def describe(self) -> str:
        return "\n".join(f"kernel {i}: {g.describe()}" for i, g in enumerate(self.groups))

    @property
    def num_kernels(self) -> int:
        """Kernels (and fallback calls) the plan launches: one per group."""
        return len(self.groups)


__all__ = ["GroupKind", "FusionGroup", "FusionPlan", "Jaxpr", "JaxprEqn", "Var"]

