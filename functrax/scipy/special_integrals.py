"""``functrax.scipy.special``: exponential integrals (expi, expn, exp1), the sine and cosine
integrals (sici) and Spence's function, as ``jax.scipy.special``; Cephes' algorithms
(``ei.c``, ``expn.c``, ``sici.c``, ``spence.c``) written with ``lax`` operations.

``expn``'s power series and continued fraction are ``while_loop`` s over the whole array in
which each element stops updating once its own term is below eps (at most 500 terms).
``expi``, ``expn`` (in ``x``) and ``sici`` have custom JVPs (``exp(x) / x``,
``-expn(n - 1, x)``, ``(sin x / x, cos x / x)``), as JAX's.
"""
from __future__ import annotations

import numpy as np

from functrax import core, lax
from functrax import numpy as fnp
from functrax.scipy.special_error import p1evl, polevl
from functrax.scipy.special_info import const, promote
from functrax.transforms.custom_derivatives import custom_jvp

__all__ = ["expi", "expn", "exp1", "sici", "spence"]

_EULER = 0.5772156649015329
_MAX_TERMS = 500


def _any(pred):
    nd = core.get_aval(pred).ndim
    return pred if nd == 0 else lax.reduce_or(pred, tuple(range(nd)))


def _masked_while(active, body, state, eps):
    """Iterate ``body(state) -> (new_state, t)`` on the elements still ``active`` (their
    relative change ``t`` above ``eps``), at most ``_MAX_TERMS`` times."""
    def cond(carry):
        i, running, _ = carry
        return lax.bitwise_and(lax.lt(i, _MAX_TERMS), _any(running))

    def step(carry):
        i, running, st = carry
        new, t = body(st)
        st = tuple(lax.select(running, n, o) for n, o in zip(new, st))
        return i + 1, lax.bitwise_and(running, lax.gt(t, const(t, eps))), st

    return lax.while_loop(cond, step, (0, active, tuple(state)))[2]


# --- expn ---


def _expn_series(n, x, active, eps):
    """E_n(x) for 0 < x <= 1: the power series (Cephes)."""
    one = fnp.ones_like(x)
    pk = 1 - n
    ans = fnp.where(n == 1, fnp.zeros_like(x), one / fnp.where(pk == 0, one, pk))

    def body(st):
        xk, yk, pk, ans = st
        xk = xk + 1
        yk = yk * (-x) / xk
        pk = pk + 1
        ans = ans + fnp.where(pk != 0, yk / fnp.where(pk != 0, pk, one), 0.0)
        t = fnp.where(ans != 0, fnp.abs(yk / fnp.where(ans != 0, ans, one)), one)
        return (xk, yk, pk, ans), t

    _, _, _, ans = _masked_while(active, body, (fnp.zeros_like(x), one, pk, ans), eps)
    psi = lax.digamma(n) - lax.log(x)
    sign = fnp.where(fnp.fmod(n - 1, 2) == 0, one, -one)
    return sign * lax.exp((n - 1) * lax.log(x) - lax.lgamma(n)) * psi - ans


def _expn_cf(n, x, active, eps):
    """E_n(x) for x > 1: the continued fraction (Cephes)."""
    big = const(x, 1.44115188075855872e17)
    one = fnp.ones_like(x)
    qkm1 = x + n

    def body(st):
        k, pkm2, qkm2, pkm1, qkm1, ans = st
        k = k + 1
        odd = fnp.fmod(k, 2) == 1
        yk = fnp.where(odd, one, x)
        xk = fnp.where(odd, n + (k - 1) / 2, k / 2)
        pk = pkm1 * yk + pkm2 * xk
        qk = qkm1 * yk + qkm2 * xk
        nz = qk != 0
        r = pk / fnp.where(nz, qk, one)
        t = fnp.where(nz, fnp.abs((ans - r) / fnp.where(r != 0, r, one)), one)
        ans = fnp.where(nz, r, ans)
        scale = fnp.where(fnp.abs(pk) > big, 1 / big, one)
        return (k, pkm1 * scale, qkm1 * scale, pk * scale, qk * scale, ans), t

    init = (one, one, x, one, qkm1, one / qkm1)
    ans = _masked_while(active, body, init, eps)[-1]
    return ans * lax.exp(-x)


