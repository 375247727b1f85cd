"""A TRL run's settings, episode log and run manifest, and its validation passes.

:class:`RunSettings` holds what a verl-agent launcher sets, under verl-agent's names in the
comments; :func:`grpo_config` makes the ``GRPOConfig`` that plays them (one generation
batch an update: ``data.train_batch_size`` boards, ``env.rollout.n`` episodes each, every
turn a training sample, so ``num_generations`` is ``env.rollout.n`` x ``env.max_steps``).

:class:`TrlRun` is what every writer is: the log's one writer
(:func:`sokoban_tools.records.episodes.episode_writer`, its lock held for the run) and the
run manifest beside it (:mod:`sokoban_tools.records.manifest`), written before the first
episode, with the model, revision, decoding, group size, budget, schedule and the TRL,
transformers and torch versions; so ``score``, ``compare``, ``leaderboard --add`` and
``score --verify`` read a TRL run like any other. Training episodes are logged as they
finish (phase ``training``, the update they train, from 1); :meth:`TrlRun.validate` plays
the validation boards once each in stored order (all 256, or a declared first N: a quick
look) with the validation decoding and logs every board (phase ``validation``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ...layout import TRAIN_DATA, VALIDATION_DATA
from ...protocol import DEFAULT_MAX_STEPS, VALIDATION_SIZE
from ...records.boards import board_source, load_boards
from ...records.episodes import EpisodeRecord, episode_writer
from ...records.manifest import BUDGET_UNIT, SETTING, UPDATES, boards_note, environment_settings, new_manifest
from ..served.client import Decoding
from ..served.evaluate import LAUNCHER, Played, off_protocol, turn_notes
from ..served.text_turn import TEXT_MODE
from ..served.turn import Episode
from .policy import Policy, play

# verl-agent's run_sokoban.sh and ppo_trainer.yaml where the launcher is silent (actor_rollout_ref.rollout.*)
TRAINING_DECODING = Decoding(temperature=1.0, top_p=1.0, top_k=-1, do_sample=True, max_tokens=LAUNCHER["response_length"])
VALIDATION_DECODING = Decoding(temperature=LAUNCHER["temperature"], top_p=LAUNCHER["top_p"], top_k=LAUNCHER["top_k"],
                               do_sample=LAUNCHER["do_sample"], max_tokens=LAUNCHER["response_length"])
ROLLOUT_TURN = ("verl-agent's text turn through TRL's rollout_func: one fresh prompt a turn (SOKOBAN_TEMPLATE with "
                "SimpleMemory's history), every turn one training sample with the episode's reward, as verl-agent "
                "trains; a board's num_generations slots are env.rollout.n episodes of env.max_steps turns, the "
                "turns an episode did not reach masked out and left out of the group's statistics")


@dataclass(frozen=True)
class RunSettings:
    """What a run plays, by verl-agent's config keys; the defaults are its Sokoban launcher's."""

    model: str  # actor_rollout_ref.model.path: a Hub id, a folder or a GGUF file
    revision: str | None = None  # its revision (commit) or digest
    history_length: int = LAUNCHER["history_length"]  # env.history_length
    horizon: int = DEFAULT_MAX_STEPS  # env.max_steps
    max_prompt_length: int = LAUNCHER["max_prompt_length"]  # data.max_prompt_length
    group_size: int = 8  # env.rollout.n
    groups_per_update: int = 32  # data.train_batch_size
    updates: int = 150  # trainer.total_training_steps (the launcher: 150 epochs of one batch)
    seed: int = 0  # env.seed: the fair sampler's
    invalid_action_penalty_coef: float = 0.1  # actor_rollout_ref.actor.invalid_action_penalty_coef; 0: off
    val_before_train: bool = True  # trainer.val_before_train
    test_freq: int = 5  # trainer.test_freq
    training: Decoding = TRAINING_DECODING  # actor_rollout_ref.rollout.{temperature,top_p,top_k}, response_length
    validation: Decoding = VALIDATION_DECODING  # actor_rollout_ref.rollout.val_kwargs
    validation_boards: int = VALIDATION_SIZE  # fewer: the first N in stored order, a quick look
    learning_rate: float = 1e-6  # actor_rollout_ref.actor.optim.lr
    beta: float = 0.01  # actor_rollout_ref.actor.kl_loss_coef (low_var_kl is TRL's k3 estimator)

    def __post_init__(self):
        for name in ("horizon", "max_prompt_length", "group_size", "groups_per_update", "updates", "validation_boards"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("history_length", "seed", "test_freq"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be at least 0, got {getattr(self, name)}")
        if self.validation_boards > VALIDATION_SIZE:
            raise ValueError(f"validation_boards is at most {VALIDATION_SIZE}, the validation boards")

    @property
    def slots(self) -> int:
        """Training samples a board gives an update: GRPOConfig's ``num_generations``."""
        return self.group_size * self.horizon

    def played(self) -> Played:
        """The turn as ``evaluate`` records it, for the notes it writes too."""
        return Played(mode=TEXT_MODE, history_length=self.history_length, max_steps=self.horizon,
                      max_prompt_length=self.max_prompt_length)


