"""Passages follow the book's structure (issue 34): a procedure or a list stays with its lead-in, a
list longer than a passage is split into parts that each carry the lead-in, running lines and table
header rows are neither text nor sections, ordinal order is reading order, neighbours in a section.
Invented section text: no model, no database, except the neighbours test (the template corpus)."""
from __future__ import annotations

import re
import sqlite3

from ragcli.ingest import chunking, pdf, sections
from ragcli.types import Figure, Section

PROSE = ("Bleeding from a limb can kill a casualty within minutes. The first aider must act at once and "
         "keep calm. Most bleeding stops with firm pressure held long enough. ") * 2
LEAD = "To apply a pressure dressing, do the following steps:"
STEPS = [f"{n}. {text}" for n, text in enumerate([
    "Place the dressing directly over the wound with the sterile side down.",
    "Wrap the tails of the dressing around the limb and tie them over the pad.",
    "Check the circulation below the dressing by feeling for a pulse.",
    "Elevate the injured limb above the level of the heart if no fracture is suspected.",
    "Watch the casualty for signs of shock until help arrives."], 1)]


def _starts_mid_list(text: str) -> bool:
    m = re.match(r"\s*(\d{1,2})\. ", text)
    return bool(m) and m.group(1) != "1"


def test_a_procedure_stays_whole_with_its_lead_in():
    paras = [(1, PROSE), (1, PROSE), (2, LEAD)] + [(2, s) for s in STEPS] + [(2, PROSE)]
    passages = chunking.chunk_section(Section(["Bleeding"], 1, 2, paragraphs=paras))
    holding = [p for p in passages if "1. Place the dressing" in p.text]
    assert len(holding) == 1
    whole = holding[0].text
    assert LEAD in whole and all(s in whole for s in STEPS)
    assert whole.index(LEAD) < whole.index(STEPS[0]) and holding[0].page_end == 2
    assert not any(_starts_mid_list(p.text) for p in passages)
    assert all(len(p.text.split()) <= chunking.MAX_WORDS for p in passages)


