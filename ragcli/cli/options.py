"""The chat-model options shared by `ask` and `summary new`, the re-ranker options of `search`, `ask`,
`summary new` and `eval retrieval`, and the models they load."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.common import status
from ragcli.config import DEFAULTS, UNSET_RULES
from ragcli.errors import UsageError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="Chat model: a GGUF file, an OpenAI-"
                                                 "compatible server URL (http://host:port/v1), a profile of the "
                                                 "config file, or none: no model, ask quotes the books' own "
                                                 "sentences (default: $RAGCLI_MODEL, then the config file).",
                                                 show_default=False)]
ModelNameOpt = Annotated[Optional[str], typer.Option("--model-name", help="Which of the server's models to use "
                                                     "(default: the only one it serves).", show_default=False)]
CtxOpt = Annotated[Optional[int], typer.Option("--ctx", metavar="TOKENS", show_default=False, help="Context size "
                                               f"in tokens (default: {UNSET_RULES['n_ctx']}; `ragcli info` "
                                               "shows it).")]
ThreadsOpt = Annotated[Optional[int], typer.Option("--threads", metavar="N", show_default=False,
                                                   help=f"CPU threads for llama.cpp (default: {UNSET_RULES['threads']}).")]
GpuOpt = Annotated[Optional[int], typer.Option("--gpu-layers", metavar="N", show_default=False,
                                               help=f"Layers to offload to a GPU (default: {UNSET_RULES['gpu_layers']}).")]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", show_default=False, help="Sampling seed: the same "
                                                f"seed, model and prompt give the same answer (default {DEFAULTS.seed}).")]
TempOpt = Annotated[Optional[float], typer.Option("--temperature", show_default=False, help="Sampling "
                                                  f"temperature: 0 always takes the likeliest word (default {DEFAULTS.temperature}).")]
RerankOpt = Annotated[Optional[str], typer.Option("--rerank", help="Re-rank the first hits with a model: a "
                                                 "reranker GGUF (e.g. bge-reranker-v2-m3), a server with /v1/rerank "
                                                 "(http://host:port/v1), a profile, or llm (the chat model rates each "
                                                 "passage; slow). Default: the config file's rerank; none: off.",
                                                 show_default=False)]
RerankDepthOpt = Annotated[Optional[int], typer.Option("--rerank-depth", min=1, max=200, show_default=False,
                                                       help="How many of the first hits --rerank re-scores "
                                                       "(at least -k; default 20).")]
JudgeModelOpt = Annotated[Optional[str], typer.Option("--model", help="Chat model for --rerank llm (default: "
                                                      "$RAGCLI_MODEL, then the config file).", show_default=False)]


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
    from ragcli.models.chat import Grammar

    if not path:
        return None
    try:
        return Grammar(open(path, encoding="utf-8").read())
    except OSError as exc:
        raise UsageError(f"cannot read grammar file {path}: {exc.strerror}") from exc


def load_reranker(spec: Optional[str], depth: Optional[int], chat_model=None, chat_loader=None):
    """The re-ranker of --rerank (or the config file's `rerank`) as search's Reranker, and its depth;
    (None, depth) when there is none. `--rerank llm` rates with `chat_model`, else with the model
    `chat_loader()` returns (search and eval, which load no chat model of their own)."""
    from ragcli import config

    spec, depth = config.rerank_settings(spec, depth)
    if spec is None:
        return None, depth
    from ragcli.models.rerank import load_reranker as load
    from ragcli.search.model_rerank import ModelRerank

    if spec == "llm" and chat_model is None and chat_loader is not None:
        chat_model = chat_loader()
    if config.is_url(spec):
        from ragcli.models.openai_http import safe_url

        what = f"connecting to the reranker at {safe_url(spec)}"
    else:
        what = "preparing the chat model as a judge" if spec == "llm" else f"loading the reranker {spec}"
    with status(what):
        return ModelRerank(load(spec, chat_model)), depth


def judge_loader(model: Optional[str], model_name: Optional[str]):
    """For commands without a chat model of their own (search, eval): load the one --rerank llm rates with."""
    return lambda: load_model(model, None, None, None, None, None, None, model_name)[0]


def max_tokens_help(what: str = "answer", default: int = DEFAULTS.max_tokens) -> str:
    return f"Longest {what} in tokens (default {default})."
