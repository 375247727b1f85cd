"""The processes that step the environments: Ray actors each holding a slice of them, or this process.

verl-agent starts one Ray actor per environment, so every ``step`` of 256
environments costs 256 round trips although one step takes microseconds. Here
each actor is an :class:`EnvSlice` of up to ``envs_per_actor`` environments
(default :data:`DEFAULT_ENVS_PER_ACTOR`, fewer if the largest node cannot hold
that many) and a ``reset``/``step`` is one call per actor. An actor
asks Ray for ``resources_per_worker`` (per environment, as verl-agent means it)
times the environments it holds; a request no node of the cluster can ever grant
is refused at build (:func:`ray_actor_size`) instead of waiting forever.

The workers are shared by the environments of one :class:`WorkerPool`, which
what builds them owns (the patched trainer's ``make_fair_envs`` one for its training
and validation phases): a phase's ``reset()`` takes them, ending the other phase's
open episodes, so the two phases never hold separate sets of live workers, although
verl-agent never closes its environments. Workers of other settings (another
backend's aside) are released before new ones start.

Lost Ray actors are restarted and their environments rebuilt step-exact from the
driver's :class:`~sokoban_tools.runtime.recovery.Episode` records: every call carries
the count of calls its slice has carried out, so an actor restarted empty is found
by its state, whenever it died (:mod:`sokoban_tools.runtime.recovery`). An actor
that Ray is still restarting (slow on a busy node) is waited for, up to
:data:`RESTART_TIMEOUT` seconds; only a new process behind the actor counts as a
restart spent.
"""

from __future__ import annotations

import time
import uuid
from typing import Mapping

from ..rules.board import Board
from .config import RAY_RESOURCES
from .env import FairSokobanEnv
from .recovery import Episode, StaleSlice, WorkerError, lost

# A Ray call costs about a millisecond however little it carries, and a step of 128
# environments inside an actor about as much: few large slices keep a step's round
# trips few (verl-agent's launcher's 256 training environments take two actors).
DEFAULT_ENVS_PER_ACTOR = 128
# How long a Ray actor that does not answer is waited for (restarting on a busy node, or waiting
# for the resources to restart) before its environments are declared lost: an actor restarts in
# about a second on an idle machine and in tens of seconds on a saturated one.
RESTART_TIMEOUT = 300.0


class EnvironmentFailure(Exception):
    """An environment of a slice raised: its slot and what it raised (picklable, for Ray)."""

    def __init__(self, slot: int, method: str, error: str):
        super().__init__(slot, method, error)
        self.slot, self.method, self.error = slot, method, error


