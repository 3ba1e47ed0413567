"""The context an answer reads: from the ranked hits, the blocks the model is given.

Each passage hit, best first, becomes a block. By default (decision D102) a block is the hit alone: a
near-duplicate of a better block is merged into it (its passages are named by the better block's label),
and at most MAX_BLOCKS are given. With `max_neighbours` (small-to-big, decision D86) the hit is joined
with its neighbours in reading order (previous and next passage of the same book) that lie in the same
section, so a procedure cut by the passage boundary is read whole; the words a passage repeats from the
one before it are removed where they join, a hit inside or next to a block joins it, and blocks are added
until MAX_BLOCKS or the token budget (a block that does not fit whole is tried as its hit alone).
Figures stay blocks of their own.

A block is a `Source` whose `hit` carries the joined text and the pages it spans, and whose `passages`
are the book passages it holds, in reading order: the label names what the reader can open (its
passage ids and pages), and citation, claim support and `--json` read it like any source. The hit's
passage id and text hash are the ranked passage's, so a saved answer follows it like any other.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Optional

from ragcli.text import sentences
from ragcli.types import Hit, Source

# Chosen by the 1.5B's answers read on FM and checked on CERT (decision D102): the ranked passages, each
# its own block (no neighbour joined, MAX_NEIGHBOURS 0), near-duplicates merged, at most 6. With a
# neighbour a side (260-token blocks, 700 in all: D86) the model copied the neighbour more often (wrong
# answers shown on FM 7 of 44 against 5). bench/answers/answer_variants.py `context-T-N[-J]` sets them for a run;
# a caller may pass its own to `build`.
# The blocks' text, all together, in estimated tokens (None: no cap: the 6 best). A cap of 600 made the
# prompt 0.72x (CERT) and 0.79x (FM) a plain prompt's, and lost a correct answer whose passage ranked 5th
# (FM lay-28: the live-cable rescue became "remove his jewelry", shown as answered): not the default
# (decision D135); `bench/answers/answer_variants.py` `context-600-6` runs it.
CONTEXT_TOKENS: Optional[int] = None
MAX_BLOCKS = 6
BLOCK_TOKENS = 0  # one block grows with neighbours (or an adjacent hit) up to this
MAX_NEIGHBOURS = 0  # passages added on each side of a hit, at most
NEAR_DUPLICATE = 0.8  # share of the smaller block's word 3-grams found in the other
MIN_OVERLAP_WORDS = 3  # a repeated run shorter than this where two passages join is kept

Neighbours = Callable[[Hit], tuple[Optional[Hit], Optional[Hit]]]  # (previous, next) in the book


def estimate_tokens(text: str) -> int:
    """Tokens of `text` without a tokenizer (English prose: about 1.35 a word)."""
    return int(len(text.split()) * 1.35) + 1


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def drop_overlap(before: str, after: str, longest: int = 80) -> str:
    """`after` without the words it repeats from the end of `before` (the longest run of at least
    MIN_OVERLAP_WORDS words that ends `before` and begins `after`, case and punctuation ignored)."""
    tail = _words(" ".join(before.split()[-longest - 5:]))
    tokens = after.split()
    # the normalised words of each token of `after`, so the cut falls between tokens
    norm = [_words(t) for t in tokens[:longest + 5]]
    best = 0
    flat: list[str] = []
    ends: list[int] = []  # flat index -> token count consumed
    for i, ws in enumerate(norm):
        for w in ws:
            flat.append(w)
            ends.append(i + 1)
    for n in range(min(len(tail), len(flat)), MIN_OVERLAP_WORDS - 1, -1):
        if tail[-n:] == flat[:n]:
            best = ends[n - 1]
            break
    return " ".join(tokens[best:]) if best else after


def _grams(text: str) -> set[tuple[str, ...]]:
    w = _words(text)
    return {tuple(w[i:i + 3]) for i in range(max(len(w) - 2, 0))}


def near_duplicate(a: str, b: str, share: float = NEAR_DUPLICATE) -> bool:
    """Most of the shorter text's word 3-grams are in the other (the same passage in two books or
    sections, a text repeated in a summary box)."""
    ga, gb = _grams(a), _grams(b)
    if not ga or not gb:
        return False
    return len(ga & gb) / min(len(ga), len(gb)) >= share


class _Block:
    def __init__(self, hit: Hit):
        self.best = hit
        self.members = [hit]  # reading order
        self.also: list[Hit] = []  # near-duplicates merged in
        self.prev: Optional[Hit] = None  # the neighbours just outside, once looked up
        self.next: Optional[Hit] = None

    def ids(self) -> set[int]:
        return {h.passage_id for h in self.members + self.also}

    def text(self) -> str:
        parts = [self.members[0].text.strip()]
        for a, b in zip(self.members, self.members[1:]):
            parts.append(drop_overlap(a.text, b.text).strip())
        return "\n".join(p for p in parts if p)

    def source(self, label: str) -> Source:
        first = self.members[0]
        hit = replace(self.best, text=self.text(), page_start=min(h.page_start for h in self.members),
                      page_end=max(h.page_end for h in self.members), page_label=first.page_label)
        return Source(label, hit, passages=list(self.members) + list(self.also))


def _same_section(a: Hit, b: Optional[Hit]) -> bool:
    return b is not None and b.kind == "passage" and b.book_id == a.book_id and b.section_path == a.section_path


def build(hits: list[Hit], neighbours: Optional[Neighbours] = None,
          count_tokens: Optional[Callable[[str], int]] = None, budget: Optional[int] = None,
          max_blocks: Optional[int] = None, block_tokens: Optional[int] = None,
          max_neighbours: Optional[int] = None) -> tuple[list[Source], list[Source]]:
    """(blocks for the prompt, the other hits as sources), labelled S1.../F1... in rank order, the
    blocks first. `neighbours(hit)`: the previous and next passage of its book (None: no joining).
    Unset limits are the module's (read at the call, so a bench variant can set them)."""
    count = count_tokens or estimate_tokens
    budget = CONTEXT_TOKENS if budget is None else budget  # still None: no cap
    max_blocks = MAX_BLOCKS if max_blocks is None else max_blocks
    block_tokens = BLOCK_TOKENS if block_tokens is None else block_tokens
    max_neighbours = MAX_NEIGHBOURS if max_neighbours is None else max_neighbours
    memo: dict[int, tuple[Optional[Hit], Optional[Hit]]] = {}
    if max_neighbours <= 0 and block_tokens <= 0:
        neighbours = None  # nothing can be joined: no look-up of the passages around each hit

    def around(h: Hit) -> tuple[Optional[Hit], Optional[Hit]]:
        if neighbours is None or h.kind != "passage":
            return None, None
        if h.passage_id not in memo:
            memo[h.passage_id] = neighbours(h)
        return memo[h.passage_id]

    blocks: list[_Block] = []
    used = 0
    placed: set[int] = set()
    for hit in hits:
        if len(blocks) >= max_blocks:
            break
        if hit.passage_id in placed:
            continue  # already read inside a better block
        if hit.kind == "passage" and _extend(blocks, hit, around, count, block_tokens):
            placed.add(hit.passage_id)
            used = sum(count(b.text()) for b in blocks)
            continue
        block = _Block(hit)
        if hit.kind == "passage":
            _grow(block, around, count, block_tokens, max_neighbours, placed)
        dup = next((b for b in blocks if b.best.kind == hit.kind and near_duplicate(b.text(), block.text())), None)
        if dup is not None:
            dup.also.extend(m for m in block.members if m.passage_id not in dup.ids())
            placed |= {m.passage_id for m in block.members}
            continue
        size = count(block.text())
        if blocks and budget is not None and used + size > budget:
            block = _Block(hit)  # the hit alone, when its neighbours do not fit
            size = count(block.text())
            if used + size > budget:
                break
        blocks.append(block)
        placed |= block.ids()
        used += size
    in_blocks = {i for b in blocks for i in b.ids()}
    rest = [h for h in hits if h.passage_id not in in_blocks]
    labelled = _label([(b.best.kind, b) for b in blocks] + [(h.kind, h) for h in rest])
    return labelled[:len(blocks)], labelled[len(blocks):]


