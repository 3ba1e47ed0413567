"""E-books and documents (issue 14): the sample book as an EPUB written by corpus/build_sample_epub.py
(XHTML in a zip, three-level table of contents, <figcaption>s), a DOCX written with python-docx, an
HTML page; damaged files are refused with one line and change nothing."""
from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import ROOT, SAMPLE_BOOK

pytest.importorskip("pymupdf")


@pytest.fixture(scope="session")
def sample_epub(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("build_sample_epub", ROOT / "corpus" / "build_sample_epub.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(tmp_path_factory.mktemp("epub") / "primer.epub")


@pytest.fixture
def sample_docx(tmp_path):
    docx = pytest.importorskip("docx")
    d = docx.Document()
    d.core_properties.author = "Ward 7 nurses"
    d.add_paragraph("Ward Handbook", style="Title")
    d.add_heading("Medication rounds", level=1)
    d.add_paragraph("Rounds start at 08:00 and 20:00. Two nurses check every controlled drug together.")
    d.add_heading("Insulin", level=2)
    d.add_paragraph("Insulin doses are checked against the sliding scale on the chart before each meal.")
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Drug", "Check"
    table.cell(1, 0).text, table.cell(1, 1).text = "Heparin", "anti-Xa level every morning"
    d.add_heading("Handover", level=1)
    d.add_paragraph("Handover happens at the bedside with the patient awake whenever possible.")
    path = tmp_path / "ward-handbook.docx"
    d.save(path)
    return path


def test_epub_ingests_with_chapters_and_metadata(cli, sample_epub):
    res = cli("ingest", sample_epub, "--json")
    assert res.exit_code == 0, res.stderr
    (report,) = json.loads(res.stdout)
    assert report["status"] == "added" and report["sections"] >= 29 and report["figures"] == 10
    (book,) = json.loads(cli("books", "--json").stdout)
    assert book["title"] == "A Primer of Cerebrovascular Neurosurgery"
    assert book["author"] == "The ragcli authors" and book["format"] == "epub"
    hits = json.loads(cli("search", "mannitol dose", "--json", "-k", "3").stdout)
    assert hits[0]["section_path"][:2] == ["Chapter 4 Cerebral Edema and Intracranial Pressure",
                                           "4.2 Osmotic Therapy"]
    assert hits[0]["page_label"] == str(hits[0]["page"])  # a location of ragcli's fixed layout
    answer = json.loads(cli("ask", "how long is nimodipine given?", "--json").stdout)
    cited = {s["label"]: s for s in answer["sources"]}
    assert answer["citations"] and all(cited[c]["book_id"] == "primer" for c in answer["citations"])
    assert any("5.1 Nimodipine" in cited[c]["section_path"] for c in answer["citations"])


def test_epub_and_pdf_of_the_same_book_find_the_same_sections(cli, sample_epub):
    assert cli("ingest", sample_epub, "--id", "epub").exit_code == 0
    assert cli("ingest", SAMPLE_BOOK, "--id", "pdf").exit_code == 0
    for question, section in [("circle of Willis", "1.1 The Circle of Willis"),
                              ("Spetzler-Martin grade", "6.1 Spetzler-Martin Grading")]:
        for book in ("epub", "pdf"):
            hits = json.loads(cli("search", question, "--book", book, "--json", "-k", "3").stdout)
            assert any(section in h["section_path"] for h in hits), (book, question)


def test_docx_headings_become_sections(cli, sample_docx):
    res = cli("ingest", sample_docx, "--json")
    assert res.exit_code == 0, res.stderr
    (book,) = json.loads(cli("books", "--json").stdout)
    assert book["title"] == "Ward Handbook" and book["author"] == "Ward 7 nurses" and book["format"] == "docx"
    hits = json.loads(cli("search", "sliding scale insulin", "--json", "-k", "1").stdout)
    assert hits[0]["section_path"] == ["Ward Handbook", "Medication rounds", "Insulin"]
    hits = json.loads(cli("search", "heparin anti-Xa", "--json", "-k", "1").stdout)
    assert "anti-Xa level every morning" in hits[0]["text"]  # table rows are text too


def test_html_headings_become_sections_scripts_do_not(cli, tmp_path):
    page = tmp_path / "notes.html"
    page.write_text(
        "<html><head><title>Triage notes</title><meta name='author' content='A. Medic'>"
        "<script>var secret = 'tourniquet';</script></head><body><nav>Home | About</nav>"
        "<h1>Triage</h1><p>Sort casualties by the urgency of their wounds.</p>"
        "<h2>Immediate</h2><p>Airway obstruction and severe bleeding come first; apply pressure.</p>"
        "<ul><li>Check breathing</li><li>Stop bleeding</li></ul>"
        "<h2>Delayed</h2><p>Closed fractures can wait for evacuation.</p></body></html>", encoding="utf-8")
    res = cli("ingest", page, "--json")
    assert res.exit_code == 0, res.stderr
    (book,) = json.loads(cli("books", "--json").stdout)
    assert book["title"] == "Triage notes" and book["author"] == "A. Medic" and book["format"] == "html"
    hits = json.loads(cli("search", "severe bleeding airway", "--json", "-k", "1").stdout)
    assert hits[0]["section_path"] == ["Triage", "Immediate"]
    assert not any("secret" in h["text"] or "Home | About" in h["text"]
                   for h in json.loads(cli("search", "tourniquet secret home", "--json").stdout))


@pytest.mark.parametrize("name", ["broken.epub", "broken.docx", "notzip.epub"])
def test_damaged_ebook_or_docx_is_refused_and_nothing_changes(cli, corpus_db, fingerprint, sample_epub,
                                                               sample_docx, tmp_path, name):
    target = tmp_path / name
    if name == "broken.epub":
        data = sample_epub.read_bytes()
        target.write_bytes(data[: len(data) // 3])
    elif name == "broken.docx":
        data = sample_docx.read_bytes()
        target.write_bytes(data[: len(data) // 2])
    else:
        target.write_text("this is not an e-book\n" * 50)
    before = fingerprint(corpus_db)
    res = cli("ingest", target)
    assert res.exit_code == 3, res.stderr
    assert name in res.stderr and "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert fingerprint(corpus_db) == before


def test_folder_ingest_takes_every_format_and_reports_the_rest(cli, sample_epub, sample_docx, tmp_path):
    folder = tmp_path / "shelf"
    folder.mkdir()
    (folder / "primer.epub").write_bytes(sample_epub.read_bytes())
    (folder / "ward.docx").write_bytes(sample_docx.read_bytes())
    (folder / "photo.xyz").write_bytes(b"\x89PNG not really")
    (folder / "README.md").write_text("# Notes on the shelf\n\nWhat these books are.\n")
    res = cli("ingest", folder, "--json")
    assert res.exit_code == 0, res.stderr
    assert sorted(r["book_id"] for r in json.loads(res.stdout)) == ["primer", "ward"]
    assert "photo.xyz" in res.stderr and "skipped 1 file" in res.stderr
    # Markdown is a supported format, read when named: said so, not called unsupported (issue 47)
    line = next(x for x in res.stderr.splitlines() if "README.md" in x)
    assert "read only when named" in line and "no supported format" not in line


def test_html_figcaptions_and_figure_paragraphs_become_figure_items(cli, tmp_path):
    page = tmp_path / "slings.html"
    page.write_text(
        "<html><head><title>Slings</title></head><body><h1>Slings</h1>"
        "<h2>Arm sling</h2><p>Support the forearm across the chest; Figure 3 shows the knot.</p>"
        "<figure><img src='a.png' alt='a sling'><figcaption>Figure 2. Arm sling tied at the "
        "shoulder</figcaption></figure>"
        "<h2>Improvised</h2><p>A shirt tail can hold the arm when no triangular bandage is at hand.</p>"
        "<figure><img src='b.png'><figcaption>The shirt-tail sling, pinned</figcaption></figure>"
        "<p>Figure 4. Belt used as a sling.</p></body></html>", encoding="utf-8")
    res = cli("ingest", page, "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)[0]["figures"] == 3  # not "Figure 3 shows ...": a reference
    hits = json.loads(cli("search", "arm sling tied at the shoulder", "--json", "-k", "10").stdout)
    fig = next(h for h in hits if h["kind"] == "figure")
    assert fig["figure_number"] == "2" and fig["text"] == "Figure 2. Arm sling tied at the shoulder"
    assert fig["section_path"] == ["Slings", "Arm sling"]
    hits = json.loads(cli("search", "shirt-tail sling pinned", "--json", "-k", "10").stdout)
    fig = next(h for h in hits if h["kind"] == "figure")  # an unnumbered <figcaption>: its position
    assert fig["text"] == "The shirt-tail sling, pinned" and fig["figure_number"] == "3"  # (2 is taken)
    assert fig["section_path"] == ["Slings", "Improvised"]
    hits = json.loads(cli("search", "belt used as a sling", "--json", "-k", "10").stdout)
    assert any(h["kind"] == "figure" and h["figure_number"] == "4" for h in hits)


def test_docx_caption_paragraphs_become_figure_items(cli, sample_docx):
    import docx

    d = docx.Document(str(sample_docx))
    d.add_paragraph("Figure 1: Sliding scale chart on the insulin trolley", style="Caption")
    d.add_paragraph("Table 1: Drugs checked by two nurses", style="Caption")  # a table's caption
    d.add_paragraph("Figure 2. The handover board beside the nurses' station.")
    d.add_paragraph("Figure 2 is updated at every handover.")  # a reference, not a caption
    d.save(str(sample_docx))
    res = cli("ingest", sample_docx, "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)[0]["figures"] == 2
    hits = json.loads(cli("search", "sliding scale chart insulin trolley", "--json", "-k", "10").stdout)
    fig = next(h for h in hits if h["kind"] == "figure")
    assert fig["figure_number"] == "1" and fig["text"].startswith("Figure 1: Sliding scale chart")
    assert fig["section_path"] == ["Ward Handbook", "Handover"]  # the section the caption stands in
    hits = json.loads(cli("search", "handover board nurses station", "--json", "-k", "10").stdout)
    assert any(h["kind"] == "figure" and h["figure_number"] == "2" for h in hits)
