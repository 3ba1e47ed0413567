"""Model-free text from retrieved passages: the sentences that best match a question or a topic.

`pick_sentences` is shared by the extractive answer (ask without a model) and the extractive summary
(summary new without a model).
"""
from __future__ import annotations

from typing import Optional

from ragcli.answer.book_lists import Block, _blocks, _headings, _negated_items, _render, _with_leads
from ragcli.answer.citations import neutralise
from ragcli.answer.question_kind import question_kind
from ragcli.answer.sentence_kind import _IMPERATIVE, _STEP_MARKER, is_caption, is_instruction, is_junk, sentence_kind
from ragcli.text import QUERY_STOPWORDS, STOPWORDS, overlap_words, sentences, light_stem
from ragcli.types import Source

MAX_SENTENCES = 3
WHOLE_OVERLAP = 0.2  # weight of the question's content words found in a candidate answer
RANK_PENALTY = 0.01  # per rank of a candidate answer's best passage
NAMED_BONUS = 0.2  # a numbered item the question names by its title ("jaw-thrust technique"): its steps answer
NEAR_DUPLICATE = 0.8  # share of the shorter sentence's words that makes two sentences one
KIND_BONUS = 0.1  # a sentence of the kind the question asks for (an instruction, a definition, signs)
SUMMARY_SENTENCES = 8
PER_SOURCE = 2  # an extractive summary takes at most this many sentences from one passage


def candidates(sources: list[Source], max_words: int = 10_000, min_words: int = 5) -> list[tuple[str, int, int]]:
    """(sentence, source index, position in the passage) of every usable sentence (not figures, not a
    figure's caption). The book's own citation-like marks are inert in them ("[3]" -> "⟨3⟩"): a quoted
    sentence never cites."""
    out = []
    for i, source in enumerate(sources):
        if source.hit.kind == "figure":
            continue
        previous = ""
        for j, sentence in enumerate(sentences(neutralise(source.hit.text))):
            if min_words <= len(sentence.split()) <= max_words and not is_caption(previous, sentence):
                out.append((sentence.strip(), i, j))
            previous = sentence
    return out


def pick_sentences(embedder, query: str, found: list[tuple[str, int, int]], limit: int,
                   per_source: Optional[int] = None, rank_penalty: float = 0.02,
                   scores: Optional[list] = None) -> list[tuple[str, int, int]]:
    """The best `limit` candidates by cosine to the query + 0.2 x word overlap - a small penalty per
    source rank (or by the given (score, candidate) pairs); duplicates skipped, at most `per_source`
    from one passage."""
    if not found:
        return []
    scored = list(scores) if scores is not None else list(
        zip(_base_scores(embedder, query, found, rank_penalty), found))
    scored.sort(key=lambda x: -x[0])
    chosen, seen, taken = [], [], {}
    for _, (sentence, i, j) in scored:
        words = overlap_words(sentence)
        if any(len(words & w) >= NEAR_DUPLICATE * max(1, min(len(words), len(w))) for w in seen) \
                or (per_source is not None and taken.get(i, 0) >= per_source):
            continue  # the same sentence again (passages overlap), or nearly ("If"/"When the bleeding stops")
        seen.append(words)
        taken[i] = taken.get(i, 0) + 1
        chosen.append((sentence, i, j))
        if len(chosen) == limit:
            break
    return chosen


def _base_scores(embedder, query: str, found: list[tuple[str, int, int]], rank_penalty: float = 0.02) -> list[float]:
    vecs = embedder.embed([query] + [c[0] for c in found])
    cos = vecs[1:] @ vecs[0]
    words = overlap_words(query)
    out = []
    for (sentence, i, _), c in zip(found, cos):
        overlap = len(words & overlap_words(sentence)) / max(1, len(words))
        out.append(float(c) + 0.2 * overlap - rank_penalty * i)
    return out


def answer(embedder, question: str, sources: list[Source]) -> tuple[str, list[str]]:
    """(answer text with [S1]-style labels, labels used in order).

    Candidate answers are judged as wholes against the question (`_whole_scores`): the best few
    sentences of all retrieved passages, and the book's own blocks that can answer the question's kind
    (a numbered or bulleted list with each item's following sentences, one numbered item with its
    sentences: a technique's steps, an item with the list it holds), scored by relevance, the
    question's words they contain and the share of their sentences of the kind asked (instructions
    for "what should I do / how do I", definitions for "what is", signs for "signs of"). A block is
    given in the book's order, a list one item a line. Figure captions, flattened tables and
    cross-references are never part of an answer."""
    kind = question_kind(question)
    found = [c for c in candidates(sources, min_words=4) if not is_junk(c[0])]
    scored = _scored(embedder, question, found, kind)
    picked = pick_sentences(embedder, question, [c for _, c in scored], MAX_SENTENCES, scores=scored)
    if not picked:
        return "", []
    blocks = _blocks(sources)
    options = [Block("sentences", [[c] for c in _with_leads(picked, blocks)])]
    options += [b for b in blocks if _answers(b, kind)]
    scores = _whole_scores(embedder, question, options, sources, kind)
    best = max(range(len(options)), key=lambda n: (scores[n], -n))
    chosen = options[best]
    text = _render(chosen, sources, _negated_items(blocks))
    used: list[str] = []
    for _, i, _ in chosen.sentences():
        if sources[i].label not in used:
            used.append(sources[i].label)
    return text, used


