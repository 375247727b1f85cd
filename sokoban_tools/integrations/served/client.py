"""The served model: chat-completions requests through the ``openai`` client, retried or stopped.

A long evaluation meets busy servers: 429, 5xx, a timeout or a dropped connection
is retried after an exponential backoff (``Retry-After`` honoured), a bounded number
of times. What retrying cannot mend stops the run with :class:`Stop`, one line
naming the cause and the fix: a rejected key (401/403), an unknown model or wrong
URL (404), no server listening, a model without image input, any other refused
request. The API key comes from the caller (an environment variable) and is never
written anywhere.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

IMAGE_WORDS = ("image", "multimodal", "multi-modal", "vision", "mm_")
MAX_DELAY = 60.0  # seconds: the longest wait between two attempts


class Stop(Exception):
    """A failure no retry mends: its message is the one line the command prints."""


class ClientUnavailable(Stop):
    """The ``openai`` package is not installed."""


@dataclass(frozen=True)
class Decoding:
    """verl's validation sampling (``actor_rollout_ref.rollout.val_kwargs`` and
    ``response_length``): greedy when ``do_sample`` is false, as verl's vLLM rollout is."""

    temperature: float = 0.4
    top_p: float = 1.0
    top_k: int = -1  # off; sent only when on (an API server refuses the unknown field)
    do_sample: bool = True
    max_tokens: int = 512

    def request_fields(self) -> dict:
        """The sampling fields of a chat-completions request."""
        if not self.do_sample:
            return {"temperature": 0.0, "top_p": 1.0, "max_tokens": self.max_tokens}
        fields = {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}
        if self.top_k != -1:
            fields["extra_body"] = {"top_k": self.top_k}
        return fields


@dataclass
class Usage:
    """What the server was asked and said it spent, summed over threads."""

    requests: int = 0
    retried: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, requests=0, retried=0, prompt_tokens=0, completion_tokens=0) -> None:
        with self.lock:
            self.requests += requests
            self.retried += retried
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens

    def take(self) -> dict[str, tuple[str, int]]:
        """The cost entries since the last call (for the run manifest), and zero them."""
        with self.lock:
            entries = {"requests": ("requests", self.requests), "retried_requests": ("requests", self.retried),
                       "prompt_tokens": ("tokens", self.prompt_tokens),
                       "completion_tokens": ("tokens", self.completion_tokens)}
            self.requests = self.retried = self.prompt_tokens = self.completion_tokens = 0
        return entries


@dataclass(frozen=True)
class Answer:
    text: str
    prompt_tokens: int | None  # None: the server reported no usage


def openai_module():
    try:
        import openai
    except ImportError:
        raise ClientUnavailable("the openai package is not installed: pip install 'sokoban-fairness[evaluate]'") \
            from None
    return openai


