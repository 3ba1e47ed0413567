"""What the page says (serve/words.py): messages without server paths or flags, an answer's status
and reason in words, a summary's Markdown as safe HTML; and the private-use bullets of symbol fonts
mapped to the characters they draw (text.public_chars), at ingest and for passages stored before."""
from __future__ import annotations

import re

from ragcli.serve import words
from ragcli.text import public_chars

HOSTILE = """# Care <script>alert(1)</script>

<img src=x onerror="alert(2)"> **bold** [S1]

[click](javascript:alert(3)) [data](data:text/html,<b>x</b>) [ok](https://example.org/a"b)

<iframe src="https://example.org"></iframe>

- <a href="javascript:alert(4)">raw link</a>
- `<svg onload=alert(5)>`
"""


def test_messages_lose_server_paths_and_command_line_hints():
    cases = {
        "the file of book 'x' moved or is gone: /srv/books/x.pdf; `ragcli sync FOLDER` follows a moved file":
            "the file of book 'x' moved or is gone: x.pdf",
        "uploading is off: start the server with --allow-ingest FOLDER": "uploading is off",
        "not saved: the model repeated itself (`--keep-weak` saves it anyway)": "not saved: the model repeated itself",
        "no summaries of 'x' yet: make one with `ragcli summary new x`": "no summaries of 'x' yet",
        "book 'x' has no page 999": "book 'x' has no page 999",
    }
    for said, shown in cases.items():
        assert words.for_reader(said) == shown


def test_a_withheld_answer_says_why_in_words_and_keeps_the_figures_for_later():
    data = {"status": "no_answer", "reason": "far_passages",
            "notice": "not answered: the passages the answer rests on are about something else than the question "
                      "(their best cosine to it is 0.348, under 0.42); the model cited no passage; ragcli found "
                      "the passage each supported sentence comes from: [S4]"}
    said = words.answer_words(data)
    assert said["status"] == "Not answered"
    assert said["words"] == "The passages found are about something else."
    assert "0.348" in said["details"] and "ragcli found" not in said["details"]
    saved = {"status": "no_answer", "notice": data["notice"]}  # a saved turn keeps no reason field
    assert words.answer_words(saved)["words"] == said["words"]
    assert words.answer_words({"status": "answered", "notice": None}) == {
        "status": "Answered from the books", "words": "", "details": ""}


def test_an_answer_no_sentence_of_which_its_passage_states_says_so():
    """Read on the page with the 0.5B on the CERT manual: "PASS stands for Portable Fire Extinguishers
    [S5]", one weak sentence, stood under a green "Answered from the books" and nothing else."""
    weak = {"status": "answered", "notice": None, "claims": [{"text": "PASS stands for ...", "support": "weak"}]}
    assert words.answer_words(weak)["words"] == words.WEAK_WORDS
    mixed = dict(weak, claims=[{"support": "weak"}, {"support": "supported"}])
    assert words.answer_words(mixed)["words"] == ""
    quoted = dict(weak, claims=[{"support": "quoted"}])
    assert words.answer_words(quoted)["words"] == ""
    withheld = dict(weak, status="no_answer")
    assert words.answer_words(withheld)["words"] != words.WEAK_WORDS


def test_hostile_markdown_becomes_inert_html():
    out = words.markdown_html(HOSTILE)
    assert "<h4>Care &lt;script&gt;alert(1)&lt;/script&gt;</h4>" in out
    assert "<strong>bold</strong>" in out and "[S1]" in out
    tags = set(re.findall(r"<\s*([a-zA-Z0-9]+)", out))
    assert tags <= words.ALLOWED | {"h4", "h5"}, tags
    assert not re.search(r"<(script|img|iframe|svg)", out)
    hrefs = re.findall(r'<a href="([^"]*)"', out)  # in a tag (escaped markup is text)
    assert hrefs == ["https://example.org/a%22b"], hrefs
    for tag, attrs in re.findall(r"<(\w+)([^>]*)>", out):  # no attribute but a checked link's
        assert tag == "a" or not attrs.strip(), (tag, attrs)
    assert words.sanitise('<p onclick="x()">a<script>b</script><b>c') == "<p>abc</p>"


def test_symbol_font_bullets_become_their_characters():
    assert public_chars("\uf0a7 Check the scene \uf0b7 twice") == "▪ Check the scene • twice"
    assert public_chars("\uf06c Call for help") == "● Call for help"
    assert public_chars("\ue123 unknown mark") == "• unknown mark"
    assert public_chars("x\ue123y") == "x\ue123y"  # not a bullet: left as it is
    assert public_chars("plain text") == "plain text"


def test_a_book_with_symbol_bullets_is_stored_and_read_with_real_bullets(embedder, tmp_path):
    from ragcli.ingest import pipeline
    from ragcli.store import corpus, db

    book = tmp_path / "bullets.md"
    book.write_text("# Scene safety\n\n\uf0a7 Check the scene for hazards before you approach the casualty.\n\n"
                    "\uf0a7 Wear gloves when you touch blood.\n", encoding="utf-8")
    conn = db.connect(tmp_path / "c.db")
    pipeline.ingest_file(conn, book, embedder)
    stored = [t for (t,) in conn.execute("SELECT text FROM passages")]
    assert stored and not any("\uf0a7" in t for t in stored) and any("▪ Check the scene" in t for t in stored)
    # a passage stored before the mapping existed is read with the bullet mapped too
    pid = conn.execute("SELECT id FROM passages LIMIT 1").fetchone()[0]
    with conn:
        conn.execute("UPDATE passages SET text = '\uf0b7 ' || text WHERE id = ?", (pid,))
    assert corpus.fetch_hits(conn, [pid])[pid].text.startswith("• ")
    conn.close()
