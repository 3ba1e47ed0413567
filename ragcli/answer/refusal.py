"""Is an answer (or one of its sentences) a refusal, in whatever words the model chose?

Small instruct models refuse in many wordings ("The provided passages do not answer this.", "The
context does not mention ...", "I'm sorry, but I cannot ...", "There is no information about ...").
A refusal is a status (`no_answer`), never an answer with a support table, so ask and summary check
every reply with `is_refusal` / `refusal_sentences`.
"""
from __future__ import annotations

import re
from typing import Callable, Optional, Sequence

from ragcli.answer.claims import split_claims
from ragcli.answer.book_words import cosines_to, named_in_books
from ragcli.answer.support import missing_numbers
from ragcli.text import SUPPORT_STOPWORDS, content_words, light_stem

_SUBJECT = (r"(?:the |these |those |this |given |provided |above |supplied |available |retrieved |"
            r"cited |following )*(?:passages?|context|sources?|texts?|excerpts?|documents?|information|"
            r"books?|manual|materials?|references?|labels?|s\d+|\[s\d+\])")
_VERB = (r"(?:answer|mention|contain|provide|include|specify|state|say|address|cover|discuss|describe|"
         r"give|list|offer|explain|detail|tell|indicate|have|hold|talk about|refer to|deal with|"
         r"recommend|suggest)")
_NEG = r"(?:do not|does not|did not|don't|doesn't|didn't|cannot|can't|can not|fail to|fails to|no(?:where)?)"

_PATTERNS = [
    rf"\b{_SUBJECT}\s+(?:\w+\s+)?{_NEG}\s+(?:\w+\s+)?{_VERB}",  # the passages do not (directly) mention
    rf"\b{_SUBJECT}\s+(?:is|are)\s+(?:silent|insufficient|not (?:sufficient|enough|relevant|clear))",
    rf"\bnot\s+(?:\w+\s+)?(?:mentioned|provided|specified|stated|given|covered|discussed|addressed|"
    rf"found|included|described|listed|available|answered)\s+(?:\w+\s+){{0,2}}(?:in|by|within)\s+{_SUBJECT}",
    r"\b(?:there is|there's|there are|i (?:found|see|have)|with)\s+no\s+(?:\w+\s+){0,3}"
    r"(?:information|mention|details?|data|answer|evidence|instructions?|guidance|passages?|reference)",
    r"\bno\s+(?:specific\s+|relevant\s+|such\s+|direct\s+|further\s+)?(?:information|mention|details?|answer)"
    r"\s+(?:is|was|are|were|about|on|regarding|for|of|in)\b",
    r"\bi\s+(?:do not|don't|cannot|can't|can not|am unable to|am not able to|could not|couldn't)\s+"
    r"(?:\w+\s+)?(?:answer|find|know|provide|determine|say|help|locate|see|give|tell)",
    r"\b(?:unable|not able)\s+to\s+(?:\w+\s+)?(?:answer|find|determine|provide|locate)",
    r"\b(?:cannot|can't|can not|could not)\s+be\s+(?:\w+\s+)?(?:answered|determined|found|provided|"
    r"inferred|derived)",
    r"\b(?:insufficient|not enough|no sufficient)\s+(?:\w+\s+)?(?:information|context|data|detail)",
    r"^\s*(?:i'?m sorry|i am sorry|sorry|unfortunately|apologies)\b",
    r"\bbeyond the scope of\b",
    r"\boutside (?:the )?(?:scope|context) of\b",
    r"^\s*(?:no answer|not answered|unknown|n/?a)\W*$",
]
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.I)
_MARKS = re.compile(r"\[[A-Za-z]?\s*\d+(?:\s*[-–,;]\s*[A-Za-z]?\s*\d+)*\]")


def _clean(text: str) -> str:
    return " ".join(_MARKS.sub(" ", text).replace("’", "'").split())


def is_refusal_sentence(sentence: str) -> bool:
    """Does this sentence say that the sources do not answer (or that the model cannot)?"""
    return bool(_REFUSAL.search(_clean(sentence)))


def refusal_sentences(sentences: list[str]) -> list[int]:
    """Indexes of the sentences that refuse."""
    return [i for i, s in enumerate(sentences) if is_refusal_sentence(s)]


def is_refusal(text: str) -> bool:
    """The whole answer refuses: it is empty, or it opens with a refusal and nothing after it reads
    as a statement of the book (only caveats, advice to see a doctor, or more refusals)."""
    sentences = [s for s in split_claims(text) if _clean(s)]
    if not sentences:
        return True
    refusing = refusal_sentences(sentences)
    if not refusing:
        return False
    rest = [s for i, s in enumerate(sentences) if i not in refusing]
    return refusing[0] == 0 and all(not _MARKS.search(s) for s in rest)


