"""A mirror of the patched ``RayPPOTrainer.fit`` loop, killed and resumed (helper for tests, not a test file).

``test_verl_agent_resume.py`` runs it as a script in a patched copy of ../shared/verl-agent::

    python tests/verl_agent_fit.py '{"tree": ..., "work": ..., "runs": [...]}'

It imports the tree and the project once, then plays each run in a forked child, so a
``SIGKILL`` ends a real process mid-write and the next child starts from what is on disk,
as a restarted trainer does. A child composes the tree's ``ppo_trainer.yaml`` with
``run_sokoban.sh``'s overrides, ``env.fairness=true`` and the run's overrides, calls the
tree's real ``make_envs`` (local backend) and then does what the patched ``fit`` does, in
its order: ``_load_checkpoint`` (the tracker file, ``global_step_N/``, the patch's
``restore_checkpoint_state``), ``begin_run``, validation before training (``_validate``
over ``validation_batches``), then per step ``label_training_update`` and a rollout,
validation every ``test_freq`` and at the last step, ``_save_checkpoint`` every
``save_freq`` and at the last step (``data.pt``, the patch's ``save_checkpoint_state``,
then ``latest_checkpointed_iteration.txt``), ``record_costs``, and ``end_run`` at the end.
Only the model is scripted: deterministic answers from each board's stored solution,
malformed ones mixed in (:class:`verl_agent_run.ScriptedModel`), or with ``"model":
"solution"`` the solutions alone (shorter rollouts), every environment stepped every turn
as ``vanilla_multi_turn_loop`` does.

A run's ``kill`` is ``[event, k]``: the child kills itself with ``SIGKILL`` at the k-th
``rollout`` (a training step's turn), ``validation`` (a validation turn), ``checkpoint``
(inside the checkpoint state's write: temp file written, not yet renamed) or ``append``
(a log append, half its bytes written: a torn line); ``kill_after`` (seconds) makes the
parent kill the child at that time instead. The report gives each run's exit, the log's
bytes and side files after it, the sampler's last state, and for ``memory_at`` (updates)
the RSS and the episode records still alive after those updates.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EVENTS = ("rollout", "validation", "checkpoint", "append")
COSTS = {"timing_s/step": 1.5, "timing_s/gen": 1.0, "perf/total_num_tokens": 100}


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def records_alive() -> int:
    """Episode records still referenced anywhere in this process."""
    import gc

    from sokoban_tools.records.episodes import EpisodeRecord

    gc.collect()
    return sum(isinstance(thing, EpisodeRecord) for thing in gc.get_objects())


class Killer:
    """SIGKILL this process at the k-th occurrence of an event; counts every event."""

    def __init__(self, kill):
        self.event, self.k = (kill[0], kill[1]) if kill else (None, 0)
        self.counts = dict.fromkeys(EVENTS, 0)

    def at(self, event: str) -> bool:
        """Count ``event``; True when this is the occurrence to die at (the caller dies)."""
        self.counts[event] += 1
        return event == self.event and self.counts[event] == self.k

    def die(self):
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)


class SolutionModel:
    """Answers each board's stored solution, well formed, then ``still`` (a cheaper rollout)."""

    def __init__(self, plans: list[list[int]], max_steps: int):
        self.plans = plans

    def answers(self, turn: int) -> tuple[list[str], list[int]]:
        from verl_agent_run import ACTION_WORDS

        actions = [plan[turn] if turn < len(plan) else 0 for plan in self.plans]
        return [f"<think>{turn}</think><action>{ACTION_WORDS.get(a, 'still')}</action>" for a in actions], actions


def rollout(manager, solutions, max_steps, killer: Killer, event: str, model_class) -> None:
    """One ``vanilla_multi_turn_loop`` of environment calls with the scripted model."""
    import numpy as np

    manager.reset(kwargs=None)
    model = model_class([solutions[task] for task in manager.envs.task_ids], max_steps)
    is_done = None
    for turn in range(max_steps):
        texts, _ = model.answers(turn)
        if killer.at(event):
            killer.die()
        _, _, dones, _ = manager.step(texts)
        is_done = dones if is_done is None else np.logical_or(is_done, dones)
        if is_done.all():
            break


