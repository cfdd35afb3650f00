"""numpy rules of the special-function primitives of ``functrax/primitives/special.py``
(implemented in ``special_igamma``, ``special_zeta_bessel`` and ``special_betainc``)."""
from __future__ import annotations

from functrax import primitives as P
from functrax.lowering.numpy import special_betainc as _beta
from functrax.lowering.numpy import special_igamma as _igamma
from functrax.lowering.numpy import special_zeta_bessel as _zb
from functrax.lowering.numpy.rules import numpy_rules

numpy_rules.update({
    P.igamma_p: lambda a, x: _igamma.igamma(a, x),
    P.igammac_p: lambda a, x: _igamma.igammac(a, x),
    P.igamma_grad_a_p: lambda a, x: _igamma.igamma_grad_a(a, x),
    P.random_gamma_grad_p: lambda a, x: _igamma.random_gamma_grad(a, x),
    P.polygamma_p: lambda m, x: _zb.polygamma(m, x),
    P.zeta_p: lambda x, q: _zb.zeta(x, q),
    P.bessel_i0e_p: lambda x: _zb.bessel_i0e(x),
    P.bessel_i1e_p: lambda x: _zb.bessel_i1e(x),
    P.regularized_incomplete_beta_p: lambda a, b, x: _beta.betainc(a, b, x),
})
