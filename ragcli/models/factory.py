"""A model name -> a backend: a GGUF path (llama.cpp in process), an http(s) URL (an
OpenAI-compatible server), a profile of the config file (resolved by `config.model_settings`), or the
short name of a model on this machine (a catalogue name once pulled, a found file's name:
models/names.py).

One instance per model and options per process, so every stage of a command (rewrite, answer,
verify) shares one KV cache or one HTTP connection pool; `fresh=True` makes another (a server that
generates several answers at once needs one llama.cpp context per answer).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

from ragcli.errors import ModelError
from ragcli.models.chat import ChatModel
from ragcli.models import names
from ragcli.models.discovery import discover, server_models
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
    path = Path(names.resolve(s.path))
    return load_model(path, fresh=fresh, n_ctx=s.n_ctx, threads=s.threads, gpu_layers=s.gpu_layers, seed=s.seed,
                      temperature=s.temperature, prefix_cache=bool(s.prefix_cache))


def describe(s) -> Optional[dict]:
    """Which model `ask` would use, without loading it or calling a server (for `models`, `info`)."""
    if s.url:
        return {"backend": "openai-http", "url": safe_url(s.url), "name": s.name, "profile": s.profile}
    if s.path:
        try:
            path = names.resolve(s.path)
        except ModelError as exc:
            return {"backend": "llama.cpp", "path": None, "name": s.path, "profile": s.profile, "error": str(exc)}
        name = s.path if s.path != path and not Path(s.path).expanduser().exists() else None
        return {"backend": "llama.cpp", "path": path, "name": name, "profile": s.profile}
    return None


def catalog(settings, profiles: dict[str, dict], probe: bool = True) -> dict:
    """Everything `ragcli models` shows: the model `ask` would use, the profiles (with what each
    reachable server serves), and the GGUF files found. The one `ask` would use is marked."""
    selected = describe(settings)
    chosen = selected.get("path") if selected and not settings.url else None
    chosen_path = Path(chosen).resolve() if chosen else None
    rows = []
    for name, p in profiles.items():
        row = {"name": name, "selected": settings.profile == name}
        if p.get("url"):
            row.update(backend="openai-http", url=safe_url(str(p["url"])), model_name=p.get("name"))
            if probe:
                key = os.environ.get(p.get("api_key_env") or "RAGCLI_API_KEY") or None
                row["server"] = server_models(str(p["url"]), key)
        else:
            row.update(backend="llama.cpp", path=p.get("path"))
        rows.append(row)
    if probe and settings.url and not settings.profile:
        selected = dict(selected, server=server_models(settings.url, settings.api_key()))
    files = names.short_names(discover())
    for f in files:
        f["selected"] = chosen_path is not None and Path(f["path"]).resolve() == chosen_path
    return {"selected": selected, "profiles": rows, "files": files}