class Trainer:
    """The parts of ``RayPPOTrainer`` the fair hooks see, driven as the patched ``fit`` drives them."""

    def __init__(self, config, solutions, killer: Killer, memory: dict | None, model_class):
        from agent_system.environments import make_envs

        self.config, self.solutions, self.killer, self.memory = config, solutions, killer, memory
        self.model = model_class
        self.envs, self.val_envs = make_envs(config)
        self.global_steps = 0
        self.total_training_steps = config.trainer.total_training_steps

    def _validate(self):
        from sokoban_tools.integrations.verl_agent.hooks import validation_batches

        for _ in validation_batches(Rows(), self.val_envs, self.global_steps):
            rollout(self.val_envs, self.solutions, self.config.env.max_steps, self.killer, "validation", self.model)

    def _save_checkpoint(self):
        import torch
        from sokoban_tools.integrations.verl_agent.resume import save_checkpoint_state

        folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
        os.makedirs(folder, exist_ok=True)
        torch.save({"steps": self.global_steps}, os.path.join(folder, "data.pt"))
        save_checkpoint_state(self.envs, folder, self.global_steps)
        with open(os.path.join(self.config.trainer.default_local_dir, "latest_checkpointed_iteration.txt"), "w") as f:
            f.write(str(self.global_steps))

    def _load_checkpoint(self):
        from sokoban_tools.integrations.verl_agent.resume import restore_checkpoint_state

        if self.config.trainer.resume_mode == "disable":
            return 0
        folder = find_latest_ckpt_path(self.config.trainer.default_local_dir)
        if self.config.trainer.resume_mode == "resume_path":
            folder = self.config.trainer.resume_from_path
        if folder is None:
            return 0
        self.global_steps = int(folder.split("global_step_")[-1])
        restore_checkpoint_state(self.envs, folder)

    def fit(self):
        from sokoban_tools.integrations.verl_agent import hooks
        from sokoban_tools.integrations.verl_agent.resume import begin_run, end_run

        trainer = self.config.trainer
        self.global_steps = 0
        self._load_checkpoint()
        begin_run(self.envs, self.global_steps)
        if trainer.get("val_before_train", True):
            self._validate()
        self.global_steps += 1
        while True:
            is_last_step = self.global_steps >= self.total_training_steps
            hooks.label_training_update(self.envs, self.global_steps)
            rollout(self.envs, self.solutions, self.config.env.max_steps, self.killer, "rollout", self.model)
            if trainer.test_freq > 0 and (is_last_step or self.global_steps % trainer.test_freq == 0):
                self._validate()
            if trainer.save_freq > 0 and (is_last_step or self.global_steps % trainer.save_freq == 0):
                self._save_checkpoint()
            hooks.record_costs(self.envs, COSTS, 1)
            if self.memory is not None and self.global_steps in self.memory["at"]:
                self.memory["rss_kb"][str(self.global_steps)] = rss_kb()
                self.memory["records_alive"][str(self.global_steps)] = records_alive()
            self.global_steps += 1
            if is_last_step:
                end_run(self.envs)
                return


def find_latest_ckpt_path(folder: str):
    """verl's ``find_latest_ckpt_path`` (not in the reference copy): the ``global_step_N`` the
    tracker file names, ``None`` without a tracker or that folder."""
    tracker = os.path.join(folder, "latest_checkpointed_iteration.txt")
    if not os.path.exists(tracker):
        return None
    with open(tracker) as f:
        path = os.path.join(folder, f"global_step_{int(f.read().strip())}")
    return path if os.path.exists(path) else None


class Rows:
    """The validation dataloader ``validation_batches`` reads: rows only size the batches."""

    dataset = [{"data_source": "visual"}] * 128

    @staticmethod
    def collate_fn(rows):
        return {"data_source": [row["data_source"] for row in rows]}


