"""TRL's ``GRPOTrainer`` on the training boards, playing verl-agent's text turn (the ``trl`` extra).

- :mod:`.dataset`: the training set, one prompt row per board in the fair sampler's draw order;
- :mod:`.rollout`: the ``rollout_func`` that plays verl-agent's turn, every turn a sample, and
  the reward function reading what it played;
- :mod:`.policy`: a transformers model answering the turns, and the one turn loop;
- :mod:`.run`: the run's settings (verl-agent's launcher's by default), its ``GRPOConfig``,
  episode log, run manifest and validation passes; :mod:`.schedule`: the passes as a callback;
- :mod:`.tool_env`: an ``environment_factory`` for tool-calling models: another turn, one
  growing chat, recorded as another observation so ``compare`` refuses to pair the two unasked;
- :mod:`.models`: any GGUF file or Hub model as a trainable model;
- ``python -m sokoban_tools.integrations.trl``: all of it from the command line (docs/trl.md).
"""
