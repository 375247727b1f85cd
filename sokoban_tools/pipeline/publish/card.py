"""Write everything a user reads about the data from the generated files.

    python -m sokoban_tools card            # README.md, docs/*.md, fairness/README.md, images/*.png
                                            # (the results table and chart from results/),
                                            # and the published checksums, sokoban_pins.py
    python -m sokoban_tools card --check    # fail if any of them is out of date
    python -m sokoban_tools card --new-release   # pin changed data files as the release
                                                 # the card's changelog names (see pipeline/release.py)

Every number in the dataset card and its pages under ``docs/`` comes from
the JSON reports under ``fairness/`` or from the code's constants; the text
lives in ``card_templates/`` (one template per page, ``docs/`` mirrored) with
``{{ name }}`` placeholders and ``{# comments #}`` that are not written out,
so the prose is written by people and the figures by code. The card itself
stays short, a page a Hub visitor reads in a minute; everything else is a
page it links.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from ...evaluation import compare, leaderboard, score
from ...evaluation.compare import floor_percent
from ...evaluation.charts import interval_chart, length_histogram, line_chart
from ...evaluation.figures import board_sheet, replay_strip
from ...evaluation.stats import success_interval
from ...evaluation.hub_benchmark import EVAL_RESULTS_FOLDER, FRAMEWORK, PLAN_TASK, TASK_IDS, eval_yaml
from ...evaluation.baselines import POLICY_LABELS
from ...records.manifest import (ENVIRONMENT, GROUPS, SETTINGS, SUFFIX, UPDATES, VERL_AGENT_UNIT, manifest_path,
                                read_manifest)
from ...extras import install_advice
from ...files import sha256_bytes
from ...layout import (BASELINES_FILE, BASELINES_IMAGE, BOARD_SHEET_IMAGE, CARD, CONFIGURATIONS,
                       DATA_FOLDER, DATA_README, DOC_PAGES, EVAL_YAML, EXAMPLE, EXAMPLE_EPISODES,
                       GENERATION_AUDIT_FILE, HUB_REPO_ID, HUB_URL, IMAGE_TABLES, LAST_UPDATE_IMAGE,
                       LEARNING_CURVES_IMAGE, LENGTHS_IMAGE, LOADING_SCRIPT, PINS,
                       REAL_MODEL_ENTRY, REPLAY_IMAGE, RESULTS_FOLDER, RESULTS_IMAGE, ROOT, RUNTIME_EXAMPLE,
                       SELECTION_FILE, SOURCE_POOL_DATA, SOURCE_POOL_NAME, SOURCE_POOL_VERIFICATION_FILE,
                       SUMMARY_FILE, TRAIN_DATA, TRAINING_CPU_IMAGE, TRAINING_IMAGE, TRAINING_POOL_NAME,
                       TUNING_SELECTION_FILE, VALIDATION_DATA, VERIFICATION_FILE, published)
from ...records.episodes import MOVE_LETTERS, read_episodes
from ...records.rows import COLUMN_TYPES, BoardRow, DataError, read_board_file, read_regular_file
from ...rules.board import ACTION_NAMES, from_lurd
from ...rules.images import render_board
from ...protocol import VALIDATION_SIZE, stratum_of
from ...protocol import BOX_OFF_TARGET_PENALTY, BOX_ON_TARGET_REWARD, DEFAULT_MAX_STEPS, STEP_PENALTY, WIN_REWARD
from ...runtime.config import MAX_ENVIRONMENTS
from ...runtime.workers import DEFAULT_ENVS_PER_ACTOR, RESTART_TIMEOUT
from ...training.tuning_search import SEARCH, read_search
from ..artifacts import command_line, run_command
from ..baselines import HORIZON, POLICIES
from ..example_policies import log_path
from .image_tables import ImageTablesUnavailable, image_tables
from .training_methods import method_values, tuning_values
from .tuned_runs import TUNED_ENTRY, tuned_ranking, tuned_report, tuned_text
from .training_report import run_logs, seed_rows, training_picture, training_report, training_values
from ..release import CARD_TEMPLATE, DATA_FILES, FLAG, NOT_WITH_CHECK, Release, changelog_of, pinned_of, release_to_pin

REPO = ROOT
TEMPLATES = CARD_TEMPLATE.parent
COMMAND = "python -m sokoban_tools card"
# The card's test command, which .ci/run runs as written: a venv, everything the suite needs, the suite.
INSTALL_SCRIPT = "tests/install.py"
TEST_COMMAND = (f"python3 -m venv --upgrade-deps .venv && .venv/bin/python {INSTALL_SCRIPT} "
                f"&& .venv/bin/python -m pytest")
# The script-free schema of a row, as the JSON loader reads it: (column, YAML type; nested lists as sequences).
ROW_FEATURES = tuple((name, f"dtype: {kind}" if depth == 0 else "sequence:\n      " * (depth - 1) + f"sequence: {kind}")
                     for name, kind, depth in COLUMN_TYPES)


def published_files(repo: Path, rows: dict[str, list[BoardRow]] | None = None) -> dict[str, dict]:
    """SHA-256, row count and size of every data file the loaders read, each
    digest taken from the same bytes whose every row has just passed the row
    checks, so no digest of an unchecked file is ever pinned; the checked rows
    go into ``rows`` (file name: rows) when it is given."""
    entries = {}
    for name in DATA_FILES:
        data, checked = read_board_file(repo / name)
        entries[name] = file_entry(data, len(checked))
        if rows is not None:
            rows[name] = checked
    return entries


def file_entry(data: bytes, rows: int) -> dict:
    """The pinned entry of a file of ``rows`` rows whose bytes are ``data``."""
    return {"sha256": sha256_bytes(data), "rows": rows, "bytes": len(data)}


PINS_DOC = '''"""The published data files of sokoban-fairness: their release and the SHA-256, rows and size of each.

