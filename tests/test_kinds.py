"""Kinds of text (issue 34): exam questions, exercises, scenarios, contents, indexes and glossary
cross-references are marked at ingest by form and section kind; search shows the kind, ask and summary
leave them out of the prompt unless nothing else is found; old corpora get '' (not classified)."""
from __future__ import annotations

import json
import sqlite3

import pytest

from ragcli.ingest import kinds
from ragcli.ingest.kinds import text_kind

EXPOSITION = [
    ("Apply direct pressure to the wound with a clean dressing. If bleeding continues, apply a second "
     "dressing over the first and keep the pressure on.", ["Chapter 2", "Bleeding"]),
    ("To apply a tourniquet: 1. Place it two inches above the wound. 2. Tighten it until the bleeding "
     "stops. 3. Note the time.", ["Chapter 2", "Tourniquet"]),
    ("The secondary exam checks the casualty from head to toe for injuries that are not obvious.",
     ["Unit 3", "Physical Exam"]),
    ("Regular exercise and enough water keep soldiers fit for long foot marches.", ["Exercise and hydration"]),
    ("What causes shock? Loss of blood lowers the volume the heart can pump, and the organs starve.",
     ["Shock"]),
    ("Exercise-induced oxidative stress is part of the benefit of regular training.",
     ["Exercise-induced lipid peroxidation: implications for DNA damage"]),
    ("Cancer incidence increases with age.", ["Can exercise-related improvements in immunity influence cancer?"]),
]
NOT_EXPOSITION = [
    ("Which of the following is a sign of shock? a. Warm, dry skin b. Rapid, weak pulse c. Slow breathing "
     "d. Flushed face", ["Unit 3", "Review"], kinds.QUESTION),
    ("1. What is the first step of triage? 2. How long should an assessment of one survivor take? "
     "3. Who decides where the treatment area goes?", ["Unit 4"], kinds.QUESTION),
    ("Answer each question on the sheet and hand it to the instructor when you are done.",
     ["Unit 9: Course Review and Final Exam"], kinds.QUESTION),
    ("Working in teams of three, move the survivor onto the blanket and carry it ten feet.",
     ["Unit 5", "Exercise 2: Blanket Drag"], kinds.EXERCISE),
    ("Scenario: a tornado has struck the town and you are the first to reach the school.",
     ["Unit 6"], kinds.SCENARIO),
    ("A storm has cut the power and a neighbour asks you for help with her father.",
     ["Unit 7", "Case Study"], kinds.SCENARIO),
    ("Bleeding .......... 2-1 Shock .......... 2-9 Burns .......... 2-14 Fractures .......... 4-1",
     ["Front matter"], kinds.CONTENTS),
    ("Tourniquet, 2-20, 2-25 Trench foot, 3-4, 3-6 Triage, 1-2, 1-5 Tubes, 5-10, 5-12", ["Index"], kinds.INDEX),
    ("Splint. See Immobilization. Sling. See Cravat. Shock, cardiogenic. See Shock. Sucking chest wound. "
     "See Open chest wound.", ["Glossary"], kinds.GLOSSARY_REF),
]


@pytest.mark.parametrize("text,path", EXPOSITION)
def test_exposition_is_not_marked(text, path):
    assert text_kind(text, path) == kinds.EXPOSITION


@pytest.mark.parametrize("text,path,kind", NOT_EXPOSITION)
def test_questions_drills_and_lists_of_pages_are_marked(text, path, kind):
    assert text_kind(text, path) == kind


# ---------------------------------------------------------------------------------------- corpus

def _pdf(path, pages):
    """A PDF whose pages each have a heading (16 pt) and body paragraphs (11 pt)."""
    import pymupdf

    with pymupdf.open() as doc:
        for heading, paras in pages:
            page = doc.new_page()
            page.insert_text((72, 90), heading, fontsize=16)
            y = 130
            for para in paras:
                rect = pymupdf.Rect(72, y, 520, y + 120)
                page.insert_textbox(rect, para, fontsize=11)
                y += 130
        doc.save(path)
    return path


