"""Relational (self-attention) reinforcement learning for one agent: fetch the object of the goal colour.

The idea of relational deep RL (Zambaldi et al. 2019): cut the observation into **entities**, embed
each one, and let multi-head self-attention relate them before the policy decides. Here on a task
generated in code, small enough to train in seconds on a CPU:

- an arena [-1, 1]^2 with the agent and K = 4 objects of different colours at random places, and a
  **goal colour** drawn afresh every episode;
- four actions move the agent by STEP along +x, -x, +y or -y; the episode ends when the agent is
  within REACH of the object of the goal colour (reward +1) or after HORIZON steps. Each step also
  pays the decrease in the distance to that object (a potential-based shaping, which does not
  change the best policy);
- the observation is K + 1 **entity tokens** x^j in R^{3 + K}: the agent's own token
  [1, 0, 0, goal colour one-hot] and one token per object [0, p_obj - p_agent, colour one-hot].

:class:`RelationalAgent` embeds every token (e^j = ReLU(W_e x^j)), runs one self-attention layer
(:class:`attnmarl.attention.MultiHeadSelfAttention`, eqs. (1)-(2) of chapter 3) and reads its action
logits from the agent's own token, [e^0; c^0]. The agent's query carries the goal colour and every
object's key its colour, so the weights alpha^0 of the agent's row are where it "looks". With
``attention=False`` (the baseline) the agent's row is uniform, alpha^0_j = 1/(K + 1): c^0 is the
mean of the value vectors, a Deep Sets summary that knows which objects exist but cannot single one out.

Training is REINFORCE with the reward-to-go and a per-step batch-mean baseline (:func:`train`).
The agent's tokens are the same kind as Part II's entity tokens (chapters 8 and 10), where every agent
of a team attends over its landmarks and neighbours.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from attnmarl import QUICK
from attnmarl.attention import MultiHeadSelfAttention
from attnmarl.checks import check_bool, check_episodes, check_finite, check_int, check_seed

__all__ = ["COLOURS", "K", "HORIZON", "STEP", "REACH", "MOVES", "FetchState", "reset", "tokens", "step",
           "RelationalAgent", "rollout", "evaluate", "train", "TRAIN_UPDATES"]

COLOURS = ("purple", "green", "blue", "orange")
"""The K object colours (one object of each colour per episode)."""
K = len(COLOURS)
HORIZON = 16                 # steps per episode at most
STEP = 0.25                  # how far one move takes the agent
REACH = 0.2                  # the goal is reached within this distance
MIN_START = 0.6              # the goal object starts at least this far from the agent
MOVES = torch.tensor([[STEP, 0.0], [-STEP, 0.0], [0.0, STEP], [0.0, -STEP]])
"""The four actions: +x, -x, +y, -y."""
D_TOKEN = 3 + K

D_EMBED = 32                 # e^j
D_Q = 16
D_OUT = 32
BATCH_EPISODES = 256
LEARNING_RATE = 1e-2
TRAIN_UPDATES = 15 if QUICK else 130
SEED = 0


@dataclass
class FetchState:
    """A batch of B episodes: agent positions (B, 2), object positions (B, K, 2), the goal colour (B,)
    and whether each episode is over (B,)."""

    agent: Tensor
    objects: Tensor
    goal: Tensor
    done: Tensor

    def goal_position(self) -> Tensor:
        """(B, 2): where the object of the goal colour is."""
        return self.objects[torch.arange(len(self.goal)), self.goal]

    def distance(self) -> Tensor:
        """(B,): the agent's distance to the goal object."""
        return (self.goal_position() - self.agent).norm(dim=-1)


def reset(batch: int, generator: torch.Generator) -> FetchState:
    """``batch`` new episodes: objects and agent uniform in [-1, 1]^2 (the goal object at least
    MIN_START from the agent), goal colours uniform."""
    check_int("batch", batch)
    objects = torch.rand(batch, K, 2, generator=generator) * 2 - 1
    goal = torch.randint(K, (batch,), generator=generator)
    agent = torch.rand(batch, 2, generator=generator) * 2 - 1
    state = FetchState(agent, objects, goal, torch.zeros(batch, dtype=torch.bool))
    while (close := state.distance() < MIN_START).any():
        state.agent[close] = torch.rand(int(close.sum()), 2, generator=generator) * 2 - 1
    return state


