"""The chapters' explorers: one module per chapter, the functions its two-faced explorers call.

The library the chapters teach (attention, networks, algorithms, environments) sits apart from this
glue that shows it: a reader looking for the code behind a formula opens the library; a reader
looking for how a figure was drawn opens these.

- :mod:`attnmarl.notebook.explorers.seq2seq` — chapter 1, alignments of the seq2seq models;
- :mod:`attnmarl.notebook.explorers.scoring` — chapter 2, score functions and temperature;
- :mod:`attnmarl.notebook.explorers.self_attention` — chapters 3 and 4, alpha of one and of several heads;
- :mod:`attnmarl.notebook.explorers.map` — chapter 5, soft spatial attention over images and a relational agent's alpha;
- :mod:`attnmarl.notebook.explorers.mpe` — chapter 6, the MPE arena, episodes and entity tokens;
- :mod:`attnmarl.notebook.explorers.value` — chapter 7, the trained critics' alpha, episodes and the arena probe;
- :mod:`attnmarl.notebook.explorers.policy` — chapter 8, the trained policies' alpha over entities and agents;
- :mod:`attnmarl.notebook.explorers.qnet` — chapter 9, the Q critics' alpha over an episode and the probe;
- :mod:`attnmarl.notebook.explorers.scale` — chapter 10, the runs at m = 3 to 12, zero-shot play and baselines;
- :mod:`attnmarl.notebook.explorers.comm` — chapter 11, what limited sight costs the actors of chapter 8;
- :mod:`attnmarl.notebook.explorers.mix` — chapter 11, the credit a trained Qatten mixer gives each agent;
- :mod:`attnmarl.notebook.explorers.decoys` — chapter 12, the runs on simple_spread with decoys, their read-out of
  alpha and the zero-shot table;
- :mod:`attnmarl.notebook.explorers.lbf` — chapter 12, the Level-Based Foraging runs against the random and
  scripted-forager teams;
- :mod:`attnmarl.notebook.explorers.synthesis` — the synthesis page: every comparison with its interval, and
  the seed plan.
"""
