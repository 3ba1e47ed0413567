"""Generate questions in a reader's words, answerable by construction, and unanswerable counterparts of
the same shapes, for one or more books (issue 48). Rules only, no model: the same corpus gives the same
file.

    python bench/answers/reader_questions.py --db fm.db [--db cert.db ...] \
        --out-dir bench/answers/reader-questions [--per-book 85]

Answerable (`answerable: true`): from a seeded sample of the book's exposition passages (40 words or
more, not the first three pages, not a reference list, and prose: `expository`), up to two questions per
passage (`PER_PASSAGE`), each of another shape, the shapes the book has produced least so far first:
- `acronym_plural`: an acronym the passage is about, in the plural ("What are ECPs?");
- `acronym_spelled`: the book's spelled-out form of that acronym, in the plural ("What should I know
  about improvised explosive devices?");
- `misspelled`: the passage's subject with one letter of its longest word dropped or two swapped;
- `what_it_does`: a definition sentence of the passage ("A tourniquet is a band used to ...") asked from
  its description ("What do you call a band used to ...?"): the thing named by what it is or does;
- `follow_up`: a question on the passage's subject, then a follow-up without the subject ("Tell me
  more about it."), `after` holding the first question;
- `heading`: the passage's subject as a reader asks it (the control shape).
The templates ask what a passage about the subject answers (what it is, what to know of it), never a
particular it may lack ("when do you need ...").

The checks that keep a question (every row says which passage it comes from) read the passage's own
text, never retrieval, so the set does not favour what ragcli already finds:
- the passage is prose (`expository`): 60% or more of its words in sentences of 6 words or more that end
  with a full stop, two or more of them; not a table, an agenda, a figure's labels, a list of headings or
  of exercise questions. Runs of capitals (running titles set in the text) are not its prose.
- the subject (`subject_of`) is the passage's innermost heading or its parent's, or a part of one split
  at "and" or a comma, that the passage is `about`: every content word of it in the prose and its
  longest word there twice or more. A heading repeated under three or more different parents ("Unit
  Summary", "Introduction and Overview") is the book's structure, not a subject. A book with few
  headings (an article) takes instead the book term (frequent, glossary or index) the passage is about.
- an acronym row only for an acronym the book spells out ("improvised explosive device (IED)"), used
  3 or more times in the book, named twice or more in the passage, and spelled out in the passage or
  in its heading: the passage is about it, not passing it by.
- `what_it_does`: the definition sentence is in the passage and its thing occurs there twice or more.
A hand-read sample of 40 is on docs/benchmarks/refusals-at-scale.md.

Unanswerable (`answerable: false`): the same shapes, with the subject taken from another book of the
set, asked in this book's setting (its heading words around it); kept only when the subject's words, as
the question spells them and as the books spell them (book_words.named_in_books), occur nowhere in this
book. A book cannot answer a question about a thing it never names.

Each row: id, book, shape, question, answerable, passage (book id, page, the first 12 hex digits of the
passage's text hash: the same passage after a re-ingest) and passage_id (this corpus's row id), the
term the question is built on, and `after` for a follow-up.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SEED = "issue48"
MIN_WORDS = 40
ACRONYM = re.compile(r"\b([A-Z][A-Z0-9]{1,5})s?\b")
# "improvised explosive device (IED)": the words before a bracketed acronym
DEFINED = re.compile(r"((?:[A-Za-z][A-Za-z-]*\s+){1,7})\(([A-Z][A-Z0-9]{1,5})s?\)")
DEFINITION = re.compile(r"(?:^|(?<=[.!?]\s))(?:An?\s+|The\s+)?([A-Za-z][a-z -]{2,40}?)\s+(?:is|are)\s+"
                        r"((?:an?|the)\s+[^.;:]{12,140}?)\.", re.M)
# "A tourniquet is used to stop ...": the thing named by what it does
USED = re.compile(r"(?:^|(?<=[.!?]\s))(?:An?\s+|The\s+)?([A-Za-z][a-z -]{2,40}?)\s+(?:is|are)\s+used\s+"
                  r"((?:to|for)\s+[^.;:]{8,120}?)\.", re.M)
PRONOUNS = {"it", "this", "that", "they", "these", "those", "which", "there", "here", "what", "he", "she", "we",
            "one", "each", "its", "their", "our", "your", "his", "her", "who", "all", "both", "such", "other"}
ROMAN = re.compile(r"^(?:[IVXLC]+|[A-Z]\d*)$")
NOT_ACRONYMS = {"I", "A", "OK", "US", "USA", "AM", "PM", "II", "III", "IV", "VI", "NOTE", "THE", "AND", "OR", "OF",
                "TO", "IN", "FOR", "ON", "IS", "IT", "BE", "AS", "AT", "BY", "AN", "IF", "NO", "DO", "WHAT", "HOW"}

# The templates ask what a passage about the subject answers (what it is, what to know of it), never a
# particular the passage may lack ("when do you need", "how do I deal with").
ACR_PLURAL = ["What are {a}s?", "What should I know about {a}s?", "Tell me about {a}s.", "What are {a}s about?"]
SPELLED = ["What should I know about {e}?", "What are {e}?", "Tell me about {e}."]
HEADING = ["What does it say about {h}?", "What should I know about {h}?", "Can you explain {h}?",
           "Tell me about {h}."]
MISSPELLED = ["What about {h}?", "Explain {h} to me.", "What should I know about {h}?"]
DOES = ["What do you call {d}?", "What's the name for {d}?", "Which thing is {d}?"]
USED_FOR = ["What is used {d}?", "What do you use {d}?", "What should I use {d}?"]
FOLLOW = ["Tell me more about it.", "Can you explain it?", "What else does it say about it?",
          "What should I know about it?"]
# the unanswerable shapes ask for the other book's thing in this book's setting
SETTING = ["{q} (in {h})", "{q} For {h}, I mean."]


def pick(seq, key: str):
    return seq[int(hashlib.sha256(f"{SEED}:{key}".encode()).hexdigest(), 16) % len(seq)]


def rank(key: str) -> str:
    return hashlib.sha256(f"{SEED}:{key}".encode()).hexdigest()


def plural(phrase: str) -> str:
    words = phrase.split()
    last = words[-1]
    if last.endswith("s"):
        return phrase
    if re.search(r"(?:ch|sh|x|z)$", last):
        last += "es"
    elif re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    else:
        last += "s"
    return " ".join(words[:-1] + [last])


def misspell(word: str, key: str) -> str:
    """One letter dropped (a doubled one first) or two inner letters swapped: a typing slip."""
    m = re.search(r"([a-z])\1", word)
    if m:
        return word[:m.start()] + word[m.start() + 1:]
    i = 2 + int(rank(key), 16) % max(1, len(word) - 4)
    if int(rank(key + "k"), 16) % 2:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    return word[:i] + word[i + 1:]


def words_of(text: str) -> list[str]:
    from ragcli.text import content_words
    return [w for w in content_words(text) if len(w) > 3]


def occurs(word: str, text_stems: set[str]) -> bool:
    from ragcli.text import light_stem
    return light_stem(word) in text_stems


def stems(text: str) -> set[str]:
    from ragcli.text import content_words, light_stem
    return {light_stem(w) for w in content_words(text)}


def clean_heading(section_path: list[str]) -> str:
    """The innermost heading as a reader would name the subject: lower case unless an acronym, no
    numbering, 1-6 words."""
    return next(iter(clean_headings(section_path)), "")


def clean_headings(section_path: list[str]) -> list[str]:
    """Every heading of the path as a reader would name the subject, innermost first (`clean_heading`)."""
    out = []
    for h in reversed(section_path):
        h = re.sub(r"^\s*(?:[A-Z]?\d+[-.\d]*|[IVX]+\.|[a-z]\.|Section \d+[:.]?|Chapter \d+[:.]?)\s*", "", h).strip(" :.-")
        h = re.sub(r"\s+", " ", h)
        if not h or len(h.split()) > 6 or not re.search(r"[A-Za-z]{3}", h) or re.search(r"\d", h):
            continue
        if h.upper() == h:
            out.append(h.lower())
        else:
            out.append(" ".join(w if ACRONYM.fullmatch(w) and w.upper() == w and len(w) <= 6 else w.lower()
                                for w in h.split()))
    return out


def subject_of(book, section_path: list[str], text: str) -> str:
    """The subject a reader would ask this passage about: the innermost heading of its path (or its parent) the passage is
    `about` (a structural heading skipped), or a part of it split at "and" or a comma ("cerebral edema
    and intracranial pressure" -> "intracranial pressure") when the passage is about that part alone;
    "" when none."""
    for h in clean_headings(section_path)[:2]:  # a title further out is the chapter's, not this passage's
        if h in book.structural:
            continue
        for part in [h] + [p.strip() for p in re.split(r",|\band\b", h) if p.strip() != h]:
            if len(words_of(part)) and about(part, text):
                return part
    return ""


def reference_list(text: str) -> bool:
    """A bibliography or a table of figures read as prose: many digits, "et al.", journal volumes."""
    digits = sum(c.isdigit() for c in text) / max(1, len(text))
    return digits > 0.06 or len(re.findall(r"\bet al\b|\bdoi\b|\bJ\.\s", text)) >= 2


def in_prose(text: str, m) -> bool:
    """An acronym in running text: not cut by a hyphen or a line break, and with a lower-case word
    within the 40 characters around it (a line in capitals is a heading or emphasis, not a term)."""
    before, after = text[max(0, m.start() - 40):m.start()], text[m.end():m.end() + 40]
    if before.endswith("-") or after.startswith("-") or before.endswith("- "):
        return False
    return bool(re.search(r"\b[a-z]{3,}\b", before)) and bool(re.search(r"\b[a-z]{3,}\b", after))


# A run of three or more words in capitals: a running title or a heading set in the text ("INTRODUCTION AND
# OVERVIEW ... (CONTINUED)"), not the passage's prose.
CAPS_RUN = re.compile(r"(?:(?<![A-Za-z])[A-Z][A-Z0-9'’&,:()/-]*(?:\s+|$)){3,}")
SENTENCE_WORDS = 6


def prose(text: str) -> str:
    """The passage without its runs of capitals (titles set in the text)."""
    return CAPS_RUN.sub(" ", text)


def expository(text: str) -> bool:
    """Prose, not a table, a figure's labels or a list of headings: 60% or more of its words are in
    sentences of `SENTENCE_WORDS` words or more that end with a full stop, and there are 2 or more such
    sentences. An agenda or a contents list has headings and no sentences; a table has numbers and
    fragments; a list of questions for an exercise asks and does not tell."""
    words = text.split()
    parts = re.split(r"(?<=[.!?])\s+", prose(text).strip())
    full = [p for p in parts if re.search(r"[.!][\"'’”)]?$", p) and len(p.split()) >= SENTENCE_WORDS
            and re.search(r"\b[a-z]{3,}\b", p)]
    return len(full) >= 2 and sum(len(p.split()) for p in full) >= 0.6 * len(words)


def mentions(phrase: str, text: str) -> int:
    """How often the passage's prose names `phrase` (whole words, case kept for an acronym, with its plural)."""
    flags = 0 if phrase.isupper() else re.I
    return len(re.findall(rf"(?<![A-Za-z0-9]){re.escape(phrase)}(?:s|es|'s|’s)?(?![A-Za-z0-9])", prose(text), flags))


def about(term: str, text: str) -> bool:
    """Is the passage about `term`: every content word of it in the prose, and its most specific word (the
    longest) there twice or more, so the passage talks about the thing rather than passing it by."""
    words = words_of(term)
    if not words:
        return False
    st = stems(prose(text))
    if not all(occurs(w, st) for w in words):
        return False
    from ragcli.text import light_stem
    key = light_stem(max(words, key=len))
    return sum(light_stem(w) == key for w in re.findall(r"[a-z]+", prose(text).lower())) >= 2


class Book:
    def __init__(self, path: str):
        self.path = path
        self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.id = self.conn.execute("SELECT id FROM books LIMIT 1").fetchone()[0]
        self.rows = self.conn.execute(
            "SELECT id, page_start, text_hash, section_path, text, text_kind FROM passages "
            "WHERE kind = 'passage' ORDER BY ordinal").fetchall()
        allt = "\n".join(r[4] for r in self.rows)
        counts = Counter(m.group(1) for m in ACRONYM.finditer(allt) if in_prose(allt, m))
        lower = set(re.findall(r"\b[a-z]+\b", allt))
        self.acronyms = {a for a, n in counts.items()
                         if n >= 3 and a not in NOT_ACRONYMS and not ROMAN.fullmatch(a) and re.search(r"[A-Z]{2}", a)
                         and a.lower() not in lower and a.isalpha() and len(a) <= 5}
        headings = Counter(clean_heading(json.loads(r[3])) for r in self.rows if r[5] == "exposition")
        # a heading repeated under 3 or more different parents ("Unit Summary", "Introduction and Overview")
        # names a part of the book's structure, not a subject
        parents: dict[str, set] = {}
        for r in self.rows:
            path = json.loads(r[3])
            parents.setdefault(clean_heading(path), set()).add(json.dumps(path[:-1]))
        self.structural = {h for h, p in parents.items() if len(p) >= 3}
        self.few_headings = not headings or headings.most_common(1)[0][1] > 0.25 * sum(headings.values()) \
            or len(headings) < 8
        self.terms = [t for (t,) in self.conn.execute(
            "SELECT DISTINCT term FROM terms WHERE source IN ('frequent', 'glossary', 'index') ORDER BY weight DESC, id")]
        self.expansions: dict[str, str] = {}
        for m in DEFINED.finditer(allt):
            acr, words = m.group(2), m.group(1).split()
            if acr not in self.acronyms:
                continue
            letters = [c for c in acr if c.isalpha()]
            tail = words[-len(letters):]
            if len(tail) == len(letters) and all(w[0].lower() == c.lower() for w, c in zip(tail, letters)):
                self.expansions.setdefault(acr, " ".join(w.lower() for w in tail))

    def in_book(self, word: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM passages_fts WHERE passages_fts MATCH ? LIMIT 1",
                                ('"' + word.replace('"', '""') + '"',)).fetchone()
        return row is not None

    def passages_with(self, phrase: str) -> int:
        return self.conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?",
                                 ('"' + phrase.replace('"', '""') + '"',)).fetchone()[0]

    def named(self, phrase: str, question: str) -> bool:
        """Does the book use any content word of `phrase` (as spelled, or as the books spell it)?"""
        from ragcli.answer.book_words import named_in_books
        return any(named_in_books(w, question, self.in_book) for w in words_of(phrase)) or any(
            self.in_book(a) for a in re.findall(r"\b[A-Z][A-Z0-9]{1,5}\b", phrase))

    def exposition(self) -> list[tuple]:
        first_pages = sorted({r[1] for r in self.rows})[:3]
        out = [r for r in self.rows if r[5] == "exposition" and len(r[4].split()) >= MIN_WORDS
               and r[1] not in first_pages and not reference_list(r[4])]
        out = [r for r in out if expository(r[4])]
        return sorted(out, key=lambda r: rank(f"{self.id}:{r[2]}"))


def shapes_for(book: Book, row) -> dict[str, dict]:
    """Every shape this passage allows, each with its question, the term, and `after` for a follow-up."""
    pid, page, thash, spath, text, _ = row
    key = f"{book.id}:{thash}"
    heading = "" if book.few_headings else subject_of(book, json.loads(spath), text)
    out: dict[str, dict] = {}
    heading_ok = bool(heading)
    if not heading and book.few_headings:
        # a book without headings to speak of (an article, a sample): the book's own term the passage
        # uses most (twice or more)
        low = text.lower()
        best = max(((low.count(t.lower()), t) for t in book.terms[:400]
                    if 2 <= len(t.split()) <= 4 and re.fullmatch(r"[a-z][a-z -]+", t.lower())
                    and len(words_of(t)) == len(t.split()) and sum(book.in_book(w) for w in t.split()) == len(t.split())
                    and book.passages_with(t) >= 3), default=(0, ""))
        if best[0] >= 2 and about(best[1], text):
            heading, heading_ok = best[1].lower(), True
    if heading_ok:
        out["heading"] = dict(question=pick(HEADING, key).format(h=heading), term=heading)
        longest = max(heading.split(), key=len)
        if len(longest) >= 7 and longest.isalpha() and longest.islower():
            slip = misspell(longest, key)
            out["misspelled"] = dict(question=pick(MISSPELLED, key).format(h=heading.replace(longest, slip)),
                                     term=heading)
        first = pick(HEADING, key + "f").format(h=heading)
        out["follow_up"] = dict(question=pick(FOLLOW, key), after=first, term=heading)
    # an acronym row only for an acronym the book spells out, on a passage about it: named twice or more
    # (as the acronym or spelled out), and spelled out in the passage or in its heading
    path = " ".join(json.loads(spath))
    used = [a for a in dict.fromkeys(m.group(1) for m in ACRONYM.finditer(text))
            if a in book.acronyms and a in book.expansions
            and mentions(a, text) >= 2
            and (mentions(book.expansions[a], text) or re.search(rf"\b{a}s?\b", path)
                 or book.expansions[a] in path.lower())]
    if used:
        a = pick(used, key)
        out["acronym_plural"] = dict(question=pick(ACR_PLURAL, key).format(a=a), term=a)
        a = pick(used, key + "e")
        out["acronym_spelled"] = dict(question=pick(SPELLED, key).format(e=plural(book.expansions[a])), term=a)
    for m in DEFINITION.finditer(text):
        thing, desc = m.group(1).strip(), m.group(2).strip()
        if len(thing.split()) > 4 or text.lower().count(thing.lower()) < 2:
            continue
        if thing.lower() in desc.lower() or not words_of(thing) or thing.split()[0].lower() in PRONOUNS:
            continue
        out["what_it_does"] = dict(question=pick(DOES, key).format(d=re.sub(r"^the\s+", "a ", desc)), term=thing)
        break
    for m in USED.finditer(text):
        thing, use = m.group(1).strip(), m.group(2).strip()
        if "what_it_does" in out or len(thing.split()) > 4 or text.lower().count(thing.lower()) < 2:
            continue
        if thing.lower() in use.lower() or not words_of(thing) or thing.split()[0].lower() in PRONOUNS:
            continue
        out["what_it_does"] = dict(question=pick(USED_FOR, key).format(d=use), term=thing)
    return out


