"""The chapters' explorers: one module per chapter, the functions its two-faced explorers call.

The library the chapters teach (attention, networks, algorithms, environments) sits apart from this
glue that shows it: a reader looking for the code behind a formula opens the library; a reader
looking for how a figure was drawn opens these.

- :mod:`attnmarl.explorers.seq2seq` — chapter 1, alignments of the seq2seq models;
- :mod:`attnmarl.explorers.scoring` — chapter 2, score functions and temperature;
- :mod:`attnmarl.explorers.self_attention` — chapters 3 and 4, alpha of one and of several heads;
- :mod:`attnmarl.explorers.map` — chapter 5, soft spatial attention over images and a relational agent's alpha;
- :mod:`attnmarl.explorers.mpe` — chapter 6, the MPE arena, episodes and entity tokens;
- :mod:`attnmarl.explorers.value` — chapter 7, the trained critics' alpha, episodes and the arena probe;
- :mod:`attnmarl.explorers.policy` — chapter 8, the trained policies' alpha over entities and agents;
- :mod:`attnmarl.explorers.comm` — chapter 11, what limited sight costs the actors of chapter 8;
- :mod:`attnmarl.explorers.mix` — chapter 11, the credit a trained Qatten mixer gives each agent.
"""
