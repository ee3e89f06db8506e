"""Univariate continuous distributions with closed-form reparameterised samplers: Normal,
LogNormal, Uniform, Exponential, Laplace (``torch.distributions.normal.Normal``, ...).

>>> import ember
>>> from ember.distributions import Normal
>>> Normal(0.0, 1.0).log_prob(ember.tensor(0.0)).item()  # -log(sqrt(2 pi))
-0.9189385...
"""
import math
from numbers import Number

import ember
from ember import Size

from . import constraints
from .distribution import Distribution, ExponentialFamily
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, eps_of, erfinv

__all__ = ["Normal", "LogNormal", "Uniform", "Exponential", "Laplace"]

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


def _batch_of(*params):
    return Size() if all(isinstance(p, Number) for p in params) else None


class Normal(ExponentialFamily):
    """Normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``.

    Example:
        >>> from ember.distributions import Normal
        >>> Normal(ember.tensor([0.0]), ember.tensor([2.0])).variance.tolist()
        [4.0]
    """
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def __init__(self, loc, scale, validate_args=None):
        batch = _batch_of(loc, scale)
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch if batch is not None else self.loc.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Normal, batch_shape, _instance, ("loc", "scale"))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        log_scale = ember.log(self.scale)
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - _LOG_SQRT_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ember.erf((value - self.loc) * self.scale.reciprocal()
                                    / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + ember.log(self.scale)

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * ember.log(-math.pi / y)


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ Normal(loc, scale): ``Normal(loc, scale)`` pushed through
    ``ExpTransform``, a :class:`TransformedDistribution` as in PyTorch (pyro builds its own
    ``LogNormal`` by calling ``TransformedDistribution.__init__`` on it).

    Example:
        >>> from ember.distributions import LogNormal
        >>> round(LogNormal(0.0, 1.0).mean.item(), 6)  # exp(1/2)
        1.648721
    """
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return ember.expm1(scale_sq) * (2 * self.loc + scale_sq).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class Uniform(Distribution):
    """Uniform distribution on the half-open interval [low, high).

    Example:
        >>> from ember.distributions import Uniform
        >>> Uniform(0.0, 4.0).variance.item()
        1.3333333...
    """
    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def __init__(self, low, high, validate_args=None):
        batch = _batch_of(low, high)
        self.low, self.high = broadcast_all(low, high)
        super().__init__(batch if batch is not None else self.low.size(),
                         validate_args=validate_args)
        if self._validate_args and not bool(ember.lt(self.low, self.high).all()):
            raise ValueError("Uniform is not defined when low>= high")

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        rand = ember.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).to(self.low.dtype)
        ub = self.high.gt(value).to(self.low.dtype)
        return ember.log(lb * ub) - ember.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return ember.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """Exponential distribution with rate ``rate`` (mean ``1 / rate``)."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return ember.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def __init__(self, rate, validate_args=None):
        batch = _batch_of(rate)
        (self.rate,) = broadcast_all(rate)
        super().__init__(batch if batch is not None else self.rate.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Exponential, batch_shape, _instance, ("rate",))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.rate.dtype, device=self.rate.device)
        return -ember.log1p(-u) / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.log(self.rate) - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ember.exp(-self.rate * value)

    def icdf(self, value):
        return -ember.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - ember.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -ember.log(-x)


class Laplace(Distribution):
    """Laplace distribution with location ``loc`` and scale ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def __init__(self, loc, scale, validate_args=None):
        batch = _batch_of(loc, scale)
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch if batch is not None else self.loc.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Laplace, batch_shape, _instance, ("loc", "scale"))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = eps_of(self.loc.dtype)
        # u uniform on [eps - 1, 1): keeps log1p(-|u|) finite
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) \
            + (eps - 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.log(2 * self.scale) - ember.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * ember.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + ember.log(2 * self.scale)