LAY_PROMPT = ("A reader who does not know the term \"{t}\" asks about it in everyday words. Rewrite the "
              "question as that reader would ask it: do not use the words {w}; say what the thing looks like, "
              "does or is for. One short question, nothing else.\n\nQuestion: {q}")


def lay_rows(books: list[Book], rows_by_book: dict, model, per_book: int, embedder) -> None:
    """`lay`: a `heading` question rewritten by the model into everyday words, kept when the rewrite
    uses none of the term's words (stems) and its cosine to the original question is 0.5 or more (it
    still asks about the thing). Added to each book's answerable rows."""
    from ragcli.text import light_stem
    from ragcli.answer.book_words import cosines_to
    for book in books:
        rows = rows_by_book[book.id]
        sources = [r for r in rows if r["answerable"] and r["shape"] in ("heading", "misspelled", "follow_up")]
        added, dropped = 0, Counter()
        for r in sources:
            if added >= per_book:
                break
            term = r["term"]
            q = r.get("after") or r["question"]
            if r["shape"] == "misspelled":
                q = f"What should I know about {term}?"
            words = words_of(term)
            reply = "".join(model.chat([{"role": "user", "content": LAY_PROMPT.format(
                t=term, w=", ".join(f'"{w}"' for w in words), q=q)}], max_tokens=40, temperature=0.0))
            text = " ".join(reply.strip().strip('"').split())
            text = re.sub(r"^(?:question|rewritten question)\s*:\s*", "", text, flags=re.I)
            if not text.endswith("?") or len(text.split()) > 25 or "\n" in reply.strip():
                dropped["not one short question"] += 1
                continue
            if {light_stem(w) for w in words} & stems(text):
                dropped["uses the term's words"] += 1
                continue
            if float(cosines_to(q, [text], embedder)[0]) < 0.5:
                dropped["cosine to the question under 0.5"] += 1
                continue
            added += 1
            rows.append(dict(r, id=f"{book.id}-l{added:03d}", shape="lay", question=text, lay_of=q, after=None))
        print(book.id, "lay", added, "dropped:", dict(dropped), file=sys.stderr)