def _expn_large_n(n, x):
    """E_n(x) for n >= 5000 (Cephes' expansion)."""
    xk = x + n
    yk = 1 / (xk * xk)
    ans = yk * n * (6 * x * x - 8 * n * x + n * n)
    ans = yk * (ans + n * (n - 2 * x))
    ans = yk * (ans + n)
    return (ans + 1) * lax.exp(-x) / xk


def _expn_impl(n, x):
    n, x = promote("expn", n, x)
    n, x = fnp.broadcast_arrays(n, x)
    eps = float(np.finfo(core.get_aval(x).dtype).eps)
    pos = x > 0
    safe_x = fnp.where(pos, x, const(x, 1.0))
    regular = pos & (n > 0) & (n < 5000)
    use_cf = regular & (x > 1)
    series = _expn_series(n, fnp.where(use_cf, const(x, 0.5), safe_x), regular & ~use_cf, eps)
    cf = _expn_cf(n, fnp.where(use_cf, safe_x, const(x, 2.0)), use_cf, eps)
    out = fnp.where(use_cf, cf, series)
    out = fnp.where(n >= 5000, _expn_large_n(n, safe_x), out)
    out = fnp.where((n == 0) & pos, lax.exp(-safe_x) / safe_x, out)
    n1 = fnp.where(n == 1, const(n, 2.0), n)
    out = fnp.where(x == 0, fnp.where(n < 2, const(x, np.inf), 1 / (n1 - 1)), out)
    return fnp.where((n < 0) | (x < 0) | fnp.isnan(x) | fnp.isnan(n), const(x, np.nan), out)


_expn = custom_jvp(_expn_impl, nondiff_argnums=(0,))


def _expn_negative_impl(n, x):
    """``E_n(x) = x**(n-1) Gamma(1-n) Q(1-n, x)`` for integer ``n <= 0`` (the orders the
    derivatives of ``E_0`` reach: ``d E_n / dx = -E_{n-1}``)."""
    m = 1 - n
    return lax.exp((n - 1) * lax.log(x) + lax.lgamma(m)) * lax.igammac(m, x)


_expn_negative = custom_jvp(_expn_negative_impl, nondiff_argnums=(0,))


def _lower_order(n, x):
    """``E_{n-1}(x)``: the public ``expn`` above 0, the closed form for lower orders."""
    m = n - 1
    return fnp.where(m >= 0, _expn(fnp.maximum(m, 0), x), _expn_negative(fnp.minimum(m, 0), x))