class EnvSlice:
    """Some environments in one process (a Ray actor's, or the driver's), addressed by slot.

    Results carry each environment's position, its ``(player, box)`` cells, instead of an
    observation: the driver knows every room and draws the observations itself
    (:func:`sokoban_tools.runtime.env.render`), so a step of 256 environments sends a few
    kilobytes back instead of 256 images of 27 KB.
    """

    def __init__(self, size: int):
        self.envs: list[FairSokobanEnv | None] = [None] * size
        self.calls = 0  # the resets and steps carried out: 0 again in an actor Ray restarted
        self.incarnation = uuid.uuid4().hex  # a new one in every process Ray restarts the actor in

    def reset(self, calls: int, slots: list[int], games: list[tuple[Board, int]]) -> list:
        """``(position, info)`` for each environment, reset to its ``(board, max_steps)``."""
        self._expect(calls)
        results = [self._start(slot, board, max_steps) for slot, (board, max_steps) in zip(slots, games)]
        self.calls += 1
        return results

    def step(self, calls: int, slots: list[int], actions: list[int]) -> list:
        """``(position, reward, done, info)`` for each environment, after its action."""
        self._expect(calls)
        results = [self._play(slot, action) for slot, action in zip(slots, actions)]
        self.calls += 1
        return results

    def restore(self, calls: int, slots: list[int], plans: list) -> str:
        """Rebuild environments from the driver's records, ``(board, max_steps, actions)`` each
        (``None``: not played yet), and take the driver's count of calls carried out; returns
        this process's :meth:`identity`."""
        for slot, plan in zip(slots, plans):
            if plan is not None:
                board, max_steps, actions = plan
                self._start(slot, board, max_steps)
                for action in actions:
                    self._play(slot, action)
        self.calls = calls
        return self.incarnation

    def identity(self) -> str:
        """Which process holds the slice: another one after each restart, so the driver counts
        the restarts it sees (an actor still restarting is no new one)."""
        return self.incarnation

    def _expect(self, calls: int) -> None:
        """Refuse a call made for another state than this slice's (before changing anything)."""
        if calls != self.calls:
            raise StaleSlice(self.calls, calls)

    def _start(self, slot: int, board: Board, max_steps: int) -> tuple:
        self.envs[slot] = FairSokobanEnv(max_steps=max_steps)
        info = self._run(slot, "start", board)
        return self._position(slot), info

    def _play(self, slot: int, action: int) -> tuple:
        reward, done, info = self._run(slot, "play", action)
        return self._position(slot), reward, done, info

    def _position(self, slot: int) -> tuple:
        board = self.envs[slot].board
        return board.player, board.box

    def ping(self) -> bool:
        return True

    def _run(self, slot: int, method: str, *args):
        try:
            return getattr(self.envs[slot], method)(*args)
        except Exception as err:  # noqa: BLE001 - named by slot, raised again in the driver
            raise EnvironmentFailure(slot, method, repr(err)) from None


