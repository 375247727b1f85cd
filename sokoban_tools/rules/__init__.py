"""Stage 1, the game: the board and its one move rule, the reward and the end of an episode, the exact solver, the 8
symmetries, and the game images. Imports no other stage.
"""
