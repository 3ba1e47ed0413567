"""Model-free text from retrieved passages: the sentences that best match a question or a topic.

`pick_sentences` is shared by the extractive answer (ask without a model) and the extractive summary
(summary new without a model).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ragcli.text import QUERY_STOPWORDS, STOPWORDS, overlap_words, sentences, stem
from ragcli.types import Source

MAX_SENTENCES = 3
MAX_STEPS = 9  # items of a list answer
MAX_ITEM_SENTENCES = 4  # a list item: its marked sentence and up to 3 that follow it
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
    from ragcli.answer.citations import neutralise

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


Item = list[tuple[str, int, int]]  # a list item: its marked sentence, then the sentences that follow it


@dataclass
class Block:
    """A candidate answer: "sentences" (picked one by one), "list" (the book's numbered or bulleted
    list) or "item" (one numbered item and its sentences); `intro`: the sentences that introduce it
    ("... the following signs and symptoms:", or the item a list belongs to); `context`: what the
    block is also judged by (a list under a heading: the bullets of the heading before it)."""
    kind: str
    items: list[Item]
    intro: list[tuple[str, int, int]] = field(default_factory=list)
    numbered: bool = False
    context: list[tuple[str, int, int]] = field(default_factory=list)

    def sentences(self) -> list[tuple[str, int, int]]:
        return list(self.intro) + [c for item in self.items for c in item]


def _with_leads(picked: list[tuple[str, int, int]], blocks: list[Block]) -> list[tuple[str, int, int]]:
    """The picked sentences, each that continues a numbered item ("Use a stable object ... so that his
    feet will not slip off.") after the item's lead ("(3) Elevate the casualty's feet higher than the
    level of his heart."): a sentence in the middle of a step reads as the step only with it."""
    def plain(sentence: str) -> str:
        return _STEP_MARKER.sub("", sentence).strip()

    leads: dict[str, tuple[str, int, int]] = {}
    for block in blocks:
        if block.kind == "item" and not block.intro:
            lead = block.items[0][0]
            for c in block.items[0][1:]:
                leads.setdefault(plain(c[0]), lead)
    out: list[tuple[str, int, int]] = []
    shown = {plain(s) for s, _, _ in picked}
    for c in picked:
        lead = leads.get(plain(c[0]))
        if lead is not None and plain(lead[0]) not in shown:
            out.append(lead)
            shown.add(plain(lead[0]))
        out.append(c)
    return out


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
    asked = {stem(w) for w in overlap_words(question)}
    title = {stem(w) for w in overlap_words(_STEP_MARKER.sub("", lead)) - QUERY_STOPWORDS - STOPWORDS - _IMPERATIVE}
    return len(title) >= 2 and title <= asked


def _headings(parts: list[tuple[str, int, int]], sources: list[Source]) -> str:
    """The section headings of the sentences' passages (a procedure's steps rarely name their topic;
    their section does: "6-3. Snakebites")."""
    out: list[str] = []
    for _, i, _ in parts:
        path = sources[i].hit.section_path
        if path and path[-1] not in out:
            out.append(path[-1])
    return "; ".join(out)


def _render(block: Block, sources: list[Source], negated: Optional[dict[str, str]] = None) -> str:
    """Sentences and one item: prose, each sentence with its label; an item of a "DO NOT—" list
    quoted alone keeps its "DO NOT" (`negated`: `_negated_items`). A list: its intro, then one item
    a line ("1." for a numbered list, from the book's number of its first item, "- " for bullets),
    each sentence with its label."""
    def labelled(part: list[tuple[str, int, int]], negated: dict[str, str]) -> str:
        out = []
        for s, i, _ in part:
            plain = _STEP_MARKER.sub("", s).strip()
            lead = f"{negated[plain]} — " if plain in negated else ""
            out.append(f"{lead}{plain} [{sources[i].label}]")
        return " ".join(out)

    if block.kind != "list":
        return labelled(block.sentences(), negated or {})
    lines = [labelled(block.intro, {})] if block.intro else []
    # "DO NOT— • Rub the part with snow • Warm the part by massage": one item a line would read as an
    # instruction to do it; each item keeps its "DO NOT" in front
    negation = _NEGATED_LIST.search(block.intro[-1][0]) if block.intro else None
    lead = f"{negation.group(1)} — " if negation else ""
    # a list that starts at the book's step (3) (the steps before it were not retrieved) is numbered from 3
    first = max(1, _step_number(block.items[0][0][0])) if block.numbered else 1
    for n, item in enumerate(block.items, first):
        lines.append(f"{n}. {lead}{labelled(item, {})}" if block.numbered else f"- {lead}{labelled(item, {})}")
    return "\n".join(lines)


def _negated_items(blocks: list[Block]) -> dict[str, str]:
    """The first sentence of every item of a list opened by "DO NOT—" (marks off) -> "DO NOT": quoted
    alone, "Warm the part by massage ..." says the opposite of what the book says."""
    out: dict[str, str] = {}
    for block in blocks:
        negation = _NEGATED_LIST.search(block.intro[-1][0]) if block.kind == "list" and block.intro else None
        if negation:
            for item in block.items:
                out.setdefault(_STEP_MARKER.sub("", item[0][0]).strip(), negation.group(1))
    return out


# a bullet that heads the bullets after it by naming their kind: "Signs and symptoms.", "First aid measures."
_KIND_HEADING = re.compile(r"^(?:[\w-]+ ){0,2}(?:signs?|symptoms?|first aid|treatment|measures|procedures?|steps|"
                           r"self-aid|buddy aid)(?: (?:and|&) [\w-]+(?: [\w-]+)?)?\.\s*$", re.I)
_NEGATED_LIST = re.compile(r"\b(DO NOT|NEVER|Do not|Never|Don't|Avoid)\s*[—:–-]+\s*$")


def _blocks(sources: list[Source]) -> list[Block]:
    """The book's lists and numbered items in the retrieved passages (passages next to each other in
    the book read as one text): every numbered or lettered list of one marker style counting up
    ((1), (2) ... or a., b. ...), every run of bullets, every numbered item alone, and an item with
    the list it holds ("d. Get the casualty to an MTF ..." then its steps "(1)" ... "(5)"); each item
    with the sentences after it up to the next marked sentence (at most MAX_ITEM_SENTENCES)."""
    out: list[Block] = []
    for run in _reading_runs(sources):
        styles = [_marker_style(s) for s, _, _ in run]
        items: dict[int, Item] = {}
        for at, style in enumerate(styles):
            if style is None:
                continue
            item = [run[at]]
            for nxt in range(at + 1, len(run)):
                if styles[nxt] is not None or len(item) >= MAX_ITEM_SENTENCES:
                    break
                item.append(run[nxt])
            items[at] = item
            if style != "bullet" and len(item) > 1:
                out.append(Block("item", [item]))
                opener = _opener(run, at)
                if opener and styles[at - 1] is None:
                    out.append(Block("item", [item], intro=[opener]))
        lists = [(style, found) for style in sorted({s for s in styles if s}) for found in _lists(run, styles, style)]
        for style, found in lists:
            opener = _opener(run, found[0])
            out.append(Block("list", [items[at] for at in found[:MAX_STEPS]], [opener] if opener else [],
                             numbered=style != "bullet"))
            if style == "bullet":
                out += _headed_lists(run, found, items)
        for at, style in enumerate(styles):  # an item and the list inside it
            if style is None or style == "bullet":
                continue
            end = next((k for k in range(at + 1, len(run)) if styles[k] == style), len(run))
            for inner, found in lists:
                if inner != style and at < found[0] < end:
                    out.append(Block("list", [items[k] for k in found[:MAX_STEPS]], items[at],
                                     numbered=inner != "bullet"))
    return out


def _headed_lists(run, found: list[int], items: dict[int, Item]) -> list[Block]:
    """A bulleted list whose bullets include headings that name a kind of content ("• Signs and
    symptoms. ... • First aid measures. • Move the casualty to a cool, shady area ..."): the book's
    nested lists flattened into one. Each heading's own bullets are a list of their own, introduced by
    the heading; it is judged (`context`) with the bullets of the heading before it too, since the
    situation a question describes is in the signs and the answer in the measures that follow them."""
    heads = [n for n, at in enumerate(found) if _KIND_HEADING.match(_STEP_MARKER.sub("", run[at][0]))]
    out = []
    for h, n in enumerate(heads):
        end = heads[h + 1] if h + 1 < len(heads) else len(found)
        if end > n + 1:
            around = [c for at in found[heads[h - 1] if h else 0:end] for c in items[at]]
            out.append(Block("list", [items[at] for at in found[n + 1:end][:MAX_STEPS]], items[found[n]],
                             context=around))
    return out


def _lists(run, styles: list[Optional[str]], style: str) -> list[list[int]]:
    """The positions of the items of each list of `style` in the run (two items or more): bullets in a
    row, or numbered items counting up; a numbered sentence of another style ends a bulleted list."""
    out: list[list[int]] = []
    current: list[int] = []
    for at, st in enumerate(styles):
        if st != style:
            if style == "bullet" and st is not None:
                out += [current] if len(current) >= 2 else []
                current = []
            continue
        if current and (style == "bullet" or _step_number(run[at][0]) == _step_number(run[current[-1]][0]) + 1):
            current.append(at)
            continue
        out += [current] if len(current) >= 2 else []
        current = [at]
    return out + ([current] if len(current) >= 2 else [])


def _opener(run, at: int) -> Optional[tuple[str, int, int]]:
    """The sentence before run[at] when it introduces what follows ("... the following signs and
    symptoms:", "Some of these are—", "... is performed as follows:")."""
    if at and re.search(r"\b(?:following|as follows)\b|[:—-]\s*$", run[at - 1][0]):
        return run[at - 1]
    return None


def _marker_style(sentence: str) -> Optional[str]:
    """How a sentence is marked as a list item: "(1)", "(a)", "1.", "a." or "bullet"; None if not."""
    if re.match(r"\s*[•·▪]", sentence):
        return "bullet"
    m = _NUMBERED.match(sentence)
    if not m:
        return None
    mark = m.group(1) or m.group(2)
    kind = "digit" if mark.isdigit() else "letter"
    return f"({kind})" if m.group(1) else f"{kind}."


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
_IMPERATIVE = frozenset("""administer allow apply ask assess assist attempt avoid bandage begin bend blow bring call
    carry check clean cleanse clear close continue cool cover cut deliver determine do don't drag dress drink dry
    ease elevate encourage ensure evacuate evaluate examine exert expose fan feel fill flush fold get give grasp
    have hold identify immobilize immerse improvise inject insert inspect keep kill kneel lay leave let lift
    listen loosen look lower maintain make mark massage monitor move never notify observe open pad perform pinch
    place position pour prepare press prevent protect pull put raise reassure recheck release remove repeat
    reposition rest rewarm rinse roll rub save scrape secure seek send slide soak splint squat squeeze stand
    start stay stop straighten support take tell thaw tie tilt transport treat try turn twist use warm wash
    watch wipe wrap bind cross decontaminate fasten lean lie locate loop return shake sit slip spray tape tear
    tighten tuck""".split())
_ADVERBS = frozenset("then next also now first finally gently quickly immediately carefully slowly firmly loosely "
                     "again".split())
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
    first = next((w for w in words[:3] if w.lower() not in _ADVERBS), words[0])  # "Then bring", "Gently lift"
    if first.lower() in _IMPERATIVE or re.match(r"(?:do not|don't|never)\b", body, re.I):
        return True
    if re.match(r"(?:if|when|unless|before|after|until|once|while|in case|should|to)\b", body, re.I):
        for then in re.findall(r"(?:[,;]\s*|\bthen\s+)(?:then\s+)?([A-Za-z']+)", body):  # "If ..., (then) apply"
            if then.lower() in _IMPERATIVE or then.lower() in ("do", "never"):
                return True
    return bool(re.search(r"\b(?:should|must)\b", body, re.I))


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


def is_caption(previous: str, sentence: str) -> bool:
    """A figure's title after its number ("Figure 6-8." then "Constricting band.")."""
    return bool(_CAPTION.search(previous)) and len(sentence.split()) <= 12 and not _STEP_MARKER.match(sentence)


def is_junk(sentence: str) -> bool:
    """A figure caption, a flattened table or flowchart (mostly capitals), or a cross-reference."""
    letters = [c for c in sentence if c.isalpha()]
    upper = sum(c.isupper() for c in letters) / max(1, len(letters))
    if upper > 0.6 and len(sentence.split()) >= 6:
        return True
    return bool(_CAPTION.search(sentence) or _XREF.search(sentence))


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
            for j, sentence in enumerate(_marks_joined(sentences(neutralise(sources[k].hit.text)))):
                key = sentence.strip().lower()
                if key not in seen and not is_junk(sentence) and not is_caption(previous, sentence):
                    seen.add(key)
                    run.append((sentence.strip(), k, j))
                previous = sentence
            pid += 1
        runs.append(run)
    return runs
def _marks_joined(parts: list[str]) -> list[str]:
    """The sentence splitter's pieces as list items: a list mark or a label split off as a sentence of
    its own ("d.", "(1)", "NOTE") joined to the sentence it marks, a mark left at the end of the
    sentence before ("... the obstruction. c.") moved to its own, bullets run into one sentence
    ("... by— • Moving him ...") and a step run into a closing parenthesis ("(A half-knot is ...
    lace.) (2) Place a stick ...") split apart."""
    pieces: list[str] = []
    for part in parts:
        pieces += [p for p in _RUN_INTO.split(part) if p.strip()]
    out: list[str] = []
    carry = ""
    for part in pieces:
        part = f"{carry} {part}".strip() if carry else part
        carry = ""
        trailing = _TRAILING_MARK.search(part)
        if trailing:
            part, carry = part[: trailing.start()].rstrip(), trailing.group(1)
        if out and _BARE_MARK.match(out[-1]):
            out[-1] = f"{out[-1].strip()} {part}"
        else:
            out.append(part)
    if out and _BARE_MARK.match(out[-1]):
        out.pop()  # a mark or label that ends the passage: its sentence is in the next one
    return out


_RUN_INTO = re.compile(r"(?<=\S)\s+(?=[•·▪]\s)|(?<=[.!?][)”’\"])\s+(?=\((?:\d{1,2}|[a-z])\)\s+[A-Z])")
_BARE_MARK = re.compile(r"^\s*(?:\((?:\d{1,2}|[a-z])\)|\d{1,2}[.)]|[a-z][.)]|[•·▪]|NOTES?|CAUTION|WARNING|DANGER)\s*$")
_TRAILING_MARK = re.compile(r"(?<=[.!?)])\s+(\((?:\d{1,2}|[a-z])\)|[a-z]\.)$")


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
