"""ember.optim: optimizers and learning-rate schedulers, as ``torch.optim``.

>>> import ember
>>> w = ember.tensor([1.0, 2.0], requires_grad=True)
>>> opt = ember.optim.Adam([w], lr=0.1)
>>> for _ in range(3):
...     opt.zero_grad()
...     (w * w).sum().backward()
...     opt.step()
>>> sched = ember.optim.lr_scheduler.StepLR(opt, step_size=10)

Every optimizer updates its parameters in place, on their own device, under
``ember.no_grad()``; a parameter whose ``grad`` is ``None`` is skipped. State and
``state_dict()`` follow PyTorch's names and layout.
"""
from . import lr_scheduler, swa_utils
from ._adafactor import Adafactor
from ._muon import Muon
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Adafactor", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "LBFGS",
           "lr_scheduler", "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD",
           "SparseAdam", "swa_utils"]