class Workers:
    """Environments 0..size-1 in slices of up to ``envs_per_actor``; see the module docstring."""

    def __init__(self, key: tuple, envs_per_actor: int):
        self.key = key
        self.envs_per_actor = envs_per_actor
        self.places: list[tuple[int, int]] = []  # environment index -> (slice, slot)
        self.calls: list[int] = []  # slice -> the calls it has carried out, which the next one expects
        self.episodes: list[Episode] = []  # environment index -> its current episode (the holder's records)
        self.holder = None  # the environments whose episodes these play (see WorkerPool.lease)

    @property
    def size(self) -> int:
        return len(self.places)

    def ensure(self, count: int) -> None:
        """Start slices until ``count`` environments exist."""
        while self.size < count:
            size = min(self.envs_per_actor, count - self.size)
            number = self._start_slice(size)
            self.calls.append(0)
            self.places += [(number, slot) for slot in range(size)]

    def reset(self, episodes: list[Episode]) -> list:
        """Reset environments 0..len(episodes)-1 to their episodes' boards, which become the
        records these workers rebuild from; the results of :meth:`EnvSlice.reset`, in order."""
        results = self._call("reset", [(e.start, e.max_steps) for e in episodes], lambda slots, items: (slots, items))
        self.episodes = episodes
        return results

    def step(self, actions: list[int]) -> list:
        """The results of :meth:`EnvSlice.step`, one action per environment, in environment order;
        each action joins its episode's record once carried out."""
        results = self._call("step", actions, lambda slots, items: (slots, items))
        for episode, action in zip(self.episodes, actions):
            episode.sent.append(action)
        return results

    def _call(self, method: str, items: list, arguments) -> list:
        """``method`` on environments 0..len(items)-1, one call per slice carrying the slice's count
        of calls; results in environment order, which is slice order, since :meth:`ensure` numbers
        environments slice after slice."""
        grouped: dict[int, tuple[list, list[int]]] = {}  # slice -> (its items, their slots)
        for item, (number, slot) in zip(items, self.places):
            mine, slots = grouped.setdefault(number, ([], []))
            mine.append(item)
            slots.append(slot)
        results = self._run(method, {number: (self.calls[number], *arguments(slots, mine))
                                     for number, (mine, slots) in grouped.items()})
        for number in grouped:
            self.calls[number] += 1
        return [result for number in grouped for result in results[number]]

    def _failure(self, number: int, failure: EnvironmentFailure) -> WorkerError:
        index = self.places.index((number, failure.slot))
        return WorkerError(f"worker {index} failed in {failure.method}: {failure.error}")

    def _indices_of(self, number: int) -> list[int]:
        return [i for i, (n, _) in enumerate(self.places) if n == number]

    def _start_slice(self, size: int) -> int:
        raise NotImplementedError

    def _run(self, method: str, jobs: dict[int, tuple]) -> dict[int, list]:
        """``method(*jobs[n])`` on slice ``n`` for each ``n``, in parallel; results by slice."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class LocalWorkers(Workers):
    """The environments in this process: for debugging, and for exercising the driver at full
    size (1,024 environments) without processes."""

    def __init__(self, key: tuple, envs_per_actor: int, resources: Mapping, max_restarts: int):
        super().__init__(key, envs_per_actor)
        self.slices: list[EnvSlice] = []

    def _start_slice(self, size: int) -> int:
        self.slices.append(EnvSlice(size))
        return len(self.slices) - 1

    def _run(self, method, jobs):
        results = {}
        for number, args in jobs.items():
            try:
                results[number] = getattr(self.slices[number], method)(*args)
            except EnvironmentFailure as failure:
                raise self._failure(number, failure) from None
            except StaleSlice as stale:  # nothing restarts a slice of this process
                raise WorkerError(f"the slice of workers {self._indices_of(number)} has carried out "
                                  f"{stale.found} calls, the driver counts {stale.expected}") from None
        return results

    def close(self) -> None:
        self.slices, self.places, self.calls, self.episodes = [], [], [], []


class RayWorkers(Workers):
    """Ray actors, each an :class:`EnvSlice`, restarted by Ray up to ``max_restarts`` times when lost.

    An actor that does not answer is waited for up to ``restart_timeout`` seconds (Ray reports
    one it is restarting as ``ActorUnavailableError``, as many times as it is asked); one Ray
    reports dead (``ActorDiedError``: its restarts spent, or killed for good) is lost at once.
    ``restarts`` counts, per actor, the new processes the driver has met behind it.
    """

    def __init__(self, key: tuple, envs_per_actor: int, resources: Mapping, max_restarts: int):
        import ray

        super().__init__(key, envs_per_actor)
        self._ray = ray
        self._resources = dict(resources)
        self.max_restarts = max_restarts
        self.restart_timeout = RESTART_TIMEOUT
        self._actor_class = ray.remote(max_restarts=max_restarts, max_task_retries=0)(EnvSlice)
        self.actors: list = []
        self.restarts: list[int] = []  # slice -> the restarts seen
        self._incarnations: list = []  # slice -> its process's identity, or (until needed) the call asking it

    def _start_slice(self, size: int) -> int:
        options = {name: _amount(amount * size) for name, amount in self._resources.items()}
        # spread over the nodes, so that losing one loses few environments
        actor = self._actor_class.options(scheduling_strategy="SPREAD", **options).remote(size)
        self.actors.append(actor)
        self.restarts.append(0)
        self._incarnations.append(actor.identity.remote())  # its first call: answered before any reset
        return len(self.actors) - 1

    def _run(self, method, jobs):
        ray = self._ray
        deadline = time.monotonic() + self.restart_timeout
        futures = {number: getattr(self.actors[number], method).remote(*args) for number, args in jobs.items()}
        try:  # one wait for all actors
            return dict(zip(futures, ray.get(list(futures.values()), timeout=self.restart_timeout)))
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError, ray.exceptions.GetTimeoutError):
            return {number: self._get(number, method, jobs[number], future, deadline)
                    for number, future in futures.items()}

    def _get(self, number: int, method: str, args: tuple, future, deadline: float):
        """One actor's result. An actor Ray is restarting (``ActorUnavailableError``) is asked
        again, with growing pauses, until ``deadline``; one that answers from another state
        than the driver's (:class:`StaleSlice`: restarted empty) or after being unavailable
        gets its environments rebuilt from the episode records, and the call again."""
        ray, actor = self._ray, self.actors[number]
        indices = self._indices_of(number)
        pause, rebuild = 0.05, False
        while True:
            try:
                if rebuild:
                    plans = [self.episodes[i].replay() if i < len(self.episodes) else None for i in indices]
                    restored = actor.restore.remote(args[0], [self.places[i][1] for i in indices], plans)
                    self._met(number, ray.get(restored, timeout=_left(deadline)))
                    future = getattr(actor, method).remote(*args)
                return ray.get(future, timeout=_left(deadline))
            except ray.exceptions.ActorUnavailableError as error:  # restarting, or out of reach a moment
                cause = error
            except ray.exceptions.RayActorError as error:  # confirmed dead: Ray restarts it no more
                raise lost(self.episodes, indices, f"Ray reports their actor dead after the {self.restarts[number]} "
                           f"restarts seen (max_restarts={self.max_restarts})", error) from None
            except ray.exceptions.GetTimeoutError as error:
                raise self._timed_out(indices, error) from None
            except ray.exceptions.RayTaskError as error:
                if isinstance(error.cause, EnvironmentFailure):
                    raise self._failure(number, error.cause) from None
                if not isinstance(error.cause, StaleSlice):
                    raise WorkerError(f"the actor of workers {indices} failed in {method}: "
                                      f"{error.cause!r}") from error.cause
                rebuild = True
                continue  # restarted and answering: rebuild now
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._timed_out(indices, cause)
            time.sleep(min(pause, left))  # the whole bound, as the message says: never given up early
            pause, rebuild = min(2 * pause, 1.0), True

    def _met(self, number: int, incarnation: str) -> None:
        """Count a restart if ``incarnation`` is another process than the actor's last one."""
        known = self._incarnations[number]
        if not isinstance(known, str):  # the first process's answer, unless it died before giving one
            try:
                known = self._ray.get(known, timeout=1)
            except self._ray.exceptions.RayError:  # GetTimeoutError among them
                known = None
        if incarnation != known:
            self.restarts[number] += 1
        self._incarnations[number] = incarnation

    def _timed_out(self, indices: list[int], cause: BaseException) -> WorkerError:
        return lost(self.episodes, indices, f"their Ray actor did not answer within {self.restart_timeout:g} s "
                    f"(restarting on a busy node, or waiting for the resources to restart)", cause)

    def close(self, timeout: float = 60.0) -> None:
        """Kill every actor and return once each is gone: a kill is asynchronous, and a
        trainer that starts other work next must get the resources back."""
        for actor in self.actors:
            self._ray.kill(actor)  # no_restart: gone for good
        deadline = time.monotonic() + timeout
        for number, actor in enumerate(self.actors):
            while not self._is_gone(actor):
                if time.monotonic() > deadline:
                    raise WorkerError(f"the actor of workers {self._indices_of(number)} was killed but still "
                                      f"answers after {timeout:.0f} s")
                time.sleep(0.05)
        self.actors, self.places, self.calls, self.episodes = [], [], [], []
        self.restarts, self._incarnations = [], []

    def _is_gone(self, actor) -> bool:
        try:
            self._ray.get(actor.ping.remote(), timeout=5)
        except self._ray.exceptions.ActorUnavailableError:
            pass  # not known dead yet
        except self._ray.exceptions.RayActorError:
            return True
        except self._ray.exceptions.GetTimeoutError:
            pass  # busy
        return False


