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
import sys as _sys
import types as _types

from . import constraints, transforms
from .constraint_registry import biject_to, transform_to
from .constraints import Constraint
from .continuous_more import ExpRelaxedCategorical as _ExpRelaxedCategorical
from .continuous_more import LogitRelaxedBernoulli as _LogitRelaxedBernoulli
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


# PyTorch's one-module-per-distribution import paths (``from torch.distributions.categorical
# import Categorical``, as captum writes): each is a module holding the names PyTorch's
# module of that name exports. (``gamma``, ``multivariate_normal``, ``kl``, ``utils`` and
# the others that are files here already are left as they are.)
def _submodule_aliases():
    found = dict(globals(), LogitRelaxedBernoulli=_LogitRelaxedBernoulli,
                 ExpRelaxedCategorical=_ExpRelaxedCategorical)
    for mod, names in {
            "bernoulli": ("Bernoulli",), "beta": ("Beta",), "binomial": ("Binomial",),
            "categorical": ("Categorical",), "cauchy": ("Cauchy",), "chi2": ("Chi2",),
            "continuous_bernoulli": ("ContinuousBernoulli",), "dirichlet": ("Dirichlet",),
            "exp_family": ("ExponentialFamily",), "exponential": ("Exponential",),
            "fishersnedecor": ("FisherSnedecor",), "generalized_pareto": ("GeneralizedPareto",),
            "geometric": ("Geometric",), "gumbel": ("Gumbel",), "half_cauchy": ("HalfCauchy",),
            "half_normal": ("HalfNormal",), "independent": ("Independent",),
            "inverse_gamma": ("InverseGamma",), "kumaraswamy": ("Kumaraswamy",),
            "laplace": ("Laplace",), "lkj_cholesky": ("LKJCholesky",),
            "log_normal": ("LogNormal",), "logistic_normal": ("LogisticNormal",),
            "lowrank_multivariate_normal": ("LowRankMultivariateNormal",),
            "mixture_same_family": ("MixtureSameFamily",), "multinomial": ("Multinomial",),
            "negative_binomial": ("NegativeBinomial",), "normal": ("Normal",),
            "one_hot_categorical": ("OneHotCategorical", "OneHotCategoricalStraightThrough"),
            "pareto": ("Pareto",), "poisson": ("Poisson",),
            "relaxed_bernoulli": ("LogitRelaxedBernoulli", "RelaxedBernoulli"),
            "relaxed_categorical": ("ExpRelaxedCategorical", "RelaxedOneHotCategorical"),
            "studentT": ("StudentT",), "uniform": ("Uniform",), "von_mises": ("VonMises",),
            "weibull": ("Weibull",), "wishart": ("Wishart",)}.items():
        m = _types.ModuleType(f"{__name__}.{mod}",
                              f"``torch.distributions.{mod}`` on ember: {', '.join(names)} "
                              "(the classes of ember.distributions).")
        m.__all__ = list(names)
        for n in names:
            setattr(m, n, found[n])
        _sys.modules[m.__name__] = m
        globals()[mod] = m


_submodule_aliases()
