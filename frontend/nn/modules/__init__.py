"""The layers of ``ember.nn``, one file per family (as ``torch.nn.modules``)."""
# ruff: noqa: F401, F403, F405
from . import (activation, adaptive, batchnorm, channelshuffle, container, conv, distance,
               dropout, flatten, fold, instancenorm, lazy, linear, linear_cross_entropy,
               linear_cross_entropy_options, loss, normalization, padding, pixelshuffle,
               pooling, rnn, sparse, transformer, upsampling)
from .module import Module
from .container import *
from .linear import *
from .flatten import *
from .activation import *
from .dropout import *
from .sparse import *
from .normalization import *
from .batchnorm import *
from .instancenorm import *
from .conv import *
from .pooling import *
from .padding import *
from .upsampling import *
from .loss import *
from .rnn import *
from .transformer import *
from .adaptive import *
from .channelshuffle import *
from .distance import *
from .fold import *
from .pixelshuffle import *
from .linear_cross_entropy_options import *
from .lazy import LazyModuleMixin

# written out (type checkers read a literal list through ``from .modules import *``);
# tests/core/test_api_docs.py checks it is every family's __all__
__all__ = [
    "Module", "LazyModuleMixin", "Container", "Sequential", "ModuleList", "ModuleDict",
    "ParameterList", "ParameterDict", "Identity", "Linear", "Bilinear",
    "NonDynamicallyQuantizableLinear", "LazyLinear", "Flatten", "Unflatten", "Threshold", "ReLU",
    "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU", "Mish", "Hardswish",
    "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus",
    "Softshrink", "PReLU", "Softsign", "Tanhshrink", "Softmin", "Softmax", "Softmax2d",
    "LogSoftmax", "MultiheadAttention", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
    "AlphaDropout", "FeatureAlphaDropout", "Embedding", "EmbeddingBag", "LocalResponseNorm",
    "CrossMapLRN2d", "LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d",
    "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "Upsample", "UpsamplingNearest2d",
    "UpsamplingBilinear2d", "L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "NLLLoss",
    "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "SoftMarginLoss",
    "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "PoissonNLLLoss",
    "GaussianNLLLoss", "TripletMarginLoss", "MultiLabelSoftMarginLoss", "NLLLoss2d",
    "MultiLabelMarginLoss", "MultiMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss",
    "LinearCrossEntropyLoss", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell",
    "LSTMCell", "GRUCell", "TransformerEncoderLayer", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerDecoder", "Transformer", "AdaptiveLogSoftmaxWithLoss",
    "ChannelShuffle", "PairwiseDistance", "CosineSimilarity", "Fold", "Unfold", "PixelShuffle",
    "PixelUnshuffle", "LinearCrossEntropyOptions"
]
