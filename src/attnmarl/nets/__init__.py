"""Networks for m agents, one module per family as the chapters introduce them.

- :mod:`attnmarl.nets.common` — input checks, agent types, the m unshared per-agent layers;
- :mod:`attnmarl.nets.central` — the two centralized shapes: concatenation (fig. 17.7) and
  self-attention (fig. 17.8), m observations in, m per-agent outputs out;
- :mod:`attnmarl.nets.critics` — value networks v([o]; w^i) (chapter 7);
- :mod:`attnmarl.nets.policies` — policies pi and mu: decentralized, centralized, entity-token (chapter 8);
- :mod:`attnmarl.nets.qnets` — action-value networks q([o], [a]; w^i): concatenation and self-attention (chapter 9);
- :mod:`attnmarl.nets.sighted` — the flat and entity actors under limited sight (chapter 11);
- :mod:`attnmarl.nets.messages` — TarMAC-style targeted messages between entity actors (chapter 11);
- :mod:`attnmarl.nets.maac` — MAAC's critics, Q^i(o, (a', a^{-i})) for every action a' of agent i, with attention
  or concatenation over the other agents (:mod:`attnmarl.algos.maac`);
- :mod:`attnmarl.nets.mixers` — value decomposition's mixers, Q^1..Q^m -> Q_tot: VDN, QMIX, Qatten (chapter 11);
- :mod:`attnmarl.nets.mat` — the Multi-Agent Transformer and MAT-Dec on entity tokens, at any m (chapter 13).
"""
from .central import AttentionBlock, AttentionNet, ConcatNet
from .common import AgentHeads, AgentLinear, check_obs, type_features
from .critics import AttentionCritic, ConcatCritic
from .mat import MultiAgentTransformer
from .messages import CommActor, EntityEncoder, TargetedMessages
from .mixers import QMIX, VDN, Qatten
from .policies import Actor, AttentionPolicy, ConcatPolicy, EntityActor, EntityAttention
from .qnets import AttentionQ, ConcatQ
from .sighted import SightedActor, SightedEntityActor

__all__ = ["AgentLinear", "AgentHeads", "ConcatNet", "AttentionBlock", "AttentionNet", "ConcatCritic",
           "AttentionCritic", "Actor", "ConcatPolicy", "AttentionPolicy", "EntityActor", "EntityAttention",
           "ConcatQ", "AttentionQ", "check_obs", "type_features", "VDN", "QMIX", "Qatten", "SightedActor",
           "SightedEntityActor", "EntityEncoder", "TargetedMessages", "CommActor",
           "MultiAgentTransformer"]
