"""``python -m sokoban_tools train``: the training methods at CPU scale on the 5,000 training boards.

One network (stable-baselines3's ``ActorCriticPolicy``, two layers of 256 over the one-hot
grid), one env-step budget and one validation schedule for every method. The methods are one
module each, listed in :mod:`.methods`: PPO is stable-baselines3's (:mod:`.ppo`); GRPO, GiGPO,
RLOO and Dr. GRPO compute their advantages as verl-agent's functions do, over the step rows of
:mod:`.step_rows`, and share the learner of :mod:`.group_learner`. Needs the ``train`` extra.
"""