def _extend(blocks: list[_Block], hit: Hit, around, count, block_tokens: int) -> bool:
    """Join `hit` to a block it continues (it is the passage just before or after it, same section)."""
    for b in blocks:
        if b.best.kind != "passage" or not _same_section(b.members[0], hit):
            continue
        prev, _ = around(b.members[0])
        _, nxt = around(b.members[-1])
        for side, n in (("prev", prev), ("next", nxt)):
            if n is not None and n.passage_id == hit.passage_id:
                members = [hit] + b.members if side == "prev" else b.members + [hit]
                trial = _Block(b.best)
                trial.members = members
                if count(trial.text()) > block_tokens:
                    return False
                b.members = members
                return True
    return False


def _grow(block: _Block, around, count, block_tokens: int, max_neighbours: int, placed: set[int]) -> None:
    """Add the hit's neighbours of the same section, previous then next, one at a time, while the
    block stays within `block_tokens`."""
    added = {"prev": 0, "next": 0}
    while True:
        grew = False
        for side in ("prev", "next"):
            if added[side] >= max_neighbours:
                continue
            edge = block.members[0] if side == "prev" else block.members[-1]
            n = around(edge)[0 if side == "prev" else 1]
            if not _same_section(block.best, n) or n.passage_id in placed:
                continue
            members = [n] + block.members if side == "prev" else block.members + [n]
            trial = _Block(block.best)
            trial.members = members
            if count(trial.text()) > block_tokens:
                continue
            block.members = members
            added[side] += 1
            grew = True
        if not grew:
            return


