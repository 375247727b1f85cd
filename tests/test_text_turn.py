"""The text turn of ``evaluate`` (``--mode tiny_rgb_array``) against verl-agent's own code.

The 256-board proof through verl-agent's real manager is in ``test_evaluate.py``
(``test_records_and_turn_inputs_equal_those_of_verl_agents_own_validation_loop``, text
mode with history 2 and 0); here the parts one by one: the templates byte for byte,
``SimpleMemory.fetch``'s history lines, the plain-string message, and the manifest
settings that keep ``compare`` from pairing a text run with a visual one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import random

import pytest

from conftest import REPO
from sokoban_tools.evaluation import compare
from sokoban_tools.integrations.served import prompt
from sokoban_tools.integrations.served.evaluate import main as evaluate_main
from sokoban_tools.integrations.served.text_turn import ACTION_LOOKUP, TextTurn, history_lines
from sokoban_tools.integrations.served.turn import Episode
from sokoban_tools.integrations.served.demo_model import LoopbackServer, Script, read_text_board
from sokoban_tools.records.manifest import ManifestError, manifest_path, read_manifest
from sokoban_tools.records.run import OpenRun
from sokoban_tools.records.tasks import load_validation
from sokoban_tools.runtime.env import render
from test_verl_agent_patched_trainer import UPSTREAM, require_upstream

ROWS = load_validation(REPO / "fairness" / "evaluation.jsonl")


def upstream_module(relative: str):
    """A module of verl-agent's own files, loaded from its path alone (no package imports)."""
    require_upstream()
    spec = importlib.util.spec_from_file_location(relative.replace("/", "_"), UPSTREAM / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_text_templates_are_verl_agents_byte_for_byte_and_their_digests_are_theirs():
    theirs = upstream_module("agent_system/environments/prompts/sokoban.py")
    assert prompt.TEXT_PROMPT_NO_HISTORY == theirs.SOKOBAN_TEMPLATE_NO_HIS
    assert prompt.TEXT_PROMPT == theirs.SOKOBAN_TEMPLATE
    assert prompt.TEXT_PROMPT_SHA256 == hashlib.sha256(theirs.SOKOBAN_TEMPLATE.encode()).hexdigest()
    assert prompt.TEXT_PROMPT_NO_HISTORY_SHA256 == hashlib.sha256(theirs.SOKOBAN_TEMPLATE_NO_HIS.encode()).hexdigest()


def test_history_lines_are_simple_memorys_fetch_for_every_length_and_depth():
    require_upstream()
    import sys
    sys.path.insert(0, str(UPSTREAM))
    try:
        from agent_system.memory.memory import SimpleMemory
    finally:
        sys.path.remove(str(UPSTREAM))
    draw = random.Random(32)
    grids = [render(row.board, "tiny_rgb_array") for row in ROWS[:20]]
    for depth in range(1, 17):
        steps = [(draw.choice(grids), draw.randrange(5)) for _ in range(depth)]
        memory = SimpleMemory()
        memory.reset(batch_size=1)
        for grid, action in steps:
            memory.store({"text_obs": [grid], "action": [ACTION_LOOKUP[action]]})
        for length in range(1, 6):
            contexts, valid = memory.fetch(length, obs_key="text_obs", action_key="action")
            assert history_lines(steps, length) == contexts[0] and valid[0] == min(length, depth)


def test_a_text_turn_is_one_plain_string_message_whose_grid_is_the_boards():
    for history in (0, 2):
        episode = Episode(ROWS[0], 15, "tiny_rgb_array", history)
        for turn in range(3):
            (message,) = episode.messages()
            assert message["role"] == "user" and isinstance(message["content"], str)  # llama.cpp refuses parts
            assert read_text_board(message["content"]) == episode.env.board
            assert ("Prior to this step" in message["content"]) == (turn > 0 and history > 0)
            episode.answer("<think>x</think><action>up</action>" if turn else "no action here")
    turn = TextTurn(2)
    turn.played(ROWS[0].board, 0)
    assert "Action 1: 'Still'" in turn.text(ROWS[0].board)  # an unparseable answer is remembered as Still


def test_a_text_run_and_a_visual_run_compare_only_with_the_difference_allowed(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    logs = {}
    with LoopbackServer(Script("shortest")) as server:
        for mode, history in (("rgb_array", 2), ("tiny_rgb_array", 2), ("tiny_rgb_array", 0)):
            logs[mode, history] = tmp_path / f"{mode}-{history}.jsonl"
            code = evaluate_main(["--base-url", server.base_url, "--model", Script().model, "--log",
                                  str(logs[mode, history]), "--boards", "2", "--mode", mode,
                                  "--history-length", str(history)])
            assert code == 0, capsys.readouterr().err
    manifests = {key: read_manifest(manifest_path(log)) for key, log in logs.items()}
    text = manifests["tiny_rgb_array", 2]
    assert text["settings"]["image_processing.observation"] == "tiny_rgb_array"
    assert text["settings"]["image_processing.history_length"] == 2
    assert prompt.TEXT_PROMPT_SHA256 in text["notes"]["prompt"] and "image" not in text["notes"]
    assert manifests["tiny_rgb_array", 0]["settings"]["image_processing.history_length"] == 0

    def check(a, b, allowed=()):
        return compare.check_settings(compare.read_manifests([OpenRun(logs[a])]),
                                      compare.read_manifests([OpenRun(logs[b])]), allowed)

    with pytest.raises(ManifestError, match="image_processing.observation differs"):
        check(("rgb_array", 2), ("tiny_rgb_array", 2))
    with pytest.raises(ManifestError, match="image_processing.history_length differs"):
        check(("tiny_rgb_array", 0), ("tiny_rgb_array", 2))
    allowed = check(("rgb_array", 2), ("tiny_rgb_array", 2), ["image_processing.observation"])
    assert [d["key"] for d in allowed["allowed_differences"]] == ["image_processing.observation"]
