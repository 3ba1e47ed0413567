"""Is an answer (or one of its sentences) a refusal, in whatever words the model chose?

Small instruct models refuse in many wordings ("The provided passages do not answer this.", "The
context does not mention ...", "I'm sorry, but I cannot ...", "There is no information about ...").
A refusal is a status (`no_answer`), never an answer with a support table, so ask and summary check
every reply with `is_refusal` / `refusal_sentences`.
"""
from __future__ import annotations

import re
from typing import Callable, Optional, Sequence

import numpy as np

from ragcli.answer.claims import split_claims
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


# ------------------------------------------------------------------------------ the book's spelling
_WORD = re.compile(r"[a-z][a-z0-9'-]*")
# British and American spellings, each pair read both ways: (pattern, replacement). A question in one
# and a book in the other name the same thing ("haemorrhage", "hemorrhage"; "colour", "color").
_VARIANTS = [
    (r"(?<=[a-z])ae(?=[a-z]{2}|[a-rt-z])", "e"), (r"(?<=[a-z])oe(?=[a-z]{2}|[a-rt-z])", "e"),
    (r"^oe(?=[a-z]{3})", "e"),
    (r"^ae(?=[a-z]{3})", "e"), (r"our(?=s?$|ed$|ing$|ite$)", "or"), (r"(?<=[a-z]{3})is(?=e[sd]?$|ing$|ation)", "iz"),
    (r"(?<=[a-z]{3})iz(?=e[sd]?$|ing$|ation)", "is"), (r"ys(?=e[sd]?$|ing$)", "yz"), (r"yz(?=e[sd]?$|ing$)", "ys"),
    (r"(?<=[a-z]{2}[^aeiou])tre(?=s?$)", "ter"), (r"(?<=[a-z]{2}[^aeiou])ter(?=s?$)", "tre"),
    (r"(?<=[aeiou])ll(?=ed$|ing$|er$)", "l"), (r"(?<=[aeiou])l(?=ed$|ing$|er$)", "ll"),
    (r"ogue$", "og"), (r"(?<=[a-z]{3})ence$", "ense"), (r"(?<=[a-z]{3})ense$", "ence"),
]


def spellings(word: str, question: str = "") -> list[str]:
    """Other ways a book may write `word` of `question`: joined with the word before or after it in the
    question ("heat stroke" -> "heatstroke", "first aid" -> "firstaid"), split in two ("heatstroke"
    -> the phrase "heat stroke", which FTS5 also matches in "heat-stroke"), without its hyphen
    ("heat-stroke" -> "heatstroke"), and its British or American spelling ("haemorrhage" ->
    "hemorrhage"). Each is looked up as a phrase of the books' text (`in_books`)."""
    word = word.lower()
    out: list[str] = []
    if "-" in word:
        out.append(word.replace("-", ""))
    tokens = _WORD.findall(question.lower())
    for i, tok in enumerate(tokens):
        if tok != word:
            continue
        if i > 0 and len(tokens[i - 1]) > 2:
            out.append(tokens[i - 1] + word)
        if i + 1 < len(tokens) and len(tokens[i + 1]) > 2:
            out.append(word + tokens[i + 1])
    plain = word.replace("-", "")
    if plain.isalpha():
        out += [f"{plain[:i]} {plain[i:]}" for i in range(3, len(plain) - 2)]
        for pattern, repl in _VARIANTS:
            other = re.sub(pattern, repl, plain)
            if other != plain:
                out.append(other)
    return list(dict.fromkeys(f for f in out if f != word))


def named_in_books(word: str, question: str, in_books: Callable[[str], bool],
                   texts_with: Optional[Callable[[str], list[str]]] = None,
                   pieces: Optional[Callable[[str], int]] = None) -> bool:
    """Do the books use `word`, as the question spells it or as they spell it (`spellings`), or name it
    in another form a reader writes (`book_form`: a slip of the keys; with `texts_with`, an acronym
    in the plural or spelled out)?"""
    return in_books(word) or any(in_books(f) for f in spellings(word, question)) or bool(
        book_form(word, question, in_books, texts_with, pieces))


