"""Behaviour public model code relies on (openai/whisper, openai/CLIP, segment-anything,
mamba-minimal, makemore, llm.c), each checked against PyTorch."""
import numpy as np
import pytest
import torch

import ember


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("dims,padding_mode", [(1, "zeros"), (2, "zeros"), (3, "zeros"),
                                               (1, "reflect"), (2, "circular")])
def test_conv_forward_override_with_three_arguments(dims, padding_mode):
    # whisper's Conv1d overrides _conv_forward(x, weight, bias) to cast the parameters
    def subclass(lib):
        base = {1: lib.nn.Conv1d, 2: lib.nn.Conv2d, 3: lib.nn.Conv3d}[dims]

        class Cast(base):
            def _conv_forward(self, x, weight, bias):
                return super()._conv_forward(x, weight.to(x.dtype) * 2,
                                             None if bias is None else bias.to(x.dtype))
        return Cast(2, 3, kernel_size=3, padding=1, padding_mode=padding_mode)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2) + (5,) * dims).astype(np.float32)
    tm, em = subclass(torch), subclass(ember)
    em.load_state_dict({k: ember.from_numpy(_np(v)) for k, v in tm.state_dict().items()})
    want = tm(torch.from_numpy(x))
    got = em(ember.from_numpy(x))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-5, atol=1e-6)
