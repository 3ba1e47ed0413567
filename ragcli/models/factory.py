"""A model name -> a backend. Today: a GGUF path, run in process by llama.cpp."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from ragcli.models.chat import ChatModel

_OPTION_ALIASES = {"threads": "n_threads", "gpu_layers": "n_gpu_layers"}
_LOADED: dict[tuple, ChatModel] = {}


def load_model(path: Optional[Union[str, Path]], **opts) -> Optional[ChatModel]:
    """The chat model at `path` (one instance per path and options per process, so the KV cache
    is shared by every stage), or None when no model is configured.

    Accepts the constructor's options and the config names `threads`, `gpu_layers`;
    `max_tokens` is a per-call setting and is ignored here."""
    from ragcli.models.llama_cpp import LlamaCppModel

    if not path:
        return None
    opts.pop("max_tokens", None)
    opts = {_OPTION_ALIASES.get(k, k): v for k, v in opts.items()}
    opts = {k: v for k, v in opts.items() if v is not None}
    key = (str(Path(path).expanduser().resolve()), tuple(sorted(opts.items())))
    if key not in _LOADED:
        _LOADED[key] = LlamaCppModel(path, **opts)
    return _LOADED[key]
