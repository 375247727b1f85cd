"""Any served model, vision-language or text, on the validation boards, played as verl-agent's
validation plays them: the turns (:mod:`.turn`, the visual one, and :mod:`.text_turn`, with
verl-agent's prompts in :mod:`.prompt`), the client (:mod:`.client`) and the command
(:mod:`.evaluate`, ``python -m sokoban_tools evaluate``). A demo model to play without a GPU
(:mod:`.demo_model`, ``demo-model``) and the card's quick start that evaluates it
(:mod:`.quickstart`, ``quickstart``).
"""
