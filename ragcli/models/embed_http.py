"""An embedding model behind an OpenAI-compatible `/v1/embeddings` endpoint (vLLM,
text-embeddings-inference, Ollama, llama-server `--embedding`, llama-cpp-python's server, LM Studio).

Rules:
- texts go in batches of `batch_size`, `parallel` requests in flight (a thread pool: the HTTP client
  is thread-safe and waiting releases the GIL), replies put back in input order;
- 429 and 5xx (and a dropped connection) are retried with exponential backoff and jitter, honouring
  Retry-After, up to `retry_seconds` of waiting for one batch; any other 4xx fails at once;
- the dimension is read from the first reply (a one-text probe when asked before any embedding);
- the key comes from the environment only (the profile's `api_key_env`, else RAGCLI_API_KEY) and is
  never shown, recorded or put in an error;
- vectors are L2-normalised here: not every server normalises (llama-server does not by default).

httpx (under `openai`) is imported only when a server is used.
"""
from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

import numpy as np

from ragcli.errors import ModelError
from ragcli.models.openai_http import api_base, http_library, safe_url

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
BACKOFF_FIRST = 0.25  # seconds before the first retry, doubled each time ...
BACKOFF_MAX = 8.0  # ... up to this
CONNECT_RETRY_SECONDS = 10.0  # a server that does not answer at all: a restart, or gone
PROBE_RETRY_SECONDS = 2.0  # ... when first reached: not there is the likely answer, say it soon


