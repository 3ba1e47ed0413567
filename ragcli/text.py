"""Small text helpers, one place for each: words, stopwords, stemming, sentences, hashes.

Where two variants give different results and measured figures depend on them, both are kept here
as named variants rather than merged (docs/decisions.md "text.py"):

* words: `words` (queries, FTS) is the tokenizer; `letter_runs` (language check), `content_words`
  (expansion: lower-case, stopwords out), `overlap_words` (the extractive picker) and `SUPPORT_TOKEN`
  (the calibrated support scorer) differ on digits, hyphens and non-ASCII letters.
* stopwords: `STOPWORDS` (English function words; what the FTS query drops), `QUERY_STOPWORDS` (plus
  chat filler such as "tell", "help": expansion and the rewrite filter), `SUPPORT_STOPWORDS`
  (calibrated on SciFact with the support scorer), `PHRASE_STOPWORDS` (what a frequent book phrase
  may not start or end with at ingest: it decides the stored vocabulary).
* stemmers: `light_stem` (light: plural, -ed, -ing; expansion) and `truncation_stem` (one suffix, then the
  first 6 letters; the support scorer was calibrated on it).
* sentences: `sentences` (pysbd with ragcli's fixes; evidence sentences of passages, claims) and
  `chunk_sentences` (a cheap regex; it decides passage boundaries at ingest, so every stored passage
  and every retrieval figure depends on it).
"""
from __future__ import annotations

import functools
import hashlib
import re

# ------------------------------------------------------------------------------------------- words
WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)  # letters/digits of any script, inner - and '
LETTERS = re.compile(r"[^\W\d_]+", re.UNICODE)  # runs of letters only (no digits, - or ')
_CONTENT_WORD = re.compile(r"[a-z][a-z0-9'-]+")  # on lower-cased text
SUPPORT_TOKEN = re.compile(r"[A-Za-z0-9µμ°]+(?:[-'][A-Za-z0-9]+)*")  # support scorer (calibrated)
_OVERLAP_WORD = re.compile(r"[a-z0-9]{3,}")  # on lower-cased text


def words(text: str) -> list[str]:
    """The words of `text` as written ("first-aid", "don't" and "COVID-19" are one word each)."""
    return WORD.findall(text)


def letter_runs(text: str) -> list[str]:
    """Runs of letters ("don't" -> "don", "t"; digits dropped): the language check counts these."""
    return LETTERS.findall(text)


def overlap_words(text: str) -> set[str]:
    """Lower-case ASCII letter/digit runs of 3 or more ("first-aid" -> first, aid): the extractive
    sentence picker's word overlap (its figures in docs/benchmarks.md were measured with it)."""
    return set(_OVERLAP_WORD.findall(text.lower()))


# --------------------------------------------------------------------------------------- stopwords
STOPWORDS = frozenset("""a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further had has
have having he her here hers him his how i if in into is it its itself just me more most my no nor not now
of off on once only or other our out over own same she should so some such than that the their them then
there these they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours""".split())

QUERY_STOPWORDS = STOPWORDS | {"get", "got", "one", "like", "way", "much", "many", "thing", "someone",
                               "something", "really", "help", "need", "know", "tell", "make", "keep"}

SUPPORT_STOPWORDS = frozenset(
    """a an the and or but if then than that this these those there here of in on at to for from by with
    as into onto over under about above below between among through during before after since until
    is are was were be been being am do does did doing done have has had having can could may might
    must shall should will would it its it's they them their theirs we us our you your he she him her
    his hers i me my which who whom whose what when where why how all any both each few more most other
    some such only own same so too very also just both either whether per via vs versus et al e g i e
    one ones use used using show shows showed shown found find finding findings study studies result
    results suggest suggests suggested data patients patient effect effects associated association
    compared level levels may however thus therefore including include includes due well within
    while although because among against toward towards upon onto""".split()
)

PHRASE_STOPWORDS = frozenset("""a an and are as at be by for from has have in into is it its of on or that the
their this to was were which with will not no can may should must when if than then there these those also
such his her him he she they them one two other another each any all some soon possible figure figures table
see page paragraph refer used using use done way both very""".split())


def content_words(text: str) -> list[str]:
    """Lower-cased words of three letters or more, without QUERY_STOPWORDS (query expansion)."""
    return [w for w in _CONTENT_WORD.findall(text.lower()) if w not in QUERY_STOPWORDS and len(w) > 2]


# ---------------------------------------------------------------------------------------- stemming
def light_stem(word: str) -> str:
    """A light suffix stripper (plural, -ed, -ing) to match word forms. Porter's stemmer (PyStemmer) in
    its place changes retrieval figures (decision D78), so this one stays, named for what it does."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


TRUNCATION = 6  # truncation stemming: words compare on their first TRUNCATION letters
_SUFFIXES = ("ational", "ations", "ation", "ements", "ement", "ments", "ment", "ingly", "ings", "ing",
             "edly", "ied", "ies", "ed", "ities", "ity", "ives", "ive", "ions", "ion", "es", "ly", "s")


def truncation_stem(word: str) -> str:
    """Cheap stemmer: strip one common suffix, tidy the end, keep the first TRUNCATION letters."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    for suf in _SUFFIXES:
        rest = len(w) - len(suf)
        if w.endswith(suf) and rest >= (5 if suf == "ly" else 3) and not w.endswith("ss"):
            w = w[:rest] + ("y" if suf in ("ied", "ies") else "")
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz" and w[-1].isalpha():
        w = w[:-1]
    if len(w) > 3 and w[-1] in "ie":
        w = w[:-1] + ("y" if w[-1] == "i" else "")
    return w[:TRUNCATION]


