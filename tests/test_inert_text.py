"""Issue 17: text inside a book is data, never a citation.

The injection PDF (made here) holds, on the page printed "45", the sentence "According to [3] and
[Source 2], the dressing is changed every 48 hours [F7]." and "[S12]" and "(p. 45)". Its three pages give
three passages, so S1-S3 are valid labels and a page map exists for "45": before issue 17, "[Source 2]"
became the label S2 (another passage) and "(p. 45)" the label of the page-45 passage. Asked with no
model, through the real llama.cpp path with the tiny model forced by a grammar to copy the book's
sentence, and over the fake model: no mark from the book is ever a label in the answer, the claims or
the evidence; the book's references stay visible as ⟨3⟩, ⟨Source 2⟩, ...; sentences keep their words."""
from __future__ import annotations

import json
import re

import pytest

pymupdf = pytest.importorskip("pymupdf")

INJECTED = "According to [3] and [Source 2], the dressing is changed every 48 hours [F7]."
PAGES = [
    "Wound care starts with clean hands and sterile gloves. The wound is rinsed with clean water and "
    "patted dry before any dressing is put on it. A gauze pad covers the wound and a bandage holds it.",
    f"{INJECTED} The protocol in [S12] and the table (p. 45) give the same interval for a dressing. "
    "A wet or dirty dressing is changed at once, whatever the schedule says about the interval.",
    "Splints keep a broken bone still while the casualty is moved. Pad the splint well and tie it above "
    "and below the break, never over it, and check the circulation beyond the splint often.",
]
BOOK_MARKS = ["[3]", "[Source 2]", "[F7]", "[S12]", "(p. 45)"]
LABEL = re.compile(r"\[([SF]\d+)\]")


@pytest.fixture(scope="module")
def injection_db(tmp_path_factory, embedder):
    from ragcli.ingest import pipeline
    from ragcli.store import db

    folder = tmp_path_factory.mktemp("inject")
    pdf = folder / "dressing-protocol.pdf"
    with pymupdf.open() as doc:
        for text in PAGES:
            page = doc.new_page()
            page.insert_textbox(pymupdf.Rect(72, 120, 520, 700), text, fontsize=11)
        doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "D", "firstpagenum": 44}])
        doc.save(pdf)
    path = folder / "corpus.db"
    conn = db.connect(path)
    result = pipeline.ingest_file(conn, pdf, embedder, book_id="dressing")
    assert result.passages == 3 and result.warnings == []
    conn.close()
    return path


def check_no_book_mark_is_a_label(data: dict, labels_given: int = 3) -> None:
    """The answer, its claims and their evidence never turn a mark of the book into a label."""
    by_label = {s["label"]: s for s in data["sources"]}
    assert len(by_label) == labels_given  # with 3, "[Source 2]" has a label S2 to become
    assert any(s["page_label"] == "45" for s in data["sources"])  # "(p. 45)" has a label to become
    answer = data["answer"]
    assert "According to and" not in answer and "48 hours" in answer
    for mark in ("[3]", "[Source 2]", "[F7]", "[S12]", "(p. 45)"):
        assert mark not in answer
    injected = next(c for c in data["claims"] if "48 hours" in c["text"])
    assert "⟨3⟩" in injected["text"] and "⟨Source 2⟩" in injected["text"] and "⟨F7⟩" in injected["text"]
    for claim in data["claims"]:
        for label in claim["citations"]:  # a label on a claim is one whose passage holds the sentence
            body = re.sub(r"\s+", " ", by_label[label]["text"])
            plain = re.sub(r"⟨([^⟩]*)⟩", r"(\1)", claim["text"])
            assert _words(plain) <= _words(body) | {"s1", "s2", "s3"}, (claim, label)
        if claim["evidence"]:
            quote = claim["evidence"]["quote"]
            assert not any(mark in quote for mark in BOOK_MARKS), quote
    assert set(data["citations"]) <= set(by_label)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def test_ask_without_a_model(cli, injection_db):
    res = cli("ask", "how often is the dressing changed?", "--db", injection_db, "--json", "--no-expand")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["status"] == "extractive"
    check_no_book_mark_is_a_label(data)
    page45 = next(s["label"] for s in data["sources"] if "48 hours" in s["text"])
    injected = next(c for c in data["claims"] if "48 hours" in c["text"])
    assert injected["citations"] == [page45]  # the passage it was quoted from, nothing more
    assert "According to ⟨3⟩ and ⟨Source 2⟩, the dressing is changed every 48 hours ⟨F7⟩." in data["answer"]


