"""Training algorithms, one readable file each: :mod:`attnmarl.algos.mappo` (multi-agent PPO with
centralized concatenation or self-attention critics), :mod:`attnmarl.algos.maddpg`, :mod:`attnmarl.algos.maac`,
:mod:`attnmarl.algos.qmix` (value decomposition) and :mod:`attnmarl.algos.mat` (the Multi-Agent Transformer and
MAT-Dec, one PPO loss over encoder and decoder). Each estimates a whole run's CPU time and peak memory before it
starts (:mod:`attnmarl.algos.estimate`)."""
