"""Seed-for-seed conformance with verl-agent's room generator."""

import glob
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, TEST_DATA
from unavailable import unavailable
from sokoban_tools.rules.board import Board
from sokoban_tools.pipeline.generate.generator import GeneratorConfig, Rejection, generate
from sokoban_tools.rules.solver import shortest_solution

VECTORS = TEST_DATA / "generator-seeds.jsonl"


def load_vectors():
    return [json.loads(line) for line in VECTORS.read_text().splitlines()]


def test_generator__matches_every_reference_vector():
    vectors = load_vectors()
    assert len(vectors) == 1507
    mismatches = []
    for vector in vectors:
        result = generate(vector["seed"])
        if vector["status"] == "rejected":
            got = result.reason if isinstance(result, Rejection) else "a room"
            if got != vector["reason"]:
                mismatches.append((vector["seed"], got, vector["reason"]))
            continue
        expected = Board.from_rooms(vector["room_fixed"], vector["room_state"])
        if result != expected:
            mismatches.append((vector["seed"], result, expected))
        elif shortest_solution(result) != vector["shortest_actions"]:
            mismatches.append((vector["seed"], shortest_solution(result), vector["shortest_actions"]))
    assert mismatches == []


def test_generator__leaves_the_global_random_state_alone():
    random.seed(1)
    np.random.seed(1)
    py_state, np_state = random.getstate(), np.random.get_state()
    generate(0)
    generate(3248)
    assert random.getstate() == py_state
    after = np.random.get_state()
    assert after[0] == np_state[0] and np.array_equal(after[1], np_state[1]) and after[2:] == np_state[2:]


def test_generator__room_of_a_seed_does_not_depend_on_the_seeds_generated_before_it():
    seeds = list(range(40)) + [3248, 65536, 4294967294]
    forward = {s: generate(s) for s in seeds}
    backward = {s: generate(s) for s in reversed(seeds)}
    assert all(forward[s] == backward[s] for s in seeds)


def test_generator__supports_only_one_box():
    with pytest.raises(ValueError, match="one-box"):
        generate(0, GeneratorConfig(num_boxes=2))


# The original picks directions and masks with random.sample(x, 1)[0]. The
# generator picks its first direction with rng.choice(x), and its topology walk
# draws each index from getrandbits as CPython's _randbelow does. A program that
# needs no packages checks that choice takes what sample takes (sizes above 21
# take sample's other branch) and prints a digest of the walk's floors from
# 3,000 seeds. Every supported CPython must print the digest of the interpreter
# running the tests, whose rooms the conformance tests hold to the original's.
STREAMS_PROGRAM = """
import hashlib, random, sys
sys.path.insert(0, sys.argv[1])
from sokoban_tools.pipeline.generate.topology import random_floor
digest = hashlib.sha256()
for seed in range(3000):
    original, ours = random.Random(seed), random.Random(seed)
    for size in (4, 5, 5, 4, 5, 3, 2, 1, 16, 22, 40):
        population = tuple(range(size))
        assert ours.choice(population) == original.sample(population, 1)[0], (seed, size)
        assert ours.random() == original.random(), (seed, size)
    walk = random.Random(seed)
    for _ in range(4):  # the generator's tries
        digest.update(random_floor(walk, (6, 6), 20, 0.35).to_bytes(8, "little"))
print("%d.%d" % sys.version_info[:2], digest.hexdigest())
"""


def streams(python: str) -> list[str]:
    """What :data:`STREAMS_PROGRAM` prints under ``python``: its version and the floors' digest."""
    done = subprocess.run([python, "-I", "-c", STREAMS_PROGRAM, str(REPO)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


SUPPORTED_PYTHONS = ("3.10", "3.11", "3.12", "3.13")  # requires-python >= 3.10, up to the newest here


def cpython(version: str) -> str | None:
    """An interpreter of ``version``: one pyenv installed (its PATH shims answer only
    for the selected version), or one on the PATH."""
    pyenv = os.path.expanduser(os.environ.get("PYENV_ROOT", "~/.pyenv"))
    installed = sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python"))
    return installed[-1] if installed else shutil.which(f"python{version}")


@pytest.fixture(scope="module")
def tested_interpreters_streams() -> list[str]:
    return streams(sys.executable)


@pytest.mark.parametrize("version", SUPPORTED_PYTHONS)
def test_generator__draws_the_originals_stream_and_the_same_rooms_on_every_supported_python(
        version, tested_interpreters_streams):
    python = cpython(version)
    if python is None:
        unavailable(f"CPython {version} is not installed (pyenv install {version})")
    assert streams(python) == [version, tested_interpreters_streams[1]]
