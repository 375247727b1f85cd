"""What the card names, a reader can follow: the systems it serves link their public
repositories, and CPAD, which has none we know of, is defined by what is known of it."""

from __future__ import annotations

import re

import pytest

from conftest import REPO

CARD = (REPO / "README.md").read_text(encoding="utf-8")
# the systems the card names, and their public GitHub repositories
SYSTEMS = {
    "verl-agent": "https://github.com/langfengQ/verl-agent",
    "VAGEN": "https://github.com/mll-lab-nu/VAGEN",
    "gym-sokoban": "https://github.com/mpSchrader/gym-sokoban",
    "GEM": "https://github.com/axon-rl/gem",
}


@pytest.mark.parametrize("name", SYSTEMS)
def test_card__links_each_system_it_names_to_its_public_repository_at_first_mention_in_prose(name):
    body = CARD.split("\n---\n", 1)[1]
    assert f"[{name}]({SYSTEMS[name]})" in body
    prose = re.sub(r"\[[^\]]*\]\(docs/[^)]*\)", "", body)  # a link to our own page is not a mention
    first = re.search(rf"(?<![\w/-]){re.escape(name)}(?![\w-])", prose)
    assert prose[first.start() - 1:].startswith(f"[{name}]({SYSTEMS[name]})"), prose[first.start() - 80:first.end()]


def test_card__defines_cpad_by_what_is_known_of_it_and_says_nothing_can_be_cited():
    terms = CARD.split("\n## Terms\n", 1)[1].split("\n## ", 1)[0]
    definition = terms.split("**CPAD**: ", 1)[1].split(" **", 1)[0]
    assert "no public paper or code to cite" in definition
    assert "derive preferences from training rollouts, with teacher prompts" in definition