def grpo_config(settings: RunSettings, output_dir: str | Path, micro_batches: int = 1, **overrides):
    """The ``trl.GRPOConfig`` that plays ``settings``: one optimizer step an update, over
    ``micro_batches`` accumulated micro-batches; ``overrides`` go to ``GRPOConfig`` as they are."""
    from trl import GRPOConfig

    samples = settings.groups_per_update * settings.slots
    if samples % micro_batches:
        raise ValueError(f"micro_batches must divide the {samples} samples of an update "
                         f"(groups_per_update x group_size x horizon)")
    training = settings.training
    options = dict(
        output_dir=str(output_dir), num_generations=settings.slots, per_device_train_batch_size=samples // micro_batches,
        gradient_accumulation_steps=micro_batches, steps_per_generation=micro_batches, max_steps=settings.updates,
        shuffle_dataset=False, temperature=training.temperature, top_p=training.top_p,
        top_k=training.top_k if training.top_k != -1 else 0, max_completion_length=training.max_tokens,
        learning_rate=settings.learning_rate, beta=settings.beta, seed=settings.seed, logging_steps=1,
        save_strategy="no", report_to="none",
    )
    return GRPOConfig(**{**options, **overrides})


def versions() -> str:
    """The trainer's packages, as the manifest records them."""
    import torch
    import transformers
    import trl

    return f"TRL {trl.__version__} GRPOTrainer (transformers {transformers.__version__}, torch {torch.__version__})"


def manifest_settings(settings: RunSettings, observation: str = TEXT_MODE) -> dict:
    """The controlled settings of a run of ``settings`` (see :data:`sokoban_tools.records.manifest.SETTINGS`)."""
    values = {key: None for key in SETTING}
    values.update(environment_settings())
    training, validation = settings.training, settings.validation
    values.update({
        "initial_weights.model": settings.model,
        "initial_weights.revision": settings.revision,
        "image_processing.observation": observation,
        "image_processing.max_prompt_length": settings.max_prompt_length,
        "image_processing.history_length": settings.history_length,
        "action_horizon": settings.horizon,
        "reward.invalid_action_penalty": settings.invalid_action_penalty_coef > 0,
        "reward.invalid_action_penalty_coef": float(settings.invalid_action_penalty_coef),
        "rollout.group_size": settings.group_size,
        "update_budget.groups_per_update": settings.groups_per_update,
        "update_budget.total_training_steps": settings.updates,
        BUDGET_UNIT: UPDATES,
        "evaluation.before_training": settings.val_before_train,
        "evaluation.frequency": settings.test_freq,
    })
    for phase, decoding in (("training", training), ("validation", validation)):
        values.update({
            f"decoding.{phase}.temperature": float(decoding.temperature) if decoding.do_sample else 0.0,
            f"decoding.{phase}.top_p": float(decoding.top_p),
            f"decoding.{phase}.top_k": decoding.top_k,
            f"decoding.{phase}.do_sample": decoding.do_sample,
            f"decoding.{phase}.response_length": decoding.max_tokens,
            f"decoding.{phase}.n": 1,  # each turn's prompt is answered once (actor_rollout_ref.rollout.n)
        })
    return values


@dataclass
class TrlRun:
    """A TRL run's log and manifest (see the module docstring); close it, or use it in a ``with`` block."""

    log: Path
    settings: RunSettings
    method: str = "TRL-GRPO"
    run: str = "seed0"
    turn: str = ROLLOUT_TURN
    observation: str = TEXT_MODE
    dataset_dir: Path | None = None
    hub_revision: str | None = None
    extra_notes: dict = field(default_factory=dict)
    update: int = 0  # the update whose episodes are being played: the label of training records

    def __post_init__(self):
        self.log = Path(self.log)
        self.validation_rows, self.evaluation_sha256 = load_boards(VALIDATION_DATA, self.dataset_dir, self.hub_revision)
        self.writer = episode_writer(self.log)
        try:
            if self.log.exists() and self.log.stat().st_size:
                raise ValueError(f"{self.log} already holds episodes: a TRL run starts a log of its own (it does not "
                                 f"resume); give another log")
            self.writer.write_manifest(new_manifest(self.method, manifest_settings(self.settings, self.observation),
                                                    self.notes(), boards=board_source(self.dataset_dir,
                                                                                      self.hub_revision)), self.log)
        except BaseException:
            self.writer.close()
            raise

    def training_rows(self):
        """The 5,000 training boards, from where the validation boards come from."""
        return load_boards(TRAIN_DATA, self.dataset_dir, self.hub_revision)[0]

    def notes(self) -> dict:
        settings = self.settings
        boards = settings.validation_boards
        differences = off_protocol(settings.played(), settings.validation)
        return {
            "trainer": versions(),
            "turn": self.turn,
            **turn_notes(settings.played()),
            "boards": boards_note(boards),
            "protocol_settings": ("verl-agent's validation settings" if not differences else
                                  "NOT verl-agent's validation settings: " + "; ".join(differences)),
            **self.extra_notes,
        }

    def record_training(self, records: list[EpisodeRecord]) -> None:
        self.writer.append(records)

    def training_record(self, episode: Episode) -> EpisodeRecord:
        """The training record of a finished ``episode``, labelled with the current update."""
        return episode.env.tally.record(self.method, self.run, "training", self.update, episode.row.task_id, None)

    def validate(self, policy: Policy, update: int, batch: int = 64) -> list[EpisodeRecord]:
        """One validation pass labelled ``update``: the boards once each, in stored order, ``batch`` at a time."""
        started = time.monotonic()
        rows = self.validation_rows[:self.settings.validation_boards]
        records = []
        for start in range(0, len(rows), batch):
            episodes = [Episode(row, self.settings.horizon, TEXT_MODE, self.settings.history_length)
                        for row in rows[start:start + batch]]
            play(episodes, policy, self.settings.validation)
            done = [episode.record(self.method, self.run, update, self.evaluation_sha256) for episode in episodes]
            self.writer.append(done)
            records += done
        self.add_costs({"validation": ("seconds", time.monotonic() - started)})
        return records

    def add_costs(self, entries: dict) -> None:
        self.writer.add_costs(entries)  # to the manifest the writer wrote, not read again

    def close(self) -> None:
        self.writer.close()

    def __enter__(self) -> "TrlRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
