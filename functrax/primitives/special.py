"""Special-function primitives (as ``jax.lax``'s): incomplete gamma and beta functions,
polygamma and Hurwitz zeta, exponentially scaled Bessel functions, and the derivative of
gamma samples.

All are elementwise (family TRANSCENDENTAL) on floating operands of one dtype and one shape
(a rank-0 operand may stand beside arrays, as for the other n-ary elementwise primitives).
Their numpy rules live in ``functrax/lowering/numpy/special_*.py`` (series, continued
fractions and Chebyshev expansions computed in float64), their JVPs in
``functrax/transforms/special_rules.py``.
"""
from __future__ import annotations

from functrax.primitives.define import FLOATING, Family, ShapedArray, check_dtype, new_primitive
from functrax.primitives.elementwise import as_operand, binop, unop

__all__ = [
    "igamma_p", "igammac_p", "igamma_grad_a_p", "random_gamma_grad_p", "polygamma_p",
    "zeta_p", "bessel_i0e_p", "bessel_i1e_p", "regularized_incomplete_beta_p", "igamma",
    "igammac", "igamma_grad_a", "random_gamma_grad", "polygamma", "zeta", "bessel_i0e",
    "bessel_i1e", "betainc",
]

_T = Family.TRANSCENDENTAL

igamma_p = binop("igamma", FLOATING, family=_T)
igammac_p = binop("igammac", FLOATING, family=_T)
igamma_grad_a_p = binop("igamma_grad_a", FLOATING, family=_T)
random_gamma_grad_p = binop("random_gamma_grad", FLOATING, family=_T)
polygamma_p = binop("polygamma", FLOATING, family=_T)
zeta_p = binop("zeta", FLOATING, family=_T)
bessel_i0e_p = unop("bessel_i0e", FLOATING, family=_T)
bessel_i1e_p = unop("bessel_i1e", FLOATING, family=_T)
regularized_incomplete_beta_p = new_primitive("regularized_incomplete_beta", family=_T)


@regularized_incomplete_beta_p.def_abstract_eval
def _betainc_abstract(a, b, x):
    avals = (a, b, x)
    dts = {v.dtype for v in avals}
    if len(dts) > 1:
        got = ", ".join(v.dtype.name for v in avals)
        raise TypeError("regularized_incomplete_beta requires arguments to have the same "
                        f"dtypes, got {got}. (functrax.scipy.special.betainc promotes for you; "
                        "lax.betainc does not.)")
    check_dtype("regularized_incomplete_beta", a.dtype, FLOATING)
    shapes = {v.shape for v in avals if v.shape != ()}
    if len(shapes) > 1:
        raise TypeError("regularized_incomplete_beta got incompatible shapes for "
                        f"broadcasting: {a.shape}, {b.shape}, {x.shape}.")
    shape = shapes.pop() if shapes else ()
    return ShapedArray(shape, a.dtype, all(v.weak_type for v in avals))


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---


def _operands(*args):
    like = next((a for a in args if type(a) not in (bool, int, float)), None)
    return [as_operand(a, like) for a in args]


def igamma(a, x):
    """Regularized lower incomplete gamma function ``P(a, x)`` (``gammainc``).

    >>> round(float(igamma(2.0, 1.0)), 6)
    0.264241
    """
    return igamma_p.bind(*_operands(a, x))


def igammac(a, x):
    """Regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``.

    >>> round(float(igammac(2.0, 1.0)), 6)
    0.735759
    """
    return igammac_p.bind(*_operands(a, x))


def igamma_grad_a(a, x):
    """``d P(a, x) / d a``, the derivative of :func:`igamma` in its first argument.

    >>> round(float(igamma_grad_a(2.0, 1.0)), 6)
    -0.276196
    """
    return igamma_grad_a_p.bind(*_operands(a, x))


def random_gamma_grad(a, x):
    """The derivative of a Gamma(``a``, 1) sample ``x`` with respect to ``a`` at a fixed
    quantile, ``-(dP/da) / (dP/dx)`` (implicit reparameterization, as JAX's).

    >>> round(float(random_gamma_grad(2.5, 1.0)), 4)
    0.6508
    """
    return random_gamma_grad_p.bind(*_operands(a, x))


def polygamma(m, x):
    """The polygamma function ``psi^(m)(x)``, the ``m``-th derivative of ``digamma``; ``m``
    is a float holding a non-negative integer (NaN otherwise).

    >>> round(float(polygamma(1.0, 1.0)), 6)  # pi ** 2 / 6
    1.644934
    """
    return polygamma_p.bind(*_operands(m, x))


def zeta(x, q):
    """The Hurwitz zeta function ``sum_k (k + q) ** -x``.

    >>> round(float(zeta(2.0, 1.0)), 6)
    1.644934
    """
    return zeta_p.bind(*_operands(x, q))


def bessel_i0e(x):
    """Exponentially scaled modified Bessel function of order 0, ``exp(-|x|) I0(x)``.

    >>> round(float(bessel_i0e(1.0)), 6)
    0.46576
    """
    return bessel_i0e_p.bind(as_operand(x))


def bessel_i1e(x):
    """Exponentially scaled modified Bessel function of order 1, ``exp(-|x|) I1(x)``.

    >>> round(float(bessel_i1e(1.0)), 6)
    0.20791
    """
    return bessel_i1e_p.bind(as_operand(x))


def betainc(a, b, x):
    """Regularized incomplete beta function ``I_x(a, b)`` (binds
    ``regularized_incomplete_beta``).

    >>> round(float(betainc(2.0, 3.0, 0.5)), 6)
    0.6875
    """
    return regularized_incomplete_beta_p.bind(*_operands(a, b, x))
