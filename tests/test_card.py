"""The dataset card and the loading script's checksums agree with the files."""

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest
from huggingface_hub import DatasetCard

import sokoban_fairness
from conftest import DATA_DIR, REPO
from sokoban_tools.pipeline.publish import card
from sokoban_tools.pipeline.artifacts import publish
from sokoban_tools.layout import CONFIGURATIONS, DOC_PAGES
from sokoban_tools.protocol import stratum_of
from sokoban_tools.records.rows import DataError

README = REPO / "README.md"
CARD_LIMIT = 11 * 1024  # bytes of the card's body: a card a Hub visitor reads in a minute (10 KiB until the tuned runs' rows); the rest is in docs/
PAGES = [README, *(REPO / page for page in DOC_PAGES), REPO / "fairness" / "README.md"]


@pytest.fixture(scope="module")
def card_text():
    return README.read_text(encoding="utf-8")


def lengths(name):
    return [json.loads(line)["shortest_solution_length"] for line in (DATA_DIR / name).read_text().splitlines()]


def test_card__is_what_the_card_command_writes():
    assert publish(card.build(), check=True, command=card.COMMAND)


def test_loading_script__publishes_each_files_real_sha256_rows_and_size():
    for name, expected in sokoban_fairness.PUBLISHED_FILES.items():
        data = (REPO / name).read_bytes()
        assert expected == {"sha256": hashlib.sha256(data).hexdigest(), "rows": data.count(b"\n"),
                            "bytes": len(data)}, name
    assert sokoban_fairness.PUBLISHED_FILES["fairness/evaluation.jsonl"]["rows"] == 256


def _second_player(row):
    flat = [v for r in row["room_state"] for v in r]
    flat[flat.index(1)] = 5
    row["room_state"] = [flat[i:i + 6] for i in range(0, 36, 6)]
    return json.dumps(row, separators=(",", ":"))


def _seven_by_seven(row):
    row["room_fixed"] = [r + [0] for r in row["room_fixed"]] + [[0] * 7]
    row["room_state"] = [r + [0] for r in row["room_state"]] + [[0] * 7]
    row["xsb"] = "\n".join(line + "#" for line in row["xsb"].split("\n")) + "\n#######"
    return json.dumps(row, separators=(",", ":"))


@pytest.mark.parametrize("name", ["train.jsonl", "evaluation-pool-1000.jsonl"])
@pytest.mark.parametrize("damage, problem", [
    (_second_player, "room_state has 2 players, expected one"),
    (lambda row: json.dumps({k: v for k, v in row.items() if k != "xsb"}, separators=(",", ":")), "keys are"),
    (_seven_by_seven, "room_fixed is 7 rows of [7] cells"),
])
def test_card__pins_no_digest_of_a_file_with_a_bad_row(tmp_path, name, damage, problem):
    for data_file in card.DATA_FILES:
        (tmp_path / data_file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / data_file).write_bytes((REPO / data_file).read_bytes())
    path = tmp_path / "fairness" / name
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[41] = damage(json.loads(lines[41]))
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DataError) as refused:
        card.published_files(tmp_path)
    assert str(refused.value).startswith(f"{path}:42: ") and problem in str(refused.value)


def test_layout__names_the_data_files_as_the_standalone_loading_script_does():
    assert CONFIGURATIONS == sokoban_fairness.SPLIT_FILES
    assert sokoban_fairness.TRAIN_FILE == CONFIGURATIONS["fairness"]["train"]


def test_card__yaml_splits_count_the_rows_of_their_files():
    data = DatasetCard.load(README).data.to_dict()
    files = {c["config_name"]: {d["split"]: d["path"] for d in c["data_files"]} for c in data["configs"]}
    assert files == CONFIGURATIONS
    for info in data["dataset_info"]:
        for split in info["splits"]:
            path = REPO / files[info["config_name"]][split["name"]]
            assert split["num_examples"] == path.read_bytes().count(b"\n")
            assert split["num_bytes"] == path.stat().st_size


def test_card__states_the_evaluation_files_digest_and_row_count(card_text):
    digest = hashlib.sha256((DATA_DIR / "evaluation.jsonl").read_bytes()).hexdigest()
    assert f"must expect 256 and SHA-256 `{digest}`" in card_text


