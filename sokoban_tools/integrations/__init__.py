"""One home per training or evaluation stack that plays the stored boards under its
own rules: each writes the episode log and run manifest of :mod:`sokoban_tools.records`.
"""