def tokens(state: FetchState) -> Tensor:
    """The entity tokens (B, K + 1, 3 + K): the agent's [1, 0, 0, goal one-hot], then the objects'
    [0, p_obj - p_agent, colour one-hot] in colour order."""
    batch = len(state.goal)
    eye = torch.eye(K)
    own = torch.cat([torch.ones(batch, 1), torch.zeros(batch, 2), eye[state.goal]], dim=-1)
    others = torch.cat([torch.zeros(batch, K, 1), state.objects - state.agent.unsqueeze(1),
                        eye.expand(batch, K, K)], dim=-1)
    return torch.cat([own.unsqueeze(1), others], dim=1)


def step(state: FetchState, actions: Tensor) -> tuple[FetchState, Tensor]:
    """Move every running episode by its action (B,) in 0..3; returns the new state and the rewards (B,):
    the decrease in the distance to the goal object, plus 1 on reaching it. Finished episodes stay put
    and earn 0."""
    if actions.shape != state.goal.shape or actions.dtype != torch.long:
        raise ValueError(f"actions must be a long tensor of shape {tuple(state.goal.shape)}; got "
                         f"{actions.dtype} {tuple(actions.shape)}")
    if ((actions < 0) | (actions >= len(MOVES))).any():
        raise ValueError(f"actions must lie in 0..{len(MOVES) - 1}")
    before = state.distance()
    running = ~state.done
    agent = torch.where(running.unsqueeze(-1), (state.agent + MOVES[actions]).clamp(-1.0, 1.0), state.agent)
    moved = FetchState(agent, state.objects, state.goal, state.done.clone())
    after = moved.distance()
    reached = running & (after < REACH)
    moved.done |= reached
    reward = torch.where(running, before - after, torch.zeros_like(after)) + reached.float()
    return moved, reward


class RelationalAgent(nn.Module):
    """tokens (B, K + 1, 3 + K) -> action logits (B, 4) and the agent's weights alpha^0 (B, K + 1).

    e^j = ReLU(W_e x^j + b_e); (c^0, ..., c^K), alpha = self-attention(e) (one head); logits =
    MLP([e^0; c^0]). ``attention=False``: alpha^0 uniform, c^0 the mean of the value vectors W_v e^j.
    """

    def __init__(self, attention: bool = True) -> None:
        super().__init__()
        self.attention = check_bool("attention", attention)  # 'no' would build the attention agent
        self.embed = nn.Linear(D_TOKEN, D_EMBED)
        self.relate = MultiHeadSelfAttention(D_EMBED, D_Q, D_OUT, heads=1, scale=True)
        self.decide = nn.Sequential(nn.Linear(D_EMBED + D_OUT, 64), nn.ReLU(), nn.Linear(64, len(MOVES)))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if x.ndim != 3 or x.shape[1:] != (K + 1, D_TOKEN):
            raise ValueError(f"tokens must have shape (B, {K + 1}, {D_TOKEN}); got {tuple(x.shape)}")
        check_finite("tokens", x)
        e = torch.relu(self.embed(x))
        if self.attention:
            c, alpha = self.relate(e)
            own_c, own_alpha = c[:, 0], alpha[:, 0, 0]
        else:
            own_alpha = e.new_full(x.shape[:2], 1.0 / (K + 1))
            own_c = (e @ self.relate.W_v[0].T).mean(1)
        return self.decide(torch.cat([e[:, 0], own_c], dim=-1)), own_alpha


