"""The group methods compute what verl-agent's own functions compute, on real episodes.

verl-agent's ``core_algos.py`` and ``gigpo/core_gigpo.py`` at 796ed31 (../shared/verl-agent/,
byte-identical) are imported by path with ``verl`` stubbed in ``sys.modules``: GiGPO's module
imports ``verl.DataProto`` (a type its estimators never touch) and ``core_algos`` imports
``verl.utils.torch_functional`` for ``masked_mean``, given here as the masked mean it is. The
episodes are real: every environment of the group learner plays one episode of its board from
the fair sampler through a freshly seeded policy (near-uniform: wins, losses, groups of both,
states met again), several updates' worth. Every step row's advantage must agree to 1e-6 for
GRPO, Dr. GRPO, RLOO and GiGPO (``mean_norm``), and the actor loss with verl-agent's
``compute_policy_loss`` (clip and dual-clip), value and gradient.
"""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import pytest

from conftest import REPO
from unavailable import unavailable

VERL_AGENT = REPO.parent / "shared" / "verl-agent"
CORE_ALGOS = VERL_AGENT / "verl" / "trainer" / "ppo" / "core_algos.py"
CORE_GIGPO = VERL_AGENT / "gigpo" / "core_gigpo.py"
TOLERANCE = 1e-6


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def verl_agent():
    """verl-agent's two modules, imported with ``verl`` stubbed (the stubs removed afterwards)."""
    for path in (CORE_ALGOS, CORE_GIGPO):
        if not path.is_file():
            unavailable(f"verl-agent's {path.name} is missing at {path}; ../shared/verl-agent/ holds it")
    try:
        import torch
    except ImportError:
        unavailable("torch is not installed (verl-agent's estimators need it); pip install -e '.[train]'")
    verl = types.ModuleType("verl")
    verl.DataProto = object
    utils = types.ModuleType("verl.utils")
    functional = types.ModuleType("verl.utils.torch_functional")
    functional.masked_mean = lambda values, mask, axis=None: (values * mask).sum(axis) / mask.sum(axis)
    verl.utils, utils.torch_functional = utils, functional
    stubs = {"verl": verl, "verl.utils": utils, "verl.utils.torch_functional": functional}
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        yield types.SimpleNamespace(core=_load(CORE_ALGOS, "verl_agent_core_algos"),
                                    gigpo=_load(CORE_GIGPO, "verl_agent_core_gigpo"), torch=torch)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@pytest.fixture(scope="module")
def batches(sb3):
    """Three updates' step rows of real episodes (each update: 32 boards x 8 episodes)."""
    import torch

    from sokoban_tools.training import group_learner, grpo

    torch.manual_seed(7)
    learner = group_learner.build({"observation": "grid"}, seed=7, estimator=grpo.advantages)
    made = []
    try:
        for _ in range(3):
            made.append(group_learner.step_rows(learner.collect()))
            learner.updates += 1
    finally:
        learner.close()
    return made


def _theirs(rows, torch):
    """The batch as verl-agent's trainer hands it to the estimators: one row per step, the
    episode's return as the row's score (one token: response length 1)."""
    from sokoban_tools.training.step_rows import episode_returns

    return {"token_level_rewards": torch.tensor(episode_returns(rows), dtype=torch.float64).unsqueeze(-1),
            "response_mask": torch.ones(len(rows.reward), 1, dtype=torch.float64),
            "index": np.array([f"group-{g}" for g in rows.group], dtype=object),
            "traj_index": np.array([f"episode-{e}" for e in rows.episode], dtype=object)}


def test_the_batches_hold_wins_losses_mixed_groups_and_repeated_states(batches):
    from sokoban_tools.training.step_rows import episode_returns, key_index

    for rows in batches:
        won = episode_returns(rows) > 0
        mixed = {g for g in np.unique(rows.group) if won[rows.group == g].any() and not won[rows.group == g].all()}
        lost = {g for g in np.unique(rows.group) if not won[rows.group == g].any()}
        assert mixed and lost, "every batch needs groups with wins and losses and groups of losses only"
        anchors = np.bincount(key_index(rows.group, rows.state))
        assert (anchors > 1).any() and (anchors == 1).any()  # states met again, and states met once


