"""Pipeline stage 1, generate: the seed-for-seed reimplementation of verl-agent's room
generator and the pools command that writes the training and source pools.
"""
