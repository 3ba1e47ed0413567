"""The HTTP backend: any OpenAI-compatible chat server (llama-server, llama-cpp-python's server,
Ollama, vLLM, LM Studio), through the `openai` package (streaming, timeouts, retries, errors).

`openai` (and httpx under it) is imported only when a server is used, so commands that do not
talk to one start as fast as before.

What the server can do is probed once (see `probe`): its kind, its context size, whether it takes
a GBNF `grammar` (llama.cpp servers) or a JSON schema `response_format` (vLLM, Ollama, LM Studio),
and whether it has a tokenizer endpoint. A profile can state `structured` and `n_ctx` instead.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import Iterator, Optional
from urllib.parse import urlsplit, urlunsplit

from ragcli.errors import ModelError, UsageError
from ragcli.models.chat import (
    Constraint, Grammar, IncompleteReply, NoProbabilities, JsonSchema, Messages, OneLine, Progress, estimate_tokens,
)
from ragcli.models.grammars import one_line_grammar

STRUCTURED = ("grammar", "json_schema", "none")
FALLBACK_CTX = 2048  # a server that does not say: the smallest default of the common servers
CONTEXT_WORDS = ("context", "too long", "maximum", "exceed")


def safe_url(url: str) -> str:
    """The URL without user name or password (never shown or saved)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def api_base(url: str) -> str:
    """The OpenAI base URL: the path as given, `/v1` when it has none."""
    url = url.rstrip("/")
    return url if urlsplit(url).path not in ("", "/") else url + "/v1"


def server_root(base: str) -> str:
    """Where a server's own endpoints live (/props, /tokenize, /api/version): the base minus /v1."""
    return base[: -len("/v1")] if base.endswith("/v1") else base


@dataclass
class ServerInfo:
    kind: str  # llama-server | llama-cpp-python | ollama | vllm | lm-studio | openai-compatible
    models: list[str]
    n_ctx: Optional[int] = None
    structured: str = "none"
    slots: Optional[int] = None
    tokenize: Optional[str] = None  # which tokenizer endpoint: llama-server | vllm | llama-cpp-python
    extra: dict = field(default_factory=dict)


def http_library():
    """The HTTP library under the installed `openai` (httpx2 for openai 3, httpx before)."""
    try:
        import httpx2 as http
    except ImportError:
        import httpx as http
    return http


def _http_error(url: str, exc: Exception, key: Optional[str]) -> ModelError:
    """One line for a failed request, naming the server and never the key."""
    import openai

    where = safe_url(url)
    if isinstance(exc, openai.APITimeoutError):
        text = f"the model server at {where} did not answer in time (timeout); is it overloaded?"
    elif isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        text = f"cannot reach the model server at {where}: {_short(cause)}; is it running?"
    elif isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        text = (f"the model server at {where} refused the request (HTTP {exc.status_code}): set the API key "
                f"in RAGCLI_API_KEY or in the variable the profile's api_key_env names")
    elif isinstance(exc, openai.APIStatusError):
        detail = _short(_error_message(exc))
        if exc.status_code == 400 and any(w in detail.lower() for w in CONTEXT_WORDS):
            text = (f"the prompt does not fit the model's context at {where} ({detail}); "
                    f"ask with fewer passages (-k) or give the server a larger context")
        elif exc.status_code == 404:
            text = f"the model server at {where} does not know the model or endpoint (HTTP 404: {detail})"
        else:
            text = f"the model server at {where} failed (HTTP {exc.status_code}: {detail})"
    else:
        text = f"the model server at {where} failed: {_short(exc)}"
    if key:
        text = text.replace(key, "***")
    return ModelError(text)


def _error_message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", "") or exc)