def test_a_list_longer_than_a_passage_is_split_into_parts_that_carry_its_lead_in():
    items = [f"{n}. Check item number {n} of the vehicle before the march and report any fault to the "
             f"leader at once." for n in range(1, 16)]
    paras = [(1, PROSE), (3, LEAD)] + [(3 + n // 8, it) for n, it in enumerate(items)]
    passages = chunking.chunk_section(Section(["Checks"], 1, 4, paragraphs=paras))
    parts = [p for p in passages if "Check item number" in p.text]
    assert len(parts) >= 2
    seen = []
    for p in parts:
        assert LEAD in p.text and p.text.index(LEAD) < p.text.index("Check item")
        assert len(p.text.split()) <= chunking.MAX_WORDS
        seen += [int(n) for n in re.findall(r"(\d+)\. Check item number \1 ", p.text)]
    assert seen == list(range(1, 16))  # every step once, in order, with its own number
    assert all(p.text.startswith(LEAD) for p in parts[1:])  # no prose overlap into a list's part
    assert not any(_starts_mid_list(p.text) for p in passages)


PARAGRAPH = ("Trench foot is caused by long exposure of the feet to cold water. The feet swell and ache. "
             "Dry the feet, change the socks and keep the boots laced loose. ") * 3  # 3 x 29 words


def _parts_holding(passages, marker: str):
    return [p for p in passages if marker in p.text]


def test_a_manuals_lettered_paragraphs_do_not_repeat_the_paragraph_before_them():
    """A manual's lettered paragraphs ("a.", "b.", "(1)") after a plain paragraph are body text: the
    paragraph before them stays with the first of them and is not copied onto every later passage (the
    copies matched its words alike and filled a question's first hits)."""
    before = "Regular foot inspection by a leader reduces the foot problem among troops."
    paras = [(1, before)] + [(1, f"{c}. {PARAGRAPH}") for c in "abcd"]
    passages = chunking.chunk_section(Section(["Foot Ailments"], 1, 1, paragraphs=paras))
    assert len(passages) >= 3
    assert [p.text.count(before) for p in passages] == [1] + [0] * (len(passages) - 1)
    assert "".join(p.text for p in passages).count("Trench foot is caused") == 12  # every sentence once
    assert all(len(p.text.split()) <= chunking.MAX_WORDS for p in passages)


def test_a_list_of_paragraph_long_items_carries_its_lead_in_on_its_first_part_only():
    lead = "The most common stress reactions include\u2014"
    paras = [(1, lead)] + [(1, f"\u2022 {PARAGRAPH}") for _ in range(3)]
    passages = chunking.chunk_section(Section(["Stress"], 1, 1, paragraphs=paras))
    assert len(passages) == 3 and passages[0].text.startswith(lead)
    assert not any(lead in p.text for p in passages[1:])


def test_an_item_longer_than_a_passage_is_cut_between_its_sentences():
    item = "c. Concussion. " + PARAGRAPH * 2  # 176 words
    paras = [(1, "Then act as follows:"), (1, item), (1, "d. Convulsions. Protect the casualty.")]
    passages = chunking.chunk_section(Section(["Head"], 1, 1, paragraphs=paras))
    pieces = _parts_holding(passages, "Trench foot")
    assert len(pieces) >= 2
    assert all(p.text.rstrip().endswith(".") for p in pieces)  # no piece ends mid-sentence
    assert pieces[0].text.startswith("Then act as follows: c. Concussion.")


def test_bullets_and_lettered_lists_are_items():
    paras = [(1, "The signs of shock are:"), (1, "• pale, cold and clammy skin"), (1, "• a fast, weak pulse"),
             (1, "• fast breathing"), (1, "Then act as follows:"), (1, "a. Lay the casualty down."),
             (1, "b. Raise the legs."), (1, "c. Keep the casualty warm.")]
    passages = chunking.chunk_section(Section(["Shock"], 1, 1, paragraphs=paras), max_words=20)
    texts = [p.text for p in passages]
    assert any(t.startswith("The signs of shock are:") and "fast breathing" in t for t in texts)
    assert any(t.startswith("Then act as follows:") and "c. Keep" in t for t in texts)


def test_a_wrapped_item_line_in_lower_case_continues_the_item():
    paras = [(1, LEAD), (1, "1. Place the dressing over the wound and"), (1, "press firmly with the palm."),
             (1, "2. Tie the tails.")]
    (p,) = chunking.chunk_section(Section(["Bleeding"], 1, 1, paragraphs=paras))
    assert "wound and press firmly" in p.text


def _line(text, y, size=10.0, bold=False):
    return pdf.Line(text, y, y + size, size, bold)


def test_items_in_one_text_block_become_paragraphs_of_their_own():
    block = pdf.Block(1, 100, [_line("To stop the bleeding:", 100), _line("1. Apply firm pressure on the", 112),
                               _line("wound.", 124), _line("2. Raise the limb.", 136)])
    page = pdf.RawPage(1, 792, [block])
    (sec,) = sections.build_sections([page], [], 10.0, pdf.is_heading)
    assert [t for _, t in sec.paragraphs] == ["To stop the bleeding:", "1. Apply firm pressure on the wound.",
                                              "2. Raise the limb."]


def test_chapter_footers_repeated_on_a_few_pages_are_dropped():
    """A footer naming its chapter repeats on that chapter's pages only (6 of 40 here): it goes, and so
    does the page number beside it; body text repeated on as many pages stays."""
    pages = []
    for n in range(1, 41):
        lines = [_line("The casualty must be kept warm and still.", 300)]
        if n <= 6:
            lines.append(_line(f"JANUARY 2011 3-{n}", 760))
            lines.append(_line("UNIT 3: DISASTER MEDICAL OPERATIONS", 770))
        pages.append(pdf.RawPage(n, 792, [pdf.Block(n, 300, lines)]))
    pdf.strip_running_lines(pages)
    texts = [line.text for p in pages for b in p.blocks for line in b.lines]
    assert not any("JANUARY" in t or "UNIT 3" in t for t in texts)
    assert texts.count("The casualty must be kept warm and still.") == 40


def test_a_table_header_row_is_neither_heading_nor_text():
    def span(text, x0, x1, bold=True):
        return {"text": text, "bbox": (x0, 300, x1, 312), "flags": 16 if bold else 0, "size": 12.0,
                "font": "Arial-BoldMT" if bold else "Arial"}

    block = {"lines": [
        {"spans": [span("Step ", 117, 146), span("Action ", 353, 393)], "bbox": (117, 300, 393, 312)},
        {"spans": [span("1 ", 117, 125, False), span("Make contact with the survivor. ", 353, 500, False)],
         "bbox": (117, 320, 500, 332)},
        {"spans": [span("Opening the Airway", 72, 200)], "bbox": (72, 340, 200, 352)},
    ]}
    assert [line.text for line in pdf._read_lines(block)] == ["1 Make contact with the survivor.",
                                                               "Opening the Airway"]


def test_ordinal_order_is_reading_order_with_figures_in_place():
    s1 = Section(["One"], 1, 2, paragraphs=[(1, PROSE), (2, PROSE), (2, PROSE)])
    s2 = Section(["Two"], 3, 3, paragraphs=[(3, PROSE)])
    fig = Figure("1-1", "Figure 1-1. A pressure dressing.", 2, section_path=["One"])
    passages = chunking.chunk_book([s1, s2], [fig])
    order = [(p.kind, p.section_path[0]) for p in sorted(passages, key=lambda p: p.ordinal)]
    assert order.index(("figure", "One")) < order.index(("passage", "Two"))
    firsts = [p for p in passages if p.kind == "passage" and p.section_path == ["One"]]
    assert passages.index(next(p for p in passages if p.kind == "figure")) > passages.index(firsts[0])
    assert [p.ordinal for p in passages] == list(range(len(passages)))


def test_neighbours_are_the_previous_and_next_passages_of_the_same_section(template_db):
    from ragcli.store import corpus, db

    conn = db.connect(template_db["path"])
    try:
        rows = conn.execute("SELECT id, book_id, ordinal, section_path FROM passages ORDER BY book_id, ordinal"
                            ).fetchall()
        checked = 0
        for (a, book_a, _, sec_a), (b, book_b, _, sec_b), (c, book_c, _, sec_c) in zip(rows, rows[1:], rows[2:]):
            if book_a == book_b == book_c and sec_a == sec_b == sec_c:
                assert corpus.neighbours(conn, b) == (a, c)
                checked += 1
            elif book_a == book_b and sec_a != sec_b:
                assert corpus.neighbours(conn, b)[0] is None
        assert checked > 10
        assert corpus.neighbours(conn, 10 ** 9) == (None, None)
    finally:
        conn.close()


def test_ingested_passages_have_a_text_kind(template_db):
    con = sqlite3.connect(template_db["path"])
    kinds = dict(con.execute("SELECT text_kind, COUNT(*) FROM passages GROUP BY text_kind").fetchall())
    con.close()
    assert "" not in kinds and kinds.get("exposition", 0) > 0.8 * sum(kinds.values())


def test_an_item_running_onto_the_next_page_keeps_that_page():
    """A list item whose text goes on at the top of the next page (a paragraph there in lower case)
    is on both pages: a passage holding the text of the second page names it."""
    head = "(5) Dehydration. " + PARAGRAPH  # 89 words on page 124
    tail = "sweating is not as apparent in the cold. " + PARAGRAPH  # goes on on page 125
    paras = [(123, "Then act as follows:"), (124, head), (125, tail), (125, "(6) Hypothermia. Keep him warm.")]
    passages = chunking.chunk_section(Section(["Cold"], 123, 125, paragraphs=paras))
    holding = [p for p in passages if "not as apparent in the cold" in p.text]
    assert holding and all(p.page_end == 125 for p in holding)
    assert all(p.page_start == 124 for p in passages if "(5) Dehydration" in p.text)
    assert "".join(p.text for p in passages).count("Trench foot is caused") == 6