Written whole by `python -m sokoban_tools card` from the files it has just
checked; do not edit. Changing PUBLISHED_FILES takes a new release (see the
Changelog section of the dataset card). IMAGE_TABLES pins the Parquet files of
the same rows with their game images, derived from them (the card writes both).
HUB_REPO is the dataset's repository on the Hub (sokoban_tools.layout.HUB_REPO_ID).
"""
'''


def _literal(files: dict[str, dict]) -> str:
    return "{\n" + "".join(f"    {json.dumps(name)}: {json.dumps(entry)},\n" for name, entry in files.items()) + "}"


def pins_module(release: Release, tables: dict[str, dict]) -> bytes:
    """``sokoban_pins.py`` pinning ``release`` and the image ``tables``, and naming the Hub repository:
    a docstring and four literals."""
    return (f"{PINS_DOC}\nRELEASE = {json.dumps(release.version)}\nPUBLISHED_FILES = {_literal(release.files)}\n"
            f"IMAGE_TABLES = {_literal(tables)}\nHUB_REPO = {json.dumps(HUB_REPO_ID)}\n").encode("utf-8")


def release_of(repo: Path, files: dict[str, dict], new_release: bool) -> Release:
    """The release to pin for the data ``files`` now on disk: the pinned one, or with
    ``new_release`` the changelog's new entry (:func:`release.release_to_pin`)."""
    versions, template = changelog_of()
    return Release(release_to_pin(pinned_of(repo), files, versions, new_release, template), files)


def front_matter(files: dict[str, dict]) -> str:
    """The card's YAML header: metadata, the script-free configs and their typed schema.

    Written with ``sequence:`` so that datasets 3.x reads it as well as later versions.
    Only the JSONL configurations: ``datasets`` reads every configuration of a repository
    with the builder of the first one's files (json), so a Parquet configuration listed
    here would fail to load (datasets issue 7101); the Parquet files with images are
    read by their data files (:mod:`.image_tables`).
    """
    out = [
        "---",
        "pretty_name: Sokoban fairness",
        "license: mit",
        "language:",
        "- en",
        "task_categories:",
        "- reinforcement-learning",
        "tags:",
        "- sokoban",
        "- reinforcement-learning",
        "- vision-language-models",
        "- benchmark",
        "- puzzles",
        "size_categories:",
        "- 1K<n<10K",
        "configs:",
    ]
    for config, splits in CONFIGURATIONS.items():
        out.append(f"- config_name: {config}")
        if config == "fairness":
            out.append("  default: true")
        out.append("  data_files:")
        for split, name in splits.items():
            out += [f"  - split: {split}", f"    path: {name}"]
    out.append("dataset_info:")
    for config, splits in CONFIGURATIONS.items():
        out += [f"- config_name: {config}", "  features:"]
        for column, kind in ROW_FEATURES:
            out += [f"  - name: {column}", f"    {kind}"]
        out.append("  splits:")
        for split, name in splits.items():
            out += [f"  - name: {split}", f"    num_bytes: {files[name]['bytes']}",
                    f"    num_examples: {files[name]['rows']}"]
        total = sum(files[name]["bytes"] for name in splits.values())
        out += [f"  download_size: {total}", f"  dataset_size: {total}"]
    out.append("---")
    return "\n".join(out) + "\n"


