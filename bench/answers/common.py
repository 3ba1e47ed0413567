"""What several answer scripts share: the key-phrase matching the scorer uses (case, punctuation, number
words, plural/-ed/-ing folded) and the plain baseline's prompt (issue 16)."""
from __future__ import annotations

import re

NUMBER_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                "eight": "8", "nine": "9", "ten": "10", "twenty": "20", "thirty": "30", "sixty": "60"}
BASELINE_PASSAGES = 6


# ------------------------------------------------------------------------------------- key phrases
def _stem(word: str) -> str:
    word = NUMBER_WORDS.get(word, word)
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def normalise(text: str) -> str:
    text = re.sub(r"\[[A-Za-z]?\s*\d+\]", " ", text.lower().replace("’", "'"))
    text = re.sub(r"(\d)\s*-\s*(\d)", r"\1 to \2", text)
    return " " + " ".join(_stem(w) for w in re.findall(r"[a-z0-9]+", text)) + " "


def phrase_hits(answer: str, phrases: list[str], question: str = "") -> list[str]:
    """The key phrases (each may list alternatives as "a|b") found in the answer. An alternative the
    question itself contains proves nothing (an answer that repeats the question would score with it:
    the plain baseline's "[Q] He's pale, cold and clammy ..." for lay-17), so it is not looked for."""
    text, asked = normalise(answer), normalise(question)
    return [p for p in phrases
            if any(normalise(alt) in text for alt in p.split("|") if normalise(alt) not in asked)]


# ------------------------------------------------------------------------------------- baseline
def baseline_messages(question: str, sources) -> list[dict]:
    """Issue 16's plain prompt: passages, then the question, then the task; no system prompt."""
    blocks = "\n\n".join(f"[{s.label}] {s.hit.text}" for s in sources)
    return [{"role": "user", "content": (
        f"Passages:\n{blocks}\n\nQuestion: {question}\n\n"
        "Answer the question from the passages in 2-4 sentences. End each sentence with the label of "
        "the passage it comes from, e.g. [S1].")}]


def token_counter(model_path):
    """The answer model's own count of a text's tokens (its tokenizer alone: `vocab_only`, no weights)."""
    import llama_cpp

    tok = llama_cpp.Llama(model_path=str(model_path), vocab_only=True, verbose=False)

    def count(text: str) -> int:
        return len(tok.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    return count


def ask_and_plain_hits(conn, embedder, question: str):
    """ask's retrieval of a question (exposition only) and the passages the plain prompt is given (its
    first BASELINE_PASSAGES passage hits, labelled), as bench_answers lays them out."""
    import dataclasses

    from ragcli.answer import prompt
    from ragcli.ingest.kinds import NOT_EXPOSITION
    from ragcli.search.pipeline import SearchOptions, mode_for, search

    opts = SearchOptions(mode=mode_for(True, False), k=10, check_language=True, rerank_depth=20)
    asked = search(conn, embedder, question, dataclasses.replace(opts, skip_kinds=NOT_EXPOSITION))
    found = prompt.label_sources(search(conn, embedder, question, opts).hits)
    shown = prompt.label_sources([s.hit for s in found if s.hit.kind == "passage"][:BASELINE_PASSAGES])
    return asked, shown
