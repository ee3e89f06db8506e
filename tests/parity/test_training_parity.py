"""End-to-end training parity with PyTorch: the same model, initial weights, batches and
optimizer settings, trained 20 steps in each framework, give loss curves that match
within 1e-3 relative (MLP, the demo CNN, an LSTM language model, a TransformerEncoder)."""
import numpy as np
import pytest
import torch

import ember

STEPS = 20
RTOL = 1e-3


def _ns(framework):
    """(nn, functional, optim) of ``framework`` ("torch" or "ember")."""
    if framework == "torch":
        import torch.nn as nn
        import torch.nn.functional as F
        import torch.optim as optim
    else:
        import ember.nn as nn
        import ember.nn.functional as F
        import ember.optim as optim
    return nn, F, optim


# ---- the four models, written once against either framework's namespace --------------
def make_mlp(nn, F):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 512)
            self.fc2 = nn.Linear(512, 512)
            self.fc3 = nn.Linear(512, 10)

        def forward(self, x):
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    return MLP()


def make_cnn(nn, F):
    class DigitsCNN(nn.Module):
        """examples/train_digits.py's DigitsCNN, dropout off."""

        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
            self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.dropout = nn.Dropout(0.0)
            self.fc1 = nn.Linear(64 * 4 * 4, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = self.pool(F.relu(self.conv2(x)))
            x = self.dropout(x.flatten(1))
            x = F.relu(self.fc1(x))
            return self.fc2(x)

    return DigitsCNN()


def make_lstm_lm(nn, F):
    class LSTMLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 16)
            self.lstm = nn.LSTM(16, 32, num_layers=1, batch_first=True)
            self.head = nn.Linear(32, 50)

        def forward(self, x):
            out, _ = self.lstm(self.emb(x))
            return self.head(out).reshape(-1, 50)

    return LSTMLM()


def make_transformer(nn, F):
    class TransformerClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 32)
            layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                               dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2)
            self.head = nn.Linear(32, 5)

        def forward(self, x):
            return self.head(self.encoder(self.emb(x)).mean(dim=1))

    return TransformerClassifier()


# ---- batches (NumPy, shared by both runs) ---------------------------------------------
def mlp_batches(rng):
    return [(rng.standard_normal((32, 784)).astype(np.float32),
             rng.integers(0, 10, size=32).astype(np.int64)) for _ in range(STEPS)]


def cnn_batches(rng):
    return [(rng.random((32, 1, 8, 8)).astype(np.float32),
             rng.integers(0, 10, size=32).astype(np.int64)) for _ in range(STEPS)]


def lm_batches(rng):
    out = []
    for _ in range(STEPS):
        seq = rng.integers(0, 50, size=(8, 13)).astype(np.int64)
        out.append((seq[:, :-1].copy(), seq[:, 1:].reshape(-1).copy()))
    return out


def cls_batches(rng):
    return [(rng.integers(0, 50, size=(8, 10)).astype(np.int64),
             rng.integers(0, 5, size=8).astype(np.int64)) for _ in range(STEPS)]


CASES = {
    "mlp": (make_mlp, mlp_batches, "SGD", dict(lr=0.05, momentum=0.9)),
    "cnn": (make_cnn, cnn_batches, "Adam", dict(lr=1e-3)),
    "lstm_lm": (make_lstm_lm, lm_batches, "Adam", dict(lr=3e-3)),
    "transformer": (make_transformer, cls_batches, "AdamW", dict(lr=1e-3)),
}


def train(framework, model, batches, opt_name, opt_kwargs):
    nn, _, optim = _ns(framework)
    lib = torch if framework == "torch" else ember
    opt = getattr(optim, opt_name)(model.parameters(), **opt_kwargs)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(model(lib.from_numpy(x.copy())), lib.from_numpy(y.copy()))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


@pytest.mark.parametrize("name", list(CASES))
def test_training_loss_curves_match(name):
    make, make_batches, opt_name, opt_kwargs = CASES[name]
    torch.manual_seed(0)
    ember.manual_seed(0)
    torch_model = make(*_ns("torch")[:2])
    ember_model = make(*_ns("ember")[:2])
    ember_model.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                                 for k, v in torch_model.state_dict().items()})
    batches = make_batches(np.random.default_rng(1234))

    torch_losses = train("torch", torch_model, batches, opt_name, opt_kwargs)
    ember_losses = train("ember", ember_model, batches, opt_name, opt_kwargs)

    assert np.all(np.isfinite(torch_losses))
    np.testing.assert_allclose(ember_losses, torch_losses, rtol=RTOL)
