"""A book's title: the metadata's when it reads as a title, else the title page's largest text that
does; never a running line, a web address or a line with junk characters."""
from __future__ import annotations

import pymupdf

from ragcli.ingest import pdf


def _page(number: int, lines: list[tuple[str, float]]) -> pdf.RawPage:
    blocks = [pdf.Block(number, 40.0 + 30 * i, [pdf.Line(text, 40.0 + 30 * i, 60.0 + 30 * i, size, False)])
              for i, (text, size) in enumerate(lines)]
    return pdf.RawPage(number, 792, blocks)


def test_a_margin_line_with_a_replacement_character_is_not_the_title():
    page = _page(1, [("Clinical Science (2014) 126, 305-313", 7.0),
                     ("Fragment-based design for the development", 20.9),
                     ("Clinical Science     \ufffdwww.clinsci.org", 26.0),
                     ("Abstract", 10.0)])
    assert pdf.first_page_title([page]) == "Fragment-based design for the development"


def test_cover_lettering_read_as_junk_gives_way_to_the_next_size_or_page():
    cover = _page(1, [("F 0ooT", 40.0), ("MARCHES", 27.8)])
    inside = _page(2, [("FOOT MARCHES", 12.7), ("Paragraphs", 6.7)])
    assert pdf.first_page_title([cover, inside]) == "FOOT MARCHES"


def test_an_issuers_line_on_the_cover_is_not_the_title():
    # FM 21-18's cover as its text layer reads it (issue 47: the title was the issuer's line)
    cover = _page(1, [("Copy 3", 11.2), ("DEPARTMENT", 11.5), ("OF THE ARMY FIELD", 11.7), ("MANUAL", 11.5),
                      ("F 0ooT", 40.0), ("MARCHES", 27.8), ("HEADQUARTERS, DEPARTMENT OF THE ARMY", 11.9),
                      ("JULY 1958", 11.4)])
    inside = _page(2, [("*FM 21-18", 10.8), ("HEADQUARTERS,", 8.8), ("FOOT MARCHES", 12.7), ("Paragraphs", 6.7)])
    assert pdf.first_page_title([cover, inside]) == "FOOT MARCHES"
    for line in ("HEADQUARTERS, DEPARTMENT OF THE ARMY", "Department of Health and Human Services",
                 "Published by the Federal Emergency Management Agency", "Oxford University Press",
                 "Copyright 2009 by the authors", "OF THE ARMY FIELD"):
        assert not pdf.plausible_title(line), line
        assert pdf._good_title(line) == "", line


def test_titles_are_words():
    for good in ("FIRST AID", "A Primer of Cerebrovascular Neurosurgery", "Volume 2: Field Dressings",
                 "A LEADER’S GUIDE TO SOLDIER HEALTH AND FITNESS"):
        assert pdf.plausible_title(good), good
    for junk in ("Clinical Science \ufffdwww.clinsci.org", "F 0ooT", "MARCHES", "42511cvr", "doi 10.1042/CS20130403",
                 "Journal\x07 of things", "\ue001\ue002 Title words"):
        assert not pdf.plausible_title(junk), junk
    assert pdf._good_title("Clinical Science \ufffd 2014") == ""


def test_a_real_pdf_takes_the_title_page_title_over_a_larger_junk_line(tmp_path):
    path = tmp_path / "article.pdf"
    with pymupdf.open() as doc:
        for n in range(3):
            page = doc.new_page()
            page.insert_text((40, 30), "Journal of Things 12 (2024) 1-9", fontsize=7)  # a running header
            if n == 0:
                page.insert_text((40, 120), "Fragment-based design of inhibitors", fontsize=20)
                page.insert_text((560, 700), "www.journal.org 0x1F4", fontsize=26, rotate=90)
            page.insert_text((40, 300), f"Body text of page {n + 1} about inhibitors and their design.",
                             fontsize=10)
        doc.save(path)
    assert pdf.parse(path).title == "Fragment-based design of inhibitors"
