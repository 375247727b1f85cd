"""verl-agent: the drop-in environments (:mod:`.envs`), the functions the patched trainer
calls (:mod:`.hooks`), and the patch itself beside them (``sokoban-fairness.patch``,
what it changes in ``README.md``), shipped in the wheel so an installed package can apply it.
"""
