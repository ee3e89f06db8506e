"""Gamma, Beta and Dirichlet distributions, and the Gamma sampler they share.

Sampling uses Marsaglia and Tsang's (2000) squeeze-free rejection method, vectorised: every
round draws a normal and a uniform for each entry still waiting and keeps the accepted ones
(over 95 % per round for every shape). Shapes below 1 are boosted: Gamma(a) = Gamma(a + 1) U^(1/a).
``rsample`` is not provided: the reparameterised gradient with respect to the concentration
needs the derivative of the regularised incomplete gamma function, which ember does not have.

>>> import ember
>>> from ember.distributions import Gamma
>>> Gamma(ember.tensor([2.0]), ember.tensor([4.0])).mean.tolist()
[0.5]
"""
from numbers import Number

import ember
from ember import Size

from . import constraints
from .distribution import ExponentialFamily
from .utils import broadcast_all, digamma, lgamma, tiny_of, xlogy

__all__ = ["Gamma", "Beta", "Dirichlet", "standard_gamma"]

_MAX_ROUNDS = 1000


def standard_gamma(concentration):
    """Draw Gamma(concentration, 1) samples of ``concentration``'s shape (no gradient)."""
    with ember.no_grad():
        alpha = concentration.detach()
        dtype, device = alpha.dtype, alpha.device
        boost = alpha < 1
        a = ember.where(boost, alpha + 1, alpha)
        d = a - 1.0 / 3.0
        c = 1.0 / ember.sqrt(9.0 * d)
        result = ember.zeros_like(alpha)
        done = ember.zeros(alpha.shape, dtype=ember.bool, device=device)
        for _ in range(_MAX_ROUNDS):
            x = ember.randn(alpha.shape, dtype=dtype, device=device)
            u = ember.rand(alpha.shape, dtype=dtype, device=device)
            v = (1 + c * x) ** 3
            positive = v > 0
            log_v = ember.log(ember.where(positive, v, ember.ones_like(v)))
            accept = positive & (ember.log(u) < 0.5 * x * x + d - d * v + d * log_v)
            result = ember.where(accept & ~done, d * v, result)
            done = done | accept
            if bool(done.all()):
                break
        else:
            raise RuntimeError("standard_gamma: rejection sampling did not finish; are the "
                               "concentrations finite and positive?")
        u = ember.rand(alpha.shape, dtype=dtype, device=device)
        boosted = result * ember.pow(u, 1.0 / ember.where(boost, alpha, ember.ones_like(alpha)))
        result = ember.where(boost, boosted, result)
        return result.clamp(min=tiny_of(dtype))


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and inverse scale ``rate``."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = False
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        batch = Size() if isinstance(concentration, Number) and isinstance(rate, Number) \
            else None
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(batch if batch is not None else self.concentration.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
            return value.clamp(min=tiny_of(value.dtype))

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError("Gamma.rsample is not available in ember: the reparameterised "
                                  "gradient with respect to the concentration needs the "
                                  "incomplete gamma function's derivative; use sample().")

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - ember.log(self.rate) + lgamma(self.concentration)
                + (1.0 - self.concentration) * digamma(self.concentration))

    def cdf(self, value):
        raise NotImplementedError("Gamma.cdf needs the regularised incomplete gamma function, "
                                  "which ember does not have yet.")

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex, with concentration vectors in the last dim."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = False

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape)
                                                      + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            gammas = standard_gamma(self.concentration.expand(shape))
            result = gammas / gammas.sum(-1, keepdim=True)
            tiny = tiny_of(result.dtype)
            eps = 2.220446049250313e-16 if result.dtype == ember.float64 else 1.1920928955078125e-07
            return result.clamp(min=tiny, max=1 - eps)

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError("Dirichlet.rsample is not available in ember: it needs the "
                                  "reparameterised Gamma gradient; use sample().")

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration - 1.0, value).sum(-1)
                + lgamma(self.concentration.sum(-1)) - lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        mask = (self.concentration < 1).all(-1)
        k = self.concentration.shape[-1]
        one_hot = (self.concentration.argmax(-1).unsqueeze(-1)
                   == ember.arange(k, device=mode.device)).to(mode.dtype)
        return ember.where(mask.unsqueeze(-1), one_hot, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (lgamma(self.concentration).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0)
                - ((self.concentration - 1.0) * digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Beta distribution with ``concentration1`` (alpha) and ``concentration0`` (beta)."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = False

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            concentration1_concentration0 = ember.tensor(
                [float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            concentration1_concentration0 = ember.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(concentration1_concentration0, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def sample(self, sample_shape=Size()):
        return self._dirichlet.sample(sample_shape).select(-1, 0)

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError("Beta.rsample is not available in ember: it needs the "
                                  "reparameterised Gamma gradient; use sample().")

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = ember.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        result = self._dirichlet.concentration[..., 0]
        return result

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return lgamma(x) + lgamma(y) - lgamma(x + y)
