"""Activation layers (thin wrappers over ``nn.functional``), PyTorch's reprs."""
from __future__ import annotations

import ember
from ember import Tensor

from .. import functional as F
from .. import init as _init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh",
           "SiLU", "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink",
           "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink", "PReLU", "Softsign",
           "Tanhshrink", "Softmin", "Softmax", "Softmax2d", "LogSoftmax", "MultiheadAttention"]


def _inplace_str(inplace, lead=", "):
    return lead + "inplace=True" if inplace else ""


class Threshold(Module):
    """Replace every element that is not above a threshold by a fixed value.

    ``y = x`` where ``x > threshold`` and ``y = value`` elsewhere.

    Args:
        threshold (float): the value an element must exceed to be kept.
        value (float): what the other elements are replaced with.
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Threshold(0.5, -1.0)(ember.tensor([0.2, 0.5, 1.0]))
        tensor([-1., -1.,  1.])
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class ReLU(Module):
    """``max(0, x)``."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class RReLU(Module):
    """Randomized leaky ReLU: a leaky ReLU whose negative slope is drawn at random.

    ``y = x`` for ``x >= 0`` and ``y = a * x`` otherwise. In training mode ``a`` is sampled
    independently for every element from ``U(lower, upper)``; in eval mode it is the fixed
    mean ``(lower + upper) / 2``.

    Args:
        lower (float): lower bound of the slope distribution. Default: 1/8.
        upper (float): upper bound of the slope distribution. Default: 1/3.
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.RReLU(0.1, 0.3).eval()   # eval mode: slope (0.1 + 0.3) / 2
        >>> m(ember.tensor([-1.0, 2.0]))
        tensor([-0.2000,  2.0000])
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Hardtanh(Module):
    """Clamp every element into ``[min_val, max_val]``.

    ``y = min_val`` below ``min_val``, ``y = max_val`` above ``max_val`` and ``y = x`` in
    between (a piecewise-linear stand-in for ``tanh`` with the default bounds).

    Args:
        min_val (float): lower end of the linear region. Default: -1.0.
        max_val (float): upper end of the linear region. Default: 1.0.
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Hardtanh()(ember.tensor([-2.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val "
                                 f"({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """ReLU capped at 6: ``y = min(max(0, x), 6)``.

    Args:
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.ReLU6()(ember.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class Sigmoid(Module):
    """The logistic sigmoid, element-wise: ``y = 1 / (1 + exp(-x))``.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Sigmoid()(ember.tensor([-2.0, 0.0, 2.0]))
        tensor([0.1192, 0.5000, 0.8808])
    """

    def forward(self, input: Tensor) -> Tensor:
        return ember.sigmoid(input)


class Hardsigmoid(Module):
    """A piecewise-linear approximation of the sigmoid, element-wise.

    ``y = 0`` for ``x <= -3``, ``y = 1`` for ``x >= 3`` and ``y = x / 6 + 1 / 2`` in between.

    Args:
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Hardsigmoid()(ember.tensor([-4.0, 0.0, 1.5, 4.0]))
        tensor([0.0000, 0.5000, 0.7500, 1.0000])
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)


class Tanh(Module):
    """The hyperbolic tangent, element-wise: ``y = tanh(x)``.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Tanh()(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.7616,  0.0000,  0.7616])
    """

    def forward(self, input: Tensor) -> Tensor:
        return ember.tanh(input)


class SiLU(Module):
    """``x * sigmoid(x)`` (swish)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class Mish(Module):
    """The Mish activation, element-wise: ``y = x * tanh(softplus(x))``.

    Args:
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Mish()(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.3034,  0.0000,  0.8651])
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class Hardswish(Module):
    """A piecewise approximation of SiLU/swish, element-wise.

    ``y = 0`` for ``x <= -3``, ``y = x`` for ``x >= 3`` and ``y = x * (x + 3) / 6`` in between.

    Args:
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Hardswish()(ember.tensor([-1.0, 0.0, 1.0, 4.0]))
        tensor([-0.3333,  0.0000,  0.6667,  4.0000])
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)


class ELU(Module):
    """Exponential linear unit, element-wise.

    ``y = x`` for ``x > 0`` and ``y = alpha * (exp(x) - 1)`` otherwise.

    Args:
        alpha (float): the scale of the negative branch (its limit is ``-alpha``).
            Default: 1.0.
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.ELU()(ember.tensor([-1.0, 0.0, 2.0]))
        tensor([-0.6321,  0.0000,  2.0000])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(Module):
    """Continuously differentiable exponential linear unit, element-wise.

    ``y = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``; unlike ``ELU`` its derivative
    is continuous at 0 for every ``alpha``.

    Args:
        alpha (float): the scale of the negative branch. Default: 1.0.
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.CELU(alpha=2.0)(ember.tensor([-1.0, 2.0]))
        tensor([-0.7869,  2.0000])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class SELU(Module):
    """Scaled exponential linear unit, element-wise.

    ``y = scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with the fixed constants
    ``alpha ~= 1.6733`` and ``scale ~= 1.0507`` (self-normalising networks; pair it with
    ``AlphaDropout``).

    Args:
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.SELU()(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-1.1113,  0.0000,  1.0507])
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class GLU(Module):
    """Gated linear unit: halve the input along ``dim`` and gate one half with the other.

    With ``a`` the first half and ``b`` the second half of the input along ``dim``,
    ``y = a * sigmoid(b)``.

    Args:
        dim (int): the dimension to split; its size must be even. Default: -1.

    Shape:
        - Input: (*1, N, *2), with N even at ``dim``.
        - Output: (*1, N / 2, *2).

    Example:
        >>> import ember.nn as nn
        >>> nn.GLU()(ember.tensor([[1.0, 2.0, 0.0, 0.0]]))
        tensor([[0.5000, 1.0000]])
    """

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GELU(Module):
    """``x * Phi(x)``; ``approximate='tanh'`` for the tanh approximation."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={repr(self.approximate)}"


class Hardshrink(Module):
    """Hard shrinkage: zero the elements whose magnitude is at most ``lambd``.

    ``y = x`` where ``|x| > lambd`` and ``y = 0`` elsewhere.

    Args:
        lambd (float): the threshold. Default: 0.5.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Hardshrink()(ember.tensor([-1.0, 0.25, 0.75]))
        tensor([-1.0000,  0.0000,  0.7500])
    """

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class LeakyReLU(Module):
    """Leaky ReLU: ReLU with a small fixed slope for negative inputs.

    ``y = x`` for ``x >= 0`` and ``y = negative_slope * x`` otherwise.

    Args:
        negative_slope (float): the slope of the negative part. Default: 0.01.
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.LeakyReLU(0.1)(ember.tensor([-2.0, 3.0]))
        tensor([-0.2000,  3.0000])
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class LogSigmoid(Module):
    """The log of the sigmoid, element-wise: ``y = log(1 / (1 + exp(-x)))``.

    Computed stably (no overflow for large negative ``x``).

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.LogSigmoid()(ember.tensor([0.0, 2.0]))
        tensor([-0.6931, -0.1269])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    """Soft shrinkage: move every element ``lambd`` towards zero, stopping at zero.

    ``y = x - lambd`` for ``x > lambd``, ``y = x + lambd`` for ``x < -lambd`` and ``y = 0``
    otherwise.

    Args:
        lambd (float): the shrinkage amount; must be non-negative. Default: 0.5.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Softshrink()(ember.tensor([-1.0, 0.25, 0.75]))
        tensor([-0.5000,  0.0000,  0.2500])
    """

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class PReLU(Module):
    """Leaky ReLU with a learned slope (one, or one per channel), initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(ember.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Softsign(Module):
    """Softsign, element-wise: ``y = x / (1 + |x|)``.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Softsign()(ember.tensor([-1.0, 3.0]))
        tensor([-0.5000,  0.7500])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(Module):
    """Tanh shrinkage, element-wise: ``y = x - tanh(x)``.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Tanhshrink()(ember.tensor([0.0, 1.0]))
        tensor([0.0000, 0.2384])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class Softmin(Module):
    """Softmin along ``dim``: the softmax of the negated input.

    ``y_i = exp(-x_i) / sum_j exp(-x_j)``, so the smallest element gets the largest weight and
    each slice along ``dim`` sums to 1.

    Args:
        dim (int, optional): the dimension to normalise over. ``None`` picks one from the
            input's number of dimensions (deprecated; pass it explicitly).

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.Softmin(dim=0)(ember.tensor([1.0, 2.0, 3.0]))
        tensor([0.6652, 0.2447, 0.0900])
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(Module):
    """``exp(x_i) / sum_j exp(x_j)`` along ``dim``."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels at every spatial location.

    For (N, C, H, W) or (C, H, W) input this is softmax along the channel dimension (dim -3):
    at each ``(h, w)`` the ``C`` values sum to 1.

    Shape:
        - Input: (N, C, H, W) or (C, H, W).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> out = nn.Softmax2d()(ember.zeros(1, 4, 2, 2))
        >>> out[0, :, 0, 0]
        tensor([0.2500, 0.2500, 0.2500, 0.2500])
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)


class LogSoftmax(Module):
    """The log of the softmax along ``dim``, computed in one stable step.

    ``y_i = x_i - log(sum_j exp(x_j))``; usually followed by ``NLLLoss``.

    Args:
        dim (int, optional): the dimension to normalise over. ``None`` picks one from the
            input's number of dimensions (deprecated; pass it explicitly).

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.LogSoftmax(dim=-1)(ember.tensor([[0.0, 0.0], [1.0, 3.0]]))
        tensor([[-0.6931, -0.6931],
                [-2.1269, -0.1269]])
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class MultiheadAttention(Module):
    """``softmax(Q K^T / sqrt(d)) V`` over ``num_heads`` heads with input and output
    projections. Inputs are (L, N, E), or (N, L, E) with ``batch_first``, or unbatched.

    Returns ``(output, weights)``; weights are averaged over heads unless
    ``average_attn_weights=False``, and ``None`` when ``need_weights=False``.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        fk = dict(device=device, dtype=dtype)
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == self.embed_dim, \
            "embed_dim must be divisible by num_heads"
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(ember.empty((embed_dim, embed_dim), **fk))
            self.k_proj_weight = Parameter(ember.empty((embed_dim, self.kdim), **fk))
            self.v_proj_weight = Parameter(ember.empty((embed_dim, self.vdim), **fk))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(ember.empty((3 * embed_dim, embed_dim), **fk))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(ember.empty(3 * embed_dim, **fk))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **fk)
        if add_bias_kv:
            self.bias_k = Parameter(ember.empty((1, 1, embed_dim), **fk))
            self.bias_v = Parameter(ember.empty((1, 1, embed_dim), **fk))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            _init.xavier_uniform_(self.in_proj_weight)
        else:
            _init.xavier_uniform_(self.q_proj_weight)
            _init.xavier_uniform_(self.k_proj_weight)
            _init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            _init.constant_(self.in_proj_bias, 0.0)
            _init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            _init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            _init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False):
        is_batched = query.dim() == 3
        if self.batch_first and is_batched:
            # (one transpose when they are one tensor: self-attention stays recognisable)
            if query is key and key is value:
                query = key = value = query.transpose(1, 0)
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights
