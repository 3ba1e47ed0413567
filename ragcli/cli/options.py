"""The chat-model options shared by `ask` and `summary new`, and the model they load."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.common import status

ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="Chat model: a GGUF file, an OpenAI-"
                                                 "compatible server URL (http://host:port/v1) or a profile of the "
                                                 "config file (default: $RAGCLI_MODEL, then the config file).",
                                                 show_default=False)]
ModelNameOpt = Annotated[Optional[str], typer.Option("--model-name", help="Which of the server's models to use "
                                                     "(default: the only one it serves).", show_default=False)]
CtxOpt = Annotated[Optional[int], typer.Option("--ctx", help="Context size in tokens (default 4096).",
                                               show_default=False)]
ThreadsOpt = Annotated[Optional[int], typer.Option("--threads", help="CPU threads for llama.cpp.", show_default=False)]
GpuOpt = Annotated[Optional[int], typer.Option("--gpu-layers", help="Layers to offload to a GPU (needs a GPU "
                                               "build of llama.cpp).", show_default=False)]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", show_default=False, help="Sampling seed: the same "
                                                "seed, model and prompt give the same answer (default 0).")]
TempOpt = Annotated[Optional[float], typer.Option("--temperature", show_default=False, help="Sampling "
                                                  "temperature: 0 always takes the likeliest word (default 0.2).")]


def load_model(model, ctx, threads, gpu_layers, seed, temperature, max_tokens, model_name=None):
    """Merge flags, RAGCLI_MODEL and the config file; load the model or connect to its server (None
    when none is configured). Returns (model or None, the merged settings)."""
    from ragcli import config
    from ragcli.models.factory import from_settings

    s = config.model_settings(path=model, name=model_name, n_ctx=ctx, threads=threads, gpu_layers=gpu_layers,
                              seed=seed, temperature=temperature, max_tokens=max_tokens)
    if not (s.path or s.url):
        return None, s
    what = f"loading the model {s.path}"
    if s.url:
        from ragcli.models.openai_http import safe_url

        what = f"connecting to {safe_url(s.url)}"
    with status(what):
        return from_settings(s), s


def read_grammar(path: Optional[str]):
    """The --grammar-file as an output constraint (models.chat.Grammar), or None."""
    from ragcli.errors import UsageError
    from ragcli.models.chat import Grammar

    if not path:
        return None
    try:
        return Grammar(open(path, encoding="utf-8").read())
    except OSError as exc:
        raise UsageError(f"cannot read grammar file {path}: {exc.strerror}") from exc
