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
from . import constraints, transforms
from .constraint_registry import biject_to, transform_to
from .constraints import Constraint
from .continuous import Exponential, Laplace, LogNormal, Normal, Uniform
from .continuous_more import (Cauchy, Chi2, ContinuousBernoulli, FisherSnedecor,
                              GeneralizedPareto, Gumbel, HalfCauchy, HalfNormal, InverseGamma,
                              Kumaraswamy, LogisticNormal, Pareto, RelaxedBernoulli,
                              RelaxedOneHotCategorical, StudentT, VonMises, Weibull)
from .discrete import Bernoulli, Binomial, Categorical, OneHotCategorical, Poisson
from .discrete_more import (Geometric, Multinomial, NegativeBinomial,
                            OneHotCategoricalStraightThrough)
from .distribution import Distribution, ExponentialFamily
from .gamma import Beta, Dirichlet, Gamma
from .kl import kl_divergence, register_kl
from .multivariate_more import (LKJCholesky, LowRankMultivariateNormal, MixtureSameFamily,
                                 Wishart)
from .multivariate_normal import Independent, MultivariateNormal
from .transformed_distribution import TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform,
                         CorrCholeskyTransform, CumulativeDistributionTransform, ExpTransform,
                         IndependentTransform, LowerCholeskyTransform,
                         PositiveDefiniteTransform, PowerTransform, ReshapeTransform,
                         SigmoidTransform, SoftmaxTransform, SoftplusTransform, StackTransform,
                         StickBreakingTransform, TanhTransform, Transform, identity_transform)

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
           "Categorical", "Cauchy", "Chi2", "ComposeTransform", "Constraint",
           "ContinuousBernoulli", "CorrCholeskyTransform", "CumulativeDistributionTransform",
           "Dirichlet", "Distribution", "ExpTransform", "Exponential", "ExponentialFamily",
           "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy",
           "HalfNormal", "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy",
           "LKJCholesky",
           "Laplace", "LogNormal", "LogisticNormal", "LowRankMultivariateNormal",
           "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
           "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Pareto", "Poisson", "PositiveDefiniteTransform", "PowerTransform",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform",
           "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StackTransform",
           "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
           "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
           "constraints", "identity_transform", "kl_divergence", "register_kl",
           "transform_to", "transforms"]
