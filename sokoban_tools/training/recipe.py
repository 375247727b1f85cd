"""A method's recipe: every setting with its value, where the value comes from, and whether it
deviates from the method's source (and why).

Each method module lists its recipe as :class:`Choice` records; the run manifest's notes carry
them (:func:`recipe_notes`), so a reader sees per setting whether it is, say, a line of
verl-agent's Sokoban launcher, a library default, or a choice made for a CPU-scale MLP trained
from scratch. The choices that hold for every method are here.
"""

from __future__ import annotations

from dataclasses import dataclass

NETWORK = [256, 256]  # hidden layers of the MLP every method trains
LEARNING_RATE = 3e-4  # every method's: stable-baselines3's PPO default
GRPO_LAUNCHER = "examples/grpo_trainer/run_sokoban.sh"
GIGPO_LAUNCHER = "examples/gigpo_trainer/run_sokoban.sh"
VERL_CONFIG = "verl/trainer/config/ppo_trainer.yaml"
CORE_ALGOS = "verl/trainer/ppo/core_algos.py"
CORE_GIGPO = "gigpo/core_gigpo.py"
SOURCES = ("the recipe's file paths are verl-agent's at commit 796ed31 (github.com/langfengQ/verl-agent); "
           "library defaults are stable-baselines3 2.9.2's")


@dataclass(frozen=True)
class Choice:
    """One setting: ``value``; ``source``, where it comes from; ``deviates``, whether it differs
    from the method's source; ``reason``, why, where it does."""

    name: str
    value: object
    source: str
    deviates: bool = False
    reason: str = ""

    def note(self) -> dict:
        note = {"value": self.value, "source": self.source, "deviates": self.deviates}
        if self.reason:
            note["reason"] = self.reason
        return note


def network_choice(source_network: str) -> Choice:
    """The one network of every method; ``source_network``: what the method's source trains."""
    return Choice("network", f"stable-baselines3 ActorCriticPolicy, net_arch {NETWORK}, tanh, over the one-hot grid",
                  "CPU-scale choice", deviates=True,
                  reason=f"{source_network}; a CPU benchmark trains a small MLP from scratch, the same for every "
                         f"method")


def recipe_notes(recipe: tuple[Choice, ...]) -> dict:
    """The manifest's record of ``recipe``: setting -> value, source, deviation."""
    return {choice.name: choice.note() for choice in recipe}
