"""The model rewrite of a question into the book's vocabulary, and the filter that keeps only real
rewrites (small models answer or echo the prompt instead; bench/retrieval/bench_rewrite.py)."""
from __future__ import annotations

import re
from typing import Callable, Optional, Sequence

from ragcli.models.chat import OneLine
from ragcli.store import corpus as store
from ragcli.system_prompt import ANSWER_PREFIX, SUMMARY_PREFIX
from ragcli.text import QUERY_STOPWORDS, content_words, light_stem

# A rewrite sharing no word with the question or the book terms must be this close to the question
# (MiniLM cosine): good bridges measured 0.27-0.55 ("entrance and exit wounds" for "did the bullet
# come out somewhere else"), small-model answers and echoes 0.02-0.20.
REWRITE_MIN_SIMILARITY = 0.2


# Two worked examples (other fields, so they cannot leak into a real search) shown as earlier turns:
# without them small models answer the question or copy the instructions instead of rewriting
# (bench/retrieval/bench_rewrite.py measures it).
REWRITE_EXAMPLES = (
    ("Car Owner's Manual", ["brake pads", "wear indicator", "brake rotor"],
     "My car squeals every time I stop. What's wrong with it?", "brake pad wear indicator squeal when braking"),
    ("Home Gardening Guide", ["powdery mildew", "fungal leaf disease", "fungicide"],
     "There's white dust all over my squash leaves, what do I do?", "powdery mildew on squash leaves treatment"),
)


def _rewrite_task(question: str, books: str, terms: list[str]) -> str:
    vocab = ", ".join(terms[:15]) or "(none found)"
    return (f"TASK: rewrite the question below for a search of the book(s) {books}, using the book's own "
            f"terms where they fit: one short line in the book's own vocabulary, nothing else (no answer, "
            f"no labels).\nTerms used in the book near this question: {vocab}\n"
            f"Question: {question}\nRewritten question:")


def rewrite_messages(question: str, book_titles: list[str], terms: list[str],
                     prefix: Sequence[dict] = ANSWER_PREFIX) -> list[dict]:
    """`prefix` (the messages the next call of the pipeline begins with: ask's answer by default, so
    the answer re-uses their KV cache; ragcli.system_prompt), two worked examples, then the task."""
    messages = [dict(m) for m in prefix]
    for book, example_terms, example_question, rewritten in REWRITE_EXAMPLES:
        messages += [{"role": "user", "content": _rewrite_task(example_question, book, example_terms)},
                     {"role": "assistant", "content": rewritten}]
    books = "; ".join(book_titles) or "the books in the corpus"
    return messages + [{"role": "user", "content": _rewrite_task(question, books, terms)}]


def instruction_words() -> str:
    """The fixed words of every rewrite prompt (either prefix): a rewrite that copies a run of them is
    junk."""
    return " ".join(m["content"] for m in (*ANSWER_PREFIX, *SUMMARY_PREFIX)) + " " + _rewrite_task("", "", [])


_CONTRACTIONS = ("n't", "'re", "'ve", "'ll", "'d", "'m")


def missing_words(question: str, in_corpus: Callable[[str], bool]) -> list[str]:
    """The question's content words that no passage of the books uses (FTS5, stemmed). A contraction
    ("isn't", "he's") is no word of the subject; a possessive counts as its noun ("eye's": "eye")."""
    out = []
    for w in dict.fromkeys(content_words(question.replace("’", "'"))):
        if w.endswith(_CONTRACTIONS):
            continue
        w = w[:-2] if w.endswith("'s") else w
        if len(w) > 2 and w not in QUERY_STOPWORDS and not in_corpus(w):
            out.append(w)
    return out


def needed(question: str, in_corpus: Callable[[str], bool]) -> bool:
    """Can a rewrite change what the search finds? Only by putting the books' words where the question
    has its own: when every content word of the question is in the books, the lexical leg matches them
    and the book-term expansion adds the books' near terms, so the rewrite (a quarter of a 1.5B ask's
    time) is skipped (decision D87, bench/retrieval/bench_rewrite.py --gate)."""
    return bool(missing_words(question, in_corpus))


def rewrite(conn, embedder, model, question: str, terms: list[str], book_ids,
            prefix: Optional[Sequence[dict]] = None) -> Optional[str]:
    """One line from the chat model, kept only if `clean_rewrite` accepts it; never raises. `prefix`:
    see `rewrite_messages` (None: ask's)."""
    titles = [b.title for b in store.list_books(conn, book_ids)]
    messages = rewrite_messages(question, titles, terms, prefix or ANSWER_PREFIX)
    try:
        text = model.chat(messages, max_tokens=48, constraint=OneLine(160), temperature=0.0)
    except Exception:  # a failed rewrite must never fail the question
        return None

    def similarity(a: str, b: str) -> float:
        va, vb = embedder.embed([a, b])
        return float(va @ vb)

    return clean_rewrite(str(text), question, terms, similarity)


def clean_rewrite(text: str, question: str, terms: Sequence[str] = (),
                  similarity: Optional[Callable[[str, str], float]] = None) -> Optional[str]:
    """Keep a rewrite only if it looks like a short search in words that is about the question (it
    shares a word with the question or the book terms offered, or its meaning is close enough to
    the question's) and does not copy the instructions; else fall back to the original (None)."""
    text = " ".join(text.replace("\n", " ").split()).strip(" \"'`")
    text = re.sub(r"^(rewritten question|question)\s*:\s*", "", text, flags=re.I)
    # labels copied from the answer's worked example that the prompt begins with ("rinse [S1].")
    text = re.sub(r"\s+([.,;:])", r"\1", " ".join(_BRACKETED.sub(" ", text).split())).strip()
    text = _without_repeats(text)
    words = re.findall(r"[A-Za-z]{3,}", text)
    if len(words) < 2 or len(text) > 200 or text.lower() == question.lower().strip():
        return None
    if sum(len(w) for w in words) < 0.5 * len(text.replace(" ", "")):
        return None  # mostly symbols or digits: junk
    if _shares_run(text, instruction_words(), 4):
        return None  # echoes the prompt
    about = {light_stem(w) for w in content_words(" ".join([question, *terms]))}
    if not about & {light_stem(w) for w in content_words(text)} and (
            similarity is None or similarity(question, text) < REWRITE_MIN_SIMILARITY):
        return None  # about something else (often an answer, not a search)
    return text


_BRACKETED = re.compile(r"\[[^\[\]]{0,40}\]")


def _without_repeats(text: str) -> str:
    """Small models loop ("eyes, eyes, eyes", a clause three times): keep each comma-separated part
    once, and cut the text where a run of three words comes back."""
    parts, seen = [], set()
    for part in re.split(r"\s*[,;]\s*", text):
        key = part.lower().strip(" .")
        if key and key not in seen:
            seen.add(key)
            parts.append(part.strip())
    words = ", ".join(parts).split()
    runs: set[tuple[str, ...]] = set()
    for i in range(len(words) - 2):
        run = tuple(w.lower().strip(",.;") for w in words[i:i + 3])
        if run in runs:
            return " ".join(words[:i]).rstrip(",;")
        runs.add(run)
    return " ".join(words)


def _shares_run(text: str, source: str, n: int) -> bool:
    """Do `text` and `source` share a run of n words (case and punctuation ignored)?"""
    def runs(s: str) -> set[tuple[str, ...]]:
        w = re.findall(r"[a-z0-9']+", s.lower())
        return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}
    return bool(runs(text) & runs(source))
