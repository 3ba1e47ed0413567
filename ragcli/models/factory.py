"""A model name -> a backend: a GGUF path (llama.cpp in process), an http(s) URL (an
OpenAI-compatible server) or a profile of the config file (resolved by `config.model_settings`).

One instance per model and options per process, so every stage of a command (rewrite, answer,
verify) shares one KV cache or one HTTP connection pool; `fresh=True` makes another (a server that
generates several answers at once needs one llama.cpp context per answer).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from ragcli.config import config_path
from ragcli.errors import ModelError
from ragcli.models.chat import ChatModel
from ragcli.models.llama_cpp import LlamaCppModel
from ragcli.models.openai_http import HttpChatModel, safe_url

_OPTION_ALIASES = {"threads": "n_threads", "gpu_layers": "n_gpu_layers"}
_LOADED: dict[tuple, ChatModel] = {}


def load_model(path: Optional[Union[str, Path]], fresh: bool = False, **opts) -> Optional[ChatModel]:
    """The GGUF chat model at `path`, run in process, or None when no model is configured.

    Accepts the constructor's options and the config names `threads`, `gpu_layers`;
    `max_tokens` is a per-call setting and is ignored here."""
    if not path:
        return None
    opts.pop("max_tokens", None)
    opts = {_OPTION_ALIASES.get(k, k): v for k, v in opts.items()}
    opts = {k: v for k, v in opts.items() if v is not None}
    key = (str(Path(path).expanduser().resolve()), tuple(sorted(opts.items())))
    if fresh:
        return LlamaCppModel(path, **opts)
    if key not in _LOADED:
        _LOADED[key] = LlamaCppModel(path, **opts)
    return _LOADED[key]


def connect(url: str, fresh: bool = False, **opts) -> ChatModel:
    """The chat model behind an OpenAI-compatible server (probed once per process)."""
    if fresh:
        return HttpChatModel(url, **opts)
    key = (url, tuple(sorted((k, v) for k, v in opts.items() if k != "api_key")), bool(opts.get("api_key")))
    if key not in _LOADED:
        _LOADED[key] = HttpChatModel(url, **opts)
    return _LOADED[key]


def from_settings(s, fresh: bool = False) -> Optional[ChatModel]:
    """The backend that `config.ModelSettings` name (None when no model is configured); `fresh`: a
    new instance, not the one this process already loaded."""
    if s.url:
        return connect(s.url, fresh=fresh, name=s.name, api_key=s.api_key(), n_ctx=s.n_ctx, temperature=s.temperature,
                       seed=s.seed, timeout=s.timeout, structured=s.structured, profile=s.profile)
    if not s.path:
        return None
    path = Path(s.path).expanduser()
    if not path.exists() and "/" not in s.path and not s.path.endswith(".gguf"):
        raise ModelError(f"model {s.path!r} is not a file, a server URL or a profile of {config_path()}")
    return load_model(path, fresh=fresh, n_ctx=s.n_ctx, threads=s.threads, gpu_layers=s.gpu_layers, seed=s.seed,
                      temperature=s.temperature, prefix_cache=bool(s.prefix_cache))


def describe(s) -> Optional[dict]:
    """Which model `ask` would use, without loading it or calling a server (for `models`, `info`)."""
    if s.url:
        return {"backend": "openai-http", "url": safe_url(s.url), "name": s.name, "profile": s.profile}
    if s.path:
        return {"backend": "llama.cpp", "path": str(Path(s.path).expanduser()), "profile": s.profile}
    return None