# ------------------------------------------------------------------------------ unbacked answers
def missing_terms(question: str, sources, in_books: Optional[Callable[[str], bool]] = None) -> list[str]:
    """The question's content words that occur in none of the passages (by stem): "morphine" in a
    manual that never names it. With `in_books(word)` (does the word occur anywhere in the books
    searched?), a word the books use elsewhere is not missing: "buddy" in a manual that says "buddy
    aid" on other pages is the asker's word for the casualty, not a subject the book lacks. Lay words
    the book never uses are still missing, so a missing term only counts against a claim that repeats
    it (see `unbacked_reason`)."""
    present = _stems(sources)
    out: list[str] = []
    for w in content_words(question):
        if light_stem(w) not in present and w not in out and len(w) > 3 and not (
                in_books and named_in_books(w, question, in_books)):
            out.append(w)
    return out


def _stems(sources) -> set[str]:
    """The stems of the passages' content words."""
    return {light_stem(w) for w in content_words(" ".join(s.hit.text for s in sources))}


def _foreign_numbers(claim: str, sources) -> list[str]:
    """Numbers (with their units) of the claim that no passage has: a dose from memory."""
    text = " ".join(s.hit.text for s in sources)
    return [f"{v:g}{' ' + u if u else ''}" for v, u in missing_numbers(claim, text)]


# "How much / how many / how often / how long / what dose": the answer to such a question is an amount;
# a reply that gives none has answered something else ("Injecting in the buttocks avoids the thighbone"
# for a morphine dose).
_ASKS_AMOUNT = re.compile(r"\b(?:how (?:many|much|often|long|far)|what (?:dose|dosage|amount|rate)|"
                          r"(?:dose|dosage) of|how frequently)\b", re.I)
_AMOUNT = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|"
                     r"twenty|thirty|forty|fifty|sixty|hundred|half|once|twice|several|few|dozen|"
                     r"hours?|minutes?|seconds?|days?|weeks?|inch(?:es)?|until)\b", re.I)


def asks_for_amount(question: str) -> bool:
    return bool(_ASKS_AMOUNT.search(question))


# "What dose of morphine", "how much potassium iodide", "how many vials of antivenom": the thing whose
# amount is asked. A count or a unit before "of" is skipped ("milligrams of ibuprofen" -> ibuprofen).
_AMOUNT_OF = re.compile(
    r"\b(?:how (?:many|much)|(?:dose|dosage|amount|quantity) of|(?:what|which) (?:dose|dosage|amount)(?:\s+of)?)\s+"
    r"(?:(?:milligrams?|mg|grams?|g|micrograms?|mcg|vials?|tablets?|pills?|capsules?|units?|doses?|ml|"
    r"cc|drops?|cups?|spoons?|teaspoons?|tablespoons?|shots?|injections?|bottles?)\s+of\s+)?"
    r"((?:[a-z][a-z'-]*\s*){1,3})", re.I)


# "Which antibiotic should I give", "what kind of splint": the question asks to name one of a kind; an
# answer from passages that never name the kind answers something else ("use a topical antiseptic").
_WHICH = re.compile(r"\b(?:which|what (?:kind|type|sort|brand|make) of)\s+((?:[a-z][a-z'-]*\s*){1,3})", re.I)


# Words that end the named kind: the verb of the question after it ("which symptoms mean ...", "what kind
# of splint works best"), not part of what is asked to be named.
_AFTER_KIND = frozenset("""mean means meant need needs needed work works worked show shows indicate indicates
    require requires required help helps go goes make makes best better worst most least""".split())


def _object_words(phrase: str) -> list[str]:
    words: list[str] = []
    for w in phrase.lower().split():
        if w in SUPPORT_STOPWORDS or (words and w in _AFTER_KIND):
            break
        words.append(w)
    return words


def amount_object(question: str) -> list[str]:
    """The content words naming what an amount question asks the amount of, or [] ("how often",
    "how long" ask for a time, not an amount of something)."""
    m = _AMOUNT_OF.search(question)
    return _object_words(m.group(1)) if m else []


def asked_kind(question: str) -> list[str]:
    """The content words naming the kind a "which X" question asks to name ("which antibiotic" ->
    antibiotic), or []."""
    m = _WHICH.search(question)
    return _object_words(m.group(1)) if m else []


NO_AMOUNT = "the question asks for an amount and the answer gives none"
NOT_BACKED = "no sentence of the answer is backed by the passages it cites"
NO_SOURCE = "the answer cites no passage, and no passage given states any of its sentences"


# The rules of unbacked_reason, by name (`skip` turns some off: bench/answers/bench_answers.py --without).
UNBACKED_RULES = ("amount", "amount_of", "which", "lacks", "none_backed", "mostly_contradicted")