def _short(value, limit: int = 200) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class HttpChatModel:
    """A chat model behind an OpenAI-compatible server."""

    def __init__(self, url: str, name: Optional[str] = None, api_key: Optional[str] = None,
                 n_ctx: Optional[int] = None, temperature: float = 0.2, seed: int = 0,
                 timeout: float = 300.0, max_retries: int = 1, structured: Optional[str] = None,
                 profile: Optional[str] = None):
        import openai

        http = http_library()
        if structured is not None and structured not in STRUCTURED:
            raise UsageError(f"structured must be one of {', '.join(STRUCTURED)}, not {structured!r}")
        self.url = api_base(url)
        self._key = api_key
        self.temperature = temperature
        self.seed = seed
        self.timeout = timeout
        self._http = http.Client(timeout=http.Timeout(timeout, connect=min(timeout, 10.0)),
                                  headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
        self._client = openai.OpenAI(base_url=self.url, api_key=api_key or "none", max_retries=max_retries,
                                     timeout=http.Timeout(timeout, connect=min(timeout, 10.0)))
        self.server = self.probe()
        self.name = self._pick(name)
        self.structured = structured or self.server.structured
        self.context_size = int(n_ctx or self.server.n_ctx or FALLBACK_CTX)
        self.tokens_exact = self.server.tokenize is not None
        self.params = {
            "backend": "openai-http", "server": self.server.kind, "url": safe_url(self.url),
            "name": self.name, "n_ctx": self.context_size, "temperature": temperature, "seed": seed,
            "structured": self.structured,
        }
        if profile:
            self.params["profile"] = profile
        self.stats: dict = {}

    # ------------------------------------------------------------------ what the server is

    def _get(self, path: str, root: bool = True):
        """JSON of GET root+path (or base+path), None when the server has no such endpoint."""
        http = http_library()
        url = (server_root(self.url) if root else self.url) + path
        try:
            r = self._http.get(url, timeout=min(self.timeout, 10.0))
        except http.HTTPError:
            return None
        if r.status_code != 200:
            return None
        try:
            return r.json()
        except ValueError:
            return None

    def probe(self) -> ServerInfo:
        """List the models (this also checks the server is there and the key is accepted), then
        recognise the server by the endpoints only it has."""
        try:
            listed = self._client.models.list()
            entries = list(listed.data)
        except Exception as exc:  # openai errors: connection, timeout, status
            raise _http_error(self.url, exc, self._key) from exc
        models = [m.id for m in entries]
        props = self._get("/props")
        if isinstance(props, dict) and "default_generation_settings" in props:
            dgs = props["default_generation_settings"] or {}
            return ServerInfo("llama-server", models, n_ctx=dgs.get("n_ctx") or props.get("n_ctx"),
                              structured="grammar", slots=props.get("total_slots"), tokenize="llama-server",
                              extra={"build": props.get("build_info")})
        version = self._get("/api/version")
        if isinstance(version, dict) and "version" in version:
            return ServerInfo("ollama", models, structured="json_schema", extra={"version": version["version"]})
        version = self._get("/version")
        if isinstance(version, dict) and "version" in version:
            lengths = [getattr(m, "max_model_len", None) or (m.model_extra or {}).get("max_model_len")
                       for m in entries]
            n_ctx = next((n for n in lengths if isinstance(n, int)), None)
            return ServerInfo("vllm", models, n_ctx=n_ctx, structured="json_schema", tokenize="vllm",
                              extra={"version": version["version"]})
        if entries and (entries[0].model_extra or {}).get("owned_by", getattr(entries[0], "owned_by", "")) == "me":
            return ServerInfo("llama-cpp-python", models, structured="grammar", tokenize="llama-cpp-python")
        if self._get("/api/v0/models") is not None:
            return ServerInfo("lm-studio", models, structured="json_schema")
        return ServerInfo("openai-compatible", models)

    def _pick(self, name: Optional[str]) -> str:
        models = self.server.models
        if name:
            if models and name not in models and self.server.kind != "llama-server":
                raise ModelError(f"the model server at {safe_url(self.url)} does not serve {name!r}; "
                                 f"it serves: {', '.join(models)}")
            return name
        if len(models) == 1:
            return models[0]
        if not models:
            raise ModelError(f"the model server at {safe_url(self.url)} lists no model; name one with --model-name")
        raise ModelError(f"the model server at {safe_url(self.url)} serves several models; pick one with "
                         f"--model-name: {', '.join(models)}")

    # ------------------------------------------------------------------ tokens

    @functools.lru_cache(maxsize=256)
    def count_tokens(self, text: str) -> int:
        """The server's tokenizer where it has one, else a conservative estimate."""
        kind = self.server.tokenize
        try:
            if kind == "llama-server":
                r = self._http.post(server_root(self.url) + "/tokenize",
                                    json={"content": text, "add_special": False, "parse_special": True})
                return len(r.raise_for_status().json()["tokens"])
            if kind == "vllm":
                r = self._http.post(server_root(self.url) + "/tokenize",
                                    json={"model": self.name, "prompt": text, "add_special_tokens": False})
                return int(r.raise_for_status().json()["count"])
            if kind == "llama-cpp-python":
                r = self._http.post(server_root(self.url) + "/extras/tokenize/count",
                                    json={"input": text, "model": self.name})
                return int(r.raise_for_status().json()["count"])
        except Exception:  # a tokenizer endpoint that fails: estimate instead
            self.server.tokenize = None
            self.tokens_exact = False
        return estimate_tokens(text)

    # ------------------------------------------------------------------ generation

    def _request(self, constraint: Optional[Constraint]) -> tuple[dict, dict, Optional[int]]:
        """(keyword arguments, extra body fields, a line limit to apply afterwards) for a constraint."""
        kwargs: dict = {}
        extra: dict = {}
        if self.server.kind == "llama-server":
            extra["cache_prompt"] = True  # reuse the shared system prompt's KV cache
        if constraint is None:
            return kwargs, extra, None
        if isinstance(constraint, Grammar):
            if self.structured != "grammar":
                raise UsageError(f"--grammar-file needs a server that takes GBNF grammars (llama-server, "
                                 f"llama-cpp-python); {safe_url(self.url)} is {self.server.kind} "
                                 f"(structured output: {self.structured})")
            extra["grammar"] = constraint.gbnf
            return kwargs, extra, None
        if isinstance(constraint, OneLine):
            if self.structured == "grammar":
                extra["grammar"] = one_line_grammar(constraint.max_chars)
                return kwargs, extra, None
            kwargs["stop"] = ["\n"]
            return kwargs, extra, constraint.max_chars
        if isinstance(constraint, JsonSchema):
            if self.structured == "grammar" and constraint.gbnf:
                extra["grammar"] = constraint.gbnf
            elif self.structured in ("grammar", "json_schema"):
                kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": "reply", "schema": constraint.schema, "strict": True}}
            return kwargs, extra, None  # "none": the caller's parser is tolerant
        raise TypeError(f"unknown output constraint {constraint!r}")

    def chat(self, messages: Messages, *, max_tokens: int, constraint: Optional[Constraint] = None,
             stream: bool = False, temperature: Optional[float] = None,
             on_progress: Optional[Progress] = None):
        kwargs, extra, line_limit = self._request(constraint)
        temp = self.temperature if temperature is None else temperature
        pieces = self._stream(messages, max_tokens, temp, kwargs, extra, on_progress)
        if line_limit is not None:
            text = "".join(pieces).strip().split("\n")[0][:line_limit]
            return iter([text]) if stream else text
        return pieces if stream else "".join(pieces)

    def next_word_probs(self, messages: Messages, words: dict[str, tuple[str, ...]]) -> dict[str, float]:
        """As LlamaCppModel.next_word_probs, from the server's `top_logprobs` of a one-token reply
        (OpenAI's chat API; llama-server, vLLM and llama-cpp-python built with logits take it). A
        server that returns no probabilities raises NoProbabilities: the caller falls back."""
        import openai

        extra = {"cache_prompt": True} if self.server.kind == "llama-server" else None
        try:
            response = self._client.chat.completions.create(
                model=self.name, messages=messages, max_tokens=1, temperature=0.0, seed=self.seed,
                logprobs=True, top_logprobs=20, extra_body=extra)
        except openai.APIStatusError as exc:  # it answered, and refused the request with logprobs
            if exc.status_code in (401, 403):
                raise _http_error(self.url, exc, self._key) from exc
            raise NoProbabilities(f"the model server at {safe_url(self.url)} gives no token probabilities "
                                  f"({exc.status_code})") from exc
        except openai.APIError as exc:
            raise _http_error(self.url, exc, self._key) from exc
        choice = (response.choices or [None])[0]
        content = getattr(getattr(choice, "logprobs", None), "content", None) if choice else None
        if not content or not getattr(content[0], "top_logprobs", None):
            raise NoProbabilities(f"the model server at {safe_url(self.url)} returned no token probabilities")
        out = {group: 0.0 for group in words}
        for top in content[0].top_logprobs:
            token = (top.token or "").strip()
            for group, variants in words.items():
                if token and token in {v.strip() for v in variants}:
                    out[group] += math.exp(top.logprob)
        return out

    def _stream(self, messages, max_tokens, temp, kwargs, extra, on_progress) -> Iterator[str]:
        import openai

        http = http_library()
        start = time.perf_counter()
        self.stats = {}
        if on_progress:
            on_progress("prompt", {"prompt_tokens": None})
        try:
            response = self._client.chat.completions.create(
                model=self.name, messages=messages, max_tokens=max_tokens, temperature=temp, seed=self.seed,
                stream=True, stream_options={"include_usage": True}, extra_body=extra or None, **kwargs)
        except openai.APIError as exc:
            raise _http_error(self.url, exc, self._key) from exc
        received: list[str] = []
        finished = False
        try:
            for chunk in response:
                self._note_usage(chunk)
                for choice in chunk.choices or []:
                    text = choice.delta.content if choice.delta else None
                    if text:
                        if not received and on_progress:
                            on_progress("first_token", {"seconds": time.perf_counter() - start})
                        received.append(text)
                        yield text
                    if choice.finish_reason:
                        finished = True
                        self.stats["finish_reason"] = choice.finish_reason  # "stop" or "length" (max_tokens)
        except (openai.APIError, http.HTTPError, OSError) as exc:
            error = _http_error(self.url, exc, self._key)
            raise IncompleteReply(f"{error} (the reply was cut after {len(''.join(received))} characters)",
                                  "".join(received)) from exc
        finally:
            response.close()
        if not finished:
            raise IncompleteReply(f"the model server at {safe_url(self.url)} ended the reply before the model "
                                  f"finished (after {len(''.join(received))} characters)", "".join(received))

    def _note_usage(self, chunk) -> None:
        """Token counts from the usage chunk, and llama-server's `timings` (cache_n: prompt tokens
        taken from its cache)."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.stats["prompt_tokens"] = usage.prompt_tokens
            self.stats["generated_tokens"] = usage.completion_tokens
            details = getattr(usage, "prompt_tokens_details", None)
            cached = getattr(details, "cached_tokens", None) if details else None
            if cached is not None:
                self.stats["prompt_cached"] = cached
        timings = (chunk.model_extra or {}).get("timings") if hasattr(chunk, "model_extra") else None
        if isinstance(timings, dict):
            if "cache_n" in timings:
                self.stats["prompt_cached"] = timings["cache_n"]
            if "prompt_n" in timings:
                self.stats["prompt_evaluated"] = timings["prompt_n"]
            if "predicted_n" in timings:
                self.stats["generated_tokens"] = timings["predicted_n"]

    def close(self) -> None:
        self._client.close()
        self._http.close()
