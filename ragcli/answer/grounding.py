"""Per-claim support: for every sentence of an answer, does a cited passage back it?

Levels: supported (a cited passage backs it; its best sentence is quoted with the page), weak (related,
not clearly stated), unsupported (it cites passages that do not back it: those citations are flagged),
no_source (a factual sentence with no citation), not_factual (a refusal or connective sentence).
The scorer is ragcli.answer.support (embedding model already loaded + lexical, number and negation evidence).
`--verify` adds a second llama.cpp pass: per-claim verdicts constrained to JSON by a grammar; claims the
model judges unsupported are removed from the final answer (draft, verdicts, final kept in JSON).
"""
from __future__ import annotations

import re
from typing import Optional

from ragcli.answer import support
from ragcli.answer.citations import neutralise
from ragcli.answer.context import page_of
from ragcli.answer.claims import attach_citations, backing_labels_text, labels_lead, segment, split_claims
from ragcli.models import grammars
from ragcli.text import sentences as split_sentences_plain
from ragcli.system_prompt import ANSWER_PREFIX
from ragcli.answer.refusal import is_refusal_sentence
from ragcli.types import Answer, Claim, Evidence, Source

NOT_FACTUAL = re.compile(r"^(i (do not|don't) know|no (relevant )?information)", re.I)
LEVEL_ORDER = {"supported": 0, "weak": 1, "unsupported": 2}


def is_factual(text: str) -> bool:
    """A sentence that states something: three words or more, or a quantity with its word ("100
    milligrams" answers a dose question, from memory or from the book), and not a refusal or a question."""
    words = re.findall(r"[A-Za-z]{2,}", text)
    quantity = bool(words) and any(u is not None or v not in (0.0, 1.0) for v, u in support.numbers(text))
    return ((len(words) >= 3 or quantity) and not NOT_FACTUAL.match(text.strip())
            and not is_refusal_sentence(text) and not text.rstrip().endswith("?"))


def score(answer_text: str, sources: list[Source], embedder) -> list[Claim]:
    """The claims (sentences) of `answer_text`, each with its support by the `sources` it cites."""
    by_label = {s.label: s for s in sources}
    claims = []
    for paragraph in _PARAGRAPH_BREAK.split(answer_text):
        parsed = attach_citations(split_claims(paragraph))
        claims += _inherit_labels([Claim(text=t, citations=[lab for lab in labels if lab in by_label])
                                   for t, labels in parsed], labels_first=labels_lead(segment(paragraph)))
    todo = [c for c in claims if c.citations and is_factual(c.text)]
    sentences = {lab: split_sentences_plain(by_label[lab].hit.text) for c in todo for lab in c.citations}
    results = support.score_claims([(c.text, [sentences[lab] for lab in c.citations]) for c in todo],
                                   embedder) if todo else []
    for claim, row in zip(todo, results):
        _apply(claim, row, by_label)
    repoint([c for c in todo if c.support != "supported"], sources, embedder)
    attribute([c for c in claims if not c.citations and is_factual(c.text)], sources, embedder)
    for claim in claims:
        if not claim.citations:
            claim.support = "no_source" if is_factual(claim.text) else "not_factual"
        elif not is_factual(claim.text):
            claim.support = "not_factual"
    return claims


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def _inherit_labels(claims: list[Claim], labels_first: bool = False) -> list[Claim]:
    """A label that ends a run of sentences covers the run, as a citation at the end of a paragraph
    does in print: an uncited factual sentence takes the labels of the next cited sentence of its
    paragraph. In a paragraph that puts its labels first ("[S1] Copied sentence. Another one."), a
    label covers the sentences after it, up to the next label. Each is then checked against those
    passages like any other claim, so a sentence the passage does not back is flagged, not waved
    through."""
    current: list[str] = []
    for claim in (claims if labels_first else reversed(claims)):
        if claim.citations:
            current = claim.citations
        elif current and is_factual(claim.text):
            claim.citations = list(current)
    return claims


def repoint(claims: list[Claim], sources: list[Source], embedder) -> None:
    """A sentence its cited passage does not back, but another passage of the prompt does (it says
    what the sentence says: level `supported`), gets that passage's label; the label the model wrote
    is kept in `cited_as`. Small models put the right sentence under the neighbouring label ("the
    thumb side of the wrist [S4]" copied from S5). Only passages the model was given are candidates,
    and only a `supported` match moves a label: a weak one leaves the claim as scored."""
    if len(sources) < 2:
        return
    for claim, source, result in _supporting(claims, sources, embedder, exclude_cited=True):
        claim.cited_as, claim.citations = list(claim.citations), [source.label]
        _apply(claim, [result], {source.label: source})


def attribute(claims: list[Claim], sources: list[Source], embedder) -> None:
    """A factual sentence that cites nothing, but that a passage of the prompt states (level
    `supported`), gets that passage's label with `attributed` set: the model wrote the book's sentence
    without its label (Qwen2.5-Coder-0.5B pastes passage text unlabelled more often than not). Only
    `supported` moves a label in, so a sentence from memory stays `no_source`; the answer text is not
    changed, and the terminal and JSON say the label is ragcli's, not the model's."""
    for claim, source, result in _supporting(claims, sources, embedder, exclude_cited=False):
        claim.citations, claim.attributed = [source.label], True
        _apply(claim, [result], {source.label: source})