def _label(items: list) -> list[Source]:
    out, s, f = [], 0, 0
    for kind, item in items:
        if kind == "figure":
            f += 1
            label = f"F{f}"
        else:
            s += 1
            label = f"S{s}"
        out.append(item.source(label) if isinstance(item, _Block) else Source(label, item))
    return out


def single(hits: list[Hit]) -> tuple[list[Source], list[Source]]:
    """Every hit its own block (no joining): the context before blocks, for comparison and for
    callers without the corpus at hand."""
    return build(hits, None, None, budget=10 ** 9, max_blocks=len(hits) or 1, block_tokens=0)


def passages_of(source: Source) -> list[Hit]:
    """The book passages a label names (the hit alone for a source that is not a block)."""
    return source.passages or [source.hit]


def page_of(source: Source, sentence: str) -> tuple[str, int]:
    """(page label, page) of the passage of `source` that holds `sentence` (else the block's first)."""
    words = " ".join(_words(sentence))
    for h in passages_of(source):
        if words and words in " ".join(_words(h.text)):
            return h.page_label, h.page_start
    return source.hit.page_label, source.hit.page_start



# The prompt's copy of each passage cut to what the question needs (decision D151): the best SELECT_WHOLE
# blocks whole; in each of the others its sentence nearest the question (cosine of the embedding model's
# vectors: the same sentences and vectors the claim check reads after the answer), then, nearest first
# over all of them, sentences with SELECT_AROUND either side while their text stays within SELECT_TOKENS
# (estimated; None: the SELECT_TOP nearest of each passage); in reading order, a gap marked GAP. A
# sentence a better block already gives is left out. The stored passage, which claims are checked
# against, is unchanged. Off (decision D151): with it (2 whole, 1 nearest, 1 either side) the user message
# was 0.72x the plain prompt's on FM (0.67x with prompt.SHORT_HEADERS; ATP 0.70x), but the 1.5B lost FM
# lay-05, lay-18 and CERT cert-01, -02, -05, correct on main (CERT: 0.77x the tokens);
# `bench/answers/answer_variants.py` `select-w2t1a1[-short]` runs it.
SELECT = False
SELECT_WHOLE = 2
SELECT_TOP = 1
SELECT_AROUND = 1
SELECT_TOKENS: Optional[int] = None
# True: a cut passage keeps every sentence from its first kept one to its end (decision D160): what the
# passage says after the sentence nearest the question (the next step of a procedure, the rest of a list)
# is what the 1.5B stopped short of when it was cut (D151's lost answers).
SELECT_TAIL = False
GAP = "…"