def _normalise(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return (vecs / np.maximum(norms, 1e-12)).astype(np.float32)


def split_spec(spec: str) -> tuple[str, Optional[str]]:
    """`URL#model` -> (URL, model): the fragment names the server's model (Ollama serves several)."""
    url, _, name = spec.partition("#")
    return url, (name or None)


class HttpEmbedder:
    """Embed batches through an OpenAI-compatible server. `name` is the server's model id (what the
    corpus records; a query is refused with a model of another name)."""

    multilingual = False  # unknown for a server's model: the other-language notice stays on

    def __init__(self, url: str, name: Optional[str] = None, api_key: Optional[str] = None, *,
                 batch_size: int = 64, parallel: int = 4, timeout: float = 120.0,
                 retry_seconds: float = 120.0, profile: Optional[str] = None,
                 sleep: Callable[[float], None] = time.sleep):
        http = http_library()
        self.url = api_base(url)
        self.batch_size, self.parallel = max(1, int(batch_size)), max(1, int(parallel))
        self.retry_seconds, self.profile = retry_seconds, profile
        self._key, self._sleep = api_key, sleep
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = http.Client(timeout=http.Timeout(timeout, connect=min(timeout, 10.0)), headers=headers,
                                 limits=http.Limits(max_connections=self.parallel + 1))
        self._pool: Optional[ThreadPoolExecutor] = None
        self._lock = threading.Lock()
        self._dim: Optional[int] = None
        self.stats = {"requests": 0, "retries": 0, "texts": 0}
        self.name = name or ""  # named in error messages from here on
        self.name = self._pick(name)

    # ------------------------------------------------------------------ identity

    @property
    def source(self) -> dict:
        """Where the vectors were made (recorded in the corpus; never the key)."""
        out = {"backend": "openai-http", "url": safe_url(self.url), "model": self.name}
        if self.profile:
            out["profile"] = self.profile
        return out

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension"])
        return int(self._dim)

    def _pick(self, name: Optional[str]) -> str:
        """The model to ask for: the one named, else the only one the server lists. Listing the models
        also checks that the server is there and takes the key."""
        listed = self._send("GET", "/models", None, connect_seconds=PROBE_RETRY_SECONDS)
        models = [m.get("id") for m in (listed or {}).get("data", []) if isinstance(m, dict) and m.get("id")]
        if name:
            return name
        if len(models) == 1:
            return models[0]
        where = safe_url(self.url)
        if not models:
            raise ModelError(f"the embedding server at {where} lists no model; name one as {where}#MODEL")
        raise ModelError(f"the embedding server at {where} serves several models; name one as {where}#MODEL: "
                         f"{', '.join(models[:8])}")

    # ------------------------------------------------------------------ requests

    def _fail(self, text: str) -> ModelError:
        if self._key:
            text = text.replace(self._key, "***")
        return ModelError(text)

    def _send(self, method: str, path: str, body: Optional[dict], connect_seconds: float = CONNECT_RETRY_SECONDS):
        """One request with retries; the reply's JSON (None for a GET the server does not have)."""
        http = http_library()
        where = safe_url(self.url) + (f" (model {self.name})" if getattr(self, "name", None) else "")
        waited, attempt = 0.0, 0
        while True:
            retry_after: Optional[float] = None
            budget = min(self.retry_seconds, connect_seconds)
            try:
                r = self._http.request(method, self.url + path, json=body)
            except http.TimeoutException as exc:
                problem = f"the embedding server at {where} did not answer in time ({type(exc).__name__})"
            except http.HTTPError as exc:
                problem = f"cannot reach the embedding server at {where}: {_short(exc)}; is it running?"
            else:
                with self._lock:
                    self.stats["requests"] += 1
                if r.status_code == 200:
                    try:
                        return r.json()
                    except ValueError:
                        raise self._fail(f"the embedding server at {where} sent a reply that is not JSON")
                if method == "GET" and r.status_code in (404, 405):
                    return None
                detail = _short(_message(r))
                if r.status_code in (401, 403):
                    raise self._fail(f"the embedding server at {where} refused the key (HTTP {r.status_code}): "
                                     f"set it in RAGCLI_API_KEY or in the variable the profile's api_key_env names")
                if r.status_code not in RETRY_STATUS:
                    raise self._fail(f"the embedding server at {where} failed (HTTP {r.status_code}: {detail})")
                problem = f"the embedding server at {where} kept answering HTTP {r.status_code} ({detail})"
                retry_after = _retry_after(r.headers.get("retry-after"))
                budget = self.retry_seconds
            pause = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** attempt) * (0.5 + random.random() / 2)
            if retry_after is not None:  # the server says when: take its word (within reason)
                pause = min(retry_after, BACKOFF_MAX * 4)
            if waited + pause > budget:
                raise self._fail(f"{problem}; gave up after {attempt + 1} tries in {waited:.0f} s")
            with self._lock:
                self.stats["retries"] += 1
            self._sleep(pause)
            waited += pause
            attempt += 1

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        reply = self._send("POST", "/embeddings", {"model": self.name, "input": texts})
        try:
            rows = sorted(reply["data"], key=lambda d: d.get("index", 0))
            vecs = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise self._fail(f"the embedding server at {safe_url(self.url)} sent no usable vectors "
                             f"({_short(exc)})") from exc
        if vecs.ndim != 2 or len(vecs) != len(texts):
            raise self._fail(f"the embedding server at {safe_url(self.url)} sent {len(vecs)} vectors for "
                             f"{len(texts)} texts (a model that returns one vector per token? use a pooled model)")
        with self._lock:
            if self._dim is None:
                self._dim = vecs.shape[1]
            elif vecs.shape[1] != self._dim:
                raise self._fail(f"the embedding server at {safe_url(self.url)} changed dimension "
                                 f"({self._dim} -> {vecs.shape[1]})")
            self.stats["texts"] += len(texts)
        return _normalise(vecs)

    def embed(self, texts: list[str]) -> np.ndarray:
        texts = [t if t.strip() else " " for t in texts]  # some servers refuse an empty input
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        batches = [texts[i:i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        if len(batches) == 1 or self.parallel == 1:
            return np.concatenate([self._embed_batch(b) for b in batches])
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.parallel, thread_name_prefix="ragcli-embed")
        return np.concatenate(list(self._pool.map(self._embed_batch, batches)))

    def close(self) -> None:
        if self._pool:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._http.close()


def _retry_after(value: Optional[str]) -> Optional[float]:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:  # an HTTP date: not worth parsing, back off as usual
        return None


def _message(r) -> str:
    try:
        body = r.json()
    except ValueError:
        return r.text or r.reason_phrase
    inner = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(inner, dict):
        return str(inner.get("message") or inner)
    return str(inner)


def _short(value, limit: int = 200) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