@_expn.defjvp
def _expn_jvp(n, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _expn(n, x), -x_dot * _lower_order(n, x)


@_expn_negative.defjvp
def _expn_negative_jvp(n, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _expn_negative(n, x), -x_dot * _expn_negative(n - 1, x)


def expn(n, x):
    """The generalized exponential integral ``E_n(x) = int_1^inf exp(-x t) / t**n dt``.

    Args:
      n: non-negative integer-valued orders (NaN for negative ones).
      x: non-negative reals (NaN for negative ones).

    >>> round(float(expn(2, 1.0)), 6)
    0.148496
    """
    n, x = promote("expn", n, x)
    return _expn(n, x)


def exp1(x):
    """The exponential integral ``E_1(x) = int_x^inf exp(-t) / t dt`` (``expn(1, x)``).

    >>> round(float(exp1(1.0)), 6)
    0.219384
    """
    (x,) = promote("exp1", x)
    return expn(fnp.ones_like(x), x)


# --- expi ---

_EI = (  # Cephes' ei.c: (A, B) rational approximations on (0, 2], [2, 4], ..., (64, inf)
    ((-5.350447357812542947283e0, 2.185049168816613393830e2, -4.176572384826693777058e3,
      5.541176756393557601232e4, -3.313381331178144034309e5, 1.592627163384945414220e6),
     (1.0, -5.250547959112862969197e1, 1.259616186786790571525e3, -1.756549581973534652631e4,
      1.493062117002725991967e5, -7.294949239640527645655e5, 1.592627163384945429726e6)),
    ((1.981808503259689673238e-2, -1.271645625984917501326e0, -2.088160335681228318920e0,
      2.755544509187936721172e0, -4.409507048701600257171e-1, 4.665623805935891391017e-2,
      -1.545042679673485262580e-3, 7.059980605299617478514e-5),
     (1.0, 1.476498670914921440652e0, 5.629177174822436244827e-1, 1.699017897879307263248e-1,
      2.291647179034212017463e-2, 4.450150439728752875043e-3, 1.727439612206521482874e-4,
      3.953167195549672482304e-5)),
    ((-1.373215375871208729803e0, -7.084559133740838761406e-1, 1.580806855547941010501e0,
      -2.601500427425622944234e-1, 2.994674694113713763365e-2, -1.038086040188744005513e-3,
      4.371064420753005429514e-5, 2.141783679522602903795e-6),
     (1.0, 8.585231423622028380768e-1, 4.483285822873995129957e-1, 7.687932158124475434091e-2,
      2.449868241021887685904e-2, 8.832165941927796567926e-4, 4.590952299511353531215e-4,
      -4.729848351866523044863e-6, 2.665195537390710170105e-6)),
    ((-2.106934601691916512584e0, 1.732733869664688041885e0, -2.423619178935841904839e-1,
      2.322724180937565842585e-2, 2.372880440493179832059e-4, -8.343219561192552752335e-5,
      1.363408795605250394881e-5, -3.655412321999253963714e-7, 1.464941733975961318456e-8,
      6.176407863710360207074e-10),
     (1.0, -2.298062239901678075778e-1, 1.105077041474037862347e-1,
      -1.566542966630792353556e-2, 2.761106850817352773874e-3, -2.089148012284048449115e-4,
      1.708528938807675304186e-5, -4.459311796356686423199e-7, 1.394634930353847498145e-8,
      6.150865933977338354138e-10)),
    ((-2.458119367674020323359e-1, -1.483382253322077687183e-1, 7.248291795735551591813e-2,
      -1.348315687380940523823e-2, 1.342775069788636972294e-3, -7.942465637159712264564e-5,
      2.644179518984235952241e-6, -4.239473659313765177195e-8),
     (1.0, -1.044225908443871106315e-1, -2.676453128101402655055e-1,
      9.695000254621984627876e-2, -1.601745692712991078208e-2, 1.496414899205908021882e-3,
      -8.462452563778485013756e-5, 2.728938403476726394024e-6, -4.239462431819542051337e-8)),
    ((1.212561118105456670844e-1, -5.823133179043894485122e-1, 2.348887314557016779211e-1,
      -3.040034318113248237280e-2, 1.510082146865190661777e-3, -2.523137095499571377122e-5),
     (1.0, -1.002252150365854016662e0, 2.928709694872224144953e-1,
      -3.337004338674007801307e-2, 1.560544881127388842819e-3, -2.523137093603234562648e-5)),
    ((-7.657847078286127362028e-1, 6.886192415566705051750e-1, -2.132598113545206124553e-1,
      3.346107552384193813594e-2, -3.076541477344756050249e-3, 1.747119316454907477380e-4,
      -6.103711682274170530369e-6, 1.218032765428652199087e-7, -1.086076102793290233007e-9),
     (1.0, -1.888802868662308731041e0, 1.066691687211408896850e0,
      -2.751915982306380647738e-1, 3.930852688233823569726e-2, -3.414684558602365085394e-3,
      1.866844370703555398195e-4, -6.345146083130515357861e-6, 1.239754287483206878024e-7,
      -1.086076102793126632978e-9)),
)


def _expi_positive(x):
    """Ei(x) for x > 0 (Cephes' ei.c, one rational approximation per interval)."""
    (a1, b1) = _EI[0]
    small = x * polevl(x, a1) / polevl(x, b1) + _EULER + lax.log(x)
    w = 1 / x
    out = small
    for i, (a, b) in enumerate(_EI[1:], start=1):
        f = w * polevl(w, a) / polevl(w, b) + 1
        piece = lax.exp(x) * w * f
        out = fnp.where(x > 2.0 ** i, piece, out)
    return out


def _expi_impl(x):
    (x,) = promote("expi", x)
    pos = x > 0
    positive = _expi_positive(fnp.where(pos, x, const(x, 1.0)))
    negative = -exp1(fnp.where(pos, const(x, 1.0), -x))
    out = fnp.where(pos, positive, negative)
    return fnp.where(x == 0, const(x, -np.inf), out)


expi = custom_jvp(_expi_impl)
expi.__doc__ = """The exponential integral ``Ei(x) = int_-inf^x exp(t) / t dt`` (Cephes' ``ei``
for ``x > 0``, ``-E_1(-x)`` below), with the JVP ``exp(x) / x``.

>>> round(float(expi(1.0)), 6)
1.895118
"""


@expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return expi(x), lax.exp(x) / x * x_dot


# --- sici ---

_SN = (-8.39167827910303881427E-11, 4.62591714427012837309E-8, -9.75759303843632795789E-6,
       9.76945438170435310816E-4, -4.13470316229406538752E-2, 1.00000000000000000302E0)
_SD = (2.03269266195951942049E-12, 1.27997891179943299903E-9, 4.41827842801218905784E-7,
       9.96412122043875552487E-5, 1.42085239326149893930E-2, 9.99999999999999996984E-1)
_CN = (2.02524002389102268789E-11, -1.35249504915790756375E-8, 3.59325051419993077021E-6,
       -4.74007206873407909465E-4, 2.89159652607555242092E-2, -1.00000000000000000080E0)
_CD = (4.07746040061880559506E-12, 3.06780997581887812692E-9, 1.23210355685883423679E-6,
       3.17442024775032769882E-4, 5.10028056236446052392E-2, 4.00000000000000000080E0)
_FN4 = (4.23612862892216586994E0, 5.45937717161812843388E0, 1.62083287701538329132E0,
        1.67006611831323023771E-1, 6.81020132472518137426E-3, 1.08936580650328664411E-4,
        5.48900223421373614008E-7)
_FD4 = (8.16496634205391016773E0, 7.30828822505564552187E0, 1.86792257950184183883E0,
        1.78792052963149907262E-1, 7.01710668322789753610E-3, 1.10034357153915731354E-4,
        5.48900252756255700982E-7)
_FN8 = (4.55880873470465315206E-1, 7.13715274100146711374E-1, 1.60300158222319456320E-1,
        1.16064229408124407915E-2, 3.49556442447859055605E-4, 4.86215430826454749482E-6,
        3.20092790091004902806E-8, 9.41779576128512936592E-11, 9.70507110881952024631E-14)
_FD8 = (9.17463611873684053703E-1, 1.78685545332074536321E-1, 1.22253594771971293032E-2,
        3.58696481881851580297E-4, 4.92435064317881464393E-6, 3.21956939101046018377E-8,
        9.43720590350276732376E-11, 9.70507110881952025725E-14)
_GN4 = (8.71001698973114191777E-2, 6.11379109952219284151E-1, 3.97180296392337498885E-1,
        7.48527737628469092119E-2, 5.38868681462177273157E-3, 1.61999794598934024525E-4,
        1.97963874140963632189E-6, 7.82579040744090311069E-9)
_GD4 = (1.64402202413355338886E0, 6.66296701268987968381E-1, 9.88771761277688796203E-2,
        6.22396345441768420760E-3, 1.73221081474177119497E-4, 2.02659182086343991969E-6,
        7.82579218933534490868E-9)
_GN8 = (6.97359953443276214934E-1, 3.30410979305632063225E-1, 3.84878767649974295920E-2,
        1.71718239052347903558E-3, 3.48941165502279436777E-5, 3.47131167084116673800E-7,
        1.70404452782044526189E-9, 3.85945925430276600453E-12, 3.14040098946363334640E-15)
_GD8 = (1.68548898811011640017E0, 4.87852258695304967486E-1, 4.67913194259625806320E-2,
        1.90284426674399523638E-3, 3.68475504442561108162E-5, 3.57043223443740838771E-7,
        1.72693748966316146736E-9, 3.87830166023954706752E-12, 3.14040098946363335242E-15)


def _sici_impl(x):
    (x,) = promote("sici", x)
    ax = fnp.abs(x)
    z = ax * ax
    si_small = ax * polevl(z, _SN) / polevl(z, _SD)
    ci_small = _EULER + lax.log(ax) + z * polevl(z, _CN) / polevl(z, _CD)
    safe = fnp.where(ax > 4, ax, const(x, 5.0))
    s, c = lax.sin(safe), lax.cos(safe)
    iz = 1 / (safe * safe)
    f4 = polevl(iz, _FN4) / (safe * p1evl(iz, _FD4))
    g4 = iz * polevl(iz, _GN4) / p1evl(iz, _GD4)
    f8 = polevl(iz, _FN8) / (safe * p1evl(iz, _FD8))
    g8 = iz * polevl(iz, _GN8) / p1evl(iz, _GD8)
    f = fnp.where(safe < 8, f4, f8)
    g = fnp.where(safe < 8, g4, g8)
    si_big = np.pi / 2 - f * c - g * s
    ci_big = f * s - g * c
    huge = ax > 1e9
    si_big = fnp.where(huge, np.pi / 2 - c / safe, si_big)
    ci_big = fnp.where(huge, s / safe, ci_big)
    inf = ax == np.inf
    si_big = fnp.where(inf, const(x, np.pi / 2), si_big)
    ci_big = fnp.where(inf, const(x, 0.0), ci_big)
    si = fnp.where(ax <= 4, si_small, si_big)
    ci = fnp.where(ax <= 4, ci_small, ci_big)
    si = fnp.where(x < 0, -si, si)
    ci = fnp.where(x == -np.inf, const(x, np.nan), ci)
    return si, ci


sici = custom_jvp(_sici_impl)
sici.__doc__ = """The sine and cosine integrals ``(Si(x), Ci(x))``:
``Si(x) = int_0^x sin t / t dt``, ``Ci(x) = gamma + log|x| + int_0^x (cos t - 1) / t dt``
(Cephes' ``sici``; ``Ci`` of a negative ``x`` is its real part, as scipy), with the JVP
``(sin x / x, cos x / x)``.

>>> si, ci = sici(1.0)
>>> round(float(si), 6), round(float(ci), 6)
(0.946083, 0.337404)
"""


@sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    si, ci = sici(x)
    sinc = fnp.where(x == 0, const(x, 1.0), lax.sin(x) / fnp.where(x == 0, 1.0, x))
    return (si, ci), (x_dot * sinc, x_dot * lax.cos(x) / x)


# --- spence ---

_SPENCE_A = (4.65128586073990045278E-5, 7.31589045238094711071E-3, 1.33847639578309018650E-1,
             8.79691311754530315341E-1, 2.71149851196553469920E0, 4.25697156008121755724E0,
             3.29771340985225106936E0, 1.00000000000000000126E0)
_SPENCE_B = (6.90990488912553276999E-4, 2.54043763932544379113E-2, 2.82974860602568089943E-1,
             1.41172597751831069617E0, 3.63800533345137075418E0, 5.03278880143316990390E0,
             3.54771340985225096217E0, 9.99999999999999998740E-1)


def spence(x):
    """Spence's function (the dilogarithm) ``int_1^x log t / (1 - t) dt`` for ``x >= 0``
    (NaN for ``x < 0``, as JAX); Cephes' rational approximation.

    Args:
      x: a float32 or float64 array.

    Raises:
      TypeError: for other dtypes (as JAX).

    >>> round(float(spence(0.5)), 6)
    0.58224
    """
    x = fnp.asarray(x)
    dtype = core.get_aval(x).dtype
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={np.dtype(dtype).name} is not supported, see docstring for "
                        "supported types.")
    safe = fnp.where(x > 0, x, const(x, 1.0))
    inv = safe > 2
    v = fnp.where(inv, 1 / safe, safe)
    gt15 = v > 1.5
    lt05 = v < 0.5
    inv = inv | gt15
    w = fnp.where(gt15, 1 / v - 1, fnp.where(lt05, -v, v - 1))
    y = -w * polevl(w, _SPENCE_A) / polevl(w, _SPENCE_B)
    y = fnp.where(lt05, np.pi ** 2 / 6 - lax.log(v) * lax.log1p(-v) - y, y)
    y = fnp.where(inv, -0.5 * lax.log(v) ** 2 - y, y)
    y = fnp.where(x == 1, const(x, 0.0), y)
    y = fnp.where(x == 0, const(x, np.pi ** 2 / 6), y)
    return fnp.where((x < 0) | fnp.isnan(x), const(x, np.nan), y)
