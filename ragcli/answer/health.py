"""An answer's health: what went wrong with a model's text, found while it streams and after.

Warnings (code -> what it means), each with a message in words:
- `truncated`: the answer did not finish: the model hit `max_tokens` (looping or not);
- `repetition`: the text loops (a stretch repeated back to back, or one sentence again and again);
  generation stops as soon as that is seen, and repeated sentences are dropped from the answer;
- `echo`: the model copied the prompt (source headers, "Labels you may cite", the CONTEXT and
  QUESTION lines, the system prompt's rules); those lines are removed before anything is shown;
- `weak`: most factual sentences are unsupported by the passages they cite or cite none;
- `unsupported`: no sentence cites a retrieved passage (the status says so too);
- `stream_cut`: a server's stream stopped before the model finished (the CLI exits 6 after showing
  the part received);
- `not_text`: the answer is not language: mostly numbers, symbols and labels, or a run of them (a
  figure's axis ticks and labels copied: "466059-58 466059°-58 2 4 -.- PACE SETTER Figure 4"); an
  answer that is mostly such text is not shown as answered (`not_language`).

`Monitor` sits in the generation loop between the model and the citation filter: `feed` passes on
the text without echoes and raises `stop` once the text loops. `warnings` and `claim_warnings`
turn what was seen into `HealthWarning`s; `status` folds them into the answer's status.
"""
from __future__ import annotations

import math
import re
from typing import Iterable, Optional, Sequence

from ragcli.answer.not_text import (NOT_TEXT_MIN_TOKENS, language_measures,  # noqa: F401 - read as health.*
                                    not_language, text_warnings)
from ragcli.answer.prompt import SYSTEM_PROMPT, answer_header, source_header
from ragcli.types import Claim, HealthWarning, Source

# A stretch of the text repeated back to back this many times, and at least LOOP_MIN_SPAN characters
# in all (so "very, very, very" is not a loop and 20 copies of "eyes, " are), is a loop.
LOOP_MIN_COPIES = 3
LOOP_MIN_PERIOD = 4
LOOP_MAX_PERIOD = 400
LOOP_MIN_SPAN = 60
# The same sentence (digits aside, at least this many words) this many times is a loop too.
SENTENCE_MIN_WORDS = 5
SENTENCE_MAX_COPIES = 3
# `weak`: more than this share of the factual sentences are unsupported or cite nothing.
WEAK_SHARE = 0.5
# Codes that make a result not worth keeping (`summary new` refuses to save it without --keep-weak).
BAD = ("truncated", "repetition", "weak", "unsupported", "stream_cut", "not_text")
ORDER = ("stream_cut", "not_text", "unsupported", "weak", "truncated", "repetition", "echo")

# The prompt's own lines a model may copy (answer/prompt.py); compared lower-cased at a line start.
ECHO_ANYWHERE = ("labels you may cite",)
ECHO_LINE_STARTS = ("context:", "question:", "passages:", "labels you may cite",
                    "answer the question with a citation label", "answer in 2 to 4 sentences, each ending",
                    "these passages answer the question", "these passages say what to do here",
                    "say what the passages tell the reader to do", "summarise what the passages say about",
                    "task: check each numbered claim", "rules for every task")
UNFINISHED = ("truncated", "stream_cut")  # a loop ragcli stopped is not a cut: the text before it is the answer
ECHO_PREFIX = 36  # characters of a source header or a system prompt line that identify it
QUESTION_MIN_CHARS = 30  # a question this long, copied at a line start, is an echo
# A label-like token at a line start ("[S1]", "[2-7]", "[Passage S1]"): a copied source header or
# question may follow a label of the model's own making.
LABEL_AT_START = re.compile(r"^\[[^\]\n]{1,16}\]\s*")
# The question copied with its first word changed ("A soldier's arm" -> "The soldier's arm", "His
# intestines" -> "The intestines"): both sides are compared without a leading article or possessive.
ARTICLE_AT_START = re.compile(r"^(a|an|the|his|her|my|your|their|our|this|that) ", re.I)
LABEL_MAX = 18  # characters of an unclosed "[..." held at a line start while it could be such a token
PARAGRAPH_NUMBER = re.compile(r"^\d+-\d+\.\s+")  # FM style "2-7. " before a section's name


def _norm(text: str) -> str:
    """Lower-cased, digits as 0, runs of spaces as one: "(18) The" and "(19) The" compare equal."""
    return re.sub(r"\s+", " ", re.sub(r"\d+", "0", text.lower()))


