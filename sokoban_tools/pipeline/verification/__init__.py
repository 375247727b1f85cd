"""Pipeline stage 3, verify (stage 2, the selection, is the top-level script
``select_evaluation_256.py``): the summary and the verification of every published board.
"""
