"""A deterministic chat model for pipeline tests."""
from __future__ import annotations

from typing import Callable, Optional, Union

from ragcli.models.chat import Constraint, Messages, NoProbabilities, Progress


class FakeChatModel:
    """Deterministic chat model for pipeline tests.

    `replies`: a list of replies given in order (an exhausted queue fails the test), one string
    given to every call, or a function(messages) -> str. Every call is recorded in `calls`."""

    tokens_exact = False

    def __init__(self, replies: Union[list[str], Callable[[Messages], str], str] = "",
                 name: str = "fake", context_size: int = 4096, piece_size: int = 3,
                 relevance: Union[None, dict, Callable[[Messages, dict], dict]] = "even"):
        if isinstance(replies, str):
            fixed = replies
            replies = lambda _messages: fixed  # noqa: E731 - the same reply to every call
        self._replies = replies if callable(replies) else list(replies)
        self.name = name
        self.params = {"backend": "fake"}
        self.context_size = context_size
        self.piece_size = piece_size
        self.calls: list[dict] = []
        self.stats: dict = {}
        # `relevance`: what next_word_probs gives: {word: probability} for every call, a function
        # (messages, words) -> that, or "even" (every word but "0" equally likely: the relevance judge
        # keeps every passage); None: the model gives no probabilities, as a server without logprobs
        self._relevance = relevance
        self.judged: list[list[dict]] = []

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def _next_reply(self, messages: Messages) -> str:
        if callable(self._replies):
            return self._replies(messages)
        if not self._replies:
            raise AssertionError("FakeChatModel: no queued reply left")
        return self._replies.pop(0)

    def chat(self, messages: Messages, *, max_tokens: int, constraint: Optional[Constraint] = None,
             stream: bool = False, temperature: Optional[float] = None,
             on_progress: Optional[Progress] = None):
        self.calls.append({"messages": [dict(m) for m in messages], "max_tokens": max_tokens,
                           "constraint": constraint, "stream": stream, "temperature": temperature})
        reply = self._next_reply(messages)
        prompt = sum(self.count_tokens(m.get("content", "")) for m in messages)
        self.stats = {"prompt_tokens": prompt, "prompt_evaluated": prompt, "prompt_cached": 0,
                      "generated_tokens": self.count_tokens(reply), "finish_reason": "stop"}
        if on_progress:
            on_progress("prompt", {"prompt_tokens": prompt})
            on_progress("prompt_done", {"evaluated": prompt})
        if not stream:
            return reply
        step = self.piece_size
        return iter([reply[i:i + step] for i in range(0, len(reply), step)])

    def next_word_probs(self, messages: Messages, words: dict) -> dict:
        if self._relevance is None:
            raise NoProbabilities("the fake model gives no token probabilities")
        self.judged.append([dict(m) for m in messages])
        if callable(self._relevance):
            return self._relevance(messages, words)
        if isinstance(self._relevance, dict):
            return {w: float(self._relevance.get(w, 0.0)) for w in words}
        return {w: (0.0 if w == "0" else 1.0) for w in words}
