"""Load and play: where the boards come from and their checked loading, the training
sampler, the environment, the episode log, the projection of model answers, the
verl-agent drop-in and what the patched verl-agent calls. What a trainer installs.
"""