def unbacked_reason(answer, question: str, in_books: Optional[Callable[[str], bool]] = None,
                    skip: Sequence[str] = ()) -> Optional[str]:
    """Why an answer's substance is not in the passages (so it is `no_answer`), or None.

    Per claim (ragcli.answer.grounding has scored them): a claim is backed when its cited passage
    supports it (`supported`), or relates to it (`weak`) without anything the passages lack: a number
    no passage has, or a word of the question no passage has ("morphine"). The answer is not backed
    when no claim is, or when its first claim (the direct answer) brings such a number or word, or
    when most of its claims are `unsupported` (their passages, and every other passage given, say
    something else), when the question asks for an amount (`asks_for_amount`) and no claim gives one, or asks for the
    amount of something (`amount_object`: "what dose of morphine") that no cited passage names: "Take
    one tablet every 8 hours [S2]" from a passage about another drug answers another question."""
    # what the answer says: its sentences that are not refusals ("Inject epinephrine [S2]" is too short
    # to be graded as a claim, and still answers "how much epinephrine" without an amount)
    said = [c for c in answer.claims if re.search(r"[A-Za-z]{2}", c.text) and not is_refusal_sentence(c.text)]
    if not said:
        return None
    if "amount" not in skip and asks_for_amount(question) and not any(_AMOUNT.search(c.text) for c in said):
        return NO_AMOUNT
    cited = {lab for c in said for lab in c.citations}
    present = _stems([s for s in answer.sources if s.label in cited])
    for thing, asks, rule in ((amount_object(question), "how much", "amount_of"),
                              (asked_kind(question), "which", "which")):
        if rule in skip:
            continue
        lacking = [w for w in thing if light_stem(w) not in present]
        if lacking:
            return (f"the question asks {asks} {' '.join(thing)}, and the passages the answer cites do not "
                    f"mention {', '.join(lacking)}")
    factual = [c for c in answer.claims if c.support != "not_factual"]
    if not factual:
        return None
    absent = {light_stem(w): w for w in missing_terms(question, answer.sources, in_books)}

    def lacks(claim) -> list[str]:
        words = {light_stem(w) for w in re.findall(r"[a-z]+", claim.text.lower())}
        return [absent[s] for s in absent if s in words] + _foreign_numbers(claim.text, answer.sources)

    def backed(claim) -> bool:
        return claim.support == "supported" or (claim.support == "weak" and not lacks(claim))

    first = lacks(factual[0]) if factual[0].support != "supported" and "lacks" not in skip else []
    if first:
        return "the passages do not mention " + ", ".join(dict.fromkeys(first))
    if "none_backed" not in skip and not any(backed(c) for c in factual):
        foreign = [x for c in factual for x in lacks(c)] if "lacks" not in skip else []
        if foreign:
            return "the passages do not mention " + ", ".join(dict.fromkeys(foreign))
        return NOT_BACKED
    contradicted = [c for c in factual if c.support == "unsupported"]
    if "mostly_contradicted" not in skip and len(contradicted) * 2 > len(factual):
        return (f"{len(contradicted)} of its {len(factual)} sentences are not backed by the passages they "
                f"cite, nor by any other passage given")
    return None


# ------------------------------------------------------------------------------ off the question
OFF_QUESTION = "the answer is about something else: its text is no nearer the question than unrelated text"


def off_question(answer, question: str, embedder, floor: float, book_question: Optional[str] = None) -> bool:
    """Is the answer's text (its factual sentences, labels aside) no nearer the question than the
    no-context floor, the cosine under which retrieval calls a passage unrelated? A small model given
    on-topic passages that are silent on the question copies the nearest procedure ("deliver a baby in
    the field" answered with the field-dressing steps, every sentence backed by its passage): backed,
    and not an answer. With `book_question` (the question as the books write it, as_books_write), off
    both: an answer about clothing is near "Explain clothing to me", not near the reader's slip
    ("clohting"), which the embedding model cannot read."""
    text = " ".join(re.sub(r"\s*\[[SF]\d+\]", "", c.text) for c in answer.claims if c.support != "not_factual")
    if not text.strip():
        return False
    questions = list(dict.fromkeys(q for q in (question, book_question) if q))
    return bool((cosines_to(text, questions, embedder) < floor).all())


# ------------------------------------------------------------------------------ far passages
def cited_cosine(answer, question: str, embedder, book_question: Optional[str] = None) -> Optional[float]:
    """The best cosine, to the question, of the passages the answer's factual sentences cite (None when
    they cite none). A backed answer from passages about another case ("a jacket on fire" answered
    from the chemical-burn steps; labour from lifting debris) rests on passages far from the question:
    every word is in its passage, and the passage is not about this."""
    texts = cited_texts(answer)
    if not texts:
        return None
    best = float(cosines_to(question, texts, embedder).max())
    if book_question and book_question != question:  # the question as the books write it (as_books_write)
        best = max(best, float(cosines_to(book_question, texts, embedder).max()))
    return best


def cited_texts(answer, text=lambda hit: hit.text) -> list[str]:
    """The texts of the passages the answer's factual sentences cite (`text(hit)`: their text, or
    book_words.headed's heading and text)."""
    cited = {lab for c in answer.claims if c.support != "not_factual" for lab in c.citations}
    return [text(s.hit) for s in answer.sources if s.label in cited]
