"""Model-free text from retrieved passages: the sentences that best match a question or a topic.

`pick_sentences` is shared by the extractive answer (ask without a model) and the extractive summary
(summary new without a model).
"""
from __future__ import annotations

import re
from typing import Optional

from ragcli.text import overlap_words, sentences
from ragcli.types import Source

MAX_SENTENCES = 3
SCAN_SOURCES = 5
SCAN_SOURCES_STEPS = 8  # a procedure's steps are often a few passages down
MAX_STEPS = 9  # items of a list answer
LIST_ITEM_BONUS = 0.04  # a list of the book's own steps or signs is worth more than one sentence
LIST_MARGIN = 0.05  # a list is the answer if its best items score this close to the best sentence
NEAR_DUPLICATE = 0.8  # share of the shorter sentence's words that makes two sentences one
KIND_BONUS = 0.1  # a sentence of the kind the question asks for (an instruction, a definition, signs)
SUMMARY_SENTENCES = 8
PER_SOURCE = 2  # an extractive summary takes at most this many sentences from one passage


def candidates(sources: list[Source], max_words: int = 10_000, min_words: int = 5) -> list[tuple[str, int, int]]:
    """(sentence, source index, position in the passage) of every usable sentence (not figures, not a
    figure's caption). The book's own citation-like marks are inert in them ("[3]" -> "⟨3⟩"): a quoted
    sentence never cites."""
    from ragcli.answer.citations import neutralise

    out = []
    for i, source in enumerate(sources):
        if source.hit.kind == "figure":
            continue
        previous = ""
        for j, sentence in enumerate(sentences(neutralise(source.hit.text))):
            caption = _CAPTION.search(previous) and len(sentence.split()) <= 8  # "Figure 6-8." "Constricting band."
            if min_words <= len(sentence.split()) <= max_words and not caption:
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

    The question's kind decides what answers it: a "what should I do / how do I" question gets the
    book's numbered procedure around the best step, in order (one step per line); "what is" questions
    prefer definitions, "signs of" questions signs. Figure captions, flattened tables and
    cross-references are never an answer."""
    kind = question_kind(question)
    scanned = sources[:SCAN_SOURCES_STEPS if kind in ("steps", "signs") else SCAN_SOURCES]
    found = [c for c in candidates(scanned, min_words=4) if not is_junk(c[0])]
    scored = _scored(embedder, question, found, kind)
    chosen = _listed(scored, scanned, kind) if kind in ("steps", "signs") else []
    if not chosen:
        chosen = pick_sentences(embedder, question, [c for _, c in scored], MAX_SENTENCES, scores=scored)
        text = " ".join(f"{sentence.rstrip()} [{scanned[i].label}]" for sentence, i, _ in chosen)
    else:
        text = _as_list(chosen, scanned)
    used: list[str] = []
    for _, i, _ in chosen:
        if scanned[i].label not in used:
            used.append(scanned[i].label)
    return text, used


def _as_list(items, sources: list[Source]) -> str:
    """A list answer, one item a line: "1." ... for a procedure, "- " for signs; the sentence that
    opens the list (when it is one) as its first line."""
    numbered = any(_NUMBERED.match(sentence) and (_step_number(sentence) or 0) for sentence, _, _ in items)
    lines, n = [], 0
    for sentence, i, _ in items:
        item = re.sub(r"^.*?[:—-]\s*[•·▪]\s*", "", sentence) if not lines and "•" in sentence else sentence
        if not lines and item != sentence:  # "These are— • Dehydration.": the opening, then the item
            lines.append(f"{sentence[: len(sentence) - len(item)].rstrip(' •·▪')} [{sources[i].label}]")
        elif not lines and not (_NUMBERED.match(sentence) or _STEP_MARKER.match(sentence)):
            lines.append(f"{sentence.strip()} [{sources[i].label}]")
            continue
        n += 1
        mark = f"{n}." if numbered else "-"
        lines.append(f"{mark} {_STEP_MARKER.sub('', item).strip()} [{sources[i].label}]")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ question and sentence kinds
_SIGNS_Q = re.compile(r"\b(signs?|symptoms?|how (?:can|do|would|will) (?:i|you|we) (?:tell|know|recogni[sz]e)|"
                      r"what(?:'s| is) (?:going on|wrong|happening)|how serious|is (?:it|that) (?:serious|dangerous|normal)|"
                      r"look like)\b", re.I)
_STEPS_Q = re.compile(r"\b(what (?:should|do|can|must|shall) (?:i|we|you)(?: \w+)? do|what now|what helps|"
                      r"technique|method|maneuver|manoeuvre|self-aid|carry|measures|"
                      r"how (?:do|can|should|would|shall) (?:i|we|you)|how to|how (?:is|are) .{3,60} "
                      r"(?:applied|performed|done|used|treated|given)|should i|do i|can i|first aid|"
                      r"treat(?:ment|ed)?|appl(?:y|ying|ication)|procedure|steps?)\b", re.I)
_DEFINITION_Q = re.compile(r"^\s*(?:what(?:'s| is| are| does)|define|meaning of)\b", re.I)


def question_kind(question: str) -> str:
    """"steps" (what to do, how to), "yes_no" (should I ...?: an instruction answers it, not a whole
    procedure), "signs", "definition" (what is) or "other"."""
    last = [p for p in re.split(r"(?<=[.?!])\s+", question.strip()) if p.strip()][-1:] or [""]
    yes_no = re.match(r"\W*(?:should|do|does|can|could|is|are|will|must|would|shall)\b", last[0], re.I)
    if _SIGNS_Q.search(question) and not yes_no:
        return "signs"
    if _STEPS_Q.search(question):
        return "yes_no" if yes_no else "steps"
    if _DEFINITION_Q.search(question):
        return "definition"
    return "other"


_STEP_MARKER = re.compile(r"^\s*(?:\((?:\d{1,2}|[a-z])\)|\d{1,2}[.)]|[a-z][.)]|[•·▪-])\s+")
_NUMBERED = re.compile(r"^\s*(?:\((\d{1,2}|[a-z])\)|(\d{1,2}|[a-h])[.)])\s+")
_LEAD_LABEL = re.compile(r"^(?:(?:CAUTION|WARNING|NOTE|DANGER)\s+)+")
_IMPERATIVE = frozenset("""apply ask assist avoid bandage begin bend call check clean clear close continue cool cover
    cut do don't drag dress drink ease elevate encourage ensure evacuate fan feel flush fold get give grasp
    have hold identify immobilize immerse insert keep kneel lay leave let lift listen loosen look lower
    maintain make mark massage monitor move never open pad pinch place position pour prepare press prevent
    protect pull put reassure recheck release remove repeat rest rewarm roll rub scrape secure seek send
    slide soak splint stand start stay stop support take tell tie transport treat try turn twist use wash
    watch wipe wrap""".split())
_DEFINITION = re.compile(r"\b(?:is|are) (?:a|an|the|caused|defined|called|usually|generally)\b|\bmeans\b|"
                         r"\brefers? to\b|\bresults? from\b", re.I)
_SIGNS = re.compile(r"\b(?:signs?|symptoms?|characteri[sz]ed|indications?|may (?:feel|appear|look|have)|"
                    r"include|pain|swelling|skin)\b", re.I)
_CAPTION = re.compile(r"^\s*(?:figure|fig\.|table)\s+[A-Z]?-?\d[\w-]*\.?\s*$|\(illustrated\b", re.I)
_XREF = re.compile(r"^\W*(?:refer to|see) (?:paragraphs?|figures?|chapter|appendix|table)\b", re.I)


def is_instruction(sentence: str) -> bool:
    """"Place a band ...", "(1) If the bite is on a leg, place a band ...", "DO NOT ...", "He should ..."."""
    body = _LEAD_LABEL.sub("", _STEP_MARKER.sub("", sentence.strip()))
    words = re.findall(r"[A-Za-z']+", body)
    if not words:
        return False
    if words[0].lower() in _IMPERATIVE or re.match(r"(?:do not|don't|never)\b", body, re.I):
        return True
    if re.match(r"(?:if|when|unless|before|after|until|once|while|in case|should)\b", body, re.I):
        for then in re.findall(r"[,;]\s*(?:then\s+)?([A-Za-z']+)", body):
            if then.lower() in _IMPERATIVE or then.lower() in ("do", "never"):
                return True
    return bool(re.search(r"\b(?:you|he|casualty|they) (?:should|must)\b|\bshould (?:not )?be\b", body, re.I))


def sentence_kind(sentence: str) -> str:
    """"step" (an instruction), "definition", "signs" or "other"."""
    body = _LEAD_LABEL.sub("", _STEP_MARKER.sub("", sentence.strip()))
    if is_instruction(sentence):
        return "step"
    if _DEFINITION.search(body):
        return "definition"
    if _SIGNS.search(body):
        return "signs"
    return "other"


def is_junk(sentence: str) -> bool:
    """A figure caption, a flattened table or flowchart (mostly capitals), or a cross-reference."""
    letters = [c for c in sentence if c.isalpha()]
    upper = sum(c.isupper() for c in letters) / max(1, len(letters))
    if upper > 0.6 and len(sentence.split()) >= 6:
        return True
    return bool(_CAPTION.search(sentence) or _XREF.search(sentence))


def _scored(embedder, question: str, found, kind: str) -> list[tuple[float, tuple[str, int, int]]]:
    """Each candidate with pick_sentences' score plus a bonus when it is of the question's kind."""
    if not found:
        return []
    base = _base_scores(embedder, question, found)
    want = {"steps": "step", "yes_no": "step", "signs": "signs", "definition": "definition"}.get(kind)
    out = []
    for score, c in zip(base, found):
        if want and sentence_kind(c[0]) == want:
            score += KIND_BONUS
        out.append((score, c))
    return out


def _listed(scored, sources: list[Source], kind: str) -> list[tuple[str, int, int]]:
    """The book's own list that best answers, its items in order: for "steps" a numbered procedure
    ("(1) Place ...", "(2) If ..., keep ...") or a bulleted list of instructions, for "signs" a
    bulleted list ("• Sweaty but cool skin."). Retrieved passages that follow each other in the book
    are read as one text (their overlap once). The list whose best items match the question best wins
    if it scores close to the best single sentence."""
    by_text = {c[0]: score for score, c in scored}
    if not by_text:
        return []
    lists: list[list[tuple[str, int, int]]] = []
    for run in _reading_runs(sources):
        found = _numbered_lists(run, instructions=kind == "steps")
        found += _bulleted_lists(run, instructions=kind == "steps")
        for items in found:  # the sentence that opens the list ("The following are the signs of shock.")
            at = run.index(items[0])
            if at and re.search(r"\bfollowing\b|[:—-]\s*$", run[at - 1][0]):
                items.insert(0, run[at - 1])
        lists += found

    def score(items) -> float:  # its best item (or the sentence that opens it), more for more items
        best = max((by_text[it[0]] for it in items if it[0] in by_text), default=-1.0)
        return best + LIST_ITEM_BONUS * min(len(items), 5)

    if not lists:
        return []
    best = max(lists, key=score)
    return best[:MAX_STEPS] if score(best) >= max(by_text.values()) - LIST_MARGIN else []


def _numbered_lists(run, instructions: bool) -> list[list[tuple[str, int, int]]]:
    """Numbered or lettered items counting up from where they start ((1), (2) ... or (a), (b) ...);
    for a procedure, instructions only."""
    out, current = [], []
    for item in run:
        if not _NUMBERED.match(item[0]) or (instructions and not is_instruction(item[0])):
            continue
        if current and _step_number(item[0]) == _step_number(current[-1][0]) + 1:
            current.append(item)
            continue
        if len(current) >= 2:
            out.append(current)
        current = [item]
    return out + ([current] if len(current) >= 2 else [])


def _bulleted_lists(run, instructions: bool) -> list[list[tuple[str, int, int]]]:
    """Runs of sentences that are bullet items ("• ..."), the sentence that opens the list first when
    the first bullet came joined to it ("... signs and symptoms: • Sweaty but cool skin.")."""
    out, current = [], []
    for item in run:
        text = item[0]
        bullet = bool(re.match(r"\s*[•·▪]", text)) or bool(re.search(r"[:—-]\s*[•·▪]", text))
        if bullet and (not instructions or is_instruction(re.sub(r"^.*?[•·▪]\s*", "", text))):
            current.append(item)
            continue
        if len(current) >= 2:
            out.append(current)
        current = []
    return out + ([current] if len(current) >= 2 else [])


def _step_number(sentence: str) -> int:
    """1, 2, ... for "(1)", "2." and for "(a)", "(b)"; 0 when not numbered."""
    m = _NUMBERED.match(sentence)
    if not m:
        return 0
    mark = m.group(1) or m.group(2)
    return int(mark) if mark.isdigit() else ord(mark) - ord("a") + 1


def _reading_runs(sources: list[Source]) -> list[list[tuple[str, int, int]]]:
    """The sentences of the retrieved passages, passages next to each other in the book read as one
    text in book order (the sentence they share once); captions, tables and cross-references left out."""
    from ragcli.answer.citations import neutralise

    by_id = {(s.hit.book_id, s.hit.passage_id): k for k, s in enumerate(sources) if s.hit.kind == "passage"}
    runs = []
    for book, pid in sorted(by_id):
        if (book, pid - 1) in by_id:
            continue  # not the first of its run
        run: list[tuple[str, int, int]] = []
        seen: set[str] = set()
        while (book, pid) in by_id:
            k = by_id[(book, pid)]
            previous = ""
            for j, sentence in enumerate(sentences(neutralise(sources[k].hit.text))):
                key = sentence.strip().lower()
                caption = _CAPTION.search(previous) and len(sentence.split()) <= 8
                if key not in seen and not is_junk(sentence) and not caption:
                    seen.add(key)
                    run.append((sentence.strip(), k, j))
                previous = sentence
            pid += 1
        runs.append(run)
    return runs
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
