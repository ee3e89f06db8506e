"""Probability distributions with PyTorch's ``torch.distributions`` API, on ember tensors.

Sampling with ``rsample`` is reparameterised (gradients flow to the parameters) where
``has_rsample`` is True; ``kl_divergence`` looks up closed forms registered with
``register_kl``.

>>> import ember
>>> from ember.distributions import Normal
>>> loc = ember.zeros(3, requires_grad=True)
>>> Normal(loc, 1.0).rsample((4,)).sum().backward()
>>> loc.grad.tolist()
[4.0, 4.0, 4.0]
"""
from . import constraints
from .constraints import Constraint
from .continuous import Exponential, Laplace, LogNormal, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, OneHotCategorical, Poisson
from .distribution import Distribution, ExponentialFamily
from .gamma import Beta, Dirichlet, Gamma
from .kl import kl_divergence, register_kl
from .multivariate_normal import Independent, MultivariateNormal

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Constraint", "Dirichlet",
           "Distribution", "Exponential", "ExponentialFamily", "Gamma", "Independent",
           "Laplace", "LogNormal", "MultivariateNormal", "Normal", "OneHotCategorical",
           "Poisson", "Uniform", "constraints", "kl_divergence", "register_kl"]
