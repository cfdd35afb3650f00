"""``functrax.scipy.stats.gaussian_kde``: kernel density estimation with Gaussian kernels,
as ``jax.scipy.stats.gaussian_kde``.

The estimator is a pytree (children ``neff, dataset, weights, covariance, inv_cov``), so it
passes through ``jit``/``vmap``/``grad``. Points are evaluated after whitening with the
Cholesky factor of the inverse kernel covariance; ``logpdf`` reduces with ``logsumexp``
(no underflow far from the data).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from functrax import numpy as fnp
from functrax import random
from functrax.transforms import vmap
from functrax.numpy.promotion import check_arraylike, promote_dtypes_inexact
from functrax.scipy import linalg
from functrax.scipy.special import logsumexp, ndtr
from functrax.tree_util import register_pytree_node_class

__all__ = ["gaussian_kde"]


def _bandwidth(kde, bw_method, neff, d):
    if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
        return fnp.power(neff, -1.0 / (d + 4))
    if isinstance(bw_method, str) and bw_method == "silverman":
        return fnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
    if fnp.isscalar(bw_method) and not isinstance(bw_method, str):
        return bw_method
    if callable(bw_method):
        return bw_method(kde)
    raise ValueError("gaussian_kde: `bw_method` should be 'scott', 'silverman', a scalar, "
                     f"or a callable; got {bw_method!r}.")


def _weights(dataset, weights, n):
    if weights is None:
        (dataset,) = promote_dtypes_inexact(dataset)
        return dataset, fnp.full(n, 1.0 / n, dtype=dataset.dtype)
    check_arraylike("gaussian_kde", weights)
    dataset, weights = promote_dtypes_inexact(dataset, fnp.asarray(weights))
    weights = fnp.atleast_1d(weights)
    if weights.ndim != 1:
        raise ValueError("gaussian_kde: `weights` input should be one-dimensional; got "
                         f"weights.shape={weights.shape}.")
    if weights.shape[0] != n:
        raise ValueError(f"gaussian_kde: `weights` input should be of length n={n} (the "
                         f"number of data points); got {weights.shape[0]}.")
    return dataset, weights / fnp.sum(weights)


@register_pytree_node_class
@dataclasses.dataclass(frozen=True, init=False)
class gaussian_kde:
    """Gaussian kernel density estimator (JAX's ``gaussian_kde``).

    Args:
      dataset: the data, shape ``(n,)`` (one-dimensional) or ``(d, n)``.
      bw_method: ``"scott"`` (default), ``"silverman"``, a scalar factor, or a callable
        taking the estimator and returning the factor.
      weights: optional weights of the ``n`` data points (normalized to sum 1).

    Raises:
      ValueError: for a dataset of fewer than two elements, bad weights or ``bw_method``.
      NotImplementedError: for complex data.

    >>> kde = gaussian_kde(fnp.array([0.0, 1.0, 2.0, 4.0]))
    >>> (kde.d, kde.n)
    (1, 4)
    >>> round(float(kde.integrate_box_1d(-100.0, 100.0)), 6)
    1.0
    """

    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset, bw_method=None, weights=None):
        check_arraylike("gaussian_kde", dataset)
        dataset = fnp.atleast_2d(dataset)
        if fnp.issubdtype(dataset.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("gaussian_kde: `dataset` input should have multiple elements; "
                             f"got shape {dataset.shape}.")
        d, n = dataset.shape
        dataset, weights = _weights(dataset, weights, n)
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", 1 / fnp.sum(weights ** 2))
        factor = _bandwidth(self, bw_method, neff, d)
        data_cov = fnp.atleast_2d(fnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
        self._set("covariance", data_cov * factor ** 2)
        self._set("inv_cov", fnp.linalg.inv(data_cov) / factor ** 2)

    def _set(self, name, value):
        object.__setattr__(self, name, value)
        return value

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        del aux_data
        kde = cls.__new__(cls)
        for name, value in zip(("neff", "dataset", "weights", "covariance", "inv_cov"),
                               children):
            kde._set(name, value)
        return kde

    @property
    def d(self):
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self):
        """The number of data points."""
        return self.dataset.shape[1]

    def evaluate(self, points):
        """The estimated density at ``points`` (shape ``(d, m)``, or ``(m,)`` when
        ``d == 1``, or ``(d,)`` for one point); returns shape ``(m,)``."""
        check_arraylike("gaussian_kde.evaluate", points)
        return _kernel_eval(False, self.dataset.T, self.weights, self._points(points).T,
                            self.inv_cov)

    def __call__(self, points):
        return self.evaluate(points)

    def pdf(self, x):
        """The estimated density (same as :meth:`evaluate`)."""
        return self.evaluate(x)

    def logpdf(self, x):
        """The log of the estimated density (``logsumexp`` over the kernels)."""
        check_arraylike("gaussian_kde.logpdf", x)
        return _kernel_eval(True, self.dataset.T, self.weights, self._points(x).T,
                            self.inv_cov)

    def integrate_gaussian(self, mean, cov):
        """The integral of the density times the normal density ``N(mean, cov)``.

        Raises:
          ValueError: if ``mean`` is not of shape ``(d,)`` or ``cov`` of shape ``(d, d)``.
        """
        mean = fnp.atleast_1d(fnp.squeeze(fnp.asarray(mean)))
        cov = fnp.atleast_2d(fnp.asarray(cov))
        if mean.shape != (self.d,):
            raise ValueError(f"gaussian_kde.integrate_gaussian: mean does not have dimension "
                             f"{self.d}; got shape {mean.shape}.")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"gaussian_kde.integrate_gaussian: covariance does not have "
                             f"dimension {self.d}; got shape {cov.shape}.")
        chol, norm = _chol_norm(self.covariance + cov, self.d)
        return _convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The integral of the (one-dimensional) density over ``[low, high]``.

        Raises:
          ValueError: if the estimator is not one-dimensional or a limit is not a scalar.
        """
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if fnp.ndim(low) != 0 or fnp.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = fnp.squeeze(fnp.sqrt(self.covariance))
        lo = fnp.squeeze((low - self.dataset) / sigma)
        hi = fnp.squeeze((high - self.dataset) / sigma)
        return fnp.sum(self.weights * (ndtr(hi) - ndtr(lo)))

    def integrate_kde(self, other):
        """The integral of the product of this density and ``other``'s.

        Raises:
          ValueError: if the estimators have different dimensions.
        """
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol, norm = _chol_norm(self.covariance + other.covariance, self.d)
        sm, lg = (self, other) if self.n < other.n else (other, self)
        per_point = vmap(lambda m: _convolve(chol, norm, lg.dataset, lg.weights, m),
                         in_axes=1)(sm.dataset)
        return fnp.sum(per_point * sm.weights)

    def resample(self, key, shape=()):
        """Draws from the estimated density: a data point chosen by weight plus normal noise
        of the kernel covariance; returns shape ``(d,) + shape``."""
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(
            eps_key, fnp.zeros(self.d, self.covariance.dtype), self.covariance,
            shape=shape, dtype=self.dataset.dtype)
        return self.dataset[:, ind] + fnp.moveaxis(eps, -1, 0)

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not implemented (as JAX): use :meth:`integrate_box_1d`."""
        del low_bounds, high_bounds, maxpts
        raise NotImplementedError(
            "only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Not implemented (as JAX): build a new estimator with another ``bw_method``."""
        del bw_method
        raise NotImplementedError(
            "dynamically changing the bandwidth method is not supported")

    def _points(self, points):
        points = fnp.asarray(points)
        if fnp.issubdtype(points.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = fnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return fnp.reshape(points, (self.d, 1))
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points


def _chol_norm(cov, d):
    chol = linalg.cho_factor(cov)
    norm = 1.0 / (float(np.sqrt(2 * np.pi)) ** d * fnp.prod(fnp.diag(chol[0])))
    return chol, norm


def _convolve(chol, norm, target, weights, mean):
    diff = target - mean[:, None]
    alpha = linalg.cho_solve(chol, diff)
    arg = 0.5 * fnp.sum(diff * alpha, axis=0)
    return norm * fnp.sum(fnp.exp(-arg) * weights)


def _kernel_eval(in_log, points, weights, xi, precision):
    """Sum (or logsumexp) over the data ``points`` (n, d) of the weighted kernels at ``xi``
    (m, d), in the metric ``precision`` (d, d)."""
    points, weights, xi, precision = promote_dtypes_inexact(points, weights, xi, precision)
    d = points.shape[1]
    whitening = linalg.cholesky(precision, lower=True)
    points, xi = fnp.dot(points, whitening), fnp.dot(xi, whitening)
    log_norm = fnp.sum(fnp.log(fnp.diag(whitening))) - 0.5 * d * float(np.log(2 * np.pi))
    sq = fnp.sum(fnp.square(xi[:, None, :] - points[None, :, :]), axis=-1)
    arg = log_norm - 0.5 * sq
    if in_log:
        return logsumexp(arg + fnp.log(weights)[None, :], axis=1)
    return fnp.sum(weights[None, :] * fnp.exp(arg), axis=1)