# --------------------------------------------------------------------------------------- sentences
# Sentence boundaries come from pysbd (the Golden Rules segmenter: abbreviations such as "e.g.",
# "i.e.", "Dr.", "Fig. 2", "p. 45", "et al.", decimals, quotes, ellipses, numbered lists), imported
# lazily. A split after a few abbreviations pysbd misses ("approx.", "ca.", "resp.") is undone, and
# passages from PDFs have hard line breaks joined and "exam-\nple" de-hyphenated first.
LIST_MARKER = re.compile(r"^\s*(?:[-*•·–]|\d{1,3}[.)]|[a-zA-Z][.)]|#{1,6})\s+")
_MISSED_ABBREVIATIONS = ("approx.", "ca.", "resp.", "incl.", "cf.", "fig.", "figs.", "eq.", "vol.",
                         "sec.", "ch.", "p.", "pp.")


@functools.lru_cache(maxsize=1)
def _segmenter():
    import pysbd  # pure Python; kept out of module import time all the same

    return pysbd.Segmenter(language="en", clean=False)


def segment(text: str) -> list[str]:
    """pysbd's sentences of `text` (spaces kept), with false splits after abbreviations undone."""
    if not text.strip():
        return []
    return _merge_abbreviations(_segmenter().segment(text))


def _is_false_split(before: str, after: str) -> bool:
    """pysbd cut after an abbreviation it does not know ("approx.", "mg/kg i.v. every")."""
    if not before.strip() or "\n" in before:
        return False
    last = before.split()[-1].lower()
    if last in _MISSED_ABBREVIATIONS or not re.search(r"[.!?:;\"')\]]\s*$", before):
        return True
    return bool(re.match(r"\s*[a-z]", after)) and not LIST_MARKER.match(after)


def _merge_abbreviations(parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if out and _is_false_split(out[-1], part):
            out[-1] += part
        else:
            out.append(part)
    return out


def _join_lines(paragraph: str) -> str:
    paragraph = re.sub(r"([a-z])-\n\s*([a-z])", r"\1\2", paragraph)
    return re.sub(r"\s*\n\s*", " ", paragraph).strip()


def sentences(text: str) -> list[str]:
    """Sentences of a passage: hard line breaks joined, paragraphs kept apart. Cached: the extractive
    answer and the support scorer split the same passages."""
    return list(_sentences_cached(text))


@functools.lru_cache(maxsize=1024)
def _sentences_cached(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        out += [p.strip() for p in segment(_join_lines(paragraph)) if p.strip()]
    return tuple(out)


_CHUNK_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"“])")


def chunk_sentences(paragraph: str) -> list[str]:
    """The cheap split that decides passage boundaries at ingest (a full stop, space, capital)."""
    return _CHUNK_SENTENCE_END.split(paragraph)


# ------------------------------------------------------------------------------------------ hashes
def sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 text (passages.text_hash, embed_hash)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path) -> str:
    """A file's sha256, read in 1 MiB blocks (a book is recognised by it)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# Private-use characters a PDF's symbol fonts (Wingdings, Symbol, Adobe's bracket pieces) leave in
# extracted text: no font of the reader's has them, so they show as empty boxes. Each is mapped to the
# Unicode character the font draws there; an unknown one followed by a space (a list item's mark) is a
# bullet. Seen in the shared books: U+F0A7 (CERT, 1455 passages), U+F06C and U+F06E (ATP 6-22.5),
# U+F070 (CERT), U+F8F1-U+F8F4 (population-genetics notes).
PRIVATE_USE = {
    0xF0B7: "•", 0xF0A7: "▪", 0xF06C: "●", 0xF06E: "■", 0xF06F: "□", 0xF070: "□", 0xF071: "❑", 0xF075: "◆",
    0xF076: "❖", 0xF077: "⬥", 0xF0D8: "➢", 0xF0E8: "➔", 0xF0FC: "✓", 0xF0FB: "✗", 0xF0A8: "◻", 0xF09F: "•",
    0xF0BE: "—", 0xF02D: "-", 0xF0AE: "→", 0xF0AC: "←", 0xF0B0: "°", 0xF0B1: "±", 0xF0A3: "≤", 0xF0B3: "≥",
    0xF0B4: "×", 0xF0B8: "÷", 0xF0B9: "≠", 0xF0BB: "≈",
    0xF8EB: "⎛", 0xF8EC: "⎜", 0xF8ED: "⎝", 0xF8EE: "⎡", 0xF8EF: "⎢", 0xF8F0: "⎣", 0xF8F1: "⎧", 0xF8F2: "⎨",
    0xF8F3: "⎩", 0xF8F4: "⎪", 0xF8F6: "⎞", 0xF8F7: "⎟", 0xF8F8: "⎠", 0xF8F9: "⎤", 0xF8FA: "⎥", 0xF8FB: "⎦",
    0xF8FC: "⎫", 0xF8FD: "⎬", 0xF8FE: "⎭",
}
_PRIVATE = re.compile("[\ue000-\uf8ff]")


def public_chars(text: str) -> str:
    """`text` with its private-use characters mapped (PRIVATE_USE; an unknown one before a space: •)."""
    if not text or not _PRIVATE.search(text):
        return text

    def one(m) -> str:
        known = PRIVATE_USE.get(ord(m.group(0)))
        if known:
            return known
        after = text[m.end():m.end() + 1]
        return "•" if after in (" ", "\t") else m.group(0)
    return _PRIVATE.sub(one, text)