class LoopDetector:
    """Fed the text as it streams; `looping` turns True once the tail repeats itself."""

    def __init__(self):
        self.raw = ""
        self.norm = ""
        self.looping = False
        self.reason = ""
        self._sentences: dict[str, int] = {}
        self._done = 0  # characters of `norm` already split into sentences

    def feed(self, piece: str) -> bool:
        if self.looping or not piece:
            return self.looping
        self.raw += piece
        self.norm = _norm(self.raw)  # whole text each time: a number may arrive one digit a piece
        self._check_tail()
        if not self.looping:
            self._check_sentences()
        return self.looping

    def finish(self) -> bool:
        """At the end of the reply: its last sentence (no sentence end after it yet) counts too, and
        when it is cut short (max_tokens) a start of a sentence already written twice counts as a
        third copy: the model was looping when the limit stopped it."""
        if self.looping:
            return True
        tail = re.sub(r"^[\W\d]+", "", self.norm[self._done:]).strip(" .")
        if len(tail.split()) >= SENTENCE_MIN_WORDS:
            copies = self.norm[:len(self.norm) - len(tail)].count(tail)  # earlier, inside longer sentences too
            if copies + 1 >= SENTENCE_MAX_COPIES:
                self.looping = True
                self.reason = f"one sentence came {copies + 1} times"
        return self.looping

    def _check_tail(self) -> None:
        period = _looping_period(self.norm.rstrip())
        if period:
            self.looping = True
            self.reason = f"a stretch of {period} characters came back again and again"

    def _check_sentences(self) -> None:
        cut = max(self.norm.rfind(". "), self.norm.rfind("\n"))
        if cut <= self._done:
            return
        for sentence in re.split(r"(?<=[.!?])\s+|\n", self.norm[self._done:cut + 1]):
            key = re.sub(r"^[\W\d]+", "", sentence).strip(" .")
            if len(key.split()) < SENTENCE_MIN_WORDS:
                continue
            self._sentences[key] = self._sentences.get(key, 0) + 1
            if self._sentences[key] >= SENTENCE_MAX_COPIES:
                self.looping = True
                self.reason = f"one sentence came {self._sentences[key]} times"
                return
        self._done = cut + 1


class EchoFilter:
    """Removes lines that copy the prompt, before they are shown. Text at a line start is held back
    only while it could still become one of the prompt's lines; "Labels you may cite" is caught
    anywhere in a line (held back while a line's tail could be its beginning)."""

    def __init__(self, line_starts: Iterable[str] = (), anywhere: Iterable[str] = ECHO_ANYWHERE):
        self.anywhere = tuple(a.lower() for a in anywhere)
        self.patterns = tuple(dict.fromkeys(p.lower() for p in (*line_starts, *self.anywhere) if p.strip()))
        self.removed: list[str] = []
        self._buf = ""
        self._line_start = True
        self._dropping = False

    def feed(self, piece: str) -> str:
        out: list[str] = []
        for ch in piece:
            self._step(ch, out)
        return "".join(out)

    def flush(self) -> str:
        out, self._buf = self._buf, ""
        if self._dropping:
            self._dropping = False
            return ""
        return out

    def _step(self, ch: str, out: list[str]) -> None:
        if self._dropping:
            self.removed[-1] += ch
            if ch == "\n":
                self._dropping, self._line_start = False, True
            return
        self._buf += ch
        if self._line_start:
            head = self._buf.lstrip(" \t-*•>#").lower()
            heads = [head]
            if head.startswith("["):  # also the line without a label-like token of the model's own
                bare = LABEL_AT_START.sub("", head, count=1)
                if bare != head:
                    heads.append(bare)
                elif "]" not in head and len(head) < LABEL_MAX:
                    heads.append("")  # the token is not closed yet
            heads += [ARTICLE_AT_START.sub("", h, count=1) for h in heads if ARTICLE_AT_START.match(h)]
            if head and any(h and h.startswith(p) for h in heads for p in self.patterns):
                self._drop(self._buf, ch)
                return
            if ch != "\n" and (not head or any(not h or p.startswith(h) for h in heads for p in self.patterns)):
                return  # could still be an echo: hold
            self._line_start = False
        low = self._buf.lower()
        for marker in self.anywhere:
            i = low.find(marker)
            if i >= 0:
                out.append(self._buf[:i].rstrip(" ,;:"))
                self._drop(self._buf[i:], ch)
                return
        if ch == "\n":
            out.append(self._buf)
            self._buf, self._line_start = "", True
            return
        keep = max((k for m in self.anywhere for k in range(1, len(m)) if low.endswith(m[:k])), default=0)
        out.append(self._buf[:len(self._buf) - keep])
        self._buf = self._buf[len(self._buf) - keep:]

    def _drop(self, text: str, ch: str) -> None:
        self.removed.append(text)
        self._buf = ""
        if ch == "\n":
            self._line_start = True
        else:
            self._dropping = True


