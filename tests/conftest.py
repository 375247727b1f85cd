"""Shared paths and the published files, read once per test session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA_DIR = REPO / "fairness"
TEST_DATA = Path(__file__).resolve().parent / "data"
SHARED_VECTORS = REPO.parent / "shared" / "vectors"
# pytest runs the suite in two processes, one per core, a test file in one of them
# (pyproject's addopts: -n 2 --dist loadfile): a file's module fixtures are made once,
# the Ray tests never meet a second Ray in their process (test_verl_agent_envs_ray.py starts a
# local Ray, test_verl_agent_envs_cluster.py its own test cluster), and the wheel's tests never
# run its package while another process reinstalls it.

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sokoban_tools.records.rows import read_rows  # noqa: E402


@pytest.fixture(scope="session")
def train_rows():
    return read_rows(DATA_DIR / "train.jsonl")


@pytest.fixture(scope="session")
def pool_rows():
    return read_rows(DATA_DIR / "evaluation-pool-1000.jsonl")


@pytest.fixture(scope="session")
def gymnasium():
    """Gymnasium, with the environments' ids registered (the test extra); under CI=true its absence fails."""
    from unavailable import unavailable

    try:
        import gymnasium

        import sokoban_tools.integrations.gymnasium_env  # noqa: F401  registers both ids
    except ImportError:
        unavailable("gymnasium is not installed (pip install -e '.[test]')")
    return gymnasium


@pytest.fixture(scope="session")
def sb3():
    """stable-baselines3, the trainers' real client (the train extra); under CI=true its absence fails."""
    from unavailable import unavailable

    try:
        import stable_baselines3
        import gymnasium  # noqa: F401
    except ImportError:
        unavailable("stable-baselines3 is not installed (pip install -e '.[train]')")
    return stable_baselines3


# --- Loading-path tests (tests/venvs.py, test_datasets36.py, test_hub.py) -----------------

def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: a real client at full size (a second venv, a loopback Hub, Ray, verl-agent, "
                   "VAGEN, a fresh-process regeneration); run by default, left out by -m 'not slow'")
