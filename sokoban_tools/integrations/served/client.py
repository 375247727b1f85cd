"""The served model: chat-completions requests through the ``openai`` client, retried or stopped.

A long evaluation meets busy servers: 429, 5xx, a timeout or a dropped connection
is retried after an exponential backoff (``Retry-After`` honoured), a bounded number
of times. What retrying cannot mend stops the run with :class:`Stop`, one line
naming the cause and the fix: a rejected key (401/403), an unknown model or wrong
URL (404), no server listening, a model without image input, any other refused
request, and a server that answers 200 with something other than a chat completion
(no ``choices``, an ``{"error": ...}`` body, an HTML page, a body that is not UTF-8 or
is over :data:`MAX_BODY_BYTES`, a message whose content is neither text nor text parts): a
run that goes on would log every board as lost. A content of text parts (the list form the
API allows) is their text, joined. ``timeout`` bounds each whole request, its body's last byte
included, not each read, so a server trickling its answer is a timeout like any other.
The API key comes from the caller (an environment variable) and is never written
anywhere; credentials in the URL are never shown (:func:`public_url`).
"""

from __future__ import annotations

import json
import random
import re
import ssl
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from ...extras import install_advice

IMAGE_WORDS = ("image", "multimodal", "multi-modal", "vision", "mm_")
MAX_DELAY = 60.0  # seconds: the longest wait between two attempts
MAX_BODY_BYTES = 16 << 20  # a chat completion of 512 tokens is a few kilobytes
_CREDENTIALS = re.compile(r"(?<=://)[^/\s@]+@")


def public_url(url: str) -> str:
    """``url`` without credentials or query, as messages and the manifest may show it."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host  # an IPv6 address keeps its brackets
    return urlunsplit((parts.scheme, host + (f":{parts.port}" if parts.port else ""), parts.path, "", ""))


def without_credentials(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it removed."""
    return _CREDENTIALS.sub("", text)


class Stop(Exception):
    """A failure no retry mends: its message is the one line the command prints."""


class ClientUnavailable(Stop):
    """The ``openai`` package is not installed."""


class _Deadline(Exception):
    """A request ran past its whole-request timeout."""


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
        raise ClientUnavailable(f"the openai package is not installed: {install_advice('evaluate')}") from None
    return openai


class ServedModel:
    """``model`` at the OpenAI-compatible ``base_url``; :meth:`complete` is thread-safe."""

    def __init__(self, base_url: str, model: str, api_key: str, decoding: Decoding, *, timeout: float = 120.0,
                 retries: int = 5, backoff: float = 1.0, stop: threading.Event | None = None):
        openai = openai_module()
        self.openai = openai
        self.base_url, self.model, self.decoding = public_url(base_url), model, decoding
        self.retries, self.backoff, self.timeout = retries, backoff, timeout
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
            body = self._read(self.client.models.with_streaming_response.list())
        except self.openai.NotFoundError:
            return None  # a server without the listing: the first request tells
        except (self.openai.APIError, _Deadline) as err:
            raise self._stop(err) from None
        models = body.get("data") if isinstance(body, dict) else None
        if not isinstance(models, list) or not all(isinstance(entry, dict) for entry in models):
            raise Stop(f"{self.base_url}/models answered {_what(body)}, not a list of models: give --base-url "
                       f"as the OpenAI-compatible server's URL, ending in /v1")
        served = {entry.get("id"): entry.get("owned_by") for entry in models}
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
                response = self._read(self.client.chat.completions.with_streaming_response.create(
                    model=self.model, messages=messages, n=1, seed=seed, **self._fields))
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, _Deadline) as err:
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

    def _read(self, request) -> object:
        """The decoded JSON body of ``request`` (a streaming-response context), read before the
        whole-request deadline (:class:`_Deadline` past it); a body that is not JSON is
        returned as its text, for :func:`_what` to describe."""
        deadline = time.monotonic() + self.timeout
        with request as response:
            body = bytearray()
            try:
                for chunk in response.iter_bytes():
                    body += chunk
                    if time.monotonic() > deadline:
                        raise _Deadline(f"the answer took over --timeout {self.timeout:g} s "
                                        f"({len(body):,} bytes of it had come)")
                    if len(body) > MAX_BODY_BYTES:
                        raise Stop(f"{self.base_url} answered with a body of over {MAX_BODY_BYTES >> 20} MiB, too "
                                   f"large for a chat completion (a few kilobytes): check that --base-url is the "
                                   f"model server's OpenAI-compatible URL and lower its answer length "
                                   f"(--max-tokens), then run again with --resume (finished boards are kept)")
            except (_Deadline, Stop, self.openai.OpenAIError):
                raise
            except Exception as err:  # the HTTP library's own read errors: a dropped or timed-out body
                raise self.openai.APIConnectionError(message=f"{type(err).__name__}: {err}",
                                                     request=response.http_response.request) from err
        try:
            text = bytes(body).decode("utf-8")  # JSON is UTF-8: replacement characters would hide the answer
        except UnicodeDecodeError as err:
            raise Stop(f"{self.base_url} answered with a body that is not UTF-8 (byte {err.start:,} of "
                       f"{len(body):,} is {body[err.start]:#04x}), so its answer cannot be read: check the "
                       f"server's encoding and that --base-url is its OpenAI-compatible URL, then run again "
                       f"with --resume (finished boards are kept)") from None
        try:
            return json.loads(text)
        except ValueError:
            return text

    def _answer(self, body) -> Answer:
        """The answer in a chat completion's body; :class:`Stop` when it holds none (see the module docstring)."""
        choices = body.get("choices") if isinstance(body, dict) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices and \
            isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise Stop(f"{self.base_url} answered a chat completion request with {_what(body)}, not a completion: "
                       f"check that --base-url is the model server's OpenAI-compatible URL and that it serves "
                       f"chat completions, then run again with --resume (finished boards are kept)")
        text = _content_text(message.get("content"))
        if text is None:
            raise Stop(f"{self.base_url} answered a message whose content is {_what(message.get('content'))}, "
                       f"neither text nor a list of text parts: check that the server serves chat completions "
                       f"as the OpenAI API defines them, then run again with --resume (finished boards are kept)")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        prompt = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else None
        completion = usage.get("completion_tokens") if isinstance(usage.get("completion_tokens"), int) else 0
        self.usage.add(requests=1, prompt_tokens=prompt or 0, completion_tokens=completion)
        return Answer(text, prompt)

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
        if isinstance(err, _Deadline):
            return Stop(f"{where} did not answer in time: {err}; start or fix the server, or raise --timeout")
        tls = _tls_failure(err) if isinstance(err, openai.APIConnectionError) else None
        if tls is not None and urlsplit(self.base_url).scheme == "https" and _PLAIN_HTTP.search(tls):
            plain = urlunsplit(("http", *urlsplit(self.base_url)[1:]))
            return Stop(f"{where} answered the TLS handshake in plain HTTP ({tls}): the server does not serve "
                        f"https; give --base-url {plain}")
        if tls is not None:
            return Stop(f"cannot connect to {where}: the TLS handshake failed ({tls}); check the https URL and the "
                        f"server's certificate, or give the server's http:// URL if it serves plain HTTP")
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


