"""``leaderboard --add``'s ``--model`` is a Hub model id (or ``none (...)`` for a policy with no model
repository) and its ``--link`` a web address: the entry shows both and ``--eval-results`` names the
model's repository, so anything else is a usage error before anything is written."""

from __future__ import annotations

import pytest

from conftest import REPO
from sokoban_tools.__main__ import run
from sokoban_tools.evaluation import leaderboard

LOG = REPO / "examples" / "episodes" / "path-follower.jsonl"


@pytest.mark.parametrize("model, link, named", [
    ("my model", "https://example.org/method", "--model 'my model'"),
    ("org/name/extra", "https://example.org/method", "--model"),
    ("org/../name", "https://example.org/method", "--model"),
    ("org/name\nsomeone/else", "https://example.org/method", "--model"),
    ("org/name", "example.org", "--link 'example.org'"),
    ("org/name", "ftp://example.org/x", "--link"),
    ("org/name", "https://exa mple.org", "--link"),
    ("org/name", "docs/training.md", "--link"),
])
def test_add_refuses_a_model_that_is_no_hub_id_and_a_link_that_is_no_web_address(tmp_path, capsys, model, link,
                                                                                   named):
    code = run("leaderboard", [str(tmp_path / "results"), "--add", "mine", "--log", str(LOG), "--model", model,
                             "--submitted-by", "me", "--link", link])
    err = capsys.readouterr().err
    assert code == 2 and named in err, err
    assert not (tmp_path / "results").exists()  # nothing written


@pytest.mark.parametrize("model", ["HuggingFaceTB/SmolLM2-135M-Instruct", "none (MLP trained from scratch)"])
def test_add_takes_a_hub_id_or_a_policy_with_no_repository_and_a_web_address(model):
    assert leaderboard.option_problem(model, "https://github.com/my-org/my-method") is None