def echo_patterns(sources: Sequence[Source], system_prompt: str = "", question: str = "") -> list[str]:
    """What a copied prompt line starts with: the fixed lines, each source's header (with its label,
    and whole without it), the system prompt's lines, the question."""
    headers = [header(s) for s in sources for header in (source_header, answer_header)]
    return patterns_from(headers, system_prompt, question)


def patterns_from(headers: Sequence[str], system_prompt: str = "", question: str = "") -> list[str]:
    """`echo_patterns` from the prompt's own strings (bench/answers/answer_health.py --recheck uses it too).
    A header without its label is kept whole (a line must copy all of it, page included, so an answer
    that starts with a section's name is not taken for one); so is the question, when it is long
    enough that an answer line starting with all of it can only be a copy."""
    out = list(ECHO_LINE_STARTS)
    out += [h[:ECHO_PREFIX] for h in headers]
    for h in headers:  # without the label, and without the paragraph number a model may move into it
        bare = LABEL_AT_START.sub("", h, count=1)
        if bare != h:
            out += [b for b in dict.fromkeys((bare, PARAGRAPH_NUMBER.sub("", bare, count=1))) if len(b) >= 12]
    for line in system_prompt.splitlines():
        line = line.strip().lstrip("- ").strip()
        if len(line) >= 20:
            out.append(line[:ECHO_PREFIX])
    question = " ".join(question.split()).lower()
    # the whole question, and each of its sentences (a copy of one sentence of a two-sentence question
    # is an echo too)
    sentences = [question] + [s.rstrip(".?!") for s in re.split(r"(?<=[.?!])\s+", question)]
    for sentence in dict.fromkeys(ARTICLE_AT_START.sub("", s, count=1) for s in sentences):
        if len(sentence) >= QUESTION_MIN_CHARS and len(sentence.split()) >= SENTENCE_MIN_WORDS:
            out.append(sentence)
    return out


class Monitor:
    """The generation loop's health check: `feed(raw piece) -> text to pass on`; `stop` once the
    model loops; `flush()` at the end."""

    def __init__(self, sources: Sequence[Source] = (), system_prompt: Optional[str] = None, question: str = ""):
        if system_prompt is None:
            system_prompt = SYSTEM_PROMPT
        self.echo = EchoFilter(echo_patterns(sources, system_prompt, question))
        self.loop = LoopDetector()

    @property
    def stop(self) -> bool:
        return self.loop.looping

    def feed(self, piece: str) -> str:
        self.loop.feed(piece)
        return self.echo.feed(piece)

    def flush(self) -> str:
        self.loop.finish()
        return self.echo.flush()

    def warnings(self, stats: Optional[dict], max_tokens: int) -> list[HealthWarning]:
        return generation_warnings(stats or {}, max_tokens, self.loop.looping, self.echo.removed)


def generation_warnings(stats: dict, max_tokens: int, looped: bool, echoes: Sequence[str]) -> list[HealthWarning]:
    """Warnings known once generation ends. `stats`: the model's last-call stats (`finish_reason`
    "length" or "stop" when the backend says, else `generated_tokens`)."""
    out: list[HealthWarning] = []
    reason = stats.get("finish_reason")
    generated = stats.get("generated_tokens")
    if looped and reason == "length":  # the token limit stopped it while it looped
        out.append(HealthWarning("repetition", "the model repeated itself; the repeated sentences were dropped"))
        out.append(HealthWarning("truncated", f"the answer is cut off at the {max_tokens}-token limit "
                                 f"(--max-tokens) while the model looped"))
    elif looped:  # ragcli stopped it: what came before the loop is the answer, nothing of it was cut
        out.append(HealthWarning("repetition", "the model repeated itself; generation was stopped and the "
                                 "repeated sentences were dropped"))
    elif reason == "length" or (reason is None and isinstance(generated, int) and generated >= max_tokens):
        out.append(HealthWarning("truncated", f"the answer is cut off at the {max_tokens}-token limit "
                                 f"(--max-tokens)"))
    if echoes:
        n = len(echoes)
        out.append(HealthWarning("echo", f"{n} line{'s' if n > 1 else ''} copied from the prompt "
                                 f"{'were' if n > 1 else 'was'} removed"))
    return out


def claim_warnings(claims: Sequence[Claim], status: str = "answered") -> list[HealthWarning]:
    """`weak` (most factual sentences lack support) and `unsupported` (nothing cited), from the
    graded claims."""
    out: list[HealthWarning] = []
    if status == "unsupported":
        out.append(HealthWarning("unsupported", "no sentence of this answer cites a retrieved passage"))
        return out
    factual = [c for c in claims if c.support != "not_factual"]
    bad = [c for c in factual if c.support in ("unsupported", "no_source")]
    if factual and len(bad) / len(factual) > WEAK_SHARE:
        out.append(HealthWarning("weak", f"{len(bad)} of {len(factual)} sentences are not backed by the "
                                 f"passages they cite, or cite none"))
    return out


