"""The bundled sample book corpus/cerebrovascular-neurosurgery-primer.pdf and its builder.

Opens the committed PDF with pymupdf (no ragcli code involved) and checks the features the
ingest pipeline relies on: outline, page labels matching the printed footer, running header,
figure captions, glossary, clinical vocabulary and numbers; then rebuilds the book into a temp
dir and checks the builder reproduces the same page texts.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pymupdf = pytest.importorskip("pymupdf")

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
PDF = CORPUS / "cerebrovascular-neurosurgery-primer.pdf"
TITLE = "A Primer of Cerebrovascular Neurosurgery"
CAPTION = re.compile(r"^Figure (\d+\.\d+)(:?) \S")


@pytest.fixture(scope="module")
def doc():
    with pymupdf.open(PDF) as document:
        yield document


def page_lines(page) -> list[str]:
    return [line.strip() for line in page.get_text().splitlines() if line.strip()]


def test_size_metadata_and_page_count(doc):
    assert PDF.stat().st_size < 300 * 1024
    assert doc.metadata["title"] == TITLE
    assert 12 <= doc.page_count <= 18
    assert abs(doc[0].rect.width - 420) < 1 and abs(doc[0].rect.height - 595) < 1  # A5


def test_outline_has_chapters_sections_and_subsections(doc):
    toc = doc.get_toc()
    titles = [title for _, title, _ in toc]
    assert {level for level, _, _ in toc} == {1, 2, 3}
    assert "Chapter 1 Anatomy of the Cerebral Circulation" in titles
    assert titles.index("1.1 The Circle of Willis") == titles.index(
        "Chapter 1 Anatomy of the Cerebral Circulation") + 1
    for needed in ("Chapter 2 Intracranial Aneurysms", "2.1 Subarachnoid Hemorrhage",
                   "2.2 Microsurgical Clipping", "2.3 Endovascular Coiling", "Chapter 3 Craniotomy",
                   "Chapter 4 Cerebral Edema and Intracranial Pressure", "4.2.1 Mannitol",
                   "4.3 Decompressive Craniectomy", "5.1 Nimodipine",
                   "Chapter 6 Arteriovenous Malformations", "Chapter 7 Postoperative Care"):
        assert needed in titles
    chapters = [title for level, title, _ in toc if level == 1]
    assert chapters[-2:] == ["Glossary", "Index"]  # the glossary is the last chapter


def test_outline_entries_point_at_their_headings(doc):
    for _, title, page in doc.get_toc():
        assert doc[page - 1].search_for(title), title


def test_headings_are_larger_and_bold(doc):
    spans = [s for b in doc[2].get_text("dict")["blocks"] for line in b.get("lines", [])
             for s in line["spans"]]
    chapter = next(s for s in spans if s["text"].startswith("Chapter 1"))
    body = next(s for s in spans if s["text"].startswith("The brain accounts"))
    assert chapter["size"] > body["size"] + 3
    assert chapter["flags"] & 16  # bold


def test_page_labels_and_printed_footer_agree(doc):
    assert [doc[i].get_label() for i in range(3)] == ["i", "ii", "1"]
    assert doc[doc.page_count - 1].get_label() == str(doc.page_count - 2)
    for page in doc:
        bottom = max(page.get_text("blocks"), key=lambda block: block[1])
        assert bottom[4].strip() == page.get_label()


def test_running_header_on_every_page(doc):
    for page in doc:
        top = min(page.get_text("blocks"), key=lambda block: block[1])
        assert top[4].strip() == TITLE


def test_figures_have_captions_below_drawings_and_images(doc):
    captions = []
    for page in doc:
        for x0, y0, x1, y1, text, *_ in page.get_text("blocks"):
            match = CAPTION.match(text.strip())
            if match:
                captions.append((page.number, match.group(1), match.group(2), y0))
    numbers = [number for _, number, _, _ in captions]
    assert len(numbers) >= 6 and len(set(numbers)) == len(numbers)
    # both caption styles: "Figure 2.1 ..." and "Figure 1.2: ..."
    assert {style for _, _, style, _ in captions} == {"", ":"}
    images = [(page.number, page.get_image_rects(xref[0])[0])
              for page in doc for xref in page.get_images()]
    assert len(images) >= 2
    for pno, rect in images:  # a caption sits right below each raster image
        assert any(p == pno and 0 <= y0 - rect.y1 < 20 for p, _, _, y0 in captions)
    assert sum(len(doc[p].get_drawings()) > 10 for p, _, _, _ in captions) >= 6


def test_glossary(doc):
    page = next(p for p in doc if page_lines(p)[1:2] == ["Glossary"])
    text = " ".join(page_lines(page))
    entry = re.compile(r"[A-Z][a-z]+( [a-z]+)* \u2014 ")
    entries = [line for line in page_lines(page) if entry.match(line)]
    assert 8 <= len(entries) <= 15, entries
    assert "Craniotomy \u2014 surgical removal of a bone flap from the skull" in text


def test_clinical_vocabulary_not_lay_words(doc):
    text = " ".join(" ".join(page_lines(p)) for p in doc).lower()
    for term in ("craniotomy", "cerebral edema", "subarachnoid hemorrhage", "hydrocephalus",
                 "ventriculostomy", "nimodipine", "mannitol", "hypertonic saline",
                 "decompressive craniectomy", "vasospasm", "arteriovenous malformation"):
        assert term in text, term
    for lay in ("brain swelling", "swollen brain", "cutting the skull", "cut the skull"):
        assert lay not in text, lay


@pytest.mark.parametrize("phrase", [
    "nimodipine 60 mg by mouth or nasogastric tube every 4 hours for 21 days",
    "treatment when ICP is above 22 mmHg",
    "Mannitol is given as an intravenous bolus of 0.25-1 g/kg",
    "craniectomy of at least 12 by 15 cm",
])
def test_numbers_stay_on_one_page(doc, phrase):
    assert any(phrase in " ".join(page_lines(p)) for p in doc)


def _load_builder(monkeypatch):
    """Import corpus/build_sample_book.py (a script, not a package module) for this test only."""
    spec = importlib.util.spec_from_file_location("build_sample_book",
                                                  CORPUS / "build_sample_book.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "build_sample_book", module)  # dataclasses need it there
    spec.loader.exec_module(module)
    return module


def test_builder_reproduces_the_committed_book(doc, tmp_path, monkeypatch):
    out = tmp_path / "book.pdf"
    assert _load_builder(monkeypatch).main([str(out)]) == 0
    with pymupdf.open(out) as rebuilt:
        assert [p.get_text() for p in rebuilt] == [p.get_text() for p in doc]
        assert rebuilt.get_toc() == doc.get_toc()
        assert [p.get_label() for p in rebuilt] == [p.get_label() for p in doc]
        assert rebuilt.metadata == doc.metadata
