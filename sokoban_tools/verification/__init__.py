"""Stage 4, verify (stage 3, the selection, is the top-level script
``select_evaluation_256.py``): the summary and the verification of every published board.
"""