PER_PASSAGE = 2  # questions from one passage, each of another shape
ORDER = ["acronym_plural", "acronym_spelled", "what_it_does", "misspelled", "follow_up", "heading"]


def answerable(book: Book, per_book: int) -> list[dict]:
    rows, counts = [], Counter()
    for row in book.exposition():
        shapes = shapes_for(book, row)
        if not shapes:
            continue
        # the PER_PASSAGE shapes this book has produced least so far, among those the passage allows
        for shape in sorted(shapes, key=lambda s: (counts[s], ORDER.index(s)))[:PER_PASSAGE]:
            counts[shape] += 1
            q = shapes[shape]
            pid, page, thash = row[0], row[1], row[2]
            rows.append(dict(id=f"{book.id}-a{len(rows) + 1:03d}", book=book.id, shape=shape, answerable=True,
                             question=q["question"], after=q.get("after"), term=q["term"],
                             passage=f"{book.id}:p{page}:{thash[:12]}", passage_id=pid))
            if len(rows) >= per_book:
                return rows
    return rows


def unanswerable(book: Book, others: list[Book], per_book: int) -> list[dict]:
    """Counterparts: each shape with another book's subject in this book's setting, kept when this
    book never names the subject."""
    pool: list[tuple[str, dict, Book]] = []
    for other in others:
        for row in other.exposition()[:per_book * 3]:
            for shape, q in shapes_for(other, row).items():
                pool.append((shape, q, other))
    pool.sort(key=lambda t: rank(f"{book.id}:{t[2].id}:{t[1]['question']}"))
    headings = [h for r in book.exposition()[:200] if (h := clean_heading(json.loads(r[3])))]
    rows, counts, seen = [], Counter(), set()
    target = max(1, per_book // 2)
    for shape, q, other in pool:
        if counts[shape] >= target // len(ORDER) + 1 or q["question"] in seen:
            continue
        subject = q["term"]
        if book.named(subject, q["question"]) or (shape == "what_it_does" and book.named(q["question"], q["question"])):
            continue
        h = pick(headings, q["question"]) if headings else ""
        question = q["question"]
        after = q.get("after")
        if shape == "follow_up":
            pass  # the first question names the other book's subject; the follow-up is the same words
        elif h and shape != "what_it_does":
            question = pick(SETTING, question).format(q=question, h=h)
        seen.add(q["question"])
        counts[shape] += 1
        rows.append(dict(id=f"{book.id}-u{len(rows) + 1:03d}", book=book.id, shape=shape, answerable=False,
                         question=question, after=after, term=subject, from_book=other.id))
        if len(rows) >= target:
            break
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", action="append", required=True, help="a corpus of one book (repeat for each)")
    ap.add_argument("--out-dir", default=str(ROOT / "bench" / "answers" / "reader-questions"))
    ap.add_argument("--per-book", type=int, default=85, help="answerable questions per book (half as many unanswerable)")
    ap.add_argument("--lay-model", help="a chat model (.gguf) for the `lay` rewrites; without it, none")
    ap.add_argument("--lay-per-book", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    books = [Book(p) for p in args.db]
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows_by_book = {b.id: answerable(b, args.per_book) + unanswerable(b, [o for o in books if o is not b], args.per_book)
                    for b in books}
    if args.lay_model:
        from ragcli.models.embed import get_embedder
        from ragcli.models.factory import load_model
        model = load_model(args.lay_model, n_ctx=1024, threads=args.threads, seed=0)
        lay_rows(books, rows_by_book, model, args.lay_per_book, get_embedder())
    for book in books:
        rows = rows_by_book[book.id]
        with open(out / f"{book.id}.jsonl", "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n")
        shapes = Counter((r["answerable"], r["shape"]) for r in rows)
        print(book.id, dict(sorted(shapes.items())), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
