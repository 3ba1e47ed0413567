"""The chat model judges which passages answer the question, before it answers.

For each passage of the answer prompt the model is asked "does [S3] answer the question?" and its
P(yes) is read from the next-token distribution of one forced token (no text is generated). The judge's
messages are the answer prompt's up to and including the question, then one short line per label: the
passages are evaluated once (llama.cpp's KV cache, a server's prompt cache) and each verdict costs a few
tokens; the answer call that follows shares the same prefix.

A backend that gives no probabilities (a server without `logprobs`) is asked once for the list of labels
that answer the question instead, and says so in a notice. A reply that names no label, or that cannot be
read, leaves every passage unjudged: the answer is then decided by the other checks, never shown as
verified by a judge that did not run.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from ragcli.answer import prompt
from ragcli.errors import ModelError
from ragcli.models.chat import YES_NO, NoProbabilities, p_yes
from ragcli.types import Source

# P(yes) / (P(yes) + P(no)) at or above this: the passage answers the question. The two answers' own
# boundary, not a tuned figure: a passage is relevant when the model prefers "yes" to "no".
RELEVANT = 0.5
JUDGE_LINE = ("Does passage [{label}] answer the question above (not just mention its topic)? "
              "Reply with one word: yes or no.")
LIST_LINE = ("Which passages answer the question above (not just mention its topic)? Reply with their "
             "labels separated by commas, like S1, S3, or the word none.")


@dataclass
class Judged:
    """The judge's reading of the prompt's passages: label -> P(yes) (None: not judged)."""

    scores: dict[str, Optional[float]] = field(default_factory=dict)
    method: str = "logprobs"  # logprobs | listwise | none
    notice: Optional[str] = None
    seconds: float = 0.0

    @property
    def ran(self) -> bool:
        return any(v is not None for v in self.scores.values())

    def relevant(self, sources: Sequence[Source]) -> list[Source]:
        return [s for s in sources if (self.scores.get(s.label) or 0.0) >= RELEVANT]


def judge_messages(answer_messages: list[dict], question: str, line: str) -> list[dict]:
    """The answer prompt's messages with its task line (after the question) replaced by `line`: the
    same text up to the question, so the two calls share their prefix."""
    last = answer_messages[-1]["content"]
    asked = f"\n\nQuestion: {question}\n\n"
    cut = last.rfind(asked)
    head = last[:cut + len(asked)] if cut >= 0 else last + "\n\n"
    return [*answer_messages[:-1], {"role": "user", "content": head + line}]


def judge(model, answer_prompt: prompt.Prompt, question: str,
          on_progress: Optional[Callable[[int, int], None]] = None) -> Judged:
    """P(yes) for each passage of `answer_prompt` (figures included), in prompt order."""
    t = time.perf_counter()
    sources = answer_prompt.sources
    out = Judged({s.label: None for s in sources})
    reader = getattr(model, "next_word_probs", None)
    try:
        if reader is None:
            raise NoProbabilities(f"the model {getattr(model, 'name', '?')} gives no token probabilities")
        for i, s in enumerate(sources, 1):
            if on_progress:
                on_progress(i, len(sources))
            probs = reader(judge_messages(answer_prompt.messages, question, JUDGE_LINE.format(label=s.label)), YES_NO)
            out.scores[s.label] = p_yes(probs)
        if not out.ran:
            out.notice = "the relevance judge's replies were neither yes nor no: passages not judged"
    except NoProbabilities as exc:
        try:
            out = _listwise(model, answer_prompt, question, str(exc))
        except ModelError as failed:
            out.notice = f"{exc}; the listing call failed too ({failed}): passages not judged"
            out.method = "none"
    except ModelError as exc:  # a passage too long for the context, a server failing: not judged
        out.notice = f"the relevance judge could not run ({exc}): passages not judged"
        out.method = "none"
    out.seconds = time.perf_counter() - t
    return out


def _listwise(model, answer_prompt: prompt.Prompt, question: str, why: str) -> Judged:
    """One call that lists the labels that answer the question (for backends without probabilities)."""
    sources = answer_prompt.sources
    out = Judged({s.label: None for s in sources}, method="listwise",
                 notice=f"{why}; the passages were judged by one listing call instead")
    reply = model.chat(judge_messages(answer_prompt.messages, question, LIST_LINE), max_tokens=24, temperature=0.0)
    named = {f"{m.group(1).upper()}{m.group(2)}" for m in re.finditer(r"\b([SF])\s*(\d+)\b", str(reply), re.I)}
    if named or re.search(r"\bnone\b", str(reply), re.I):
        out.scores = {s.label: (1.0 if s.label in named else 0.0) for s in sources}
    else:
        out.notice = f"{why}; its listing reply named no label: passages not judged"
        out.method = "none"
    return out
