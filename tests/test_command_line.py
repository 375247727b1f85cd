"""The command line as a user meets it: the user's commands apart from the pipeline, and every --help clean."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO
from sokoban_tools import __main__ as command_line

# every command, and the actions of those that have their own (vagen evaluate, vagen log)
HELPS = [[command.name] for command in command_line.COMMANDS] + [["vagen", "evaluate"], ["vagen", "log"]]


def help_of(*words: str) -> str:
    done = subprocess.run([sys.executable, "-m", "sokoban_tools", *words, "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def listed(text: str, title: str) -> list[str]:
    """The command names of the listing under ``title`` in the top-level help."""
    block = text.split(title, 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  ([a-z-]+) ", block, re.M)


def test_help__lists_the_users_commands_apart_from_the_maintainers_pipeline():
    text = help_of()
    users = listed(text, "Your commands:")
    pipeline = listed(text, "The maintainers' pipeline")
    assert users == [command.name for command in command_line.USER_COMMANDS]
    assert pipeline == [command.name for command in command_line.PIPELINE_COMMANDS]
    assert {"quickstart", "score", "compare", "evaluate", "demo-model", "vagen", "example"} <= set(users)
    assert set(command_line.STEPS) - {"example"} <= set(pipeline)
    # every user command but the example runs from the wheel; every pipeline command needs a clone
    assert [c.name for c in command_line.USER_COMMANDS if c.clone_only] == ["example"]
    assert all(command.clone_only for command in command_line.PIPELINE_COMMANDS)
    assert max(map(len, text.splitlines())) <= 100


def options_without_help(text: str) -> list[str]:
    """The options of a --help whose line gives no text and whose next line is not its wrapped text."""
    lines = text.split("\noptions:\n", 1)[1].splitlines()
    missing = []
    for at, line in enumerate(lines):
        if not line.startswith("  -"):
            continue
        beside = re.split(r"\s{2,}", line.strip(), maxsplit=1)
        below = lines[at + 1] if at + 1 < len(lines) else ""
        if len(beside) == 1 and not (below.startswith(" " * 6) and not below.strip().startswith("-")):
            missing.append(beside[0])
    return missing


REST_MARKUP = re.compile(r":[a-z]+:`|``")  # a role (:mod:`x`, :data:`x`) or an inline literal


@pytest.mark.parametrize("words", HELPS, ids=" ".join)
def test_help__of_every_command_names_it_as_typed_gives_every_option_a_text_no_empty_default_and_no_rest(words):
    text = help_of(*words)
    assert text.startswith(f"usage: python -m sokoban_tools {' '.join(words)} "), text.splitlines()[0]
    assert REST_MARKUP.findall(text) == [], text
    assert "select_evaluation_256.py [" not in text  # the selector's own name only when run as a script
    assert "(default: None)" not in text and "(default: False)" not in text
    assert not re.search(r"\(default[^)]*\)\s*\(default", text)  # one default per option
    assert options_without_help(text) == []


def test_help__text_from_docstrings_loses_its_rest_markup_in_one_place():
    from sokoban_tools.help_text import plain_text

    assert plain_text("reads :data:`PINS` and :func:`.score`; ``python -m sokoban_tools card`` writes::") == \
        "reads PINS and score; python -m sokoban_tools card writes:"
    assert plain_text("`pip install -e .` stays, as 2 :: 3 does") == "`pip install -e .` stays, as 2 :: 3 does"


def test_help__at_the_top_names_every_policy_of_the_demo_model():
    from sokoban_tools.integrations.served.demo_model import POLICIES

    demo = help_of().split("  demo-model", 1)[1].split("\n  vagen", 1)[0]
    assert [policy for policy in POLICIES if policy not in demo] == []
    assert "mixed (mostly shortest, some wasted moves and bad answers)" in " ".join(demo.split())


def test_help__check_sees_an_option_without_text():
    text = "usage: x\n\noptions:\n  -h, --help  show this\n  --temperature TEMPERATURE\n  --top-k TOP_K  -1: off\n"
    assert options_without_help(text) == ["--temperature TEMPERATURE"]


def test_help__the_selector_run_as_a_script_keeps_its_own_name():
    done = subprocess.run([sys.executable, "select_evaluation_256.py", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: python select_evaluation_256.py ")


def test_selection__an_option_error_names_the_command_as_typed():
    done = subprocess.run([sys.executable, "-m", "sokoban_tools", "selection", "--bogus"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "python -m sokoban_tools selection: error: unrecognized arguments: --bogus" in done.stderr
