"""Does a question name what the books name? The books' own form of a reader's word (a spelling, a
plural acronym, an acronym spelled out, a slip of the keys), and the missing-subject rule: a word no page
uses that carries much of what the question asks stops the question before any model call.
"""
from __future__ import annotations

import re
from typing import Callable, Optional, Sequence

import numpy as np

from ragcli.text import SUPPORT_STOPWORDS, content_words, light_stem

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
SLIP_MORE_PIECES = 1  # the book's word may be cut into this many word pieces more than the slip


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
    written = None
    if texts_with is not None:  # the book's word as the books write it, not a stem's look-alike
        written = lambda c: any(texts_with(f) for f in (c, c.capitalize(), c.upper()))  # noqa: E731
    return slip_of(word, in_books, pieces, written)


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
            pieces: Optional[Callable[[str], int]] = None,
            written: Optional[Callable[[str], bool]] = None) -> Optional[str]:
    """The word of the books one slip of the keys from `word` (Damerau distance 1), or None. Only for
    a word of `SLIP_MIN` letters or more that the embedding model's vocabulary does not know (`pieces`):
    a word it holds whole, or whose stem it holds whole ("rashes": "rash" + "##es"), is a word of the
    language ("stroke" is never "strike"). A word it cuts into three pieces or more may be any slip
    (two letters swapped, one dropped, added or changed: "tournqiuet" -> "tourniquet"); one it cuts in
    two, only two letters swapped or one dropped ("breathnig" -> "breathing", "presure" -> "pressure"),
    since a real word in two pieces ("heater", "gagging") is one letter changed or added away from
    another word far more often than one letter short of it. The book's word is cut into at most
    one piece more than the reader's ("sprians" in two pieces, "sprains" in three), and a word one
    slip from two whole words of the vocabulary is left as it is. Without `pieces`, no word is read
    as a slip; the first letter stays. With `written` (does a passage write it as such?), the book's
    word must be one the books write, not one FTS5's stemmer matches through another ("overseated"
    through "overseas" is no reading of "overheated")."""
    w = word.lower()
    if pieces is None or len(w) < SLIP_MIN or not w.isalpha():
        return None
    own, one = pieces(w), pieces("a")
    if own < one + 1 or pieces(light_stem(w)) == one:
        return None
    # the first letter is kept: a reader rarely mistypes it, and a word with another first letter is
    # another word ("cribbing" is not "ribbing")
    candidates = [w[:i] + w[i + 1] + w[i] + w[i + 2:] for i in range(1, len(w) - 1)]
    candidates += [w[:i] + c + w[i:] for i in range(1, len(w) + 1) for c in _LETTERS]
    if own >= one + 2:
        candidates += [w[:i] + c + w[i + 1:] for i in range(1, len(w)) for c in _LETTERS if c != w[i]]
        candidates += [w[:i] + w[i + 1:] for i in range(1, len(w))]
    candidates = [c for c in dict.fromkeys(candidates) if c != w]
    # one slip from two words the model's vocabulary holds whole ("reations": reactions, relations) is
    # no word in particular: which the reader meant, the books cannot say
    if sum(pieces(c) == one for c in candidates) > 1:
        return None
    # FTS5 stems what it looks up ("openations" finds "open"): of the book's forms, the one the
    # tokenizer holds in the fewest pieces is a word ("operations"), the others stems' look-alikes
    found = [c for c in candidates if pieces(c) <= own + SLIP_MORE_PIECES and in_books(c)
             and (written is None or written(c))]
    return min(found, key=pieces) if found else None


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


# The words a reader asks with, whatever the subject: "Can you explain train?" is about "train". In a
# short question they weigh as much as the subject in the embedding space, but no passage is about them.
ASKING = frozenset({"explain", "describe", "define", "definition", "mean", "meaning", "means", "say", "says",
                    "tell", "know", "about"})
# An acronym as a question or the books write it: "RP", "TEs", "IED's" (the plural's letter dropped).
_ACRONYM = re.compile(r"(?<![A-Za-z0-9])([A-Z][A-Z0-9]{1,6})(?:s|'s|’s)?(?![A-Za-z0-9])")


def subject_words(question: str, embedder, cosine: float = SUBJECT_COSINE) -> list[str]:
    """The words of the question that carry much of what it asks (the question without the word has a
    cosine under `cosine` to the question, as in `missing_subject`), whether or not the books use them:
    "morale" in "What should I know about morale?"; none in a long question whose words share the load.
    A word the reader asks with (`ASKING`: "explain") is no subject."""
    words = [w for w in dict.fromkeys(content_words(question)) if len(w) > 3 and "'" not in w and "’" not in w]
    if not words:
        return []
    without = [re.sub(rf"\b{re.escape(w)}\b", " ", question, flags=re.I) for w in words]
    return [w for w, c in zip(words, cosines_to(question, without, embedder)) if c < cosine and w not in ASKING]


def acronyms(question: str) -> list[str]:
    """The acronyms of the question as a book writes them in capitals ("TEs" -> "TE"): an embedding model
    knows few of them, so the passages' own letters are the evidence that they name it."""
    return list(dict.fromkeys(m.group(1) for m in _ACRONYM.finditer(question)))


def names_subject(question: str, texts: Sequence[str], embedder, cosine: float = SUBJECT_COSINE) -> bool:
    """Does one of the passages name what the question is about? Its subject is every word that carries
    much of it (`subject_words`) and every acronym it names (`acronyms`), one at least. A passage names
    it when it names each of them twice or more (a word by stem, an acronym in capitals as a word of its
    own), or, for a subject of two words or more, has them as the question has them, one after the
    other ("release points": "the release point is"). A short question asked in a template's words
    ("What should I know about morale?") sits far from a passage about morale in the embedding space:
    the template's words weigh as much as the subject. A passage that names the subject again and
    again is about it, whatever the cosine."""
    subject = {light_stem(w) for w in subject_words(question, embedder, cosine)}
    caps = acronyms(question)
    if not subject and not caps:
        return False
    runs = [[light_stem(w) for w in run] for run in _subject_runs(question, subject)]
    for text in texts:
        words = [light_stem(w) for w in re.findall(r"[a-z][a-z'-]*", text.lower())]
        counts: dict[str, int] = {}
        for s in words:
            if s in subject:
                counts[s] = counts.get(s, 0) + 1
        if not all(len(re.findall(rf"(?<![A-Za-z0-9]){re.escape(a)}(?:s|'s|’s)?(?![A-Za-z0-9])", text)) >= 2
                   for a in caps):
            continue
        if all(counts.get(s, 0) >= 2 for s in subject):
            return True
        if runs and all(counts.get(s, 0) >= 1 for s in subject) and \
                all(_has_run(words, run) for run in runs):
            return True
    return False


def headed(hit) -> str:
    """A passage's text after its innermost heading, for `names_subject`: a passage under "Chair Carry"
    is about the chair carry even where its text says "chair" and "carry" apart."""
    path = getattr(hit, "section_path", None) or []
    return f"{path[-1]}\n{hit.text}" if path else hit.text


def _subject_runs(question: str, subject: set) -> list[list[str]]:
    """The runs of two or more subject words one after the other in the question ("release points")."""
    runs, cur = [], []
    for w in re.findall(r"[a-z][a-z'-]*", question.lower()):
        if light_stem(w) in subject:
            cur.append(w)
            continue
        if len(cur) > 1:
            runs.append(cur)
        cur = []
    if len(cur) > 1:
        runs.append(cur)
    return runs


def _has_run(words: list[str], run: list[str]) -> bool:
    n = len(run)
    return any(words[i:i + n] == run for i in range(len(words) - n + 1))