@pytest.mark.parametrize("method, by_std", [("grpo", True), ("drgrpo", False)])
def test_grpo_and_dr_grpo_equal_verl_agents_compute_grpo_outcome_advantage(verl_agent, batches, method, by_std):
    from sokoban_tools.training.methods import BY_NAME

    for rows in batches:
        expected, _ = verl_agent.core.compute_grpo_outcome_advantage(**_theirs(rows, verl_agent.torch),
                                                                     norm_adv_by_std_in_grpo=by_std)
        ours = BY_NAME[method].advantages(rows)
        np.testing.assert_allclose(ours, expected.squeeze(-1).numpy(), rtol=0, atol=TOLERANCE)
        assert np.abs(ours).max() > 0.1  # not all zero


def test_rloo_equals_verl_agents_compute_rloo_outcome_advantage(verl_agent, batches):
    from sokoban_tools.training import rloo

    for rows in batches:
        expected, _ = verl_agent.core.compute_rloo_outcome_advantage(**_theirs(rows, verl_agent.torch))
        np.testing.assert_allclose(rloo.advantages(rows), expected.squeeze(-1).numpy(), rtol=0, atol=TOLERANCE)


def test_gigpo_equals_verl_agents_compute_gigpo_outcome_advantage_in_mean_norm(verl_agent, batches):
    from sokoban_tools.training import gigpo
    from sokoban_tools.training.step_rows import discounted_returns

    torch = verl_agent.torch
    for rows in batches:
        theirs = _theirs(rows, torch)
        # the step returns as verl-agent's trainer computes them (in float32), equal to the bit
        batch = types.SimpleNamespace(
            non_tensor_batch={"rewards": rows.reward, "traj_uid": theirs["traj_index"],
                              "active_masks": np.ones(len(rows.reward), dtype=bool)},
            batch={"input_ids": torch.zeros(1)})
        step_returns = verl_agent.gigpo.compute_step_discounted_returns(batch, gigpo.GAMMA)
        np.testing.assert_array_equal(discounted_returns(rows, gigpo.GAMMA), step_returns.numpy())  # float32 too
        expected, _ = verl_agent.gigpo.compute_gigpo_outcome_advantage(
            theirs["token_level_rewards"], step_returns, theirs["response_mask"], rows.state,
            theirs["index"], theirs["traj_index"], step_advantage_w=gigpo.STEP_ADVANTAGE_W, mode=gigpo.MODE)
        ours = gigpo.advantages(rows)
        np.testing.assert_allclose(ours, expected.squeeze(-1).numpy(), rtol=0, atol=TOLERANCE)
        assert np.abs(gigpo.step_advantages(rows)).max() > 0.1  # the step term is not all zero


def test_the_actor_loss_equals_verl_agents_compute_policy_loss_with_dual_clip(verl_agent, batches):
    from sokoban_tools.training import group_learner, grpo

    torch = verl_agent.torch
    generator = torch.Generator().manual_seed(3)
    for rows in batches:
        advantages = torch.as_tensor(grpo.advantages(rows), dtype=torch.float32)
        old = -torch.rand(len(advantages), generator=generator) * 3
        # ratios from 0.05 to 20: inside the clip, beyond it, and past the dual clip's 3
        new = old + (torch.rand(len(advantages), generator=generator) * 6 - 3)
        ours_new, their_new = new.clone().requires_grad_(), new.clone().requires_grad_()
        ours = group_learner.policy_loss(old, ours_new, advantages)
        theirs, *_ = verl_agent.core.compute_policy_loss(
            old.unsqueeze(-1), their_new.unsqueeze(-1), advantages.unsqueeze(-1), torch.ones(len(new), 1),
            cliprange=group_learner.CLIP_RATIO, clip_ratio_c=group_learner.CLIP_RATIO_C)
        ours.backward()
        theirs.backward()
        assert abs(ours.item() - theirs.item()) <= TOLERANCE
        np.testing.assert_allclose(ours_new.grad.numpy(), their_new.grad.numpy(), rtol=0, atol=TOLERANCE)
        ratio = torch.exp(new - old)
        assert ((ratio > 3) & (advantages < 0)).any() and ((ratio - 1).abs() < 0.2).any()  # both clips exercised
