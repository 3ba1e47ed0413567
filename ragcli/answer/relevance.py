"""The chat model judges which passages answer the question, before it answers.

One call: the answer prompt up to the question, then "which passage answers the question? reply with
its number, 0 if none does", and the next-token probability of each number is read (no text is
generated). It costs a few tokens beyond the passages, which the answer call that follows re-uses from
the KV cache (llama.cpp in process; a server's prompt cache). The shares of the numbers' mass are the
passages' relevance, "0" the share for "none of them":
- none of them answers when "0" holds at least half the mass (the model prefers "none" to all the
  passages together): the answer is `no_answer` before it is written;
- otherwise the passages kept are those at least half as likely as the best one.
Both are the reply's own boundaries, not figures fitted to a question set. Asking "does [S3] answer?"
of each passage in turn, or of each passage alone, was measured too (bench/answers/bench_judge.py,
docs/decisions.md): a small model says "yes" to every passage in the first form and "no" in the second,
so neither separates the passages that answer.

A backend that gives no probabilities (a server without `logprobs`) is asked once for the labels that
answer, and says so in a notice. A reply that names nothing readable leaves every passage unjudged: the
other checks then decide, and an answer is never shown as verified by a judge that did not run.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from ragcli.answer import prompt
from ragcli.errors import ModelError
from ragcli.models.chat import NoProbabilities
from ragcli.types import Source

NONE_AT = 0.5  # "none of them" holds at least this share: nothing answers
KEEP_SHARE = 0.5  # a passage at least this share of the best one's probability is kept
MIN_MASS = 0.05  # below this mass on the numbers together the reply would be something else: unjudged

PICK_LINE = ("Which passage answers the question above (not just mentions its topic)? Reply with one "
             "number: {numbers}, or 0 if none of them answers it.")
LIST_LINE = ("Which passages answer the question above (not just mention its topic)? Reply with their "
             "labels separated by commas, like S1, S3, or the word none.")


@dataclass
class Judged:
    """The judge's reading of the prompt's passages: label -> share of the reply's probability (None:
    not judged), `none`: the share for "none of them"."""

    scores: dict[str, Optional[float]] = field(default_factory=dict)
    none: Optional[float] = None
    method: str = "logprobs"  # logprobs | listwise | none
    notice: Optional[str] = None
    seconds: float = 0.0

    @property
    def ran(self) -> bool:
        return any(v is not None for v in self.scores.values())

    def relevant(self, sources: Sequence[Source]) -> list[Source]:
        """The passages judged to answer, in the given order (none when "none" wins)."""
        if not self.ran or (self.none or 0.0) >= NONE_AT:
            return []
        best = max((v or 0.0) for v in self.scores.values())
        return [s for s in sources if best > 0 and (self.scores.get(s.label) or 0.0) >= KEEP_SHARE * best]


def numbered(sources: Sequence[Source]) -> list[tuple[int, Source]]:
    """The number each passage is picked by: [S3] is 3; figures follow the passages ([F1] is m + 1
    with m passages)."""
    passages = sorted((s for s in sources if s.label.startswith("S")), key=lambda s: int(s.label[1:]))
    figures = sorted((s for s in sources if not s.label.startswith("S")), key=lambda s: s.label)
    return list(enumerate(passages + figures, 1))


def pick_line(sources: Sequence[Source]) -> str:
    return PICK_LINE.format(numbers=", ".join(f"{i} for [{s.label}]" for i, s in numbered(sources)))


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
    """The relevance of each passage of `answer_prompt` (at most 9: one digit each)."""
    t = time.perf_counter()
    sources = list(answer_prompt.sources)[:9]
    out = Judged({s.label: None for s in sources})
    reader = getattr(model, "next_word_probs", None)
    try:
        if reader is None:
            raise NoProbabilities(f"the model {getattr(model, 'name', '?')} gives no token probabilities")
        if on_progress:
            on_progress(1, 1)
        numbers = {str(i): (str(i),) for i in range(len(sources) + 1)}
        probs = reader(judge_messages(answer_prompt.messages, question, pick_line(sources)), numbers)
        total = sum(probs.values())
        if total >= MIN_MASS:
            out.none = probs["0"] / total
            out.scores = {s.label: probs[str(i)] / total for i, s in numbered(sources)}
        else:
            out.notice = "the relevance judge's reply would not have been a passage number: passages not judged"
            out.method = "none"
    except NoProbabilities as exc:
        try:
            out = _listwise(model, answer_prompt, question, str(exc))
        except ModelError as failed:
            out.notice = f"{exc}; the listing call failed too ({failed}): passages not judged"
            out.method = "none"
    except ModelError as exc:  # a prompt too long for the context, a server failing: not judged
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
        out.none = 0.0 if named & set(out.scores) else 1.0
    else:
        out.notice = f"{why}; its listing reply named no label: passages not judged"
        out.method = "none"
    return out
