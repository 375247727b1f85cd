"""Play: the environment, the training sampler and validation schedule, the workers
that hold the environments and their step-exact recovery, the builder's checked
arguments and the projection of model answers. The formats it writes live in
:mod:`sokoban_tools.records`; the stacks that drive it in :mod:`sokoban_tools.integrations`.
"""
