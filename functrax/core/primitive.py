"""``Primitive``: a named operation of the IR; only its abstract evaluation and its family
live on it."""
from __future__ import annotations

import enum

from functrax.core.trace import VMA as _VMA, insert_pvary as _insert_pvary, trace_state


class Family(enum.Enum):
    """The family of a primitive, declared once when it is defined.

    Tables that treat a family alike (the vmap rule of elementwise ops, fusion
    classification, the cost model, the executor's fast paths) derive their entries from it,
    keyed by the primitive object.
    """
    ELEMENTWISE = "elementwise"        # out[i] from the operands' [i] (rank-0 operands too)
    TRANSCENDENTAL = "transcendental"  # elementwise, one transcendental function per element
    REDUCTION = "reduction"            # reduce_* and arg-reductions over some axes
    CUMULATIVE = "cumulative"          # prefix scans along one axis
    SORT = "sort"                      # permutations of whole rows
    SHAPE = "shape"                    # layout: broadcast, reshape, transpose, slice, pad, ...
    INDEXING = "indexing"              # reads at computed positions: gather, dynamic_slice
    SCATTER = "scatter"                # writes at computed positions
    CONTRACTION = "contraction"        # dot_general
    CONVOLUTION = "convolution"        # conv_general_dilated: windows contracted with a kernel
    WINDOW = "window"                  # windowed reductions (reduce_window, select_and_scatter)
    FFT = "fft"                        # discrete Fourier transforms
    COLLECTIVE = "collective"          # communication over a named axis
    CONTROL_FLOW = "control_flow"      # cond, while, scan: sub-jaxprs run conditionally
    CALL = "call"                      # jit, custom derivatives, remat, pmap: one sub-jaxpr
    LINALG = "linalg"                  # matrix decompositions and solves
    PRNG = "prng"                      # the threefry2x32 block cipher
    FUSED = "fused"                    # made by a lowering pattern pass (fused_attention)
    CALLBACK = "callback"              # Python run on the host: debug print, pure/io callbacks
    BARRIER = "barrier"                # optimization_barrier: an identity nothing looks into

    def __repr__(self):
        return f"Family.{self.name}"


ELEMENTWISE_FAMILIES = frozenset({Family.ELEMENTWISE, Family.TRANSCENDENTAL})


class Primitive:
    """A named operation of the IR. Only its abstract evaluation and family live on it.

    ``abstract_eval(*avals, **params)`` returns the output aval (a list of them when
    ``multiple_results``). Every other meaning lives in a rule table keyed by the primitive.
    ``family`` (a :class:`Family`, None for a user's primitive) lets tables that treat a
    family alike derive their entry.

    >>> sin_p = Primitive("sin_demo", family=Family.TRANSCENDENTAL)
    >>> sin_p.family
    Family.TRANSCENDENTAL
    """

    __slots__ = ("name", "multiple_results", "abstract_eval", "family", "__weakref__")

    def __init__(self, name: str, multiple_results: bool = False, family: Family | None = None):
        self.name = name
        self.multiple_results = multiple_results
        self.abstract_eval = None
        self.family = family

    def def_abstract_eval(self, rule):
        self.abstract_eval = rule
        return rule

    def bind(self, *args, **params):
        if _VMA.axes:  # inside a shard_map body with check_vma: type operands' variance
            args = _insert_pvary(self, args, params)
        return trace_state.trace.process_primitive(self, args, params)

    def __repr__(self):
        return self.name