def test_card__selection_table_counts_boards_in_the_files(card_text):
    source = Counter(stratum_of(n) for n in lengths("evaluation-pool-1000.jsonl"))
    selected = Counter(stratum_of(n) for n in lengths("evaluation.jsonl"))
    for label in ("1-4", "5-8", "9-14"):
        low, high = label.split("-")
        row = re.search(rf"^\| {low}–{high} actions \| (\d+) \| [\d.]+% \| [\d.]+ \| (\d+) \|$", card_text, re.M)
        assert row, f"no table row for {label}"
        assert (int(row.group(1)), int(row.group(2))) == (source[label], selected[label])


def test_card__states_the_length_spans_of_selection_and_pool(card_text):
    selected, pool = lengths("evaluation.jsonl"), lengths("evaluation-pool-1000.jsonl")
    assert (f"the selected lengths span {min(selected)}–{max(selected)} actions, "
            f"while the source pool spans {min(pool)}–{max(pool)}") in card_text


def card_section(card_text: str, heading: str) -> str:
    """The text of the card's ``## heading`` section, up to the next one."""
    start = card_text.index(f"\n## {heading}\n")
    end = card_text.find("\n## ", start + 1)
    return card_text[start:end if end > 0 else None]


def test_card__body_is_at_most_ten_kilobytes_and_links_every_docs_page(card_text):
    # the body: what follows the YAML front matter, which the Hub reads as metadata, not as text
    assert card_text.startswith("---\n")
    body = card_text.split("\n---\n", 1)[1]
    assert len(body.encode("utf-8")) <= CARD_LIMIT
    assert all(f"]({page})" in card_text for page in DOC_PAGES)


def test_card__shows_one_row_of_the_validation_file_as_a_data_instance(card_text):
    first = (DATA_DIR / "evaluation.jsonl").read_text(encoding="utf-8").splitlines()[0]
    blocks = re.findall(r"```json\n(.*?)\n```", card_text, re.S)
    assert blocks == [first]
    assert set(json.loads(first)) == {name for name, _ in card.ROW_FEATURES}
    assert all(f"`{name}`" in card_section(card_text, "Schema, actions and a row") for name, _ in card.ROW_FEATURES)


def test_card__limitations_quote_the_intervals_every_report_gives(card_text):
    from sokoban_tools.evaluation.stats import exact_interval

    limitations = card_section(card_text, "Limitations")
    low, high = exact_interval(128, 256)
    smallest = Counter(stratum_of(n) for n in lengths("evaluation.jsonl"))["9-14"]
    assert f"95% exact interval of ±{(high - low) / 2 * 100:.1f} points" in limitations
    assert f"0 of the {smallest} boards of the 9–14 actions stratum still allows " \
           f"{exact_interval(0, smallest)[1]:.1%}" in limitations
    lengths_shown = lengths("evaluation.jsonl")
    assert f"validation solutions of {min(lengths_shown)}–{max(lengths_shown)} actions" in limitations
    assert "Wilson" not in card_text  # one family: the results table's too
    assert "replay proves a log consistent, not who played it" in limitations


def test_card__says_what_each_of_its_random_figures_is(card_text):
    baselines = json.loads((REPO / "fairness" / "baselines.json").read_text())
    floor = f"{baselines['splits']['validation']['overall']['moves_1_4']['success']['float']:.1%}"
    quick_start = card_section(card_text, "Quick start")
    assert f"near the random floor, {floor}, a uniform random policy's exact expected success; the run prints " \
           f"its own sample, and the results table's `random-policy` is another run" in quick_start
    assert "| `random-policy` |" in card_section(card_text, "Results")


@pytest.mark.parametrize("term", ["GRPO", "CPAD", "Stratum", "strata", "Shortest solution length", "Update",
                                  "pass", "Floor", "XSB", "LURD", "Board", "task"])
def test_card__defines_every_term_it_uses(card_text, term):
    terms = card_section(card_text, "Terms")
    assert f"**{term}**" in terms
    elsewhere = card_text.replace(terms, "") + "".join(page.read_text(encoding="utf-8") for page in PAGES[1:])
    assert re.search(rf"\b{term.lower()}\b", elsewhere.lower()), f"{term} is defined but used nowhere"