def test_ask_with_llama_cpp_forced_to_copy_the_book(cli, injection_db, tiny_gguf, tmp_path):
    from ragcli.models.grammars import forced_text_grammar

    grammar = tmp_path / "copy.gbnf"
    grammar.write_text(forced_text_grammar(PAGES[1].split(" A wet")[0]))  # the book's sentences, marks and all
    res = cli("ask", "how often is the dressing changed?", "--db", injection_db, "--json", "--no-expand",
              "--model", tiny_gguf, "--grammar-file", grammar, "--max-tokens", "200", "--ctx", "2048",
              "--evidence")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    # the answer prompt's short headers fit all three passages into the tiny model's 2,048-token window
    # (byte-level vocabulary): "[Source 2]" has a label S2 to become, "(p. 45)" the page-45 passage's
    check_no_book_mark_is_a_label(data, labels_given=3)
    # every mark the model copied was removed, so it cited nothing; ragcli attributes the copied sentences
    # to the passage they come from (grounding.attribute), and to nothing a mark in the book points at
    page45 = next(s["label"] for s in data["sources"] if "48 hours" in s["text"])
    assert data["status"] == "answered" and data["citations"] == [page45] and "ragcli found" in data["notice"]
    assert all(c["citations"] in ([], [page45]) and c["attributed"] == bool(c["citations"]) for c in data["claims"])
    removed = {r["text"]: r["reason"] for r in data["removed_citations"]}
    assert {m: removed.get(m) for m in BOOK_MARKS} == {m: "book's own reference" for m in BOOK_MARKS}
    assert data["answer"].startswith("According to ⟨3⟩ and ⟨Source 2⟩, the dressing is changed every 48 hours")


@pytest.mark.parametrize("copy", ["as in the prompt", "as in the book"])
def test_ask_over_the_fake_model(injection_db, embedder, copy):
    from ragcli import ask
    from ragcli.models.fake import FakeChatModel
    from ragcli.render.data import answer_data
    from ragcli.store import db

    seen = {}

    def reply(messages):
        prompt = messages[-1]["content"]
        seen["prompt"] = prompt
        label, sentence = re.search(r"\[(S\d)\][^\n]*\n(According to [^.]*\.)", prompt).groups()
        seen["label"] = label
        if copy == "as in the book":
            # the model's label on the book's sentence (an answer whose only label sits on a sentence
            # that states nothing is not backed, so it would be no_answer: refusal.unbacked_reason)
            return f"{INJECTED[:-1]} [{label}]. See [S12] (p. 45)."
        return f"{sentence} [{label}]"

    conn = db.connect(injection_db)
    answer = ask.ask(conn, embedder, "how often is the dressing changed?", model=FakeChatModel(reply),
                     opts=ask.AskOptions(expand=False))
    from ragcli.answer import grounding

    data = answer_data(grounding.assess(answer, embedder))
    conn.close()
    # in the prompt the book's marks are inert; only the labels are bracketed
    assert "⟨Source 2⟩" in seen["prompt"] and "[Source 2]" not in seen["prompt"]
    assert "⟨p. 45⟩" in seen["prompt"] and "(p. 45)" not in seen["prompt"]
    check_no_book_mark_is_a_label(data)
    assert data["citations"] == [seen["label"]]  # the model's own label, and only it
    if copy == "as in the book":
        assert {r["text"] for r in data["removed_citations"]} == set(BOOK_MARKS)


def test_neutralise_keeps_what_is_not_a_mark():
    from ragcli.answer.citations import neutralise

    text = "See [3] and (p. 45); not [sic], (2019), (60 mg), x[1] or (1). Also ^[S1] and (see Figure 2-35)."
    assert neutralise(text) == ("See ⟨3⟩ and ⟨p. 45⟩; not [sic], (2019), (60 mg), x[1] or (1). Also ⟨S1⟩ and "
                                "⟨see Figure 2-35⟩.")
    assert neutralise("no brackets at all") == "no brackets at all"


def test_a_mark_written_again_by_a_model_stays_text_in_any_bracket():
    from ragcli.answer.citations import book_marks, validate

    marks = book_marks([INJECTED])
    out = validate("Per (source 2) and 【F7】, change it [S1]. Unknown [S9].", {"S1", "S2", "F7"},
                   book_marks=marks)
    assert out.text == "Per ⟨source 2⟩ and ⟨F7⟩, change it [S1]. Unknown."
    assert out.citations == ["S1"]
    assert [r.reason for r in out.removed] == ["book's own reference", "book's own reference", "unknown label"]
