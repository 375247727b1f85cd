"""Load and play: checked task loading, the training sampler, the environment, the
episode log and the verl-agent drop-in. What a trainer installs.
"""