def instrument(killer: Killer) -> None:
    """Count log appends and checkpoint-state writes, and make their kill points real: die
    half-way through a log append (a torn line), and between the checkpoint state's
    temporary file and its rename."""
    import sokoban_tools.files as files
    import sokoban_tools.integrations.verl_agent.resume as resume
    import sokoban_tools.records.episodes as episodes

    original = episodes.EpisodeWriter.append

    def append(self, records):
        records = list(records)
        if killer.at("append"):
            data = "".join(r.to_line() + "\n" for r in records).encode()
            with open(self.path, "ab") as handle:
                handle.write(data[: len(data) // 2])
            killer.die()
        return original(self, records)

    def write_atomic(path, data):
        if Path(path).name == resume.STATE_NAME and killer.at("checkpoint"):
            files.write_temp(Path(path), data)
            killer.die()
        files.write_atomic(path, data)

    episodes.EpisodeWriter.append = append
    resume.write_atomic = write_atomic


def child(run: dict, config, solutions, status: Path) -> None:
    """One trainer process: the fit mirror, then its sampler's state and memory figures."""
    killer = Killer(run.get("kill"))
    instrument(killer)
    memory = {"at": set(run.get("memory_at", [])), "rss_kb": {}, "records_alive": {}} if run.get("memory_at") else None
    from verl_agent_run import ScriptedModel

    model = SolutionModel if run.get("model") == "solution" else ScriptedModel
    trainer = Trainer(config, solutions, killer, memory, model)
    trainer.fit()
    report = {"sampler": trainer.envs.envs.sampler_state(), "rss_kb": memory and memory["rss_kb"],
              "records_alive": memory and memory["records_alive"],
              "events": killer.counts}
    status.write_text(json.dumps(report))


def prepare(folder: Path, operation: dict) -> None:
    """Between runs, as a user or a disk might: ``{"copy": folder}`` (another run's folder, into
    this one), ``{"copy_file": path, "to": path}``, ``{"delete": path}``, ``{"tear": path}`` (its first
    100 bytes), ``{"replace_once": path, "old": text, "new": text}``, ``{"edit_lines": path, "keep": n}``
    or ``{"edit": path, "key": [keys...], "value": v}`` (a JSON file's entry) under ``folder``."""
    if "copy" in operation:
        shutil.copytree(folder.parent / operation["copy"], folder, dirs_exist_ok=True)
        return
    if "copy_file" in operation:
        shutil.copyfile(folder / operation["copy_file"], folder / operation["to"])
        return
    if "tear" in operation:  # a half-written file: its first 100 bytes
        path = folder / operation["tear"]
        path.write_bytes(path.read_bytes()[:100])
        return
    if "delete" in operation:
        (folder / operation["delete"]).unlink()
        return
    if "replace_once" in operation:  # a text file's first ``old`` made ``new`` (a record edited)
        path = folder / operation["replace_once"]
        text = path.read_text()
        assert operation["old"] in text, operation
        path.write_text(text.replace(operation["old"], operation["new"], 1))
        return
    if "edit_lines" in operation:  # a text file cut to its first ``keep`` lines
        path = folder / operation["edit_lines"]
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:operation["keep"]]))
        return
    path = folder / operation["edit"]
    document = json.loads(path.read_text())
    node = document
    for key in operation["key"][:-1]:
        node = node[key]
    node[operation["key"][-1]] = operation["value"]
    path.write_text(json.dumps(document))


def main(args: dict) -> dict:
    tree, work = Path(args["tree"]), Path(args["work"])
    sys.path.insert(0, str(tree))
    sys.path.insert(0, str(HERE))
    from hydra import compose, initialize_config_dir

    import sokoban_tools.integrations.verl_agent.hooks as integration
    from functools import partial
    from sokoban_tools.records.boards import load_boards
    from sokoban_tools.records.episodes import side_files
    from sokoban_tools.rules.board import from_lurd
    from verl_agent_run import launcher_overrides

    import agent_system.environments  # noqa: F401 - imported once, before the children fork
    import torch  # noqa: F401

    integration.build_sokoban_envs = partial(integration.build_sokoban_envs, backend="local")
    solutions = {}
    for name in ("fairness/evaluation.jsonl", "fairness/train.jsonl"):
        rows, _ = load_boards(name)
        solutions.update((row.task_id, from_lurd(row.shortest_solution)) for row in rows)
    reports = []
    with initialize_config_dir(config_dir=str(tree / "verl" / "trainer" / "config"), version_base=None):
        for number, run in enumerate(args["runs"]):
            folder = work / run["folder"]
            folder.mkdir(parents=True, exist_ok=True)
            config = compose("ppo_trainer", overrides=launcher_overrides(tree) + [
                "env.fairness=true", f"trainer.default_local_dir={folder / 'checkpoints'}", *run["overrides"]])
            for operation in run.get("prepare", []):
                prepare(folder, operation)
            status = work / f"status-{number}.json"
            started = time.monotonic()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    os.chdir(folder)
                    child(run, config, solutions, status)
                    code = 0
                except BaseException as err:  # noqa: BLE001 - reported to the parent
                    (work / f"error-{number}.txt").write_text(f"{type(err).__name__}: {err}")
                finally:
                    sys.stdout.flush()
                    os._exit(code)
            reaped = (0, 0)
            if run.get("kill_after") is not None:
                deadline = started + run["kill_after"]
                while time.monotonic() < deadline and reaped == (0, 0):
                    reaped = os.waitpid(pid, os.WNOHANG)
                    time.sleep(0.01)
                if reaped == (0, 0):
                    os.kill(pid, signal.SIGKILL)
            _, code = reaped if reaped != (0, 0) else os.waitpid(pid, 0)
            log = Path(config.env.fairness_log)
            error = work / f"error-{number}.txt"
            reports.append({
                "killed": os.WIFSIGNALED(code) and os.WTERMSIG(code) == signal.SIGKILL,
                "exit": os.WEXITSTATUS(code) if os.WIFEXITED(code) else None,
                "error": error.read_text() if error.exists() else None,
                "seconds": round(time.monotonic() - started, 2),
                "log": log.read_text() if log.exists() else None,
                "side_files": {p.name: p.read_text() for p, _, _ in side_files(log)},
                **(json.loads(status.read_text()) if status.exists() else {}),
            })
            status.unlink(missing_ok=True)
    return {"runs": reports}


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(json.loads(sys.argv[1]))))