BACKENDS = {"ray": RayWorkers, "local": LocalWorkers}


class WorkerPool:
    """The live workers (one set per backend) of environments that take turns: a trainer's
    training and validation phases. What builds the environments owns it (``make_fair_envs``
    makes one for its two phases; ``build_sokoban_envs`` without one uses :data:`SHARED`,
    since verl-agent's own ``make_envs`` builds the phases in two calls)."""

    def __init__(self):
        self._live: dict[str, Workers] = {}

    def workers(self, backend: str, resources: Mapping[str, float], envs_per_actor: int, max_restarts: int,
                envs: int) -> Workers:
        """The pool's workers of ``backend`` with these settings, grown to ``envs`` environments;
        live workers of other settings are released first (their holder's open episodes ended)."""
        key = (backend, tuple(sorted(resources.items())), envs_per_actor, max_restarts)
        live = self._live.get(backend)
        if live is not None and live.key != key:
            self.release(live)
            live = None
        if live is None:
            live = self._live[backend] = BACKENDS[backend](key, envs_per_actor, resources, max_restarts)
        live.ensure(envs)
        return live

    def lease(self, workers: Workers, holder) -> None:
        """Give ``workers`` to ``holder`` (environments about to reset): the previous holder's
        open episodes end (its ``workers_taken()``), as at its ``close()``."""
        if workers.holder is not None and workers.holder is not holder:
            workers.holder.workers_taken()
        workers.holder = holder

    def release(self, workers: Workers) -> None:
        """Stop ``workers`` (their holder's open episodes end); the next build or reset starts new ones."""
        if workers.holder is not None:
            workers.holder.workers_taken()
            workers.holder = None
        for backend, live in list(self._live.items()):
            if live is workers:
                del self._live[backend]
        workers.close()

    def is_live(self, workers: Workers) -> bool:
        return any(live is workers for live in self._live.values())


