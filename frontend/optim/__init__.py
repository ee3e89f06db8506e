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
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
