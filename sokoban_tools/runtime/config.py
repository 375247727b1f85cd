"""What a drop-in runtime is asked to be: every argument of ``build_sokoban_envs``, checked.

:func:`runtime_config` turns the builder's arguments into a :class:`RuntimeConfig`
and refuses a wrong one with a ``TypeError`` (wrong type) or ``ValueError``
(wrong value) naming it, before a board is read or a worker started: a trainer
learns of a typo at build, not after the first episode, or never.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping

from ..checks import integer
from ..paths import unwritable
from ..protocol import DEFAULT_MAX_STEPS, DIM_ROOM, NUM_BOXES, SEARCH_DEPTH
from .env import checked_mode

FAIRNESS_SETTINGS = (
    f"env.sokoban.dim_room=[{DIM_ROOM[0]},{DIM_ROOM[1]}], "
    f"env.sokoban.num_boxes={NUM_BOXES}, env.sokoban.search_depth={SEARCH_DEPTH}"
)
ENV_KWARGS = ("dim_room", "num_boxes", "max_steps", "search_depth")
BACKENDS = ("ray", "local")
DEFAULT_MAX_RESTARTS = 3
# The most environments one phase may have (env_num x group_n): every step the driver keeps a
# record of each and draws its observation (27 KB as an image), so this is already gigabytes a
# step; verl-agent's launcher uses 256 (32 boards x 8 copies). A size past it is a typo, refused
# at build instead of a MemoryError minutes later.
MAX_ENVIRONMENTS = 65_536
# resources_per_worker names (verl-agent's, and Ray's actor options) and Ray's resource names
RAY_RESOURCES = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}


@dataclass(frozen=True)
class RuntimeConfig:
    """One phase's runtime, checked.

    ``seed``: the training sampler's seed (validation: only the default ``run`` label).
    ``env_num`` boards per reset, each played by ``group_n`` adjacent environments.
    ``resources``: Ray resources per environment (verl-agent's ``resources_per_worker``).
    ``envs_per_actor``: environments per Ray actor, ``None`` for the default packing.
    ``max_restarts``: how often Ray restarts a lost actor before the run fails.
    """

    seed: int
    env_num: int
    group_n: int
    mode: str
    is_train: bool
    max_steps: int
    resources: Mapping[str, float]
    backend: str
    envs_per_actor: int | None
    max_restarts: int
    method: str
    run: str
    episode_log: Path | None
    sampler_state: dict | None

    @property
    def num_envs(self) -> int:
        return self.env_num * self.group_n

    @property
    def phase(self) -> str:
        return "training" if self.is_train else "validation"


def runtime_config(seed, env_num, group_n, mode, resources_per_worker, is_train, env_kwargs, *, method, run,
                   episode_log, sampler_state, backend, envs_per_actor, max_restarts) -> RuntimeConfig:
    """The builder's arguments as a :class:`RuntimeConfig`; see the module docstring."""
    _boolean("is_train", is_train)
    if not is_train and group_n != 1:
        raise ValueError(f"validation plays each board once: group_n must be 1, got {group_n!r}")
    if sampler_state is not None:
        if not is_train:
            raise ValueError("sampler_state is for training environments; validation uses no sampler")
        if not isinstance(sampler_state, dict):
            raise TypeError(f"sampler_state must be a dict from sampler_state(), got {type(sampler_state).__name__}")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    seed = integer("seed", seed, 0)
    env_num, group_n = check_sizes(env_num, group_n)
    return RuntimeConfig(
        seed=seed, env_num=env_num, group_n=group_n, mode=checked_mode(mode),
        is_train=is_train, max_steps=check_env_kwargs(env_kwargs), resources=check_resources(resources_per_worker),
        backend=backend, envs_per_actor=None if envs_per_actor is None else integer("envs_per_actor", envs_per_actor, 1),
        max_restarts=integer("max_restarts", max_restarts, 0), method=_label("method", method),
        run=f"seed{seed}" if run is None else _label("run", run), episode_log=check_episode_log(episode_log),
        sampler_state=sampler_state,
    )


def check_sizes(env_num, group_n, names: tuple[str, str] = ("env_num", "group_n")) -> tuple[int, int]:
    """``(env_num, group_n)`` if both are positive integers whose product is at most
    :data:`MAX_ENVIRONMENTS`; refused in one line naming the setting (``names``: how the
    caller's user spells them) otherwise."""
    env_num, group_n = integer(names[0], env_num, 1), integer(names[1], group_n, 1)
    if env_num * group_n > MAX_ENVIRONMENTS:
        culprits = [name for name, value in zip(names, (env_num, group_n)) if value > MAX_ENVIRONMENTS]
        raise ValueError(f"{names[0]}={env_num} x {names[1]}={group_n} asks for {env_num * group_n:,} environments, "
                         f"more than the runtime holds (at most {MAX_ENVIRONMENTS:,}: the driver keeps a record and "
                         f"draws an observation of each every step); lower {' or '.join(culprits or names)}")
    return env_num, group_n


def _boolean(name: str, value) -> bool:
    if not isinstance(value, bool):  # "False" is a non-empty string: truthy
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def _label(name: str, value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {value!r}")
    if not value.strip():
        raise ValueError(f"{name} must be a non-empty string naming it in the episode records, got {value!r}")
    return value


def check_env_kwargs(env_kwargs) -> int:
    """Refuse settings other than the stored boards'; return ``max_steps`` (default 15)."""
    if env_kwargs is None:
        env_kwargs = {}
    if not isinstance(env_kwargs, Mapping):
        raise TypeError(f"env_kwargs must be a mapping such as {{'max_steps': 15}}, got {type(env_kwargs).__name__}")
    env_kwargs = dict(env_kwargs)
    unknown = sorted(map(str, set(env_kwargs) - set(ENV_KWARGS)))
    if unknown:
        raise ValueError(f"env_kwargs has unknown keys {unknown}; expected some of {list(ENV_KWARGS)}")
    wanted = {"dim_room": DIM_ROOM, "num_boxes": NUM_BOXES, "search_depth": SEARCH_DEPTH}
    for key, value in wanted.items():
        given = env_kwargs.get(key, value)
        # dim_room comes as a list, a tuple, a numpy array or the trainer config's list type
        comparable = given
        if key == "dim_room" and not isinstance(given, (str, bytes)):
            try:
                comparable = tuple(given)
            except TypeError:  # 6 or None: no pair, refused below by name
                pass
        if comparable != value:
            raise ValueError(f"env_kwargs {key}={given!r} is not a setting of the stored boards: the fairness "
                             f"boards need {FAIRNESS_SETTINGS} (set them in the trainer's config)")
    return integer("env_kwargs max_steps (env.max_steps)", env_kwargs.get("max_steps", DEFAULT_MAX_STEPS), 1)


def check_resources(resources) -> dict[str, float]:
    """verl-agent's ``resources_per_worker`` (e.g. ``{"num_cpus": 0.1, "num_gpus": 0}``): Ray's
    resource names mapped to non-negative finite amounts, per environment."""
    if not isinstance(resources, Mapping):
        raise TypeError(f"resources_per_worker must be a mapping such as {{'num_cpus': 0.1}}, "
                        f"got {type(resources).__name__}")
    checked = {}
    for name, amount in dict(resources).items():
        if name not in RAY_RESOURCES:
            raise ValueError(f"resources_per_worker {name}: not a resource the runtime can ask Ray for; use "
                             f"{', '.join(RAY_RESOURCES)}")
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not math.isfinite(amount) or amount < 0:
            raise ValueError(f"resources_per_worker {name} must be a non-negative number, got {amount!r}")
        checked[name] = amount
    return checked


def check_episode_log(path) -> Path | None:
    """``episode_log`` as a Path, if records can be appended there: a regular file or a new
    name in an existing, writable folder. A FIFO or device is refused, since appending to
    it would block the trainer or write nowhere."""
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"episode_log must be a path, got {path!r}")
    path = Path(path)
    if str(path) in ("", "."):
        raise ValueError(f"episode_log must name a file, got {str(path)!r}")
    if not path.parent.is_dir():
        raise ValueError(f"episode_log {path}: the folder {path.parent} does not exist; create it first")
    problem = unwritable(path, "episode_log")
    if problem:
        raise ValueError(f"episode_log {problem}")
    return path