class CardError(ValueError):
    """The card cannot be written: a report is missing or stale, or a template is wrong."""


REGENERATE = "regenerate the reports first with `python -m sokoban_tools reproduce`"


COMMENT = re.compile(r"\{#.*?#\}\n?", re.S)  # a note to the template's editors, not written out


def fill(template: str, values: dict[str, object], source: str = "card template") -> str:
    """Drop every ``{# comment #}`` of ``template`` and replace every ``{{ name }}``;
    an unknown name is a template error."""
    def value(match):
        key = match.group(1)
        if key not in values:
            raise CardError(f"{source}: template error: it names {{{{ {key} }}}}, which no report provides; "
                            f"fix the template, or add the figure to sokoban_tools/pipeline/publish/card.py")
        return str(values[key])
    return re.sub(r"\{\{ (\w+) \}\}", value, COMMENT.sub("", template))


def _read_text(path: Path, fix: str = REGENERATE) -> str:
    try:
        return read_regular_file(path, fix).decode("utf-8")
    except DataError as err:
        raise CardError(str(err)) from None
    except UnicodeDecodeError as err:
        raise CardError(f"{path}: is not UTF-8 text ({err.reason} at byte {err.start}); {fix}") from None


def _read_json(repo: Path, name: str) -> dict:
    path = repo / name
    try:
        return json.loads(_read_text(path))
    except ValueError as err:
        if isinstance(err, CardError):
            raise
        raise CardError(f"{path}: is not JSON ({err}); {REGENERATE}") from None


def _count(n: int) -> str:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"expected a whole number, got {n!r} ({type(n).__name__})")
    return f"{n:,}"


