"""Ready-made parametrizations (``torch.nn.utils.parametrizations``): ``weight_norm``,
``spectral_norm`` and ``orthogonal``, each registered with ``parametrize``.

>>> import ember.nn as nn
>>> from ember.nn.utils.parametrizations import weight_norm
>>> m = weight_norm(nn.Linear(20, 40))
>>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
((40, 1), (40, 20))
"""
from __future__ import annotations

from enum import Enum, auto

import ember
from ember import Tensor

from .. import functional as F
from .. import init
from ..modules import conv
from ..modules.module import Module
from ..modules.utils import _no_grad
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_EPS = {ember.float16: 2.0 ** -10, ember.bfloat16: 2.0 ** -7, ember.float32: 2.0 ** -23,
        ember.float64: 2.0 ** -52}


def _linalg(name: str, why: str):
    fn = getattr(ember.linalg, name, None)
    if fn is None:
        raise NotImplementedError(f"orthogonal: {why} needs ember.linalg.{name}, which this "
                                  "build of ember does not have")
    return fn


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.size(-2), q.size(-1)
    eye = ember.eye(k, dtype=q.dtype, device=q.device)
    eps = 10.0 * n * _EPS.get(q.dtype, 2.0 ** -23)
    return bool(ember.allclose(q.mT @ q, eye.expand(q.mT.shape[:-2] + (k, k)), atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a = QR with diag(R) >= 0 (Gram-Schmidt twice per column, batched over
    leading dims)."""
    if a.dim() == 2:
        return init._orthonormal_columns(a)
    flat = a.reshape((-1,) + tuple(a.shape[-2:]))
    return ember.stack([init._orthonormal_columns(m) for m in flat.unbind(0)], 0) \
        .reshape(a.shape)


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, with v_i the i-th
    column of ``a`` below the diagonal and 1 on it (``linalg.householder_product``),
    written in matmuls so autograd differentiates it."""
    n, k = a.size(-2), a.size(-1)
    eye = ember.eye(n, k, dtype=a.dtype, device=a.device)
    lower = a.tril(-1) + eye
    q = eye.expand(tuple(a.shape[:-2]) + (n, k))
    for i in range(k - 1, -1, -1):
        v = lower[..., :, i:i + 1]                       # (..., n, 1)
        t = tau[..., i:i + 1].unsqueeze(-1)              # (..., 1, 1)
        q = q - (t * v) @ (v.mT @ q)
    return q


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    base: Tensor

    def __init__(self, weight, orthogonal_map: _OrthMaps, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = ember.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _linalg("matrix_exp", "the matrix_exp map")(A)
            else:
                solve = _linalg("solve", "the Cayley map")
                eye = ember.eye(n, dtype=A.dtype, device=A.device)
                Q = solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with _no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations "
                                              "when use_trivialization=False.")
                geqrf = getattr(ember, "geqrf", None)
                if geqrf is None:
                    raise NotImplementedError("orthogonal: assigning with "
                                              "use_trivialization=False needs ember.geqrf, "
                                              "which this build of ember does not have")
                A, tau = geqrf(Q)
                diag = A.diagonal(dim1=-2, dim2=-1)
                diag.copy_(ember.where(tau == 0.0, -diag.sign(), diag.sign()))
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = ember.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype,
                                device=Q.device)
                Q = _make_orthogonal(ember.cat([Q, N], dim=-1))
            self.base = Q
            neg_id = ember.zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal
    (semi-orthogonal when not square), through ``"matrix_exp"`` (default for square),
    ``"cayley"`` or ``"householder"`` (default otherwise) of an unconstrained tensor."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight normalisation as a parametrization: ``original0`` is the magnitude ``g``,
    ``original1`` the direction ``v``; ``module.<name> = g * v / ||v||``. State dicts
    saved with the old ``weight_g``/``weight_v`` names load too."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(module, state_dict, prefix, local_metadata, strict,
                                 missing_keys, unexpected_keys, error_msgs) -> None:
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            with _no_grad():
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # the buffers are updated in place (PyTorch's ``out=``), outside autograd
        with _no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(weight_mat.t(), self._u), dim=0,
                                          eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = ember.dot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Spectral normalisation as a parametrization: ``module.<name>`` is divided by its
    largest singular value, estimated by power iteration (buffers ``_u``, ``_v`` of the
    parametrization, updated in training mode only)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = tuple(getattr(conv, n) for n in
                           ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
                           if hasattr(conv, n))
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