MANUAL = [("Controlling Bleeding", [
    "Direct pressure stops most bleeding from a limb. Press a clean dressing firmly on the wound with "
    "the palm of the hand and hold it for at least ten minutes without lifting it to look.",
    "If blood soaks through the dressing, put a second dressing on top of the first and keep pressing. "
    "Raise the limb above the heart while you press, unless a bone is broken."])]
EXAM = [("Final Exam", [
    "1. How long should direct pressure on a bleeding wound be held? a. One minute b. Ten minutes "
    "c. Until the casualty speaks d. Thirty seconds",
    "2. What do you do when blood soaks through the dressing? a. Remove it b. Add a second dressing "
    "c. Wash the wound d. Apply ice"])]


@pytest.fixture(scope="module")
def kinds_db(tmp_path_factory):
    from ragcli.ingest import pipeline as ingest
    from ragcli.models import embed
    from ragcli.store import db

    tmp = tmp_path_factory.mktemp("kinds")
    path = tmp / "corpus.db"
    conn = db.connect(path)
    embedder = embed.get_embedder()
    ingest.ingest_file(conn, _pdf(tmp / "manual.pdf", MANUAL), embedder, book_id="manual")
    ingest.ingest_file(conn, _pdf(tmp / "exam.pdf", EXAM), embedder, book_id="exam")
    conn.close()
    return path


def test_search_json_shows_the_kind(kinds_db, cli):
    res = cli("search", "how long to hold direct pressure on a bleeding wound", "--json", "--db", kinds_db)
    assert res.exit_code == 0, res.stderr
    hits = json.loads(res.stdout)
    by_book = {h["book_id"]: h["text_kind"] for h in hits}
    assert by_book["exam"] == "question" and by_book["manual"] == "exposition"
    shown = cli("search", "how long to hold direct pressure on a bleeding wound", "--db", kinds_db)
    assert shown.exit_code == 0 and "question" in shown.stdout


def test_ask_leaves_the_exam_out_unless_it_is_all_there_is(kinds_db, embedder):
    from ragcli import ask
    from ragcli.store import db

    conn = db.connect(kinds_db)
    try:
        q = "how long should I hold direct pressure on a bleeding wound?"
        answer = ask.ask(conn, embedder, q, None, ask.AskOptions())
        assert answer.sources and {s.hit.book_id for s in answer.sources} == {"manual"}
        assert kinds.ONLY_NON_EXPOSITION not in (answer.notice or "")
        only = ask.ask(conn, embedder, q, None, ask.AskOptions(book_ids=["exam"]))
        assert only.sources and {s.hit.text_kind for s in only.sources} == {"question"}
        assert kinds.ONLY_NON_EXPOSITION in only.notice
    finally:
        conn.close()


def test_old_passages_get_no_kind_and_are_never_left_out(tmp_path, monkeypatch):
    """A corpus made before the text_kind step upgrades in place; its passages read '' until the book
    is ingested again, and a search that skips kinds keeps them."""
    from ragcli.search.pipeline import skip_kinds
    from ragcli.store import db, migrations
    from ragcli.types import Hit

    path = tmp_path / "corpus.db"
    before = [s for s in migrations.STEPS if s[0] < "m009_text_kind"]
    with monkeypatch.context() as m:
        m.setattr(migrations, "STEPS", before)
        conn = db.connect(path)
        conn.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) "
                     "VALUES ('b', 'B', '/b.pdf', 'h', 1, 'now')")
        conn.execute("INSERT INTO passages(book_id, ordinal, kind, section_path, heading, page_start, page_end,"
                     " text, text_hash, embed_hash) VALUES ('b', 0, 'passage', '[]', '', 1, 1, 'x', 'h', 'e')")
        conn.commit()
        conn.close()
    db.connect(path).close()
    con = sqlite3.connect(path)
    assert con.execute("SELECT text_kind FROM passages").fetchall() == [("",)]
    con.close()
    old = Hit(1, "passage", "b", "B", [], 1, 1, "1", "x", text_kind="")
    exam = Hit(2, "passage", "b", "B", [], 1, 1, "1", "y", text_kind="question")
    assert skip_kinds([exam, old], kinds.NOT_EXPOSITION, 5) == ([old], False)
    assert skip_kinds([exam], kinds.NOT_EXPOSITION, 5) == ([exam], True)
