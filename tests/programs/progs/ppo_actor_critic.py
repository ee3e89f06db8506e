"""PPO in the shape of the CleanRL / actor-critic examples: a shared-trunk actor-critic with
orthogonal init (nn.init.orthogonal_ with gain sqrt(2), constant_ bias), a Categorical(logits)
head for a discrete "boost" choice and a Normal(mean, log_std.exp()) head for a continuous
push (log_prob summed over the action dim, entropy), rollouts in a NumPy environment with
the actions drawn by NumPy from the policy's distributions, GAE computed backwards with
torch.zeros_like, advantage normalisation, several epochs over NumPy-permuted minibatches,
the clipped surrogate with torch.clamp / torch.max, a clipped value loss, an approximate KL
under torch.no_grad, nn.utils.clip_grad_norm_, Adam(eps=1e-5) with a linearly annealed lr
written into param_groups."""
import math

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical, Normal

from _common import parse, share_init, write_log


class PointEnv:
    """A point on a line pushed towards 0; a boost doubles the push and costs a little."""

    def __init__(self, rng):
        self.rng = rng

    def reset(self):
        self.x, self.v, self.t = self.rng.uniform(-2, 2), 0.0, 0
        return self._obs()

    def _obs(self):
        return np.array([self.x, self.v, self.t / 20.0], np.float32)

    def step(self, push, boost):
        self.v = 0.8 * self.v + 0.2 * float(np.clip(push, -1, 1)) * (2.0 if boost else 1.0)
        self.x += self.v
        self.t += 1
        reward = -abs(self.x) - 0.05 * boost
        done = self.t >= 20
        return self._obs(), reward, done


def layer_init(layer, std=math.sqrt(2), bias_const=0.0):
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class ActorCritic(nn.Module):
    def __init__(self, obs_dim=3, hidden=32):
        super().__init__()
        self.trunk = nn.Sequential(layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
                                   layer_init(nn.Linear(hidden, hidden)), nn.Tanh())
        self.boost_logits = layer_init(nn.Linear(hidden, 2), std=0.01)
        self.push_mean = layer_init(nn.Linear(hidden, 1), std=0.01)
        self.push_log_std = nn.Parameter(torch.zeros(1, 1))
        self.critic = layer_init(nn.Linear(hidden, 1), std=1.0)

    def forward(self, obs):
        h = self.trunk(obs)
        boost = Categorical(logits=self.boost_logits(h))
        mean = self.push_mean(h)
        push = Normal(mean, self.push_log_std.expand_as(mean).exp())
        return boost, push, self.critic(h).squeeze(-1)

    def evaluate(self, obs, boost_a, push_a):
        boost, push, value = self(obs)
        logp = boost.log_prob(boost_a) + push.log_prob(push_a).sum(-1)
        entropy = boost.entropy() + push.entropy().sum(-1)
        return logp, entropy, value


def main():
    args = parse(iterations=4, steps=64, epochs=3, minibatch=16, lr=3e-3, gamma=0.97,
                 gae_lambda=0.9, clip=0.2)
    rng = np.random.default_rng(13)
    env = PointEnv(rng)
    agent = ActorCritic()
    share_init(torch, [agent], args.init)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    losses, kls, returns_log = [], [], []
    obs = env.reset()
    for it in range(args.iterations):
        frac = 1.0 - it / args.iterations
        optimizer.param_groups[0]["lr"] = frac * args.lr
        buf_obs, buf_boost, buf_push, buf_logp, buf_rew, buf_done, buf_val = ([] for _ in range(7))
        for _ in range(args.steps):
            o = torch.from_numpy(obs).unsqueeze(0)
            with torch.no_grad():
                boost_d, push_d, value = agent(o)
                probs = boost_d.probs[0].numpy().astype(np.float64)
                b = int(rng.choice(2, p=probs / probs.sum()))
                p = float(push_d.mean[0, 0]) + float(push_d.stddev[0, 0]) * rng.standard_normal()
                boost_a = torch.tensor([b])
                push_a = torch.tensor([[p]], dtype=torch.float32)
                logp = boost_d.log_prob(boost_a) + push_d.log_prob(push_a).sum(-1)
            obs_next, reward, done = env.step(p, b)
            buf_obs.append(o)
            buf_boost.append(boost_a)
            buf_push.append(push_a)
            buf_logp.append(logp)
            buf_val.append(value)
            buf_rew.append(reward)
            buf_done.append(float(done))
            obs = env.reset() if done else obs_next
        returns_log.append(float(np.sum(buf_rew)))
        obs_b = torch.cat(buf_obs)
        boost_b = torch.cat(buf_boost)
        push_b = torch.cat(buf_push)
        logp_b = torch.cat(buf_logp)
        values = torch.cat(buf_val)
        rewards = torch.tensor(buf_rew, dtype=torch.float32)
        dones = torch.tensor(buf_done)
        with torch.no_grad():
            next_value = agent(torch.from_numpy(obs).unsqueeze(0))[2]
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.steps)):
                nextnonterminal = 1.0 - dones[t]
                nextvalues = next_value[0] if t == args.steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns = advantages + values
        for _ in range(args.epochs):
            perm = rng.permutation(args.steps)
            for start in range(0, args.steps, args.minibatch):
                mb = torch.from_numpy(perm[start:start + args.minibatch])
                new_logp, entropy, new_value = agent.evaluate(obs_b[mb], boost_b[mb], push_b[mb])
                logratio = new_logp - logp_b[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                mb_adv = advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss1 = -mb_adv * ratio
                pg_loss2 = -mb_adv * torch.clamp(ratio, 1 - args.clip, 1 + args.clip)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()
                v_unclipped = (new_value - returns[mb]) ** 2
                v_clipped = values[mb] + torch.clamp(new_value - values[mb], -args.clip, args.clip)
                v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - returns[mb]) ** 2).mean()
                loss = pg_loss - 0.01 * entropy.mean() + 0.5 * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
                losses.append(loss.item())
                kls.append(approx_kl.item())
    write_log(args.log, losses, approx_kl=kls, returns=returns_log,
              log_std=agent.push_log_std.item())


if __name__ == "__main__":
    main()