class ServedModel:
    """``model`` at the OpenAI-compatible ``base_url``; :meth:`complete` is thread-safe."""

    def __init__(self, base_url: str, model: str, api_key: str, decoding: Decoding, *, timeout: float = 120.0,
                 retries: int = 5, backoff: float = 1.0, stop: threading.Event | None = None):
        openai = openai_module()
        self.openai = openai
        self.base_url, self.model, self.decoding = base_url, model, decoding
        self.retries, self.backoff = retries, backoff
        self.stop = stop or threading.Event()
        self.usage = Usage()
        self._fields = decoding.request_fields()
        self._jitter = random.Random()
        # the client's own retries are off: these are counted, bounded and logged here
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)

    def check(self) -> str | None:
        """Stop now if the server is unreachable, refuses the key, or does not serve the model;
        returns who owns the model by the server's list (vLLM says ``vllm``), if it lists one."""
        try:
            models = list(self.client.models.list())
        except self.openai.NotFoundError:
            return None  # a server without the listing: the first request tells
        except self.openai.APIError as err:
            raise self._stop(err) from None
        served = {entry.id: getattr(entry, "owned_by", None) for entry in models}
        if served and self.model not in served:
            shown = ", ".join(sorted(served)[:5])
            raise Stop(f"{self.base_url} does not serve the model {self.model!r} (it serves {shown}); give "
                       f"--model as the server names it (vLLM: --served-model-name)")
        return served.get(self.model)

    def complete(self, messages: list[dict], seed: int) -> Answer:
        """The model's answer to ``messages``; retried as the module docstring says."""
        openai = self.openai
        for attempt in range(self.retries + 1):
            if self.stop.is_set():
                raise Stop("stopped")
            try:
                response = self.client.chat.completions.create(
                    model=self.model, messages=messages, n=1, seed=seed, **self._fields)
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError) as err:
                last = err
            except openai.APIStatusError as err:
                if err.status_code in (408, 409) or err.status_code >= 500:
                    last = err
                else:
                    raise self._stop(err) from None
            except openai.APIConnectionError as err:
                if _refused(err):
                    raise self._stop(err) from None
                last = err  # a dropped connection: the server may be restarting a worker
            else:
                return self._answer(response)
            if attempt == self.retries:
                break
            self.usage.add(retried=1)
            self.stop.wait(self._delay(attempt, last))
        raise Stop(f"{self.base_url} kept failing: {_describe(last)} after {self.retries} retries; lower "
                   f"--concurrency, or wait and run again with --resume (finished boards are kept)")

    def _answer(self, response) -> Answer:
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        text = getattr(message, "content", None)
        usage = getattr(response, "usage", None)
        prompt = getattr(usage, "prompt_tokens", None)
        self.usage.add(requests=1, prompt_tokens=prompt or 0,
                       completion_tokens=getattr(usage, "completion_tokens", None) or 0)
        return Answer(text if isinstance(text, str) else "", prompt)

    def _delay(self, attempt: int, err) -> float:
        delay = self.backoff * 2 ** attempt * (0.5 + self._jitter.random() / 2)
        response = getattr(err, "response", None)
        after = response.headers.get("retry-after") if response is not None else None
        try:
            delay = max(delay, float(after)) if after is not None else delay
        except ValueError:
            pass  # an HTTP date: the backoff stands
        return min(delay, MAX_DELAY)

    def _stop(self, err) -> Stop:
        """The one line for a failure no retry mends."""
        openai = self.openai
        where = f"{self.base_url}"
        if isinstance(err, openai.APIConnectionError):
            return Stop(f"cannot connect to {where} ({_describe(err)}): start the server (e.g. vllm serve MODEL) "
                        f"or fix --base-url, then run again (with --resume if boards are finished)")
        if isinstance(err, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return Stop(f"{where} refused the API key ({_describe(err)}): put the right key in the environment "
                        f"variable --api-key-env names")
        if isinstance(err, openai.NotFoundError):
            return Stop(f"{where} answered 404 for the model {self.model!r} ({_describe(err)}): give --model as the "
                        f"server names it, and --base-url ending in /v1")
        text = _describe(err)
        if any(word in text.lower() for word in IMAGE_WORDS):
            return Stop(f"{where} refused the image ({text}): serve a vision-language model that takes one image "
                        f"per prompt (vLLM: --limit-mm-per-prompt '{{\"image\": 1}}')")
        return Stop(f"{where} refused the request ({text}); fix the server or the options it names")


def _refused(err) -> bool:
    """Whether ``err`` is a connection that never opened (nothing listens), not one that dropped."""
    cause, seen = err.__cause__, 0
    while cause is not None and seen < 8:
        if type(cause).__name__ == "ConnectError" or isinstance(cause, ConnectionRefusedError):
            return True
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return False


def _describe(err) -> str:
    status = getattr(err, "status_code", None)
    message = " ".join(str(getattr(err, "message", None) or err).split())[:300]
    return f"HTTP {status}: {message}" if status else message
