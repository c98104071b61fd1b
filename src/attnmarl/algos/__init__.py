"""Training algorithms, one readable file each: :mod:`attnmarl.algos.mappo` (multi-agent PPO with
centralized concatenation or self-attention critics)."""
