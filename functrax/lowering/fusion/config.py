"""Configuration, errors and the layout result of the fusion planner (re-exported by
:mod:`functrax.lowering.fusion.planner`)."""
from __future__ import annotations

import dataclasses

from functrax.lowering.fusion.types import GroupKind

__all__ = ["FusionConfig", "IllegalGroup", "GroupLayout"]


@dataclasses.dataclass(frozen=True)
class FusionConfig:
    """Knobs of :func:`plan_fusion`.

    Attributes:
      max_row: a REDUCTION's rows (the product of its reduced dims) with at most this many
        elements are kept whole in registers: several reductions and the values computed from
        their results then share one group. Longer rows are streamed (one pass:
        prologue -> reductions -> epilogue).
      matmul_side_reductions: let a MATMUL group also reduce one of its operands over that
        operand's contracting dims (a dense layer's bias gradient).
      mixed_reductions: let one persistent REDUCTION group hold reductions over different
        subsets of its (in-register) reduce axes, e.g. a row softmax and a sum over the
        batch of a small array in one single-program group. False (default): every
        reduction of a group reduces exactly the group's reduce axes.
      sibling_fusion: after producer-consumer fusion, merge groups that read the same value
        (each merge only when the result is a valid kernel).
      enabled: False gives one group per equation (views still go with their consumers).
    """

    max_row: int = 8192
    mixed_reductions: bool = False
    matmul_side_reductions: bool = True
    sibling_fusion: bool = True
    enabled: bool = True


# sibling fusion tries the first readers of a value only (each try analyses a group)


class IllegalGroup(Exception):
    """A set of equations that cannot run as one kernel (the message says why)."""



@dataclasses.dataclass(frozen=True)
class GroupLayout:
    """The iteration space of a group, as a backend needs it.

    Attributes:
      kind, shape, reduce_axes: as in FusionGroup.
      var_axes: for every value with one fixed indexing (computed in the group, and written
        views), one entry per dimension: the position in ``shape`` it runs along, or None for a
        size-1 dimension. Views of group inputs are absent: each use indexes them afresh
        (compose the view equations to compute the load index).
      persistent: REDUCTION only: the rows are kept whole in registers.
      row_size: REDUCTION only: elements per row (the product of the reduced dims).
    """

    kind: GroupKind
    shape: tuple
    reduce_axes: tuple = ()
    var_axes: dict = dataclasses.field(default_factory=dict)
    persistent: bool = True
    row_size: int = 1
