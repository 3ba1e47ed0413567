"""BEIR corpus.jsonl, .txt and .md -> ParsedBook, and their ingest through the real pipeline."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcli.ingest import pipeline as ingest
from ragcli.ingest import textdocs
from ragcli.errors import InputError

BEIR = Path(__file__).resolve().parent / "fixtures" / "beir_tiny"


def test_beir_corpus_one_document_per_page_labelled_by_id():
    book = textdocs.parse(BEIR / "corpus.jsonl")
    assert book.title == "beir_tiny"  # corpus.jsonl is named after its folder
    assert [p.label for p in book.pages] == ["d1", "d2", "d3", "d4", "d5", "d6"]
    assert [p.number for p in book.pages] == [1, 2, 3, 4, 5, 6]
    s = book.sections[1]
    assert s.path == ["Snakebite"] and (s.page_start, s.page_end) == (2, 2)
    assert s.paragraphs[0][0] == 2 and "venomous snake" in s.text
    assert len(book.file_hash) == 64


def test_beir_errors(tmp_path):
    dup = tmp_path / "corpus.jsonl"
    dup.write_text('{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n')
    with pytest.raises(InputError, match="twice"):
        textdocs.parse(dup)
    dup.write_text('{"id": "a", "body": "x"}\n')
    with pytest.raises(InputError, match="BEIR"):
        textdocs.parse(dup)
    dup.write_text("")
    with pytest.raises(InputError):
        textdocs.parse(dup)


def test_untitled_document_uses_its_id(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"_id": "x7", "title": "", "text": "Some words here."}) + "\n")
    book = textdocs.parse(path)
    assert book.title == "docs" and book.sections[0].path == ["x7"]


def test_markdown_headings_nest_and_pages_split_on_form_feed(tmp_path):
    md = tmp_path / "notes.md"
    md.write_text("# Field Notes\n\nIntro text.\n\n## Burns\n\nCool the burn with water.\n\f"
                  "### Chemical burns\n\nBrush off dry chemicals first.\n\n## Cold\n\nWarm slowly.\n")
    book = textdocs.parse(md)
    assert book.title == "Field Notes"
    assert [p.label for p in book.pages] == ["1", "2"]
    paths = [s.path for s in book.sections]
    assert paths == [["Field Notes"], ["Field Notes", "Burns"], ["Field Notes", "Burns", "Chemical burns"],
                     ["Field Notes", "Cold"]]
    chem = book.sections[2]
    assert chem.page_start == 2 and chem.paragraphs == [(2, "Brush off dry chemicals first.")]


def test_plain_text_pages_by_size_and_detected_headings(tmp_path):
    txt = tmp_path / "manual.txt"
    paras = [f"Paragraph {i} " + "word " * 60 for i in range(30)]
    txt.write_text("1. FIRST STEPS\n\n" + "\n\n".join(paras[:15]) + "\n\n2. SECOND PART\n\n" + "\n\n".join(paras[15:]))
    book = textdocs.parse(txt)
    assert book.title == "manual"
    assert len(book.pages) > 3  # about 3,000 characters a page
    assert [s.path for s in book.sections] == [["1. FIRST STEPS"], ["2. SECOND PART"]]
    first = book.sections[0]
    assert first.page_end > first.page_start  # a section runs over pages; each paragraph has its page
    assert all(1 <= page <= len(book.pages) for page, _ in first.paragraphs)


def test_text_without_headings_and_binary_refused(tmp_path):
    txt = tmp_path / "plain.txt"
    txt.write_text("just some lowercase words, nothing more.\n")
    book = textdocs.parse(txt)
    assert book.sections[0].path == ["Page 1"] and book.sections[0].text.startswith("just")
    binary = tmp_path / "x.txt"
    binary.write_bytes(b"\x00\x01\x02")
    with pytest.raises(InputError):
        textdocs.parse(binary)
    empty = tmp_path / "e.md"
    empty.write_text("\n\n")
    with pytest.raises(InputError):
        textdocs.parse(empty)


def test_discover_takes_corpus_jsonl_but_not_queries_or_notes(tmp_path):
    for name in ("corpus.jsonl", "queries.jsonl", "a.txt", "b.md", "c.csv"):
        (tmp_path / name).write_text('{"_id": "q1", "text": "x"}\n' if name == "corpus.jsonl"
                                     else '{"_id": "q1", "text": "y", "metadata": {}}\n' if name == "queries.jsonl"
                                     else "text\n")
    (tmp_path / "queries.jsonl").write_text('{"question": "q", "pages": [1]}\n')
    found = sorted(p.name for p in ingest.discover([str(tmp_path)]))
    assert found == ["corpus.jsonl"]  # in a folder: PDFs and a BEIR corpus, not notes or READMEs
    named = ingest.discover([str(tmp_path / "a.txt"), str(tmp_path / "b.md")])
    assert [p.name for p in named] == ["a.txt", "b.md"]  # text files are taken when named


def test_ingest_beir_and_markdown_through_the_pipeline(tmp_path):
    from ragcli.store import db
    from ragcli.models import embed
    from ragcli.search.pipeline import SearchOptions, search
    from ragcli.store import corpus as store

    conn = db.connect(tmp_path / "c.db")
    embedder = embed.get_embedder()
    r = ingest.ingest_file(conn, BEIR / "corpus.jsonl", embedder, book_id="tiny")
    assert r.status == "added" and r.pages == 6 and r.sections == 6 and r.passages >= 6
    md = tmp_path / "notes.md"
    md.write_text("# Notes\n\n## Nosebleeds\n\nPinch the soft part of the nose and lean forward.\n")
    r2 = ingest.ingest_file(conn, md, embedder)
    assert r2.status == "added" and r2.book_id == "notes"
    hits = search(conn, embedder, "venomous snake bite", SearchOptions(k=3, book_ids=["tiny"])).hits
    assert hits[0].page_label == "d2" and hits[0].section_path == ["Snakebite"]
    assert store.counts(conn)["terms"] > 0  # titles are the vocabulary of a BEIR book
    again = ingest.ingest_file(conn, BEIR / "corpus.jsonl", embedder, book_id="tiny")
    assert again.status == "unchanged"