def select(blocks: list[Source], question: str, embedder, whole: Optional[int] = None, top: Optional[int] = None,
           around: Optional[int] = None, tokens: Optional[int] = -1, tail: Optional[bool] = None) -> list[Source]:
    """`blocks` with `shown` set to the sentences of each that the prompt gives (module limits unless
    given; `tokens` None: no shared budget). A figure, and a passage with nothing to leave out, keeps
    `shown` None (its whole text)."""
    whole = SELECT_WHOLE if whole is None else whole
    top = SELECT_TOP if top is None else top
    around = SELECT_AROUND if around is None else around
    tokens = SELECT_TOKENS if tokens == -1 else tokens
    tail = SELECT_TAIL if tail is None else tail
    split = {b.label: sentences(b.hit.text) for b in blocks if b.hit.kind == "passage"}
    cut = [b.label for i, b in enumerate(blocks) if i >= whole and b.label in split]
    todo = list(dict.fromkeys(s for label in cut for s in split[label]))
    if not todo:
        return blocks
    vecs = embedder.embed([question] + todo)
    near = {s: float(v @ vecs[0]) for s, v in zip(todo, vecs[1:])}
    keys = {label: [" ".join(_words(s)) for s in ss] for label, ss in split.items()}
    seen: set[str] = set()
    for i, b in enumerate(blocks):
        if i < whole and b.label in keys:
            seen.update(keys[b.label])
    keep: dict[str, set[int]] = {}
    for label in cut:  # a sentence a better block gives is not given again
        fresh = [j for j, k in enumerate(keys[label]) if k not in seen]
        seen.update(keys[label][j] for j in fresh)
        keep[label] = set()
        keys[label] = [k if j in fresh else None for j, k in enumerate(keys[label])]

    def add(label: str, j: int) -> None:
        keep[label] |= {n for n in range(j - around, j + around + 1)
                        if 0 <= n < len(split[label]) and keys[label][n] is not None}

    ranked = {label: sorted((j for j, k in enumerate(keys[label]) if k is not None),
                            key=lambda j, ss=split[label]: -near[ss[j]]) for label in cut}
    if tokens is None:
        for label in cut:
            for j in ranked[label][:top]:
                add(label, j)
    else:
        for label in cut:
            keep[label] |= set(ranked[label][:1])
        size = lambda: sum(estimate_tokens(split[lab][j]) for lab in cut for j in keep[lab])  # noqa: E731
        for _, label, j in sorted(((near[split[lab][j]], lab, j) for lab in cut for j in ranked[lab]),
                                   key=lambda t: -t[0]):
            before = set(keep[label])
            add(label, j)
            if size() > tokens:
                keep[label] = before
                break
    if tail:
        for label in cut:
            if keep[label]:
                keep[label] |= {n for n in range(min(keep[label]), len(split[label])) if keys[label][n] is not None}
    out = []
    for b in blocks:
        if b.label not in keep:
            out.append(b)
            continue
        ss, chosen = split[b.label], sorted(keep[b.label])
        if len(chosen) == len(ss):
            out.append(b)
            continue
        parts, last = [], -1
        for j in chosen:
            if j != last + 1:
                parts.append(GAP)
            parts.append(ss[j])
            last = j
        if last != len(ss) - 1:
            parts.append(GAP)
        out.append(replace(b, shown=" ".join(parts)))
    return out
