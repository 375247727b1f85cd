"""Install advice that works where the user is: the package is on no index, so an extra is
installed from a clone (pip install -e '.[plot]') or, beside a wheel, by its packages' names."""

from __future__ import annotations

import re
import subprocess
import tomllib

import pytest

from conftest import REPO
from sokoban_tools.evaluation import charts
from sokoban_tools.extras import EXTRAS, install_advice
from sokoban_tools.integrations.served import client


def test_extras__name_pyprojects_requirements_of_each_extra_they_advise():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert {extra: list(requirements) for extra, requirements in EXTRAS.items()} == \
        {extra: extras[extra] for extra in EXTRAS}


@pytest.mark.parametrize("extra, package", [("plot", "matplotlib>=3.8"), ("evaluate", "openai>=1.0")])
def test_install_advice__gives_the_clones_and_the_wheels_command(extra, package):
    assert install_advice(extra) == f"pip install -e '.[{extra}]' in a clone, pip install '{package}' with the wheel"
    assert install_advice(extra, "`") == f"`pip install -e '.[{extra}]'` in a clone, `pip install '{package}'` " \
                                         f"with the wheel"


def test_messages_and_pages__that_need_an_extra_say_how_to_install_it_from_a_clone_and_a_wheel(monkeypatch):
    assert charts.PLOT_EXTRA == install_advice("plot")
    monkeypatch.setitem(__import__("sys").modules, "openai", None)  # as if it were not installed
    with pytest.raises(client.ClientUnavailable) as refused:
        client.openai_module()
    assert str(refused.value) == f"the openai package is not installed: {install_advice('evaluate')}"
    assert f"It needs matplotlib: {install_advice('plot', '`')}." in (REPO / "docs/scoring.md").read_text("utf-8")
    assert f"The client is the `openai` package ({install_advice('evaluate', '`')})." in \
        (REPO / "docs/evaluating.md").read_text("utf-8")


def test_no_file_of_the_repository_advises_installing_the_unpublished_package_by_name():
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    advice = re.compile(r"pip install [^\n]*\bsokoban[-_]fairness\[")
    found = [name for name in listed if name.endswith((".py", ".md", ".toml", "run")) and (REPO / name).is_file()
             and name != "tests/test_install_advice.py" and advice.search((REPO / name).read_text("utf-8"))]
    assert found == []