def _supporting(claims: list[Claim], sources: list[Source], embedder, exclude_cited: bool):
    """(claim, source, result) for each claim that a source of the prompt (other than those it cites,
    with `exclude_cited`) states, level `supported`: the best-scoring such source."""
    if not claims or not sources:
        return
    candidates = [[s for s in sources if not (exclude_cited and s.label in c.citations)] for c in claims]
    texts = {s.label: split_sentences_plain(s.hit.text) for s in sources}
    rows = support.score_claims([(c.text, [texts[s.label] for s in alt]) for c, alt in zip(claims, candidates)],
                                embedder)
    for claim, alt, row in zip(claims, candidates, rows):
        best = [i for i in range(len(row)) if row[i].level == "supported"]
        if best:
            i = max(best, key=lambda j: row[j].score)
            yield claim, alt[i], row[i]


def _apply(claim: Claim, row: list[support.SupportResult], by_label: dict[str, Source]) -> None:
    best_i = min(range(len(row)), key=lambda i: (LEVEL_ORDER[row[i].level], -row[i].score))
    best = row[best_i]
    claim.support, claim.score = best.level, round(best.score, 4)
    claim.why = support.why_not_supported(best)
    claim.flagged_citations = [lab for lab, r in zip(claim.citations, row) if r.level == "unsupported"]
    if best.best_sentence and best.level != "unsupported":
        page_label, page = page_of(by_label[claim.citations[best_i]], best.best_sentence)
        claim.evidence = Evidence(claim.citations[best_i], neutralise(best.best_sentence), page_label, page)


def assess(answer: Answer, embedder, verify_model: Optional[object] = None) -> Answer:
    """Fill answer.claims; with a model, run the --verify pass and rewrite the answer."""
    if not answer.answer:
        answer.claims = []
        return answer
    answer.claims = score(answer.answer, answer.sources, embedder)
    cite_what_claims_cite(answer)
    if verify_model is not None and answer.status == "answered":
        verify(answer, verify_model, embedder)
    answer.relabelled = backing_labels_text(answer.answer, answer.claims)
    return answer


def cite_what_claims_cite(answer: Answer) -> None:
    """After scoring, the answer's cited labels name every passage a claim now rests on: a label
    ragcli moved a claim to (repoint) or found for it (attribute) joins the labels the model wrote,
    which are all kept, in order of first use (a claim's own labels, then the one it now cites). So
    the Sources list and `citations` hold the passage the terminal says backs the claim; which labels
    are ragcli's the claims say (`cited_as`, `attributed`; render/data.found_citations)."""
    own = list(answer.citations)
    used = [lab for c in answer.claims
            for lab in [*(c.cited_as or ([] if c.attributed else c.citations)), *c.citations]]
    if all(lab in own for lab in used):
        return
    answer.citations = [*dict.fromkeys(used), *(lab for lab in own if lab not in used)]


VERIFY_TASK = """TASK: check each numbered claim of a draft answer against the passages it cites. Say
"supported" only if the passages state it, "partial" if they state part of it, else "unsupported".
Reply with the JSON array asked for, nothing else."""


def verify_messages(answer: Answer, claims: list[Claim]) -> list[dict]:
    by_label = {s.label: s for s in answer.sources}
    lines = []
    for i, c in enumerate(claims, 1):
        cited = "\n".join(f"  [{lab}] {neutralise(by_label[lab].hit.text)}" for lab in c.citations
                          if lab in by_label)
        lines.append(f"Claim {i}: {c.text}\n{cited or '  (no source cited)'}")
    # the answer's system prompt and worked example first, as every call of one ask begins: the
    # server (or llama.cpp in process) re-uses their KV cache from the answer call
    return [*(dict(m) for m in ANSWER_PREFIX),
            {"role": "user", "content": VERIFY_TASK + "\n\n" + "\n\n".join(lines)}]


def verify(answer: Answer, model, embedder) -> None:
    """Draft -> per-claim verdicts (JSON grammar) -> unsupported claims removed."""
    claims = [c for c in answer.claims if c.support != "not_factual"]
    if not claims:
        return
    reply = model.chat(verify_messages(answer, claims), max_tokens=40 * len(claims) + 16,
                       constraint=grammars.verdicts_constraint(len(claims)), temperature=0.0)
    verdicts = grammars.parse_verdicts(str(reply), len(claims))
    rejected = {id(c) for c, v in zip(claims, verdicts) if v == "unsupported"}
    keep = [c for c in answer.claims if id(c) not in rejected]
    draft = answer.answer
    sentences = split_claims(draft)  # the same split as answer.claims, citations still attached
    final = " ".join(s for s, c in zip(sentences, answer.claims) if id(c) not in rejected).strip()
    answer.verification = {
        "draft": draft,
        "verdicts": [{"claim": c.text, "verdict": v} for c, v in zip(claims, verdicts)],
        "final": final,
        "removed_claims": [c.text for c in answer.claims if id(c) in rejected],
    }
    if final != draft:
        answer.answer = final
        answer.claims = keep
        answer.citations = [lab for lab in answer.citations if any(lab in c.citations for c in keep)]
    if not answer.citations:
        answer.status = "unsupported"
        answer.notice = "verification rejected every cited claim; the draft is kept in the JSON output"