# ------------------------------------------------------------------------------ a reader's forms
# An acronym in the plural or possessive as a reader writes it: "IEDs", "AED's".
_PLURAL_ACRONYM = re.compile(r"\b([A-Z][A-Z0-9]{1,6})(?:s|'s|’s)\b")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
SLIP_MIN = 6  # a word this long or longer may be a slip of the keys for a book's word


def book_form(word: str, question: str, in_books: Callable[[str], bool],
              texts_with: Optional[Callable[[str], list[str]]] = None,
              pieces: Optional[Callable[[str], int]] = None) -> Optional[str]:
    """How the books write a word of the question they do not use as spelled, or None:
    - an acronym in the plural ("IEDs") -> the acronym the books write in capitals ("IED");
    - a word of a spelled-out acronym ("improvised explosive devices" where the books write "IED"): the
      initials of a run of two to six of the question's content words, `word` among them, are an
      acronym the books write in capitals -> that acronym;
    - a slip of the keys (one letter dropped, added, changed, or two swapped, `SLIP_MIN` letters or
      more: "tournqiuet") -> the book's word ("tourniquet").
    Each is checked against the books, so the form is theirs, never a guess. The acronym forms need
    `texts_with(acronym)` (the passages holding it as written, case kept): FTS5's stemmer folds case
    and cuts "IED" to "i", so the index alone cannot say that a book writes "IED"."""
    if texts_with is not None:
        for m in _PLURAL_ACRONYM.finditer(question):
            if m.group(0).lower().replace("’", "'") == word.lower().replace("’", "'") and \
                    acronym_in_books(m.group(1), texts_with):
                return m.group(1)
        acronym = spelled_acronym(word, question, texts_with)
        if acronym:
            return acronym
    return slip_of(word, in_books, pieces)


