"""A reader's forms of the books' words (issue 48): an acronym in the plural or spelled out, a slip of
the keys. The missing-subject check and the cosine floors read them as the books' own words; a word
the books never name in any form is still a missing subject. Real FTS5 and SQLite, the real embedding
model."""
from __future__ import annotations

import sqlite3

import pytest

from ragcli.answer import book_words
from ragcli.store import corpus

# our own sentences, written as a field manual writes these subjects
PAGES = [
    "Improvised explosive devices (IEDs) are the main threat on patrol. An IED may be hidden in a culvert.",
    "Apply a tourniquet two inches above the wound and tighten it until the bleeding stops.",
    "Community Emergency Response Team (CERT) members are trained in light search and rescue.",
    "The load-bearing equipment (LBE) is removed before the casualty is moved.",
    "Heatstroke is a medical emergency: cool the casualty at once.",
    "Elevate the injured arm and apply direct pressure to control the bleeding.",
]


def _fts_book(texts):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE passages_fts USING fts5(text, heading, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO passages_fts(text, heading) VALUES (?, '')", [(t,) for t in texts])
    return lambda w: corpus.term_in_corpus(conn, w)


def _texts(texts):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE passages (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    conn.executemany("INSERT INTO passages(text) VALUES (?)", [(t,) for t in texts])
    return lambda t: corpus.texts_with(conn, t)


@pytest.fixture(scope="module")
def book():
    """(in_books, texts_with) over a real passages table and its FTS5 index, as the corpus keeps them."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE passages (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    conn.execute("CREATE VIRTUAL TABLE passages_fts USING fts5(text, heading, tokenize='porter unicode61')")
    for i, t in enumerate(PAGES, 1):
        conn.execute("INSERT INTO passages(id, text) VALUES (?, ?)", (i, t))
        conn.execute("INSERT INTO passages_fts(rowid, text, heading) VALUES (?, ?, '')", (i, t))
    return (lambda w: corpus.term_in_corpus(conn, w)), (lambda t: corpus.texts_with(conn, t))


def test_a_plural_acronym_is_the_books_acronym(book):
    in_books, texts_with = book
    assert book_words.book_form("IEDs", "How do I spot IEDs?", in_books, texts_with) == "IED"
    assert book_words.book_form("LBEs", "Do we take off the LBEs first?", in_books, texts_with) == "LBE"
    # the books never write "MREs": no form of theirs
    assert book_words.book_form("MREs", "How many MREs a day?", in_books, texts_with) is None


def test_an_acronym_the_books_write_only_in_lower_case_words_is_not_found_by_case_folding(book):
    in_books, texts_with = book
    # FTS5 stems "ied" to "i", which matches the word "I": the capitals are checked in the text
    assert not book_words.acronym_in_books("ILE", texts_with)
    assert book_words.acronym_in_books("IED", texts_with)


def test_a_spelled_out_acronym_is_named_by_the_books(book):
    in_books, texts_with = book
    q = "What do community emergency response teams do?"
    assert book_words.spelled_acronym("teams", q, texts_with) == "CERT"
    assert book_words.named_in_books("teams", q, in_books, texts_with)


def test_a_slip_of_the_keys_is_the_books_word_and_a_real_word_never_is(book, embedder):
    in_books, _ = book
    pieces = book_words.word_pieces(embedder)
    assert book_words.slip_of("tournqiuet", in_books, pieces) == "tourniquet"  # two letters swapped
    assert book_words.slip_of("tourniqet", in_books, pieces) == "tourniquet"  # a letter dropped
    assert book_words.slip_of("tournqiuet", in_books) is None  # no tokenizer: nothing is read as a slip
    assert book_words.slip_of("migraine", in_books, pieces) is None
    # words of the language one letter from a book's word stay themselves (the labelled FM and CERT
    # questions: "heater" is not "theater", "rashes" not "rushes")
    near = _fts_book(["The casualty was bleeding and elevated.", "Rushes grew by the theater."])
    assert book_words.slip_of("heater", near, pieces) is None
    assert book_words.slip_of("rashes", near, pieces) is None
    # a slip keeps the first letter: "cribbing" (unanswerable in a first-aid manual) is not "ribbing"
    assert book_words.slip_of("cribbing", _fts_book(["Ribbing of the sleeve."]), pieces) is None


def test_a_slip_the_tokenizer_cuts_in_two_is_mended_only_when_letters_are_swapped_or_dropped(embedder):
    """ "presure" and "breathnig" are two word pieces each, like the real words "heater" and "gagging":
    a two-piece word is read as a slip only when the book's word has its letters swapped or one more
    letter, never one letter changed or one fewer."""
    pieces = book_words.word_pieces(embedder)
    one = pieces("a")
    assert pieces("presure") == pieces("breathnig") == one + 1 == pieces("heater")
    manual = _fts_book(["Apply direct pressure.", "Deep breathing eases the stress.", "Keep the heated tent dry.",
                        "Bagging the casualty's gear."])
    assert book_words.slip_of("presure", manual, pieces) == "pressure"  # a letter dropped
    assert book_words.slip_of("breathnig", manual, pieces) == "breathing"  # two letters swapped
    assert book_words.slip_of("heater", manual, pieces) is None  # "heated": one letter changed
    assert book_words.slip_of("rashes", _fts_book(["Rushes by the river."]), pieces) is None  # its stem is a word
    # one slip from two whole words ("reactions", "relations"): the reader's meaning is unknown
    assert book_words.slip_of("reations", _fts_book(["Good relations with the town."]), pieces) is None
    # FTS5 stems "openations" to "open", a word of this page: the book's form in the fewest word pieces wins
    ops = _fts_book(["Open the door before search operations begin."])
    assert ops("openations") and book_words.slip_of("opeations", ops, pieces) == "operations"
    # with `written`, the book's word is one a passage writes, not a look-alike FTS5 finds through a stem
    page = "Oversized furniture is moved by two rescuers."
    oversized = _fts_book([page])
    assert oversized("overseated")  # porter stems both to "overs"
    assert book_words.slip_of("overheated", oversized, pieces) == "overseated"
    written = _texts([page])
    assert book_words.slip_of("overheated", oversized, pieces, lambda c: bool(written(c))) is None
    # the book's word may be cut into one piece more than the reader's slip
    sprains = _fts_book(["Sprains and strains are treated alike.", "Blister agents burn the skin."])
    assert pieces("sprains") == pieces("sprians") + 1
    assert book_words.slip_of("sprians", sprains, pieces) == "sprains"
    assert book_words.slip_of("blster", sprains, pieces) == "blister"


def test_the_question_as_the_books_write_it(book, embedder):
    in_books, texts_with = book
    pieces = book_words.word_pieces(embedder)
    assert book_words.as_books_write("What are IEDs?", in_books, texts_with) == \
        "What are IED (improvised explosive devices)?"
    assert book_words.as_books_write("How tight is a tournqiuet?", in_books, texts_with, pieces) == \
        "How tight is a tourniquet?"
    # a spelled-out acronym and words the books use are left as the reader wrote them
    q = "What do community emergency response teams do?"
    assert book_words.as_books_write(q, in_books, texts_with) == q


def test_plural_acronyms_and_slips_are_no_missing_subject_and_an_unnamed_thing_still_is(book, embedder):
    in_books, texts_with = book
    for q in ("What should I know about IEDs?", "How do I use a tournqiuet?",
              "What do community emergency response teams do?"):
        assert book_words.missing_subject(q, in_books, embedder, texts_with=texts_with) is None, q
    assert book_words.missing_subject("What do I do for a migraine?", in_books, embedder,
                                   texts_with=texts_with) == "migraine"
    # initials that merely coincide with a book's acronym do not spell it: "tetanus booster" is not
    # the book's "TB" unless the book spells "TB" so
    assert book_words.spelled_acronym("booster", "How often is a tetanus booster due?",
                                   _texts(["Report TB cases to the medic."])) is None


def test_a_passage_that_names_the_subject_again_and_again_is_about_a_short_question(embedder):
    """A template's words weigh as much as a one-word subject in the embedding space; the far-passage and
    no-context floors are passed by a passage that names every word carrying the question twice."""
    q = "What should I know about morale?"
    assert book_words.subject_words(q, embedder) == ["morale"]
    about = ("Any loss of morale reduces marching efficiency. Low morale is contagious and magnifies any "
             "discomfort soldiers may have.")
    passing = "Keep the men informed of the march plan; this helps morale. Halt near sheltering terrain."
    assert book_words.names_subject(q, [passing, about], embedder)
    assert not book_words.names_subject(q, [passing], embedder)  # named once: passed by, not about it
    assert not book_words.names_subject("What should I know about nimodipine?", [about], embedder)


def test_the_subject_of_a_short_question_is_no_word_the_reader_asks_with(embedder):
    """"explain" weighs as much as "train" in "Can you explain train?", but no passage is about it."""
    assert book_words.subject_words("Can you explain train?", embedder) == ["train"]
    about = "Train in stages. A unit that does not train to march in full load will fall out; train each week."
    assert book_words.names_subject("Can you explain train?", [about], embedder)


def test_an_acronym_is_named_by_its_capitals(embedder):
    """An embedding model knows few acronyms: a passage that writes the question's acronym twice is about
    it; one that never writes it is not, whatever else of the question it names."""
    q = "What are RP (release point) about?"
    about = "The RP is set by the commander. Units clear the RP on time; the RPs are marked on the overlay."
    once = "The release point (RP) is where units leave the march column."
    assert book_words.acronyms("What are RPs about?") == ["RP"]
    assert book_words.names_subject(q, [about], embedder)
    assert not book_words.names_subject(q, [once], embedder)
    # another book's acronym in this book's setting words: the setting is named, the acronym is not
    dressing = "Rules of dressing: dressing must be sterile. Apply the dressing firmly; the rules are simple."
    assert not book_words.names_subject("What should I know about WPs? (in rules of dressing)", [dressing], embedder)


def test_a_subject_of_two_words_is_named_by_them_in_a_row_or_by_the_heading(embedder):
    q = "What should I know about release points?"
    in_a_row = "Each unit reports when its last element clears the release point. Points along the route are timed."
    apart = "Release the brake. The points of the compass are marked."
    assert book_words.names_subject(q, [in_a_row], embedder)
    assert not book_words.names_subject(q, [apart], embedder)

    class Hit:
        section_path = ["Light Search and Rescue", "Chair Carry"]
        text = "Seat the survivor on a sturdy chair. Tilt the chair back and lift. Carry the survivor out."
    assert book_words.headed(Hit) == "Chair Carry\n" + Hit.text
    assert book_words.names_subject("Tell me about chair carry.", [book_words.headed(Hit)], embedder)
    assert not book_words.names_subject("Tell me about chair carry.", [Hit.text], embedder)
