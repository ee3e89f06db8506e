"""Discrete distributions: Bernoulli, Categorical, OneHotCategorical, Binomial, Poisson.

Categorical sampling inverts the cumulative distribution: u ~ U[0, 1) picks the first category
whose cumulative probability exceeds u (ember has no ``multinomial`` op yet).

>>> import ember
>>> from ember.distributions import Categorical
>>> Categorical(probs=ember.tensor([0.25, 0.75])).log_prob(ember.tensor(1)).exp().item()
0.75
"""
import math
from numbers import Number

import ember
from ember import Size

from . import constraints
from .distribution import Distribution, ExponentialFamily
from .utils import (broadcast_all, lazy_property, lgamma, logits_to_probs, min_of,
                    probs_to_logits, softplus, xlogy)

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "Binomial", "Poisson"]


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Bernoulli(ExponentialFamily):
    """Bernoulli distribution parameterised by ``probs`` or ``logits`` (not both).

    Example:
        >>> from ember.distributions import Bernoulli
        >>> Bernoulli(probs=ember.tensor([0.3])).mean.tolist()
        [0.3...]
    """
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = Size() if is_scalar else self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Bernoulli, batch_shape, _instance, ("probs", "logits"))
        new._param = new.logits if "logits" in new.__dict__ else new.probs
        return new

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            probs = self.probs.expand(shape)
            u = ember.rand(shape, dtype=probs.dtype, device=probs.device)
            return (u < probs).to(probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # -binary_cross_entropy_with_logits(logits, value)
        return value * logits - softplus(logits)

    def entropy(self):
        return softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand=True):
        values = ember.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self):
        return (ember.log(self.probs / (1 - self.probs)),)

    def _log_normalizer(self, x):
        return ember.log1p(ember.exp(x))


class Categorical(Distribution):
    """Categorical distribution over ``{0, ..., K-1}``; ``probs`` (non-negative, normalised
    here) or ``logits`` (unnormalised log-probabilities) over the last dimension."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return ember.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                          device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return ember.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                          device=self.probs.device)

    def sample(self, sample_shape=Size()):
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        with ember.no_grad():
            probs = self.probs.detach()
            cdf = probs.cumsum(-1)
            shape = self._extended_shape(sample_shape)
            cdf = cdf.expand(tuple(shape) + (self._num_events,))
            u = ember.rand(tuple(shape) + (1,), dtype=cdf.dtype, device=cdf.device)
            u = u * cdf[..., -1:]  # cumulative sums may end a rounding error away from 1
            index = (cdf <= u).sum(-1)
            return index.clamp(max=self._num_events - 1).to(ember.int64)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=min_of(self.logits.dtype))
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = ember.arange(self._num_events, dtype=ember.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class OneHotCategorical(Distribution):
    """Categorical distribution whose samples are one-hot vectors of length K."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = Size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape,
                                               validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        mode = probs.argmax(-1)
        return self._one_hot(mode, probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def _one_hot(self, index, dtype):
        k = self._categorical._num_events
        return (index.unsqueeze(-1) == ember.arange(k, device=index.device)).to(dtype)

    def sample(self, sample_shape=Size()):
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return self._one_hot(indices, probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        indices = value.argmax(-1)
        return self._categorical.log_prob(indices)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = ember.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values


class Binomial(Distribution):
    """Number of successes in ``total_count`` Bernoulli trials of probability ``probs``."""
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Binomial, batch_shape, _instance, ("total_count", "probs", "logits"))
        new._param = new.logits if "logits" in new.__dict__ else new.probs
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=Size()):
        # sum of Bernoulli trials: exact, and fine for the moderate counts seen in practice
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            n_max = int(self.total_count.max().item()) if self.total_count.numel() else 0
            probs = self.probs.expand(shape).unsqueeze(-1)
            counts = self.total_count.expand(shape).unsqueeze(-1)
            u = ember.rand(tuple(shape) + (n_max,), dtype=probs.dtype, device=probs.device)
            trial = ember.arange(n_max, device=probs.device).to(probs.dtype)
            hits = (u < probs) & (trial < counts)
            return hits.to(probs.dtype).sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = lgamma(self.total_count + 1)
        log_factorial_k = lgamma(value + 1)
        log_factorial_nmk = lgamma(self.total_count - value + 1)
        # value * logits - n * log(1 + exp(logits)), stable for large |logits|
        normalize_term = self.total_count * softplus(self.logits) - log_factorial_n
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max().item())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by "
                                      "`entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max().item())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by "
                                      "`enumerate_support`.")
        values = ember.arange(1 + total_count, dtype=self._param.dtype,
                              device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Poisson(ExponentialFamily):
    """Poisson distribution with rate ``rate``.

    Sampling inverts the CDF by sequential search, vectorised over the batch; it costs
    O(max rate) ember ops per draw, so rates above 1000 raise NotImplementedError.
    """
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None):
        batch = Size() if isinstance(rate, Number) else None
        (self.rate,) = broadcast_all(rate)
        super().__init__(batch if batch is not None else self.rate.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Poisson, batch_shape, _instance, ("rate",))

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            rate = self.rate.expand(shape).to(ember.float64)
            max_rate = float(rate.max().item()) if rate.numel() else 0.0
            if max_rate > 1000:
                raise NotImplementedError("Poisson.sample in ember supports rates up to 1000 "
                                          f"(got {max_rate}).")
            # work in log space so exp(-rate) does not underflow for large rates
            log_u = ember.log(ember.rand(shape, dtype=ember.float64, device=rate.device))
            k = ember.zeros_like(rate)
            log_pmf = -rate
            log_cdf = log_pmf
            limit = int(max_rate + 20 * max_rate ** 0.5 + 40)
            for i in range(1, limit + 1):
                below = log_cdf < log_u
                if not bool(below.any()):
                    break
                k = k + below.to(k.dtype)
                log_pmf = log_pmf + ember.log(rate) - math.log(i)
                log_cdf = ember.logsumexp(ember.stack([log_cdf, log_pmf], -1), -1)
            return k.to(self.rate.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self):
        return (ember.log(self.rate),)

    def _log_normalizer(self, x):
        return ember.exp(x)

