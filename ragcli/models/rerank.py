"""Re-rankers: a query and documents -> one relevance score per document (higher is better).

Three kinds, named like chat models (`--rerank MODEL`):
- a reranker GGUF run in process (`llama_rerank.GgufReranker`, llama.cpp rank pooling);
- a server's rerank endpoint (`HttpReranker`: llama-server started with `--rerank`, vLLM, TEI);
- the chat model as a judge (`--rerank llm`, `judge.LlmJudge`).
A profile of the config file may name either of the first two (`path` or `url`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Protocol, Sequence

from ragcli import config
from ragcli.errors import ModelError, UsageError
from ragcli.models.judge import LlmJudge
from ragcli.models.llama_rerank import GgufReranker
from ragcli.models.openai_http import api_base, http_library, safe_url


class RerankModel(Protocol):
    name: str
    params: dict

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        ...


class HttpReranker:
    """POST {base}/rerank with {model, query, documents, top_n}: llama-server's /v1/rerank (Jina-style
    `results` of {index, relevance_score}), vLLM's, or a TEI-style list of {index, score}."""

    NO_ENDPOINT = (404, 405, 501)  # llama-cpp-python's server: 404; llama-server without --reranking: 501

    def __init__(self, url: str, name: Optional[str] = None, api_key: Optional[str] = None, timeout: float = 120.0):
        http = http_library()
        self.url = api_base(url)
        self._where = safe_url(self.url) + "/rerank"
        self._key = api_key
        self._http = http.Client(timeout=http.Timeout(timeout, connect=min(timeout, 10.0)),
                                 headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
        self.name = name or "reranker"
        self.params = {"backend": "openai-http", "kind": "reranker", "url": safe_url(self.url), "name": name}

    def check(self) -> "HttpReranker":
        """One tiny request, so that a server without a rerank endpoint fails before the search runs."""
        self.scores("ping", ["ping"])
        return self

    def _fail(self, text: str) -> ModelError:
        return ModelError(text.replace(self._key, "***") if self._key else text)

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        http = http_library()
        body = {"query": query, "documents": list(documents), "top_n": len(documents)}
        if self.name != "reranker":
            body["model"] = self.name
        try:
            r = self._http.post(self.url + "/rerank", json=body)
        except http.TimeoutException as exc:
            raise self._fail(f"the reranker at {self._where} did not answer in time (timeout)") from exc
        except http.HTTPError as exc:
            raise self._fail(f"cannot reach the reranker at {self._where}: {type(exc).__name__}; "
                             f"is it running?") from exc
        if r.status_code != 200:
            detail = " ".join(r.text.split())[:200]
            if r.status_code in self.NO_ENDPOINT:
                raise self._fail(f"the server at {self.params['url']} has no rerank endpoint (HTTP {r.status_code}: "
                                 f"{detail}); start llama-server with --reranking, or use a reranker GGUF")
            raise self._fail(f"the reranker at {self._where} failed (HTTP {r.status_code}: {detail})")
        try:
            data = r.json()
            items = data["results"] if isinstance(data, dict) else data
            out = [float("-inf")] * len(documents)
            for item in items:
                out[int(item["index"])] = float(item.get("relevance_score", item.get("score")))
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise self._fail(f"the reranker at {self._where} answered in an unknown shape") from exc
        return out


def load_reranker(spec: str, chat_model=None, batch: int = 1) -> RerankModel:
    """`llm` (the chat model as a judge), an http(s) URL, a GGUF path, or a profile name. A server is
    asked once (a one-document request) and a GGUF loaded, so a bad reranker fails before any search."""
    if spec == "llm":
        if chat_model is None:
            raise UsageError("--rerank llm needs a chat model (--model, RAGCLI_MODEL or a profile)")
        return LlmJudge(chat_model, batch=batch)
    settings = config.model_settings(path=spec)
    if settings.url:
        return HttpReranker(settings.url, name=settings.name, api_key=settings.api_key(),
                            timeout=settings.timeout).check()

    path = Path(settings.path).expanduser()
    if not path.exists():
        where = f"profile [models.{settings.profile}] names {path}, which does not exist" if settings.profile \
            else f"{spec!r} is not a file, a server URL, a profile or 'llm'"
        raise ModelError(f"reranker not found: {where}")
    return GgufReranker(path, n_threads=settings.threads)
