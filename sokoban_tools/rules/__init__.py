"""Stage 1, the game: the board and its one move rule, the exact solver, the 8
symmetries, and the game images. Imports no other stage.
"""
