"""Full-batch curve fitting with L-BFGS in the shape of the time-sequence-prediction
example: a small MLP fitted to noisy samples of a damped sine, optim.LBFGS with
line_search_fn='strong_wolfe' and a closure that zeroes grads, computes the loss and
backpropagates; then a second model fitted by LBFGS without line search, all in float64
(model.double())."""
import numpy as np
import torch
import torch.nn as nn

from _common import parse, share_init, write_log


def make_model():
    return nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 1)).double()


def fit(model, x, y, line_search, steps):
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8 if line_search is None else 1,
                                  history_size=10, max_iter=10, line_search_fn=line_search)
    criterion = nn.MSELoss()
    losses = []
    for _ in range(steps):
        def closure():
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            return loss
        losses.append(optimizer.step(closure).item())
    return losses


def main():
    args = parse(steps=6)
    rng = np.random.default_rng(16)
    t = np.linspace(0, 4, 64)[:, None]
    y = np.exp(-0.4 * t) * np.sin(3 * t) + rng.normal(0, 0.02, t.shape)
    x_t, y_t = torch.from_numpy(t), torch.from_numpy(y)
    a, b = make_model(), make_model()
    share_init(torch, [a, b], args.init)
    losses = fit(a, x_t, y_t, "strong_wolfe", args.steps) + fit(b, x_t, y_t, None, args.steps)
    write_log(args.log, losses)


if __name__ == "__main__":
    main()