def _content_text(content) -> str | None:
    """The text of a message's ``content``: a string, or a list of text parts (``{"type": "text",
    "text": ...}``) joined; ``""`` for none (``null``: a refusal, a tool call); ``None`` for
    anything else, which no answer of the model can be read from."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(part, dict) and part.get("type") == "text"
                                         and isinstance(part.get("text"), str) for part in content):
        return "".join(part["text"] for part in content)
    return None


# What OpenSSL says when the other end answers a TLS handshake with plain HTTP.
_PLAIN_HTTP = re.compile(r"WRONG_VERSION_NUMBER|wrong version number|record layer failure|http request",
                         re.IGNORECASE)


def _causes(err):
    """The errors under ``err`` (what it was raised from, or during), nearest first, at most 8 deep."""
    cause = err.__cause__
    for _ in range(8):
        if cause is None:
            return
        yield cause
        cause = cause.__cause__ or cause.__context__


def _tls_failure(err) -> str | None:
    """The TLS error under a failed connection, in a few words, or ``None`` when there is none."""
    return next((" ".join(str(cause).split())[:200] for cause in _causes(err) if isinstance(cause, ssl.SSLError)),
                None)


def _refused(err) -> bool:
    """Whether ``err`` is a connection that never opened (nothing listens), not one that dropped."""
    return any(type(cause).__name__ == "ConnectError" or isinstance(cause, ConnectionRefusedError)
               for cause in _causes(err))


def _what(body) -> str:
    """What a body that is not the expected document is, in a few words."""
    if isinstance(body, dict) and "error" in body:
        error = body["error"]
        message = error.get("message") if isinstance(error, dict) else error
        return f"an error ({without_credentials(' '.join(str(message).split()))[:200]})"
    if isinstance(body, dict):
        return f"a JSON object without them (keys {sorted(body)[:8]})"
    if isinstance(body, str):
        kind = "an HTML page" if body.lstrip()[:15].lower().startswith(("<!doctype html", "<html")) else "text"
        return f"{kind} ({without_credentials(' '.join(body.split()))[:80]!r})" if body.strip() else "an empty body"
    return f"a JSON {type(body).__name__}"


def _describe(err) -> str:
    status = getattr(err, "status_code", None)
    message = without_credentials(" ".join(str(getattr(err, "message", None) or err).split()))[:300]
    return f"HTTP {status}: {message}" if status else message