SHARED = WorkerPool()  # the pool of build_sokoban_envs calls that name none


def _left(deadline: float) -> float:
    """Seconds until ``deadline`` (a little at least: Ray takes 0 as "do not wait")."""
    return max(deadline - time.monotonic(), 0.01)


def _amount(value: float) -> float:
    """Ray counts resources in units of 1e-4."""
    return round(value, 4)


def ray_actor_size(resources: Mapping[str, float], envs_per_actor: int | None, envs: int) -> int:
    """Environments per actor: ``envs_per_actor``, or the default cut to what the largest node can
    hold. Refuses (``ValueError``, naming the request and the nodes) a slice no node can ever
    hold, and environments more than the whole cluster can; starts a local Ray if none is running."""
    import ray

    if not ray.is_initialized():
        ray.init()
    nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
    needed = {RAY_RESOURCES[name]: amount for name, amount in resources.items() if amount > 0}

    def fits(node: Mapping, size: int) -> bool:
        return all(node.get(name, 0) + 1e-9 >= _amount(amount * size) for name, amount in needed.items())

    cluster = ", ".join(
        "{" + ", ".join(f"{name}: {node.get(name, 0):g}" for name in needed) + "}" for node in nodes) or "none"
    if envs_per_actor is None:
        envs_per_actor = max((size for size in range(1, DEFAULT_ENVS_PER_ACTOR + 1)
                              if any(fits(node, size) for node in nodes)), default=None)
        if envs_per_actor is None:
            raise ValueError(f"resources_per_worker {dict(resources)} (per environment) exceeds every node of the "
                             f"Ray cluster (nodes: {cluster}): no node can ever start a worker; lower it")
    elif not any(fits(node, envs_per_actor) for node in nodes):
        per_actor = {name: _amount(amount * envs_per_actor) for name, amount in resources.items()}
        raise ValueError(f"envs_per_actor={envs_per_actor} x resources_per_worker {dict(resources)} asks each "
                         f"Ray actor for {per_actor}, more than any node of the cluster has (nodes: {cluster}); "
                         f"lower envs_per_actor or resources_per_worker")
    total = ray.cluster_resources()
    for name, amount in needed.items():
        if _amount(amount * envs) > total.get(name, 0) + 1e-9:
            raise ValueError(
                f"{envs} environments x resources_per_worker {dict(resources)} need {name} "
                f"{_amount(amount * envs):g}, but the Ray cluster has {total.get(name, 0):g} in all: the workers "
                f"could never all start; lower resources_per_worker or add nodes")
    return envs_per_actor
