"""The Inspect AI task: each validation board played once, with the turn ``evaluate`` plays.

    inspect eval sokoban_tools/sokoban_fairness --model openai-api/local/MODEL   # the visual turn
    inspect eval sokoban_tools/sokoban_fairness -T mode=tiny_rgb_array --model ...   # the text turn

A sample is a board; its solver (:func:`sokoban_turns`) plays it as
:class:`sokoban_tools.integrations.served.turn.Episode` plays it for ``evaluate``: each turn
one fresh user message built by the episode (verl-agent's prompt with the image, or the
text grid with its history), sent alone to the model, never a growing chat; the answer
through the runtime's projection into the environment, to its end or the horizon. The
request of each turn carries the seed ``evaluate`` would send (:func:`request_seed`), and
the task's decoding is verl-agent's validation one (overridable as any Inspect option,
``--temperature``, which the converted manifest then records). The episode's record,
as the episode log writes it, goes into the sample's store (:data:`EPISODE_KEY`), from
which :func:`sokoban_success` scores it and ``python -m sokoban_tools inspect-log`` writes
the log. The sample's messages are the turns in order, for the log viewer; the model
saw each of them alone (its model events show each request).

Imports are absolute: Inspect loads this file by its path when run from a clone.
"""

from __future__ import annotations

import sys
from functools import lru_cache

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.event import ModelEvent
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageUser, ContentImage, ContentText, GenerateConfig, ModelOutput, get_model
from inspect_ai.scorer import (CORRECT, INCORRECT, SampleScore, Score, Scorer, Target, metric, scorer,
                               value_to_float)
from inspect_ai.solver import Generate, Solver, TaskState, solver

from sokoban_tools.evaluation.stats import exact_interval
from sokoban_tools.integrations.inspect_task import EPISODE_KEY, PACKAGE, TASK, TASK_FORMAT
from sokoban_tools.integrations.served.evaluate import LAUNCHER
from sokoban_tools.integrations.served.turn import MODES, VISUAL_MODE, Episode, request_seed
from sokoban_tools.layout import VALIDATION_DATA
from sokoban_tools.protocol import DEFAULT_MAX_STEPS, PROTOCOL, STRATA, stratum_of
from sokoban_tools.records.boards import load_boards
from sokoban_tools.records.rows import BoardRow

# verl-agent's validation decoding, as evaluate defaults to it; one answer per request
DECODING = GenerateConfig(temperature=LAUNCHER["temperature"], top_p=LAUNCHER["top_p"],
                          max_tokens=LAUNCHER["response_length"], num_choices=1)


@lru_cache(maxsize=4)
def validation_boards(dataset_dir: str | None, hub_revision: str | None) -> tuple[dict[str, BoardRow], str]:
    """The checked validation rows by task id, and the file's SHA-256, from where ``evaluate`` reads them."""
    rows, sha256 = load_boards(VALIDATION_DATA, dataset_dir, hub_revision)
    return {row.task_id: row for row in rows}, sha256


def chat_message(message: dict) -> ChatMessageUser:
    """Inspect's form of one chat-completions user message the episode built: a string
    stays a string (the text turn), parts stay parts in order (the visual turn), so the
    provider sends the request ``evaluate`` sends."""
    content = message["content"]
    if isinstance(content, str):
        return ChatMessageUser(content=content)
    return ChatMessageUser(content=[ContentText(text=part["text"]) if part["type"] == "text"
                                    else ContentImage(image=part["image_url"]["url"]) for part in content])


def answer_text(output: ModelOutput) -> str:
    """The answer as the server sent it. Inspect's OpenAI-compatible providers take a ``<think>``
    block out of the text (into a reasoning part, stripped), which would change what the projection
    reads (the first ``<action>`` may stand inside it); the raw response of the request, which
    the sample's last model event keeps, holds the text whole. A provider whose response is of
    another shape gives its answer text, as it gives it to every Inspect solver."""
    event = next((e for e in reversed(transcript().events) if isinstance(e, ModelEvent)), None)
    text = response_text(event)
    return output.completion if text is None else text


def response_text(event: ModelEvent | None) -> str | None:
    """The answer's text in the raw response a model event keeps, if it keeps one of the
    OpenAI-compatible shape (see :func:`answer_text`); ``inspect-log`` replays a log's turns by it."""
    response = event.call.response if event is not None and event.call is not None else None
    try:
        content = response["choices"][0]["message"]["content"]
    except (TypeError, KeyError, IndexError):
        content = None
    return content if isinstance(content, str) else None


class PromptTooLong(RuntimeError):
    """A prompt longer than verl-agent's validation takes (its ``truncation='error'``)."""


