"""REINFORCE in the shape of the reinforcement-learning example: a policy MLP with dropout
turned off, Categorical(probs) for log_prob, discounted returns normalised with mean/std and
eps = finfo(float32).eps, the policy loss as -log_prob * return summed with torch.cat,
Adam. The environment is a small corridor written in NumPy; actions are drawn by NumPy
from the policy's probabilities, so both frameworks follow the same trajectories."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

from _common import parse, share_init, write_log


class Corridor:
    """Walk left/right on 0..6 from 3; reaching 6 pays 1, every step costs 0.01."""

    def reset(self):
        self.pos, self.t = 3, 0
        return self._obs()

    def _obs(self):
        o = np.zeros(7, dtype=np.float32)
        o[self.pos] = 1.0
        return o

    def step(self, action):
        self.pos = max(0, min(6, self.pos + (1 if action == 1 else -1)))
        self.t += 1
        done = self.pos == 6 or self.t >= 20
        return self._obs(), (1.0 if self.pos == 6 else -0.01), done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(7, 16)
        self.dropout = nn.Dropout(p=0.0)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs, self.rewards = [], []

    def forward(self, x):
        x = F.relu(self.dropout(self.affine1(x)))
        return F.softmax(self.affine2(x), dim=1)


def main():
    args = parse(episodes=15, gamma=0.99, lr=1e-2)
    rng = np.random.default_rng(9)
    policy = Policy()
    share_init(torch, [policy], args.init)
    optimizer = optim.Adam(policy.parameters(), lr=args.lr)
    eps = np.finfo(np.float32).eps.item()
    env = Corridor()
    losses, lengths = [], []
    for _ in range(args.episodes):
        state, done = env.reset(), False
        while not done:
            probs = policy(torch.from_numpy(state).float().unsqueeze(0))
            p = probs.detach().numpy()[0].astype(np.float64)
            action = int(rng.random() < p[1] / p.sum())
            m = Categorical(probs)
            policy.saved_log_probs.append(m.log_prob(torch.tensor([action])))
            state, reward, done = env.step(action)
            policy.rewards.append(reward)
        R, returns = 0.0, []
        for r in policy.rewards[::-1]:
            R = r + args.gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        policy_loss = [-log_prob * R for log_prob, R in zip(policy.saved_log_probs, returns)]
        optimizer.zero_grad()
        loss = torch.cat(policy_loss).sum()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        lengths.append(len(policy.rewards))
        del policy.rewards[:]
        del policy.saved_log_probs[:]
    write_log(args.log, losses, lengths=lengths)


if __name__ == "__main__":
    main()
