"""Charts: the same bytes in any process, PDF and SVG for papers, a one-line refusal without matplotlib."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from sokoban_tools.evaluation import charts, compare

EPISODES = REPO / "examples" / "episodes"
COMPARE = ["--a", str(EPISODES / "path-follower.jsonl"), "--b", str(EPISODES / "random.jsonl")]
# Draws every chart the card commits, in every format, and prints each one's digest.
DRAW_ALL = """
import hashlib, json
from sokoban_tools.evaluation import charts, compare
from sokoban_tools.pipeline.publish import card
report = card.example_report(card.REPO)
baselines = card._read_json(card.REPO, "fairness/baselines.json")
histogram = {"a": {"1": 3, "2": 5, "4": 1}, "b": {"1": 1, "3": 2}}
digests = {}
for fmt in charts.FORMATS:
    digests[f"curves.{fmt}"] = hashlib.sha256(compare.learning_curves(report, fmt)).hexdigest()
    digests[f"histogram.{fmt}"] = hashlib.sha256(charts.length_histogram(histogram, fmt)).hexdigest()
digests["baselines.png"] = hashlib.sha256(card.baselines_picture(baselines)).hexdigest()
print(json.dumps(digests))
"""


def draw_in_fresh_process(hash_seed: str, **env_vars: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, **env_vars}
    done = subprocess.run([sys.executable, "-c", DRAW_ALL], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(done.stdout)


@pytest.mark.slow
def test_charts__are_byte_identical_in_fresh_processes_with_different_hash_seeds_and_settings(tmp_path):
    """A user's matplotlibrc and backend change nothing: the charts draw in their own style on Agg."""
    rc = tmp_path / "matplotlibrc"
    rc.write_text("font.size: 20\nlines.linewidth: 5\nsvg.hashsalt: other\naxes.grid: True\n", encoding="utf-8")
    first = draw_in_fresh_process("1")
    second = draw_in_fresh_process("2024", MATPLOTLIBRC=str(rc), MPLBACKEND="pdf")
    assert first == second
    assert len(set(first.values())) == len(first)  # seven different charts, not seven empty ones
    for name, image in (("curves.png", "learning-curves.png"), ("baselines.png", "random-policy-success.png")):
        assert first[name] == hashlib.sha256((REPO / "images" / image).read_bytes()).hexdigest()


def test_charts__carry_no_date_version_or_random_id():
    series = {"a": {"1": 2, "2": 1}}
    png, pdf, svg = (charts.length_histogram(series, fmt) for fmt in ("png", "pdf", "svg"))
    assert png.startswith(b"\x89PNG") and b"tEXt" not in png and b"Software" not in png
    assert pdf.startswith(b"%PDF") and b"CreationDate" not in pdf and b"Matplotlib" not in pdf
    assert svg.startswith(b"<?xml") and b"<dc:date>" not in svg and b"Matplotlib" not in svg


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".pdf", b"%PDF"), (".SVG", b"<?xml")])
def test_compare_plot__writes_the_format_its_suffix_names(tmp_path, capsys, suffix, magic):
    out = tmp_path / f"curves{suffix}"
    assert compare.main([*COMPARE, "--plot", str(out)]) == 0
    assert out.read_bytes().startswith(magic)


def test_compare_plot__refuses_an_unknown_suffix_before_the_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(compare, "compare", lambda *args: pytest.fail("compared before refusing"))
    assert compare.main([*COMPARE, "--plot", str(tmp_path / "curves.jpg")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "curves.jpg" in err and ".png, .pdf, .svg" in err


def test_compare_plot__without_matplotlib_names_the_extra_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    monkeypatch.setattr(compare, "compare", lambda *args: pytest.fail("compared before refusing"))
    assert compare.main([*COMPARE, "--plot", str(tmp_path / "curves.png")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"error: --plot needs matplotlib, which is not installed: {charts.PLOT_EXTRA}"
    assert not (tmp_path / "curves.png").exists()