@solver
def sokoban_turns(mode: str = VISUAL_MODE, history_length: int = LAUNCHER["history_length"], seed: int = 0,
                  max_prompt_length: int = LAUNCHER["max_prompt_length"], dataset_dir: str | None = None,
                  hub_revision: str | None = None) -> Solver:
    """Play the sample's board turn by turn (see the module docstring)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        rows, sha256 = validation_boards(dataset_dir, hub_revision)
        row = rows.get(str(state.sample_id))
        if row is None:
            raise ValueError(f"sample {state.sample_id!r} is not a validation board of {VALIDATION_DATA}")
        model = get_model()
        episode = Episode(row, DEFAULT_MAX_STEPS, mode, history_length)
        state.messages = []
        while not episode.done:
            messages = [chat_message(message) for message in episode.messages()]
            output = await model.generate(messages, config=GenerateConfig(
                seed=request_seed(seed, row.task_id, episode.turns)))
            prompt_tokens = output.usage.input_tokens if output.usage is not None else None
            if prompt_tokens is not None and prompt_tokens > max_prompt_length:
                raise PromptTooLong(f"the model counts {prompt_tokens} prompt tokens, over max_prompt_length "
                                    f"{max_prompt_length} (data.max_prompt_length), a prompt verl-agent's "
                                    f"validation refuses: serve the model verl-agent trains, or raise both limits")
            episode.answer(answer_text(output))
            state.messages.extend([*messages, output.message])
            state.output = output
        record = episode.record(str(model), f"seed{seed}", 0, sha256)
        state.store.set(EPISODE_KEY, {**record.as_dict(), "stratum": stratum_of(row.shortest_solution_length)})
        return state

    return solve


_AS_FLOAT = value_to_float()


def _wins(scores: list[SampleScore]) -> tuple[int, int]:
    """Boards solved, of those scored (a score reaches a metric as the epoch reducer's float)."""
    return sum(_AS_FLOAT(s.score.value) == 1.0 for s in scores), len(scores)


@metric
def success():
    """The share of boards solved."""
    def value(scores: list[SampleScore]) -> float:
        wins, boards = _wins(scores)
        return wins / boards if boards else float("nan")  # no board scored yet (Inspect asks at the start)
    return value


@metric
def exact_ci95():
    """The exact (Clopper-Pearson) 95% interval of the success, as ``score`` gives it."""
    def value(scores: list[SampleScore]) -> dict[str, float]:
        wins, boards = _wins(scores)
        low, high = exact_interval(wins, boards) if boards else (float("nan"), float("nan"))
        return {"ci95_low": low, "ci95_high": high}
    return value


@metric
def success_by_stratum():
    """The success on each stratum of shortest-solution length (the protocol's, in its order)."""
    def value(scores: list[SampleScore]) -> dict[str, float]:
        found = {}
        for label, _, _ in STRATA:
            chosen = [s for s in scores if (s.score.metadata or {}).get("stratum") == label]
            if chosen:
                wins, boards = _wins(chosen)
                found[f"{label} actions"] = wins / boards
        return found
    return value


@scorer(metrics=[success(), exact_ci95(), success_by_stratum()])
def sokoban_success() -> Scorer:
    """Whether the episode the solver played solved its board, from its record."""
    async def score(state: TaskState, target: Target) -> Score:
        record = state.store.get(EPISODE_KEY)
        if record is None:
            raise ValueError(f"sample {state.sample_id!r} holds no episode: the {TASK} task's solver "
                             f"(sokoban_turns) plays it")
        return Score(value=CORRECT if record["won"] else INCORRECT, answer=record["moves"],
                     explanation=f"{'solved' if record['won'] else 'not solved'} in {record['actions']} actions "
                                 f"(return {record['return']:.1f}); a shortest solution is {target.text}",
                     metadata={"stratum": record["stratum"]})
    return score


def _task_name() -> str | None:
    """The name to register the task by. Inspect namespaces a package's task (``sokoban_tools/...``)
    only when it finds the package installed under the package's own name, which this one,
    the distribution ``sokoban-fairness``, is not in an editable install: there the name is given
    namespaced, so that ``inspect eval sokoban_tools/sokoban_fairness`` finds it either way.
    Loaded by its path (a clone's ``inspect eval .../task.py``) it keeps its plain name."""
    from inspect_ai._util.package import get_installed_package_name

    if __name__.startswith(PACKAGE + ".") and get_installed_package_name(sys.modules[__name__]) is None:
        return f"{PACKAGE}/{TASK}"
    return None


@task(name=_task_name())
def sokoban_fairness(mode: str = VISUAL_MODE, history_length: int = LAUNCHER["history_length"], seed: int = 0,
                     max_prompt_length: int = LAUNCHER["max_prompt_length"], dataset_dir: str | None = None,
                     hub_revision: str | None = None) -> Task:
    """The 256 validation boards, once each, in the ``rgb_array`` (visual) or ``tiny_rgb_array``
    (text, ``history_length`` earlier turns shown) turn; ``seed`` seeds each request as
    ``evaluate --seed`` does; the boards come from ``dataset_dir`` or ``hub_revision`` as
    ``evaluate --dataset-dir/--hub-revision`` take them."""
    rows, sha256 = validation_boards(dataset_dir, hub_revision)
    samples = [Sample(id=row.task_id, input=row.board.xsb(), target=row.shortest_solution,
                      metadata={"stratum": stratum_of(row.shortest_solution_length),
                                "shortest_solution_length": row.shortest_solution_length})
               for row in rows.values()]
    return Task(dataset=MemoryDataset(samples, name="sokoban-fairness validation", shuffled=False),
                solver=sokoban_turns(mode, history_length, seed, max_prompt_length, dataset_dir, hub_revision),
                scorer=sokoban_success(), config=DECODING, epochs=1,
                metadata={"format": TASK_FORMAT, "protocol": PROTOCOL, "evaluation_sha256": sha256,
                          "action_horizon": DEFAULT_MAX_STEPS})
