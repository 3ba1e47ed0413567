"""The chat-model protocol and the output constraints callers ask for.

Callers say *what shape* the output must have (one line, JSON matching a schema, a user's GBNF
grammar); each backend turns that into what its engine takes (llama.cpp: a GBNF grammar; a server:
its `grammar`, `response_format` / `json_schema`, or stop sequences plus tolerant parsing).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Protocol, Union

from ragcli.errors import ModelError

Messages = list[dict]


@dataclass(frozen=True)
class OneLine:
    """One line of printable text, 1..max_chars characters, not starting with a space."""

    max_chars: int = 200


@dataclass(frozen=True)
class JsonSchema:
    """JSON matching `schema`. `gbnf`: an exact grammar for engines that take GBNF (optional; else
    the schema is converted)."""

    schema: dict = field(hash=False)
    gbnf: Optional[str] = None

    def __hash__(self) -> int:  # schemas are dicts; the GBNF text (or the id) identifies one
        return hash(self.gbnf) if self.gbnf else id(self)


@dataclass(frozen=True)
class Grammar:
    """A GBNF grammar (llama.cpp's format), e.g. the user's `--grammar-file`."""

    gbnf: str


Constraint = Union[OneLine, JsonSchema, Grammar]

# Progress events a backend reports through `on_progress(event, info)` while it works:
#   "prompt"      {"prompt_tokens": n or None}: the request was sent / prompt evaluation starts
#   "prompt_progress" {"done": n, "total": m}: n of the m prompt tokens to evaluate are done
#                 (llama.cpp: every 64 tokens of a longer prompt)
#   "prompt_done" {"evaluated": n}: the prompt is evaluated, n tokens of it were not cached
#                 (llama.cpp only; a server does not say until the reply comes)
#   "first_token" {"seconds": s}: the first piece of the reply arrived (s since the call began)
Progress = Callable[[str, dict], None]


class ChatModel(Protocol):
    name: str
    params: dict  # recorded with answers and summaries: backend, path or url, n_ctx, seed, temperature
    context_size: int
    stats: dict  # last call: prompt_tokens, prompt_evaluated, prompt_cached, generated_tokens (what is known),
    #              finish_reason: "stop" | "length" (max_tokens) | None (the caller stopped reading)
    tokens_exact: bool  # False: count_tokens is a conservative estimate (never below the real count)

    def chat(self, messages: Messages, *, max_tokens: int, constraint: Optional[Constraint] = None,
             stream: bool = False, temperature: Optional[float] = None,
             on_progress: Optional[Progress] = None) -> Union[str, Iterator[str]]:
        """The assistant's reply; with stream=True an iterator of text pieces. `temperature` None
        means the model's default."""
        ...

    def count_tokens(self, text: str) -> int:
        ...


def estimate_tokens(text: str) -> int:
    """A token count that errs high: one token per 2.5 UTF-8 bytes (BPE vocabularies average about
    4 characters a token on English prose, fewer on digits and other scripts)."""
    return int(len(text.encode("utf-8")) / 2.5) + 1


# The first words of a yes/no reply, as `next_word_probs` reads them (a word's first token stands for it).
YES_NO = {"yes": ("yes", "Yes", " yes", " Yes", "YES"), "no": ("no", "No", " no", " No", "NO")}


def p_yes(probs: dict, min_mass: float = 0.05) -> Optional[float]:
    """P(yes) / (P(yes) + P(no)) from `next_word_probs(..., YES_NO)`; None when the two together hold
    less than `min_mass` of the next token (the reply would be neither)."""
    yes, no = probs.get("yes", 0.0), probs.get("no", 0.0)
    return yes / (yes + no) if yes + no >= min_mass else None


class NoProbabilities(ModelError):
    """The backend cannot give next-token probabilities (a server without `logprobs`)."""


class IncompleteReply(ModelError):
    """The reply stopped before the model finished (a stream cut mid-answer, a server failing on the
    way). `partial` is the text received: an answer keeps it, validated, with status "incomplete";
    a summary saves nothing."""

    def __init__(self, message: str, partial: str = ""):
        super().__init__(message)
        self.partial = partial