def _answers(block: Block, kind: str) -> bool:
    """Whether a block of the book can answer this kind of question: "what should I do" a block of
    instructions (at least half its sentences), "signs of" a list that is not instructions."""
    parts = [c for item in block.items for c in item]
    steps = sum(is_instruction(s) for s, _, _ in parts) / len(parts)
    if kind == "steps":
        return steps >= 0.5
    if kind == "signs":
        return block.kind == "list" and steps < 0.5
    return kind != "yes_no"  # "should I ...?": an instruction answers it, not a whole procedure


def _whole_scores(embedder, question: str, options: list[Block], sources: list[Source], kind: str) -> list[float]:
    """Each candidate answer's relevance + WHOLE_OVERLAP x the share of the question's content words it
    contains + KIND_BONUS x the share of its sentences of the question's kind - a small penalty for the
    rank of its best passage. A block's relevance is the cosine to the question of its whole text under
    its section headings (a procedure's steps rarely name their topic, their section does: "6-3.
    Snakebites"), or of its lead (the sentence that names it: "(2) Perform the head-tilt/chin-lift
    technique."), whichever is higher. Picked sentences were each chosen for their own match, so their
    joined text overstates them: they are judged by the mean of each one's cosine and word share."""
    def plain(sentence: str) -> str:
        return _STEP_MARKER.sub("", sentence).strip()

    texts, owners = [], []  # what is embedded, and for which option
    for n, o in enumerate(options):
        if o.kind == "sentences":  # each under its own heading
            parts = [f"{_headings([c], sources)}: {plain(c[0])}" for c in o.sentences()]
        else:  # the whole under its headings, and the lead
            parts = [f"{_headings(o.sentences(), sources)}: " + " ".join(plain(c[0]) for c in o.sentences()),
                     plain(o.items[0][0][0])]
            if o.context:
                parts.append(f"{_headings(o.context, sources)}: " + " ".join(plain(c[0]) for c in o.context))
        texts += parts
        owners += [n] * len(parts)
    vecs = embedder.embed([question] + texts)
    cos = vecs[1:] @ vecs[0]
    asked = overlap_words(question) - QUERY_STOPWORDS
    want = _WANT.get(kind)
    out = []
    for n, o in enumerate(options):
        parts = o.sentences()
        mine = [float(c) for c, owner in zip(cos, owners) if owner == n]
        share = sum(sentence_kind(s) == want for s, _, _ in parts) / len(parts) if want else 0.0
        if o.kind == "sentences":
            relevance = sum(mine) / len(mine)
            overlap = sum(len(asked & overlap_words(s)) for s, _, _ in parts) / len(parts) / max(1, len(asked))
        else:
            relevance = max(mine)
            overlap = len(asked & overlap_words(" ".join(s for s, _, _ in parts))) / max(1, len(asked))
        rank = min(i for _, i, _ in parts)
        named = NAMED_BONUS if o.kind == "item" and _names(question, o.items[0][0][0]) else 0.0
        out.append(relevance + WHOLE_OVERLAP * overlap + KIND_BONUS * share + named - RANK_PENALTY * rank)
    return out


def _names(question: str, lead: str) -> bool:
    """Whether the question names a numbered item by its title ("Jaw-thrust technique for a casualty
    with ..." names "(1) Perform the jaw-thrust technique."): every content word of the item's first
    sentence but its verb, at least two, is in the question."""
    asked = {light_stem(w) for w in overlap_words(question)}
    title = {light_stem(w) for w in overlap_words(_STEP_MARKER.sub("", lead)) - QUERY_STOPWORDS - STOPWORDS - _IMPERATIVE}
    return len(title) >= 2 and title <= asked


_WANT = {"steps": "step", "yes_no": "step", "signs": "signs", "definition": "definition"}  # sentence kind


def _scored(embedder, question: str, found, kind: str) -> list[tuple[float, tuple[str, int, int]]]:
    """Each candidate with pick_sentences' score plus a bonus when it is of the question's kind."""
    if not found:
        return []
    base = _base_scores(embedder, question, found)
    want = _WANT.get(kind)
    out = []
    for score, c in zip(base, found):
        if want and sentence_kind(c[0]) == want:
            score += KIND_BONUS
        out.append((score, c))
    return out


def summary(embedder, topic: str, sources: list[Source]) -> tuple[str, list[str]]:
    """Key sentences about `topic`, grouped under their book sections in reading order, each with
    its label. Returns (text, labels used in order)."""
    found = candidates(sources, max_words=60)
    if not found:
        return "", []
    groups: dict[tuple, list[tuple[str, int, int]]] = {}
    for sentence, i, j in pick_sentences(embedder, topic, found, SUMMARY_SENTENCES,
                                         per_source=PER_SOURCE, rank_penalty=0.01):
        h = sources[i].hit
        groups.setdefault((h.book_id, tuple(h.section_path)), []).append((sentence, i, j))
    several_books = len({book for book, _ in groups}) > 1
    order = sorted(groups, key=lambda g: (g[0], min(sources[i].hit.passage_id for _, i, _ in groups[g])))
    blocks, used = [], []
    for group in order:
        items = sorted(groups[group], key=lambda x: (sources[x[1]].hit.passage_id, x[2]))
        hit = sources[items[0][1]].hit
        heading = hit.section_str or hit.book_title
        if several_books and hit.section_str:
            heading = f"{hit.book_title} — {heading}"
        lines = [f"## {heading}"]
        for sentence, i, _ in items:
            lines.append(f"- {sentence} [{sources[i].label}]")
            if sources[i].label not in used:
                used.append(sources[i].label)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks), used