def acronym_in_books(acronym: str, texts_with: Callable[[str], list[str]]) -> bool:
    """Does a passage write `acronym` in capitals, as a word of its own (or its plural)?"""
    pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(acronym)}(?:s|'s|’s)?(?![A-Za-z0-9])")
    return any(pattern.search(t) for t in texts_with(acronym))


def spelled_acronym(word: str, question: str, texts_with: Callable[[str], list[str]]) -> Optional[str]:
    """The acronym of the books that a run of the question's content words (two to six, `word` among
    them) spells out, or None: the run's initials are an acronym the books write in capitals, and the
    books spell that acronym with the run's words ("improvised explosive device (IED)"), so a run whose
    initials merely coincide ("tetanus booster" and a book's "TB") is not it."""
    low = [t.lower() for t in re.findall(r"[A-Za-z][A-Za-z'’-]*", question)]
    if word.lower() not in low:
        return None
    i = low.index(word.lower())
    for size in range(6, 1, -1):
        for start in range(max(0, i - size + 1), i + 1):
            run = low[start:start + size]
            if len(run) < size or any(t in SUPPORT_STOPWORDS or len(t) < 3 for t in run):
                continue
            initials = "".join(t[0] for t in run).upper()
            if not acronym_in_books(initials, texts_with):
                continue
            full = acronym_expansion(initials, texts_with(initials))  # the books spell it as the run does
            if full and [light_stem(t)[:5] for t in full.split()] == [light_stem(t)[:5] for t in run]:
                return initials
    return None


def word_pieces(embedder) -> Optional[Callable[[str], int]]:
    """The embedding model's tokenizer as a count of word pieces (None when the model has none to
    offer): a word its vocabulary holds whole is a word of the language, not a slip of the keys."""
    inner = getattr(embedder, "inner", embedder)
    counts = getattr(inner, "token_counts", None)
    return (lambda w: counts([w])[0]) if counts else None


def slip_of(word: str, in_books: Callable[[str], bool],
            pieces: Optional[Callable[[str], int]] = None) -> Optional[str]:
    """The word of the books one slip of the keys from `word` (Damerau distance 1), or None. Only for
    a word of `SLIP_MIN` letters or more that the embedding model's vocabulary does not know (`pieces`:
    it splits the word into more pieces than the book's word, and into three or more): "tournqiuet" ->
    "tourniquet", but "stroke" is never "strike", nor "gagging" "bagging". Without `pieces`, no word
    is read as a slip. Two letters swapped and one added are tried first; the first letter stays."""
    w = word.lower()
    if pieces is None or len(w) < SLIP_MIN or not w.isalpha():
        return None
    own, one = pieces(w), pieces("a")
    # a word of the model's vocabulary, or one inflected ("rashes": "rash" + "##es"), is a word of the
    # language; a slip falls apart into three pieces or more
    if own < one + 2 or pieces(light_stem(w)) == one:
        return None
    # the first letter is kept: a reader rarely mistypes it, and a word with another first letter is
    # another word ("cribbing" is not "ribbing")
    candidates = [w[:i] + w[i + 1] + w[i] + w[i + 2:] for i in range(1, len(w) - 1)]
    candidates += [w[:i] + c + w[i:] for i in range(1, len(w) + 1) for c in _LETTERS]
    candidates += [w[:i] + c + w[i + 1:] for i in range(1, len(w)) for c in _LETTERS if c != w[i]]
    candidates += [w[:i] + w[i + 1:] for i in range(1, len(w))]
    for c in dict.fromkeys(candidates):
        if c != w and in_books(c) and pieces(c) < own:
            return c
    return None


def as_books_write(question: str, in_books: Callable[[str], bool],
                   texts_with: Optional[Callable[[str], list[str]]] = None,
                   pieces: Optional[Callable[[str], int]] = None) -> str:
    """The question with each word the books do not use in the books' form of it (`book_form`): a
    slip mended ("tournqiuet" -> "tourniquet"), a plural acronym as the books write it followed by
    the books' spelling of it ("USARs" -> "USAR (urban search and rescue)"). The cosine rules (the
    no-context floor, the far-passage floor) also read the question this way: an embedding model knows
    neither that "USARs" is the book's "USAR" nor that "tournqiuet" is "tourniquet". A spelled-out
    acronym stays as the reader wrote it: its words already carry the meaning."""
    out = question
    for w in dict.fromkeys(re.findall(r"[A-Za-z][A-Za-z0-9'’-]*", question)):
        plural_acronym = bool(_PLURAL_ACRONYM.fullmatch(w))  # FTS5 may match "USARs" to "USAR"; a vector does not
        if len(w) < 3 or (not plural_acronym and in_books(w.lower())):
            continue
        form = book_form(w, question, in_books, texts_with, pieces)
        if not form:
            continue
        if form.isupper():
            if form.lower() not in w.lower():
                continue
            full = acronym_expansion(form, texts_with(form)) if texts_with else None
            form = f"{form} ({full})" if full else form
        out = re.sub(rf"(?<![\w'’-]){re.escape(w)}(?![\w'’-])", form, out)
    return out


def acronym_expansion(acronym: str, texts: Sequence[str]) -> Optional[str]:
    """The books' spelling of `acronym` from passages that use it: the words just before "(ACR)" whose
    initials are its letters ("improvised explosive device (IED)"), or None."""
    letters = [c for c in acronym if c.isalpha()]
    pattern = re.compile(rf"((?:[A-Za-z][A-Za-z-]*\s+){{{len(letters)},{len(letters) + 3}}})\({re.escape(acronym)}s?\)")
    for text in texts:
        for m in pattern.finditer(text):
            words = [w for w in m.group(1).replace("-", " ").split() if w.lower() not in SUPPORT_STOPWORDS]
            tail = words[-len(letters):]
            if len(tail) == len(letters) and all(t[0].lower() == c.lower() for t, c in zip(tail, letters)):
                return " ".join(t.lower() for t in tail)
    return None


# A word of the question carries "much of what it asks" when the question without it has a cosine
# below this to the question with it. The figure is all-MiniLM-L6-v2's (store/calibration.py holds it
# per embedding model, with how it was measured).
SUBJECT_COSINE = 0.80


def missing_subject(question: str, in_books: Callable[[str], bool], embedder,
                    cosine: float = SUBJECT_COSINE,
                    texts_with: Optional[Callable[[str], list[str]]] = None) -> Optional[str]:
    """A word of the question that no page of the books uses and that carries much of what the
    question asks ("What do I do for a migraine?" in a first-aid manual that never says "migraine"),
    or None. The books cannot answer a question about what they never name; a lay word for what they
    do name ("a deep gash", "prop up his feet") carries little of the question and is let through."""
    weights = subject_weights(question, in_books, embedder, texts_with)
    return weights[0][1] if weights and weights[0][0] < cosine else None


def unit(vector) -> np.ndarray:
    v = np.asarray(vector, dtype=float)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def cosines_to(question: str, texts: list[str], embedder) -> np.ndarray:
    """The cosine of each text to the question, in one embedding call."""
    vecs = np.asarray(embedder.embed([question, *texts]), dtype=float)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    return vecs[1:] @ vecs[0]


def subject_weights(question: str, in_books: Callable[[str], bool], embedder,
                    texts_with: Optional[Callable[[str], list[str]]] = None) -> list[tuple[float, str]]:
    """(cosine of the question without the word to the question, word) for every word of the question
    no page of the books uses, lowest first: the lower, the more of the question the word carries."""
    words = [w for w in dict.fromkeys(content_words(question))
             if len(w) > 3 and "'" not in w and "’" not in w
             and not named_in_books(w, question, in_books, texts_with, word_pieces(embedder))]
    if not words:
        return []
    without = [re.sub(rf"\b{re.escape(w)}\b", " ", question, flags=re.I) for w in words]
    heads = {w: h for w in words if (h := compound_head(w, in_books))}
    headed = [re.sub(rf"\b{re.escape(w)}\b", heads[w], question, flags=re.I) for w in heads]
    cosines = cosines_to(question, without + headed, embedder)
    cos = dict(zip(words, cosines[:len(words)]))
    # a compound whose head the books use ("honeybee": bee) carries no more of the question than the
    # question with the head in its place loses: a kind of what the books name, unless the head alone
    # says something else ("sunburn" -> "burn" moves the question away)
    for w, c in zip(heads, cosines[len(words):]):
        cos[w] = max(cos[w], c)
    return sorted((round(float(c), 3), w) for w, c in cos.items())


def compound_head(word: str, in_books: Callable[[str], bool]) -> Optional[str]:
    """The longest ending of a closed compound that the books use ("honeybee" -> "bee"), both parts
    three letters or more, or None."""
    plain = word.replace("-", "")
    if not plain.isalpha():
        return None
    for i in range(3, len(plain) - 2):
        if in_books(plain[i:]):
            return plain[i:]
    return None


def translated(word: str, rewrite: Optional[str]) -> bool:
    """Did the model's rewrite of the question (search/rewrite.py: the question in the book's own
    vocabulary) leave this word out? Then it is the asker's word for something the book says otherwise
    ("slice" the bite open: the book says "cut"; "prop up" the feet: "elevate"), not a subject the book
    lacks: a rewrite keeps a subject it has no book word for ("antibiotic", "tetanus booster shot",
    "stroke")."""
    return bool(rewrite) and light_stem(word) not in {light_stem(w) for w in content_words(rewrite)}


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


def off_question(answer, question: str, embedder, floor: float) -> bool:
    """Is the answer's text (its factual sentences, labels aside) no nearer the question than the
    no-context floor, the cosine under which retrieval calls a passage unrelated? A small model given
    on-topic passages that are silent on the question copies the nearest procedure ("deliver a baby in
    the field" answered with the field-dressing steps, every sentence backed by its passage): backed,
    and not an answer."""
    text = " ".join(re.sub(r"\s*\[[SF]\d+\]", "", c.text) for c in answer.claims if c.support != "not_factual")
    if not text.strip():
        return False
    return float(cosines_to(question, [text], embedder)[0]) < floor


# ------------------------------------------------------------------------------ far passages
def cited_cosine(answer, question: str, embedder, book_question: Optional[str] = None) -> Optional[float]:
    """The best cosine, to the question, of the passages the answer's factual sentences cite (None when
    they cite none). A backed answer from passages about another case ("a jacket on fire" answered
    from the chemical-burn steps; labour from lifting debris) rests on passages far from the question:
    every word is in its passage, and the passage is not about this."""
    cited = {lab for c in answer.claims if c.support != "not_factual" for lab in c.citations}
    texts = [s.hit.text for s in answer.sources if s.label in cited]
    if not texts:
        return None
    best = float(cosines_to(question, texts, embedder).max())
    if book_question and book_question != question:  # the question as the books write it (as_books_write)
        best = max(best, float(cosines_to(book_question, texts, embedder).max()))
    return best
