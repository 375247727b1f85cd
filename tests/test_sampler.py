"""The fair sampler's guarantees and the trainers' checked loader."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import random
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

import sokoban_fairness
from conftest import DATA_DIR, REPO
from sokoban_tools.runtime.sampler import TrainingSampler, validation_chunks
from sokoban_tools.layout import VALIDATION_DATA as EVALUATION_FILE
from sokoban_tools.records.tasks import load_validation, load_tasks, load_training

BATCH, GROUP = 128, 8


@pytest.fixture(scope="module")
def train_ids():
    return [row.task_id for row in load_training(REPO / "fairness/train.jsonl")]


@pytest.fixture(scope="module")
def evaluation_rows():
    return load_validation(REPO / EVALUATION_FILE)


def draws(sampler: TrainingSampler, updates: int) -> list[tuple[str, ...]]:
    return [sampler.next_batch().task_ids for _ in range(updates)]


# --- Training ----------------------------------------------------------------------------


def test_training__no_board_twice_in_one_update_and_groups_share_a_board(train_ids):
    sampler = TrainingSampler(train_ids, batch_size=BATCH, rollout_n=GROUP, seed=0)
    for update in range(200):
        batch = sampler.next_batch()
        assert batch.update == update
        assert len(batch.task_ids) == len(batch.task_indices) == BATCH * GROUP
        groups = [batch.task_ids[g * GROUP:(g + 1) * GROUP] for g in range(BATCH)]
        assert all(len(set(group)) == 1 for group in groups)  # copies adjacent, one board a group
        assert len({group[0] for group in groups}) == BATCH  # no board in two groups
        assert [train_ids[i] for i in batch.task_indices] == list(batch.task_ids)
        assert [train_ids[i] for i in batch.group_task_indices] == [group[0] for group in groups]
        assert batch.task_indices.dtype == np.int64 and not batch.task_indices.flags.writeable


def test_training__a_whole_pool_batch_is_a_permutation():
    ids = [f"t{i}" for i in range(10)]
    batch = TrainingSampler(ids, batch_size=10, rollout_n=1, seed=3).next_batch()
    assert sorted(batch.task_ids) == sorted(ids)


def test_training__every_board_is_drawn_eventually_and_about_equally(train_ids):
    sampler = TrainingSampler(train_ids, batch_size=BATCH, rollout_n=1, seed=1)
    counts = Counter(task for batch in draws(sampler, 1000) for task in batch)
    assert set(counts) == set(train_ids)
    expected = 1000 * BATCH / len(train_ids)  # 25.6
    chi2 = sum((counts[t] - expected) ** 2 / expected for t in train_ids)
    assert chi2 < len(train_ids) * 1.1  # about its 5,000 degrees of freedom; a bias would be far above


def test_training__one_seed_gives_identical_sequences_and_another_seed_does_not(train_ids):
    first = draws(TrainingSampler(train_ids, BATCH, GROUP, seed=42), 20)
    second = draws(TrainingSampler(train_ids, BATCH, GROUP, seed=42), 20)
    other = draws(TrainingSampler(train_ids, BATCH, GROUP, seed=43), 20)
    assert first == second
    assert first != other


def test_training__never_touches_the_global_rngs(train_ids):
    random.seed(5)
    np.random.seed(5)
    python_state, numpy_state = random.getstate(), np.random.get_state()
    sampler = TrainingSampler(train_ids, BATCH, GROUP, seed=7)
    seen = draws(sampler, 5)
    assert random.getstate() == python_state
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
               for a, b in zip(np.random.get_state(), numpy_state))
    random.seed(999)
    np.random.seed(999)
    assert draws(TrainingSampler(train_ids, BATCH, GROUP, seed=7), 5) == seen


SEQUENCE_DIGEST_SCRIPT = """
import hashlib, sys
sys.path.insert(0, sys.argv[1])
from sokoban_tools.runtime.sampler import TrainingSampler
sampler = TrainingSampler([f"train-{i:05d}" for i in range(5000)], 128, 8, seed=2024)
text = "|".join(",".join(sampler.next_batch().task_ids) for _ in range(10))
print(hashlib.sha256(text.encode()).hexdigest())
"""


def test_training__the_sequence_is_the_same_in_fresh_processes_with_other_hash_seeds():
    digests = set()
    for hash_seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run([sys.executable, "-c", SEQUENCE_DIGEST_SCRIPT, str(REPO)],
                                capture_output=True, text=True, env=env, check=True)
        digests.add(result.stdout.strip())
    sampler = TrainingSampler([f"train-{i:05d}" for i in range(5000)], 128, 8, seed=2024)
    text = "|".join(",".join(sampler.next_batch().task_ids) for _ in range(10))
    assert digests == {hashlib.sha256(text.encode()).hexdigest()}


def test_training__state_survives_json_and_continues_the_same_draws(train_ids):
    sampler = TrainingSampler(train_ids, BATCH, GROUP, seed=11)
    draws(sampler, 3)
    saved = json.loads(json.dumps(sampler.state_dict()))
    expected = draws(sampler, 4)
    restored = TrainingSampler.from_state_dict(train_ids, saved)
    assert restored.updates_drawn == 3
    batches = [restored.next_batch() for _ in range(4)]
    assert [b.task_ids for b in batches] == expected
    assert [b.update for b in batches] == [3, 4, 5, 6]


def test_training__state_pickles_and_continues_the_same_draws(train_ids):
    sampler = TrainingSampler(train_ids, BATCH, GROUP, seed=12)
    draws(sampler, 2)
    copy = pickle.loads(pickle.dumps(sampler))
    assert copy.state_dict() == sampler.state_dict()
    assert draws(copy, 3) == draws(sampler, 3)


def test_training__a_state_from_another_pool_is_refused(train_ids):
    state = TrainingSampler(train_ids, BATCH, GROUP, seed=1).state_dict()
    with pytest.raises(ValueError, match="different task pool"):
        TrainingSampler.from_state_dict(list(reversed(train_ids)), state)
    with pytest.raises(ValueError, match="not a training-sampler state"):
        TrainingSampler.from_state_dict(train_ids, {"format": "something else"})


def _saved(train_ids, seed=1, updates=3) -> dict:
    sampler = TrainingSampler(train_ids, BATCH, GROUP, seed=seed)
    draws(sampler, updates)
    return json.loads(json.dumps(sampler.state_dict()))


def test_training__a_state_names_its_seed_draws_and_digest_and_restores_only_as_saved(train_ids):
    state = _saved(train_ids, seed=1, updates=3)
    assert (state["seed"], state["updates_drawn"]) == (1, 3) and len(state["draws_sha256"]) == 64
    assert state["draws_sha256"] != _saved(train_ids, seed=2, updates=3)["draws_sha256"]
    assert TrainingSampler.from_state_dict(train_ids, state, seed=1).state_dict() == state


def test_training__another_seeds_state_is_refused_for_the_seed_given(train_ids):
    with pytest.raises(ValueError, match="continues the draws of seed 2, but seed=1 was given"):
        TrainingSampler.from_state_dict(train_ids, _saved(train_ids, seed=2), seed=1)


def _generator_of(train_ids, seed, updates):
    return _saved(train_ids, seed=seed, updates=updates)["bit_generator"]


@pytest.mark.parametrize("change, message", [
    # The fields of two states: seed 1's count and digest, seed 2's generator.
    (lambda ids, s: {"bit_generator": _generator_of(ids, 2, 3)}, "not where seed 1 is after 3 updates"),
    (lambda ids, s: {"seed": 2}, "not where seed 2 is after 3 updates"),
    # A count rewound (or advanced) while the generator stayed where it was.
    (lambda ids, s: {"updates_drawn": 1}, "updates_drawn is 1, but its generator is where seed 1 is after 3"),
    (lambda ids, s: {"updates_drawn": 0}, "updates_drawn is 0, but its generator is where seed 1 is after 3"),
    (lambda ids, s: {"updates_drawn": 5}, "updates_drawn is 5, but its generator is where seed 1 is after 3"),
    (lambda ids, s: {"updates_drawn": -1}, "updates_drawn must be a non-negative integer"),
    (lambda ids, s: {"updates_drawn": "3"}, "updates_drawn must be a non-negative integer"),
    (lambda ids, s: {"updates_drawn": True}, "updates_drawn must be a non-negative integer"),
    # A count beyond any run's is refused before a draw is replayed (issue 28.5: minutes before).
    (lambda ids, s: {"updates_drawn": 10**9}, "updates_drawn is 1000000000, more than a run makes"),
    # A generator of the wrong type, or altered.
    (lambda ids, s: {"bit_generator": {**s["bit_generator"], "bit_generator": "MT19937"}}, "'MT19937'"),
    (lambda ids, s: {"bit_generator": np.random.MT19937(1).state}, "must be the PCG64 state"),
    (lambda ids, s: {"bit_generator": "PCG64"}, "got 'str'"),
    (lambda ids, s: {"bit_generator": None}, "got 'NoneType'"),
    (lambda ids, s: {"bit_generator": {**s["bit_generator"], "state": {"state": 1, "inc": 1}}},
     "not where seed 1 is after 3 updates"),
    # Fields the generator does not depend on, caught by the digest.
    (lambda ids, s: {"rollout_n": 4}, "draws_sha256 .* is not the digest"),
    (lambda ids, s: {"draws_sha256": "0" * 64}, "draws_sha256 .* is not the digest"),
    (lambda ids, s: {"draws_sha256": None}, "draws_sha256 None is not the digest"),
    (lambda ids, s: {"pool_sha256": 7}, "different task pool"),
])
def test_training__a_state_that_does_not_replay_from_its_seed_is_refused(train_ids, change, message):
    state = _saved(train_ids, seed=1, updates=3)
    with pytest.raises(ValueError, match=message):
        TrainingSampler.from_state_dict(train_ids, {**state, **change(train_ids, state)})


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_size": 5001}, "no board twice"),
    ({"batch_size": 0}, "batch_size"),
    ({"rollout_n": 0}, "rollout_n"),
    ({"seed": -1}, "seed"),
    ({"seed": None}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"seed": True}, "seed"),
    ({"batch_size": 1.5}, "batch_size must be a positive integer"),
    ({"batch_size": True}, "batch_size must be a positive integer"),
    ({"batch_size": "128"}, "batch_size must be a positive integer"),
    ({"rollout_n": 2.5}, "rollout_n must be a positive integer"),
    ({"rollout_n": True}, "rollout_n must be a positive integer"),
])
def test_training__refuses_bad_settings(train_ids, kwargs, message):
    settings = {"batch_size": BATCH, "rollout_n": GROUP, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        TrainingSampler(train_ids, **settings)


@pytest.mark.parametrize("key", ["pool_size", "pool_sha256", "batch_size", "rollout_n", "seed",
                                 "updates_drawn", "draws_sha256", "bit_generator"])
def test_training__a_state_missing_a_key_is_refused_with_a_value_error_naming_it(train_ids, key):
    state = TrainingSampler(train_ids, BATCH, GROUP, seed=1).state_dict()
    del state[key]
    with pytest.raises(ValueError, match=f"lacks {key}"):
        TrainingSampler.from_state_dict(train_ids, state)


def test_training__a_state_that_is_not_a_dict_is_refused():
    with pytest.raises(ValueError, match="not a training-sampler state"):
        TrainingSampler.from_state_dict(["a"], ["format"])


@pytest.mark.parametrize("workers", [1.5, True, 0])
def test_validation__refuses_a_worker_count_that_is_not_a_positive_integer(workers):
    with pytest.raises(ValueError, match="workers"):
        validation_chunks(["a", "b"], workers)


def test_training__refuses_duplicate_task_ids():
    with pytest.raises(ValueError, match="unique"):
        TrainingSampler(["a", "b", "a"], 2, 1, seed=0)


# --- Validation --------------------------------------------------------------------------


def test_validation__every_board_once_in_stored_order_in_two_chunks_of_128(evaluation_rows):
    ids = [row.task_id for row in evaluation_rows]
    chunks = validation_chunks(ids, workers=128)
    assert [len(c.task_ids) for c in chunks] == [128, 128]
    assert [c.index for c in chunks] == [0, 1] and [c.start for c in chunks] == [0, 128]
    assert [t for c in chunks for t in c.task_ids] == ids
    assert [int(i) for c in chunks for i in c.task_indices] == list(range(256))


@pytest.mark.parametrize("workers, sizes", [
    (100, [100, 100, 56]), (256, [256]), (1000, [256]), (1, [1] * 256),
])
def test_validation__other_worker_counts_still_cover_every_board_once(evaluation_rows, workers, sizes):
    ids = [row.task_id for row in evaluation_rows]
    chunks = validation_chunks(ids, workers)
    assert [len(c.task_ids) for c in chunks] == sizes
    assert [t for c in chunks for t in c.task_ids] == ids


def test_validation__never_advances_the_training_sampler(train_ids, evaluation_rows):
    ids = [row.task_id for row in evaluation_rows]
    plain = TrainingSampler(train_ids, BATCH, GROUP, seed=5)
    interleaved = TrainingSampler(train_ids, BATCH, GROUP, seed=5)
    expected = draws(plain, 11)
    seen, validated = [], []
    for update in range(11):
        if update % 5 == 0:  # the launchers validate before training and every five updates
            for chunk in validation_chunks(ids, 128):
                validated.extend(chunk.task_ids)
                # A validating policy may sample from the process-wide RNGs; the
                # training sampler must not notice.
                random.random()
                np.random.randint(4, size=len(chunk.task_ids))
        seen.append(interleaved.next_batch().task_ids)
    assert seen == expected
    assert validated == ids * 3


# --- The trainers' checked loader --------------------------------------------------------


def test_loader__reads_the_256_evaluation_boards_in_stored_order(evaluation_rows):
    lines = (DATA_DIR / "evaluation.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(evaluation_rows) == 256
    assert [row.line for row in evaluation_rows] == lines


def _error_message(call):
    with pytest.raises(sokoban_fairness.ChecksumError) as caught:
        call()
    return str(caught.value)


@pytest.mark.parametrize("damage", ["old 1,000-row file", "flipped byte", "truncated"])
def test_loader__refuses_a_file_that_is_not_the_published_one_with_the_scripts_message(tmp_path, damage):
    data = (DATA_DIR / "evaluation.jsonl").read_bytes()
    if damage == "old 1,000-row file":
        data = (DATA_DIR / "evaluation-pool-1000.jsonl").read_bytes()
    elif damage == "flipped byte":
        at = data.index(b'"seed":') + len(b'"seed":')
        data = data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]  # another digit: same size
    else:
        data = data[: data.rindex(b"\n", 0, len(data) - 1) + 1]
    copy = tmp_path / "evaluation.jsonl"
    copy.write_bytes(data)
    message = _error_message(lambda: load_validation(copy))
    assert message == _error_message(lambda: sokoban_fairness.check_published_file(copy, EVALUATION_FILE))
    published = sokoban_fairness.PUBLISHED_FILES[EVALUATION_FILE]
    assert published["sha256"] in message and EVALUATION_FILE in message and "force_redownload" in message
    if len(data) == published["bytes"]:
        assert hashlib.sha256(data).hexdigest() in message
        rows = data.count(b"\n")
        assert f"{published['rows']} rows" in message and f"{rows} rows" in message
    else:  # refused by its size before a byte is read
        assert f"expected {published['bytes']:,} bytes" in message and f"found {len(data):,} bytes" in message


def test_loader__refuses_a_file_descriptor_and_leaves_it_open(tmp_path):
    with open(DATA_DIR / "evaluation.jsonl", "rb") as handle:
        with pytest.raises(TypeError, match="must be a str or os.PathLike file path, not"):
            load_validation(handle.fileno())
        assert handle.read(1) == b"{"  # the descriptor was neither read nor closed


def test_loader__checks_the_training_file_too():
    assert len(load_tasks(DATA_DIR / "train.jsonl", "fairness/train.jsonl")) == 5000
    with pytest.raises(sokoban_fairness.ChecksumError):
        load_tasks(DATA_DIR / "evaluation.jsonl", "fairness/train.jsonl")
