"""``ember.utils.model_zoo``: the older home of ``load_url`` (``torch.utils.model_zoo``),
which is :func:`ember.hub.load_state_dict_from_url` under that name (monai imports it).

>>> import ember.utils.model_zoo
>>> ember.utils.model_zoo.load_url is ember.hub.load_state_dict_from_url
True
"""
from .. import hub as _hub
from ..hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]


def __getattr__(name):
    """``tqdm``, as ``ember.hub.tqdm`` (resolved there on first use)."""
    if name == "tqdm":
        return _hub.tqdm
    raise AttributeError(f"module 'ember.utils.model_zoo' has no attribute {name!r}")