def repeats_question(text: str, question: str) -> bool:
    """Is the answer nothing but the question's own clauses, copied back? ("He keeled over in the heat
    [S1]. His skin is burning hot, beet red and bone dry [S1]." for "He keeled over in the heat; his skin
    is burning hot, beet red and bone dry.") The line-start patterns miss it when the copy splits the
    question into clauses shorter than QUESTION_MIN_CHARS. Only a reply made of copies counts: an answer
    that restates the question and then answers it is an answer."""
    def norm(s: str) -> str:
        return " ".join(re.sub(r"\[[A-Za-z]?\s*\d+\]", " ", s).lower().replace("’", "'").split()).strip(" .?!;:,")

    clauses = {norm(c) for c in re.split(r"[.?!;]+", question) if len(norm(c).split()) >= 3}
    sentences = [norm(s) for s in re.split(r"(?<=[.?!;])\s+", text) if norm(s)]
    return bool(clauses) and bool(sentences) and all(s in clauses for s in sentences)


def merge(*groups: Iterable[HealthWarning]) -> list[HealthWarning]:
    """One warning per code, in the order of ORDER."""
    seen: dict[str, HealthWarning] = {}
    for group in groups:
        for w in group:
            seen.setdefault(w.code, w)
    return sorted(seen.values(), key=lambda w: ORDER.index(w.code) if w.code in ORDER else len(ORDER))


def status(current: str, warnings: Sequence[HealthWarning]) -> str:
    """An answered text that did not finish becomes `incomplete`; other statuses stay."""
    if current == "answered" and unfinished(warnings):
        return "incomplete"
    return current


def unfinished(warnings: Iterable) -> bool:
    """The generation did not come to its end: cut at max_tokens (looping or not), or a stream cut. A loop
    ragcli stopped itself is not unfinished: what came before it is the answer (`repetition` says so)."""
    return any(getattr(w, "code", None) in UNFINISHED for w in warnings)


def is_bad(warnings: Iterable) -> bool:
    return any((w.code if isinstance(w, HealthWarning) else w.get("code")) in BAD for w in warnings)


def drop_repeats(text: str) -> str:
    """The text with every repeat of a sentence (digits aside, SENTENCE_MIN_WORDS words or more)
    dropped, and a tail that loops cut to its first copy."""
    parts = re.split(r"(?<=[.!?])(\s+)|(\n)", text)
    seen: set[str] = set()
    out: list[str] = []
    for part in parts:
        if part is None:
            continue
        key = re.sub(r"^[\W\d]+", "", _norm(part)).strip(" .")
        if len(key.split()) >= SENTENCE_MIN_WORDS:
            if key in seen:
                if out and out[-1].isspace():
                    out.pop()
                continue
            seen.add(key)
        out.append(part)
    return _cut_looping_tail("".join(out)).strip()


def _looping_period(text: str) -> Optional[int]:
    """The length of a stretch that ends `text` repeated back to back (LOOP_MIN_COPIES times and
    LOOP_MIN_SPAN characters at least), or None."""
    n = len(text)
    for period in range(LOOP_MIN_PERIOD, min(LOOP_MAX_PERIOD, n // LOOP_MIN_COPIES) + 1):
        copies = max(LOOP_MIN_COPIES, math.ceil(LOOP_MIN_SPAN / period))
        if period * copies > n:
            continue
        block = text[n - period:]
        if all(text[n - (i + 1) * period:n - i * period] == block for i in range(1, copies)):
            return period
    return None


def _cut_looping_tail(text: str) -> str:
    """"a b c, a b c, a b c, a b c" -> "a b c, ": a periodic tail kept once."""
    period = _looping_period(text)
    if not period:
        return text
    block, start = text[len(text) - period:], len(text) - period
    while start - period >= 0 and text[start - period:start] == block:
        start -= period
    return text[:start + period]


def finish(answer) -> None:
    """After grounding: add `weak` / `unsupported` from the graded claims and fold the warnings
    into the status (`incomplete` for an answer that did not finish)."""
    if answer.status in ("answered", "unsupported"):
        answer.warnings = merge(answer.warnings, claim_warnings(answer.claims, answer.status))
    answer.status = status(answer.status, answer.warnings)


def verification_skipped(answer, has_model: bool) -> Optional[str]:
    """Why `--verify` checked nothing (None when it ran)."""
    if answer.verification is not None:
        return None
    if not has_model:
        return "no model is configured: the answer is quoted from the book, there is no draft to check"
    if answer.status == "no_context":
        return "nothing relevant was retrieved, so no answer was written"
    if answer.status == "unsupported":
        return "the draft cites no retrieved passage, so no claim can be checked against one"
    if answer.status == "no_answer":
        return "the model said the passages do not answer the question"
    return "the answer has no factual sentence to check"