def test_card__the_notice_for_earlier_users_is_in_the_changelog_and_still_says_what_the_spec_says(card_text):
    changelog = card_section(card_text, "Changelog")
    digest = hashlib.sha256((DATA_DIR / "evaluation.jsonl").read_bytes()).hexdigest()
    for words in ("`fairness/evaluation.jsonl` now contains 256 rows", f"must expect 256 and SHA-256 `{digest}`",
                  "An older loader expecting 1,000 rows, or an old cached evaluation file, will fail checksum "
                  "validation", "Update the code and download the current evaluation file into the directory used "
                  "by the experiment", "The training pool is unchanged"):
        assert words in changelog, words
    assert card_text.count("older loader expecting") == 1


def test_card_and_docs__pictures_and_links_lead_to_files_that_exist():
    for page in PAGES:
        targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8"))
        local = [t for t in targets if "://" not in t]
        assert local, page
        assert [t for t in local if not (page.parent / t).resolve().exists()] == [], page


def test_card_and_docs__every_path_in_this_repository_they_name_exists():
    """A reader follows these to the code; a module moved without its mention is a dead end."""
    pattern = r"`((?:sokoban_tools|fairness|examples|images|tests|docs)/[\w./*-]+)`"
    named = {path for page in PAGES for path in re.findall(pattern, page.read_text(encoding="utf-8"))}
    assert len(named) >= 10
    assert sorted(path for path in named if not any(REPO.glob(path))) == []


def test_card_and_docs__no_sentence_runs_longer_than_a_reader_holds():
    for page in PAGES:
        prose = re.sub(r"```.*?```|^\|.*\|$", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
        longest = max(re.split(r"(?<=[.;:])\s+", prose), key=len)
        assert len(longest) < 600, f"{page}: {longest[:80]}…"


def test_card__template_comments_are_notes_for_editors_not_written_out():
    assert card.fill("a\n{# H16: your section goes here,\n   {{ not_a_value }} #}\nb {{ x }}\n", {"x": 1}) == "a\nb 1\n"


def test_card__a_template_typo_is_a_template_error_not_a_stale_report():
    with pytest.raises(card.CardError, match=r"README.md: template error: it names \{\{ missing \}\}, which no report"
                                             r" provides; fix the template") as refused:
        card.fill("{{ missing }}", {}, "README.md")
    assert "regenerate" not in str(refused.value)


def test_card__a_missing_report_or_citation_is_named_with_its_fix(tmp_path):
    with pytest.raises(card.CardError, match=re.escape(f"{tmp_path / 'fairness/summary.json'}: cannot be read (")
                       + ".*regenerate the reports first"):
        card._read_json(tmp_path, "fairness/summary.json")
    (tmp_path / "sokoban_fairness.py").write_text("# no citation\n", encoding="utf-8")
    with pytest.raises(card.CardError, match="has no _CITATION"):
        card._citation(tmp_path)


def test_cache_hash__changes_when_a_pinned_checksum_changes_and_only_then(tmp_path):
    """A builder used directly caches under ``hash=cache_hash()``: a copy of the same
    release must reuse the cache, a release with other data must not."""
    pins = (REPO / "sokoban_pins.py").read_text(encoding="utf-8")
    digest = sokoban_fairness.PUBLISHED_FILES["fairness/evaluation.jsonl"]["sha256"]
    program = "import sys; sys.path.insert(0, sys.argv[1]); import sokoban_fairness; print(sokoban_fairness.cache_hash())"
    hashes = []
    for name, text in (("same", pins), ("other", pins.replace(digest, "0" * 64))):
        (tmp_path / name).mkdir()
        for beside in ("sokoban_fairness.py", "sokoban_render.py", "sokoban_published.py"):
            shutil.copy(REPO / beside, tmp_path / name)
        (tmp_path / name / "sokoban_pins.py").write_text(text, encoding="utf-8")
        done = subprocess.run([sys.executable, "-c", program, str(tmp_path / name)],
                              capture_output=True, text=True, check=True)
        hashes.append(done.stdout.strip())
    assert hashes[0] == sokoban_fairness.cache_hash()
    assert hashes[1] != hashes[0]
