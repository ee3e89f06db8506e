"""Autograd functions behind layers (``torch.nn.modules._functions``): ``SyncBatchNorm``'s
cross-process batch normalisation."""
from __future__ import annotations

import ember

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(ember.autograd.Function):
    """Batch norm over the union of every rank's batch. Forward all-reduces the per-channel
    count, sum and sum of squares; backward all-reduces the two per-channel sums the input
    gradient needs (the weight and bias gradients stay local, as PyTorch's: data-parallel
    wrappers reduce parameter gradients)."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum,
                process_group, dist):
        c = input.shape[1]
        dims = [0] + list(range(2, input.dim()))
        shape = (1, c) + (1,) * (input.dim() - 2)
        x = input.detach()
        acc = ember.float64 if x.dtype is ember.float64 else ember.float32
        xa = x.to(acc)
        count = float(input.numel() // c)
        stats = ember.cat([xa.sum(dims), (xa * xa).sum(dims),
                           ember.full((1,), count, dtype=acc, device=x.device)])
        dist.all_reduce(stats, group=process_group)
        total = float(stats[2 * c].item())
        if total <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.size()}")
        mean = stats[:c] / total
        var = (stats[c:2 * c] / total - mean * mean).clamp(min=0)
        invstd = ember.rsqrt(var + eps)
        with ember.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_((mean * momentum).to(running_mean.dtype))
            if running_var is not None:
                unbiased = var * (total / (total - 1))
                running_var.mul_(1 - momentum).add_((unbiased * momentum).to(running_var.dtype))
        xhat = (xa - mean.reshape(shape)) * invstd.reshape(shape)
        out = xhat
        if weight is not None:
            out = out * weight.detach().to(acc).reshape(shape)
        if bias is not None:
            out = out + bias.detach().to(acc).reshape(shape)
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.sync = (total, process_group, dist, bias is not None, input.dtype)
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        xhat, invstd, weight = ctx.saved_tensors
        total, process_group, dist, has_bias, dtype = ctx.sync
        c = xhat.shape[1]
        dims = [0] + list(range(2, xhat.dim()))
        shape = (1, c) + (1,) * (xhat.dim() - 2)
        dy = grad_output.to(xhat.dtype)
        sum_dy = dy.sum(dims)
        sum_dy_xhat = (dy * xhat).sum(dims)
        grad_weight = sum_dy_xhat.to(weight.dtype) if weight is not None else None
        grad_bias = sum_dy.to(dtype) if has_bias else None
        sums = ember.cat([sum_dy, sum_dy_xhat])
        dist.all_reduce(sums, group=process_group)
        mean_dy = (sums[:c] / total).reshape(shape)
        mean_dy_xhat = (sums[c:] / total).reshape(shape)
        scale = invstd.reshape(shape)
        if weight is not None:
            scale = scale * weight.detach().to(xhat.dtype).reshape(shape)
        grad_input = (dy - mean_dy - xhat * mean_dy_xhat) * scale
        return grad_input.to(dtype), grad_weight, grad_bias, None, None, None, None, None, None


def _lrn_window(channels: int, size: int):
    """Lua Torch's running window of CrossMapLRN2d's forward as a (C, C) 0/1 matrix: the
    first map sums channels [0, pre_pad); each next one adds c + pre_pad - 1 and drops
    c - pre_pad only while c > pre_pad (so channel 0 is never dropped: its quirk, kept)."""
    pre_pad = int((size - 1) / 2 + 1)
    rows, window = [], set(range(min(pre_pad, channels)))
    rows.append(sorted(window))
    for c in range(1, channels):
        if c < channels - pre_pad + 1:
            window.add(c + pre_pad - 1)
        if c > pre_pad:
            window.discard(c - pre_pad)
        rows.append(sorted(window))
    return [[1.0 if j in row else 0.0 for j in range(channels)] for row in rows]


class CrossMapLRN2d(ember.autograd.Function):
    """``x * (k + alpha / size * window_sum(x^2))^-beta`` over channels, with Lua Torch's
    forward window and backward formula (PyTorch's ``_functions.CrossMapLRN2d``)."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        c = input.shape[1]
        x = input.detach()
        window = ember.tensor(_lrn_window(c, size), dtype=x.dtype, device=x.device)
        sums = ember.einsum("ij,njhw->nihw", window, x * x)
        scale = sums * (alpha / size) + k
        out = scale.pow(-beta) * x
        ctx.save_for_backward(x, out, scale)
        ctx.params = (size, alpha, beta)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, out, scale = ctx.saved_tensors
        size, alpha, beta = ctx.params
        c = x.shape[1]
        inverse_pre_pad = int(size - (size - 1) / 2)
        # accum[c] sums ratio over channels [c - inverse_pre_pad, c + size - 1 - inverse_pre_pad]
        band = [[1.0 if c_ - inverse_pre_pad <= j <= c_ + size - 1 - inverse_pre_pad else 0.0
                 for j in range(c)] for c_ in range(c)]
        band = ember.tensor(band, dtype=x.dtype, device=x.device)
        ratio = grad_output * out / scale
        accum = ember.einsum("ij,njhw->nihw", band, ratio)
        grad = scale.pow(-beta) * grad_output - x * accum * (2 * alpha * beta / size)
        return grad, None, None, None, None
