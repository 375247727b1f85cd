"""``python -m sokoban_tools train``: PPO, GRPO and GiGPO at CPU scale on the 5,000 training boards.

One network (stable-baselines3's ``ActorCriticPolicy``, two layers of 256 over the one-hot
grid), one env-step budget and one validation schedule for every method; PPO is
stable-baselines3's, GRPO (:mod:`.grpo`) and GiGPO (:mod:`.gigpo`) are small modules on
stable-baselines3's policy and optimiser. Needs the ``train`` extra.
"""