def rollout(agent: RelationalAgent, state: FetchState, greedy: bool = False,
            generator: torch.Generator | None = None) -> dict[str, Tensor]:
    """Play HORIZON steps from ``state``. Returns per step (T = HORIZON, first axis) ``log_prob`` (T, B),
    ``reward`` (T, B), ``running`` (T, B) (was the episode still on before the step), ``alpha`` (T, B, K + 1)
    and ``agent`` (T + 1, B, 2) positions; plus the final ``done`` (B,)."""
    check_bool("greedy", greedy)  # 'no' would act greedily
    record: dict[str, list[Tensor]] = {"log_prob": [], "reward": [], "running": [], "alpha": [], "agent": [state.agent]}
    for _ in range(HORIZON):
        logits, alpha = agent(tokens(state))
        dist = torch.distributions.Categorical(logits=logits)
        sampled = None if greedy else torch.multinomial(dist.probs, 1, generator=generator).squeeze(-1)
        actions = logits.argmax(-1) if sampled is None else sampled
        record["running"].append(~state.done)
        record["log_prob"].append(dist.log_prob(actions))
        record["alpha"].append(alpha)
        state, reward = step(state, actions)
        record["reward"].append(reward)
        record["agent"].append(state.agent)
    out = {name: torch.stack(values) for name, values in record.items()}
    out["done"] = state.done
    return out


@torch.no_grad()
def evaluate(agent: RelationalAgent, episodes: int = 1000, seed: int = 12345, greedy: bool = True) -> dict[str, float]:
    """Play ``episodes`` new episodes, greedily (the most probable action) or sampling: ``success`` (share
    that reach the goal object), ``steps`` (mean steps taken), ``alpha_goal`` (mean weight alpha^0 on the goal
    object while running) and ``alpha_other`` (mean weight on each other object)."""
    check_episodes("episodes", episodes)
    check_seed(seed)
    state = reset(episodes, torch.Generator().manual_seed(seed))
    goal = state.goal
    out = rollout(agent, state, greedy, torch.Generator().manual_seed(seed))
    running = out["running"].float()                                          # (T, B)
    on_goal = out["alpha"][:, torch.arange(episodes), goal + 1]              # (T, B)
    on_objects = out["alpha"][:, :, 1:].sum(-1)
    return {
        "success": out["done"].float().mean().item(),
        "steps": running.sum(0).mean().item(),
        "alpha_goal": ((on_goal * running).sum() / running.sum()).item(),
        "alpha_other": (((on_objects - on_goal) / (K - 1) * running).sum() / running.sum()).item(),
    }


def train(attention: bool = True, updates: int = TRAIN_UPDATES, seed: int = SEED, progress: bool = True) -> dict:
    """REINFORCE: each update plays BATCH_EPISODES episodes and ascends
    sum_t (G_t - b_t) grad log pi(a_t | x_t), G_t the reward-to-go, b_t its mean over the batch at step t
    (advantages scaled to unit standard deviation). Returns ``{"agent", "return", "success"}``, the last two
    per update (mean episode return and share of episodes that reached the goal)."""
    check_int("updates", updates)
    check_seed(seed)
    torch.manual_seed(seed)
    agent = RelationalAgent(attention)
    optimizer = torch.optim.Adam(agent.parameters(), lr=LEARNING_RATE)
    generator = torch.Generator().manual_seed(seed)
    curves: dict = {"return": [], "success": []}
    name = "self-attention" if attention else "uniform alpha"
    for _ in tqdm(range(updates), desc=f"training ({name})", disable=not progress):
        out = rollout(agent, reset(BATCH_EPISODES, generator), generator=generator)
        to_go = out["reward"].flip(0).cumsum(0).flip(0)                         # G_t, (T, B)
        running = out["running"].float()
        baseline = (to_go * running).sum(1, keepdim=True) / running.sum(1, keepdim=True).clamp_min(1.0)
        advantage = (to_go - baseline) * running
        advantage = advantage / advantage[running.bool()].std().clamp_min(1e-6)
        loss = -(advantage * out["log_prob"]).sum(0).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        curves["return"].append(out["reward"].sum(0).mean().item())
        curves["success"].append(out["done"].float().mean().item())
    curves["agent"] = agent
    return curves

