"""``ember.nn.utils`` (``torch.nn.utils``): gradient clipping, parameter/vector
conversion, ``rnn`` (packed sequences), weight and spectral normalisation (hook-based and
as ``parametrizations``), ``parametrize``, ``prune``, ``fusion``, ``stateless``,
``skip_init`` and the memory-format converters."""
# ruff: noqa: F401
# ``rnn`` first: the recurrent layers import it while ``nn.modules`` is still loading
from . import rnn
from .clip_grad import clip_grad_norm_, clip_grad_norm, clip_grad_value_, get_total_norm, \
    clip_grads_with_norm_
from .convert_parameters import parameters_to_vector, vector_to_parameters
from . import parametrize, stateless, prune
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, \
    fuse_linear_bn_weights
from .init import skip_init
from .memory_format import convert_conv2d_weight_memory_format, \
    convert_conv3d_weight_memory_format
from .spectral_norm import spectral_norm, remove_spectral_norm
from .weight_norm import weight_norm, remove_weight_norm
from . import parametrizations

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_", "parameters_to_vector", "vector_to_parameters",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "skip_init", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format", "spectral_norm", "remove_spectral_norm",
           "weight_norm", "remove_weight_norm", "rnn", "parametrize", "parametrizations",
           "prune", "stateless"]