def _table(rows: list[list[object]]) -> str:
    return "\n".join("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)


def strata_table(selection: dict) -> str:
    """The selection's strata: source boards, share, exact and final quota, and the total."""
    rows = [
        [f"{low}–{high} actions", _count(s["source_boards"]),
         f"{float(s['proportion']):.1%}", s["exact_quota"], s["quota"]]
        for s in selection["strata"].values()
        for low, high in [s["shortest_solution_length"]]
    ]
    rows.append(["Total", _count(selection["quota_totals"]["source_boards"]), "100%",
                 selection["size"], selection["quota_totals"]["selected"]])
    return _table(rows)


def statistics_tables(summary: dict) -> str:
    """Rows and length statistics per split, then boards per shortest solution length."""
    splits = {**summary["splits"], **summary["archive"]}
    strata = summary["strata"]
    stats_rows = [["Split", "File", "Rows", "Mean length", "Lengths", *[f"{k} actions" for k in strata]],
                  ["---"] * (5 + len(strata))]
    for name, split in splits.items():
        lengths = split["shortest_solution_length"]
        stats_rows.append([name, f"`{split['file']}`", _count(split["rows"]), lengths["mean"],
                           f"{lengths['min']}–{lengths['max']}", *[_count(split["strata"][k]) for k in strata]])
    histograms = [split["shortest_solution_length"]["histogram"] for split in splits.values()]
    hist_rows = [["Length", *splits], ["---"] * (1 + len(splits))]
    for n in sorted({int(n) for histogram in histograms for n in histogram}):
        hist_rows.append([n, *[histogram.get(str(n), 0) for histogram in histograms]])
    return _table(stats_rows) + "\n\nBoards per shortest solution length:\n\n" + _table(hist_rows)


def verification_summary(verification: dict, pool_verification: dict) -> str:
    """The two verification reports in two sentences each."""
    totals = verification["totals"]
    check_names = ", ".join(f"{name.replace('_', ' ')} {c['passed']}/{c['passed'] + c['failed']}"
                            for name, c in totals["checks"].items())
    pool_totals = pool_verification["totals"]
    uniqueness = pool_verification["uniqueness"]
    return (
        f"`{published(VERIFICATION_FILE)}`: {totals['passed']} of {totals['boards']} validation boards pass "
        f"every check ({check_names}); {_count(totals['frames'])} game frames were rendered in the RGB "
        f"replays, digest `{verification['frames_sha256']}`.\n\n"
        f"`{published(SOURCE_POOL_VERIFICATION_FILE)}`: {_count(pool_totals['passed'])} of "
        f"{_count(pool_totals['boards'])} training and source-pool boards pass the same checks, "
        f"{_count(pool_totals['frames'])} frames rendered; "
        f"{_count(uniqueness['distinct_under_symmetry'])} of {_count(uniqueness['boards'])} are distinct "
        f"under the 8 symmetries within and across both files."
    )


def release_values(release: Release) -> dict[str, object]:
    """The release, its row counts and digests, and the checksums table."""
    files = release.files
    return {
        "release": release.version,
        "train_rows": _count(files[TRAIN_DATA]["rows"]),
        "validation_rows": _count(files[VALIDATION_DATA]["rows"]),
        "pool_rows": _count(files[SOURCE_POOL_DATA]["rows"]),
        "pool_sha256": files[SOURCE_POOL_DATA]["sha256"],
        "validation_sha256": files[VALIDATION_DATA]["sha256"],
        "checksums_table": _table([[f"`{name}`", _count(e["rows"]), _count(e["bytes"]), f"`{e['sha256']}`"]
                                   for name, e in files.items()]),
    }


def generation_values(audit: dict) -> dict[str, object]:
    """The generator's settings and the seeds each pool scanned, from the generation audit."""
    train, pool = audit["pools"][TRAINING_POOL_NAME], audit["pools"][SOURCE_POOL_NAME]
    return {
        "pool_min": pool["shortest_solution_length"]["min"],
        "pool_max": pool["shortest_solution_length"]["max"],
        "search_depth": audit["generator"]["parameters"]["search_depth"],
        "num_steps": audit["generator"]["parameters"]["num_steps"],
        "train_first_seed": _count(train["seeds_scanned"]["first"]),
        "train_last_seed": _count(train["seeds_scanned"]["last"]),
        "pool_first_seed": _count(pool["seeds_scanned"]["first"]),
        "pool_last_seed": _count(pool["seeds_scanned"]["last"]),
    }


def selection_values(selection: dict) -> dict[str, object]:
    """The protocol, its strata table, quotas and the selected span."""
    return {
        "protocol": selection["protocol"],
        "strata_table": strata_table(selection),
        "extra_places": selection["quota_totals"]["extra_places"],
        "quotas": "/".join(str(s["quota"]) for s in selection["strata"].values()),
        "selected_min": selection["selected"]["shortest_solution_length"]["min"],
        "selected_max": selection["selected"]["shortest_solution_length"]["max"],
    }


def card_values(repo: Path, release: Release, summary: dict, validation: list[BoardRow]
                ) -> dict[str, object]:
    """Every figure the card templates name, read from the generated reports."""
    return {
        **release_values(release),
        **generation_values(_read_json(repo, published(GENERATION_AUDIT_FILE))),
        **selection_values(_read_json(repo, published(SELECTION_FILE))),
        "statistics_table": statistics_tables(summary),
        "verification_summary": verification_summary(_read_json(repo, published(VERIFICATION_FILE)),
                                                     _read_json(repo, published(SOURCE_POOL_VERIFICATION_FILE))),
        "card_command": COMMAND,
        "hub_id": HUB_REPO_ID,
        "hub_url": HUB_URL,
        "test_command": TEST_COMMAND,
        "install_script": INSTALL_SCRIPT,
        "example": EXAMPLE,
        "runtime_example": RUNTIME_EXAMPLE,
        "actions": ", ".join(f"{action} {name}" for action, name in ACTION_NAMES.items()),
        "image_size": "×".join(map(str, render_board(validation[0].board).shape[:2])),
        "horizon": DEFAULT_MAX_STEPS,
        "envs_per_actor": DEFAULT_ENVS_PER_ACTOR,
        "restart_timeout": f"{RESTART_TIMEOUT:g}",
        "max_environments": f"{MAX_ENVIRONMENTS:,}",
        "plot_extra": install_advice("plot", "`"),
        "inspect_extra": install_advice("inspect", "`"),
        "evaluate_extra": install_advice("evaluate", "`"),
        "sweep_extra": install_advice("sweep", "`"),
        "step_penalty": f"{STEP_PENALTY:+g}".replace("-", "−"),
        "example_row": validation[0].line,
        **limitation_values(validation),
        "example_xsb": validation[0].board.xsb(),
        "citation": _citation(repo),
        "rewards": (f"{STEP_PENALTY:+g} a step, {BOX_ON_TARGET_REWARD:+g} box onto target, "
                    f"{BOX_OFF_TARGET_PENALTY:+g} off, {WIN_REWARD:+g} solved, "
                    f"{DEFAULT_MAX_STEPS}-action limit"),
    }


def limitation_values(validation: list[BoardRow]) -> dict[str, object]:
    """The precision the card's Limitations quote: the interval every report gives a pass
    near 50% (:func:`success_interval`), and the upper end of the smallest stratum's with no win."""
    low, high = success_interval(len(validation) // 2, len(validation))
    boards = Counter(stratum_of(row.shortest_solution_length) for row in validation)
    smallest = min(boards, key=lambda label: (boards[label], label))
    return {
        "interval_half_width": f"{(high - low) / 2 * 100:.1f}",
        "smallest_stratum": f"{smallest.replace('-', '–')} actions",
        "smallest_stratum_boards": boards[smallest],
        "smallest_stratum_upper": f"{success_interval(0, boards[smallest])[1]:.1%}",
    }


def baselines_values(baselines: dict) -> dict[str, object]:
    """The card's baselines table and the figures quoted around it."""
    rows = [["Split", "Boards", *[f"P(solve), {POLICY_LABELS[p]}" for p in POLICIES],
             *[f"E[return], {POLICY_LABELS[p]}" for p in POLICIES], "Optimal return"],
            ["---"] * (3 + 2 * len(POLICIES))]
    for split, body in baselines["splits"].items():
        parts = [(f"{split}, {label.replace('-', '–')} actions", entry)
                 for label, entry in body["by_stratum"].items()]
        for name, entry in [(f"**{split}, all**", body["overall"]), *parts]:
            rows.append([name, _count(entry["boards"]),
                         *[floor_percent(entry[p]["success"]["float"]) for p in POLICIES],
                         *[f"{entry[p]['expected_return']['float']:.2f}" for p in POLICIES],
                         f"{entry['optimal_return']['float']:.2f}"])
    validation = baselines["splits"]["validation"]["overall"]
    return {
        "baselines_table": _table(rows),
        "baseline_horizon": HORIZON,
        "baseline_rewards": (f"every turn {STEP_PENALTY:+g}, action 0 included; the solving push another "
                             f"{BOX_ON_TARGET_REWARD + WIN_REWARD:+g}, and it ends the episode"),
        "baseline_validation_moves": floor_percent(validation["moves_1_4"]["success"]["float"]),
        "baseline_validation_outputs": floor_percent(validation["outputs_0_4"]["success"]["float"]),
        "baseline_validation_exact": validation["moves_1_4"]["success"]["exact"],
    }


def baselines_picture(baselines: dict) -> bytes:
    """Random-policy success probability against shortest solution length, validation boards:
    the mean per length and the range over boards."""
    boards = baselines["splits"]["validation"]["boards"]
    series = {}
    for policy in POLICIES:
        points = []
        for length, entry in baselines["splits"]["validation"]["by_length"].items():
            values = [b[policy]["success"]["float"] for b in boards if b["shortest_solution_length"] == int(length)]
            points.append((int(length), entry[policy]["success"]["float"], min(values), max(values)))
        series[POLICY_LABELS[policy]] = points
    return line_chart(series, x_label="shortest solution length (player actions)",
                      y_label=f"P(solved within {HORIZON} turns)",
                      title="Random policies on the validation boards: mean per length; band: range over boards",
                      log_y=True)


def example_report(repo: Path) -> dict:
    """The worked example's comparison, from its committed logs."""
    logs = repo / EXAMPLE_EPISODES.relative_to(ROOT)
    return compare.compare([log_path(logs, "path-follower")], [log_path(logs, "random")],
                           validation=repo / VALIDATION_DATA)


def example_values(report: dict) -> dict[str, object]:
    """The worked example's figures the card quotes, from its comparison report."""
    last = report["updates"][-1]
    return {
        "example_comparison": compare.render(report),
        "example_runs": len(last["runs_a"]),
        "example_updates": ", ".join(str(u["update"]) for u in report["updates"]),
        "example_last_update": last["update"],
        "example_last_difference": f"{last['difference'] * 100:.1f}",
        "example_last_ci": f"{last['ci95'][0]:.1%} to {last['ci95'][1]:.1%}",
    }


def results_report(repo: Path) -> dict:
    """The leaderboard of the committed entries under ``results/``; :class:`CardError` naming
    every refused entry, since the card shows only verified results."""
    report = leaderboard.leaderboard(repo / RESULTS_FOLDER, repo / VALIDATION_DATA)
    if report["refused"]:
        raise CardError("results entries fail their checks: " + "; ".join(
            f"{refusal['entry']}: {refusal['reason']}" for refusal in report["refused"])
            + "; repair or remove them (`python -m sokoban_tools leaderboard` names each)")
    return report


def results_table(entries: list[dict]) -> str:
    """The card's narrow results table: an entry a row, one method's seeds (``<name>-seed<k>``) one row
    with the median and range of their success; each entry's model is the results page's."""
    rows = [["Entry", "Success [exact 95% CI]", "vs best (Holm p)"], ["---"] * 3]
    for name, group in seed_rows(entries):
        if len(group) == 1:
            (r,) = group
            rows.append([f"`{r['entry']}`", leaderboard.rate(r), leaderboard.verdict(r)])
        else:
            rates = sorted(r["success"] for r in group)
            level = sum(r["vs_best"] is None or r["vs_best"]["indistinguishable"] for r in group)
            rows.append([f"`{name}-seed*` ({len(group)} seeds)",
                         f"median {statistics.median(rates):.1%} ({rates[0]:.1%}–{rates[-1]:.1%})",
                         f"{level} of {len(group)} ≈ best" if level else "below best"])
    return _table(rows)


def results_values(report: dict) -> dict[str, object]:
    """The card's narrow results table (models, strata, answers, costs and verification are the
    results page's) and the results page's full one, from the leaderboard."""
    keys = report["settings_differ"]
    differ = (f"the {len(keys)} of {len(SETTINGS)} settings that differ" if keys else
              "the settings, the same in all entries")
    return {
        "results_table": results_table(report["entries"]),
        "results_tuned": ("; `-tuned`: at the point the [tuning search](docs/training.md#tuned-runs) chose, not the "
                          "recipe's" if any(TUNED_ENTRY in r["entry"] for r in report["entries"]) else ""),
        "results_settings_differ": differ,
        "results_leaderboard": leaderboard.render(report),
        "results_entries": len(report["entries"]),
        "results_alpha": leaderboard.ALPHA,
    }


def real_model_values(repo: Path) -> dict[str, object]:
    """The text turn's worked example, the committed entry of a real model: its ``score``
    output and how its run differs from verl-agent's validation, from its log and manifest."""
    log = repo / RESULTS_FOLDER / REAL_MODEL_ENTRY / leaderboard.LOG
    manifest = read_manifest(manifest_path(log))
    settings, costs = manifest["settings"], manifest["costs"]
    moves = "".join(record.moves for record in read_episodes(log))
    return {
        "real_model_entry": REAL_MODEL_ENTRY,
        "real_model_score": score.render(score.score([log], validation=repo / VALIDATION_DATA)),
        "real_model_settings": manifest["notes"]["protocol_settings"].split(": ", 1)[-1],
        "real_model_revision": settings["initial_weights.revision"],
        "real_model_turns": _count(len(moves)),
        "real_model_moving_turns": _count(len(moves) - moves.count(MOVE_LETTERS[0])),
        "real_model_turn_bound": _count(settings["action_horizon"] * VALIDATION_SIZE),
        "real_model_history_length": settings["image_processing.history_length"],
        "real_model_max_tokens": settings["decoding.validation.response_length"],
        "real_model_requests": _count(costs["requests"]["value"]),
        "real_model_prompt_tokens": _count(costs["prompt_tokens"]["value"]),
        "real_model_completion_tokens": _count(costs["completion_tokens"]["value"]),
        "real_model_hours": f"{costs['wall_time']['value'] / 3600:.1f}",
    }


def results_picture(report: dict, baselines: dict) -> bytes:
    """Every entry's success with its exact 95% interval (a method's seeds: their median and range), the
    random policy's exact expectation marked."""
    exact = baselines["splits"]["validation"]["overall"]["moves_1_4"]["success"]["float"]
    names, points = [], []
    for name, group in seed_rows(report["entries"]):  # one row a method's seeds, as the card's table
        if len(group) == 1:
            names.append(name)
            points.append((group[0]["success"], *group[0]["ci95"]))
        else:
            rates = [r["success"] for r in group]
            names.append(f"{name}-seed* ({len(group)} seeds)")
            points.append((statistics.median(rates), min(rates), max(rates)))
    return interval_chart(names, {"success, exact 95% interval\n(seeds: median, range)": points},
                          "success on the validation boards",
                          title="Verified results entries (every episode replayed)",
                          references={"random moves 1–4, exact expectation": [exact] * len(names)})


def fair_comparison_values() -> dict[str, object]:
    """The fair-comparison checklist and the manifest's settings table, both from
    the one definition of the controlled settings (``manifest.SETTINGS``)."""
    checklist = [f"- [ ] **{title}**: " + ", ".join(f"`{s.key}`" for s in SETTINGS if s.group == title)
                 for _, title in GROUPS]
    rows = [["Setting", "Type", "Meaning", "verl-agent config key"], ["---"] * 4]
    fixed = {ENVIRONMENT: "the environment's constant", VERL_AGENT_UNIT: f'always "{UPDATES}"'}
    rows += [[f"`{s.key}`", s.kind, s.meaning, fixed.get(s.verl_agent, f"`{s.verl_agent}`")
              + (" (if set)" if s.optional else "")] for s in SETTINGS]
    return {"fair_comparison_checklist": "\n".join(checklist), "manifest_settings_table": _table(rows),
            "manifest_suffix": SUFFIX}


def hub_values() -> dict[str, object]:
    """The Hub's benchmark file as written, and its tasks, for docs/inspect.md."""
    return {"eval_yaml": eval_yaml().rstrip("\n"), "eval_framework": FRAMEWORK,
            "eval_results_folder": EVAL_RESULTS_FOLDER,
            "eval_tasks": ", ".join(f"`{task}` ({mode})" for mode, task in TASK_IDS.items()), "plan_task": PLAN_TASK,
            "hub_repo_id": HUB_REPO_ID}


def _citation(repo: Path) -> str:
    """The BibTeX entry of the loading script, so card and script cite alike; refused
    unless the script's homepage and citation name the Hub repository (``HUB_REPO_ID``),
    which the standalone script spells itself, and the citation gives its URL."""
    path = repo / LOADING_SCRIPT
    script = _read_text(path, "restore it from git")
    citation = re.search(r'_CITATION = """(.*?)"""', script, re.S)
    if citation is None:
        raise CardError(f'{path}: has no _CITATION = """...""" entry for the card to quote; restore it from git')
    homepage = re.search(r'^_HOMEPAGE = "(.*)"$', script, re.M)
    others = sorted(set(re.findall(r"[\w.-]+/sokoban-fairness\b", script.replace(HUB_REPO_ID, ""))))
    if homepage is None or homepage.group(1) != HUB_URL or HUB_REPO_ID not in citation.group(1) or others:
        problem = f"names {', '.join(others)}" if others else "does not name it in _HOMEPAGE and _CITATION"
        raise CardError(f"{path}: {problem}, but the Hub dataset is {HUB_REPO_ID} (sokoban_tools.layout."
                        f"HUB_REPO_ID); spell that one id throughout the script, its homepage {HUB_URL}")
    if f"url    = {{{HUB_URL}}}" not in citation.group(1):
        raise CardError(f"{path}: _CITATION has no url = {{{HUB_URL}}} line, so a citation would not say where "
                        f"the dataset is; add it")
    return citation.group(1)


def outputs(repo: Path) -> list[Path]:
    """The files :func:`build` writes under ``repo``, in order."""
    return [repo / name for name in (PINS, CARD, *DOC_PAGES, EVAL_YAML, DATA_README, BOARD_SHEET_IMAGE, REPLAY_IMAGE,
                                     LENGTHS_IMAGE, BASELINES_IMAGE, LEARNING_CURVES_IMAGE, LAST_UPDATE_IMAGE,
                                     RESULTS_IMAGE, *([TRAINING_IMAGE, TRAINING_CPU_IMAGE] if run_logs(repo) else []),
                                     *IMAGE_TABLES.values())]


def _template(name: str, values: dict[str, object]) -> str:
    """The card template ``name`` filled with ``values``."""
    path = TEMPLATES / name
    return fill(_read_text(path, "reinstall sokoban_tools, whose card_templates/ it belongs to"), values, str(path))


@contextmanager
def _report_entries():
    """A report entry that is missing or of the wrong type, as the :class:`CardError` that says why."""
    try:
        yield
    except KeyError as err:
        raise CardError(f"the reports under {DATA_FOLDER}/ lack the entry {err}, so they predate this code; "
                        f"{REGENERATE}") from None
    except TypeError as err:
        raise CardError(f"the reports under {DATA_FOLDER}/ hold an entry of the wrong type ({err}), so this "
                        f"code did not write them; {REGENERATE}") from None


def build(repo: Path = REPO, new_release: bool = False) -> dict[Path, bytes]:
    """The loading script, the dataset card, its pages, fairness/README.md and the
    pictures as they should be;
    :class:`ReleaseError` if the data files differ from the pinned release and
    ``new_release`` does not declare a new one, :class:`CardError` if a report or
    template cannot be used."""
    checked: dict[str, list[BoardRow]] = {}
    release = release_of(repo, published_files(repo, checked), new_release)
    summary = _read_json(repo, published(SUMMARY_FILE))
    validation = checked[VALIDATION_DATA]
    baselines = _read_json(repo, published(BASELINES_FILE))
    search = read_search(repo / SEARCH)
    with _report_entries():  # fairness/'s reports first: a bad one is refused before the long work
        values = {**card_values(repo, release, summary, validation), **baselines_values(baselines),
                  **tuning_values(_table, _read_json(repo, published(TUNING_SELECTION_FILE)), search)}
        histograms = {
            f"{name} ({_count(split['rows'])})": split["shortest_solution_length"]["histogram"]
            for name, split in {**summary["splits"], **summary["archive"]}.items()
        }
        success_picture = baselines_picture(baselines)
    try:
        parquet = image_tables({split: checked[name] for split, name in CONFIGURATIONS["fairness"].items()})
    except ImageTablesUnavailable as err:
        raise CardError(str(err)) from None
    tables = {name: file_entry(data, len(checked[CONFIGURATIONS["fairness"][split]]))
              for (split, name), data in zip(IMAGE_TABLES.items(), parquet.values())}
    example = example_report(repo)
    results = results_report(repo)
    training = training_report(repo)
    tuned = tuned_report(repo, search, training)
    first = validation[0]
    with _report_entries():  # the runs' reports' entries, read where each figure is made
        values.update({**example_values(example), **results_values(results), **real_model_values(repo),
                       **fair_comparison_values(), **hub_values(), **training_values(training, _table, baselines),
                       **method_values(_table), "tuned_runs": tuned_text(tuned, _table)})
        values["training_ranking"] = " ".join(filter(None, (values["training_ranking"], tuned_ranking(tuned))))
        results_chart = results_picture(results, baselines)
        training_charts = ([training_picture(training, baselines), training_picture(training, baselines, cpu=True)]
                           if training is not None else [])
    return dict(zip(outputs(repo), (
        pins_module(release, tables),
        (front_matter(release.files) + _template("README.md", values)).encode("utf-8"),
        *(_template(page, values).encode("utf-8") for page in DOC_PAGES),
        eval_yaml().encode("utf-8"),
        _template("fairness-README.md", values).encode("utf-8"),
        board_sheet(validation[:16]),
        replay_strip(first.board, from_lurd(first.shortest_solution)),
        length_histogram(histograms),
        success_picture,
        compare.learning_curves(example),
        compare.learning_curves({**example, "updates": example["updates"][-1:]}),  # a forest plot
        results_chart,
        *training_charts,
        *parquet.values(),
    )))


def main(argv: list[str] | None = None) -> int:
    parser = command_line(COMMAND, __doc__.split("\n\n")[0])
    parser.add_argument(FLAG, action="store_true",
                        help="pin data files that differ from the pinned release as the new release "
                             "named by the newest entry of the card's Changelog section")
    args = parser.parse_args(argv)
    if args.check and args.new_release:
        parser.error(NOT_WITH_CHECK)
    return run_command(COMMAND, args.check, outputs(REPO), lambda: build(new_release=args.new_release))


if __name__ == "__main__":
    sys.exit(main())
