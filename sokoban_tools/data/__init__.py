"""Stage 2, generate: the seed-for-seed generator, the board-row format, and the
pools command that writes the training and source pools. Imports only ``rules``.
"""
