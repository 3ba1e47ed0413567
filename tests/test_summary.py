"""summary: numbering (also with two real processes at once), topic keys, read-back without a model,
staleness after `books remove` and `ingest --replace`, JSON shapes, extractive generation, and
generation with a fake chat model and with real llama.cpp (tiny model, forced grammar).

Uses the shared fixtures of conftest.py: `template_db` (sample book "primer" + fixture PDFs),
`corpus_db` (a private copy at $RAGCLI_DB), `cli`, `run_module`, `embedder`, `tiny_gguf`."""
from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragcli import summary
from ragcli.store import db
from ragcli.answer import prompt
from ragcli.answer.extractive import SUMMARY_SENTENCES
from ragcli.store import summaries as summary_store
from ragcli.errors import NotFoundError, UsageError
from ragcli.models.fake import FakeChatModel
from ragcli.models.grammars import forced_text_grammar

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "corpus" / "cerebrovascular-neurosurgery-primer.pdf"
BULLET = re.compile(r"^- (.+) \[([SF]\d+)\]$")
LABEL = re.compile(r"\[([SF]\d+)\]")


@pytest.fixture
def conn(corpus_db):
    c = db.connect(corpus_db)
    yield c
    c.close()


@pytest.fixture(scope="module")
def extractive(template_db, embedder, tmp_path_factory):
    """One extractive summary of "Aneurysms " (generated, not saved), shared by the module's tests."""
    path = tmp_path_factory.mktemp("summary") / "corpus.db"
    shutil.copyfile(template_db["path"], path)
    c = db.connect(path)
    try:
        return summary.generate(c, embedder, "Aneurysms ")
    finally:
        c.close()


def saved(conn, base, topic: str):
    """Save a copy of `base` under `topic` (numbering is the store's job, not generation's)."""
    s = copy.deepcopy(base)
    s.topic, s.topic_key = topic, summary.normalise_topic(topic)
    summary_store.insert_summary(conn, s)
    return s


# -- topic keys ----------------------------------------------------------------------------------

@pytest.mark.parametrize("typed", ["Aneurysms", "aneurysms ", "  ANEURYSMS", "aneurysms?", "«Aneurysms»",
                                   '"Aneurysms."', "(aneurysms)", "Aneurysms\u00a0"])
def test_topic_variants_share_one_key(typed):
    assert summary.normalise_topic(typed) == "aneurysms"


def test_topic_key_keeps_inner_text():
    assert summary.normalise_topic("Intracranial \t  Aneurysms") == "intracranial aneurysms"
    assert summary.normalise_topic("Subarachnoid hemorrhage (SAH)") == "subarachnoid hemorrhage (sah)"
    assert summary.normalise_topic("(SAH) and (AVM)") == "(sah) and (avm)"
    assert summary.normalise_topic("Straße") == "strasse"
    for empty in ("", "   ", "?!", "…"):
        with pytest.raises(UsageError):
            summary.normalise_topic(empty)


# -- numbering -----------------------------------------------------------------------------------

def test_numbers_follow_per_topic_across_spellings(conn, extractive):
    numbers = [saved(conn, extractive, t).number for t in ("Aneurysms", "aneurysms ", "ANEURYSMS?")]
    assert numbers == [1, 2, 3]
    assert saved(conn, extractive, "Craniotomy").number == 1
    assert saved(conn, extractive, "aneurysms").number == 4
    key, found = summary.history(conn, " AneurYSMS")
    assert key == "aneurysms" and [s.number for s in found] == [1, 2, 3, 4]
    assert [s.topic for s in found] == ["Aneurysms", "aneurysms ", "ANEURYSMS?", "aneurysms"]
    rows = {r["topic_key"]: r for r in summary.topics(conn)}
    assert rows["aneurysms"]["count"] == 4 and rows["aneurysms"]["latest_number"] == 4
    assert rows["craniotomy"]["count"] == 1


def test_schema_refuses_a_duplicate_number(conn, extractive):
    saved(conn, extractive, "aneurysms")
    with pytest.raises(db.sqlite3.IntegrityError):
        conn.execute("INSERT INTO summaries(topic, topic_key, number, kind, text, params, claims,"
                     " removed_citations, created_at) VALUES ('x', 'aneurysms', 1, 'extractive', '', '{}',"
                     " '[]', '[]', '2024-01-01')")


_WRITER = r"""
import sys, time
from pathlib import Path
from ragcli.store import db
from ragcli.store import summaries as summary_store
from ragcli.types import Summary

path, go, tag, n = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
conn = db.connect(path, create=False)
print("ready", flush=True)
while not go.exists():
    time.sleep(0.002)
got = []
for i in range(n):
    s = Summary(topic="Aneurysms", topic_key="aneurysms", number=0, text=f"{tag} {i}", sources=[],
                model=None, created_at="2024-01-01T00:00:00+00:00", kind="extractive")
    got.append(summary_store.insert_summary(conn, s))
print(" ".join(map(str, got)), flush=True)
"""


def test_two_processes_saving_at_once_get_distinct_gapless_numbers(corpus_db, tmp_path):
    go, n = tmp_path / "go", 25
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(corpus_db), str(go), tag, str(n)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for tag in ("a", "b")]
    for p in procs:  # both have the file open before either writes
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    go.touch()
    results = []
    for p in procs:
        out, errs = p.communicate(timeout=120)
        assert p.returncode == 0, errs
        results.append([int(x) for x in out.split()])
    for numbers in results:
        assert len(numbers) == n and numbers == sorted(numbers)
    assert sorted(results[0] + results[1]) == list(range(1, 2 * n + 1))
    c = db.connect(corpus_db)
    assert summary_store.numbers(c, "aneurysms") == list(range(1, 2 * n + 1))
    texts = [s.text for s in summary_store.summaries(c, "aneurysms")]
    assert sorted(texts) == sorted(f"{t} {i}" for t in "ab" for i in range(n))
    c.close()


def test_two_cli_summary_new_at_once(corpus_db, run_module):
    """Two real `ragcli summary new` processes (generation included) on one file."""
    env = {**os.environ, "RAGCLI_MODEL": ""}
    procs = [subprocess.Popen([sys.executable, "-m", "ragcli", "summary", "new", topic,
                               "--db", str(corpus_db), "--json"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for topic in ("aneurysms", "Aneurysms ")]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    assert sorted(json.loads(out)["number"] for out, _ in outs) == [1, 2]
    listed = run_module("summary", "list", "aneurysms", "--db", corpus_db, "--json")
    assert [s["number"] for s in json.loads(listed.stdout)["summaries"]] == [1, 2]


# -- extractive generation -----------------------------------------------------------------------

def test_extractive_summary_is_grouped_by_section_and_every_line_cited(extractive):
    s = extractive
    assert s.kind == "extractive" and s.model is None and s.number == 0
    assert s.topic == "Aneurysms" and s.topic_key == "aneurysms"
    by_label = {src.label: src for src in s.sources}
    blocks = s.text.split("\n\n")
    assert len(blocks) >= 2
    bullets = 0
    for block in blocks:
        heading, *lines = block.splitlines()
        assert heading.startswith("## ") and lines
        for line in lines:
            m = BULLET.match(line)
            assert m, line
            source = by_label[m[2]]
            assert source.cited
            assert " › ".join(source.section_path) in heading  # grouped under its own section
            assert m[1] in " ".join(source.text.split())  # a sentence of the book, verbatim
            bullets += 1
    assert 3 <= bullets <= SUMMARY_SENTENCES
    assert "aneurysm" in s.text.lower()
    assert any("Aneurysm" in " ".join(src.section_path) for src in s.sources if src.cited)
    assert {lab for lab in LABEL.findall(s.text)} == {src.label for src in s.sources if src.cited}
    assert len(s.claims) == bullets and all(c.citations for c in s.claims)
    assert s.params["k"] == 16 and s.params["retrieved"] == 16 and s.params["embedding_model"]


def test_topic_in_another_language_is_refused_and_saves_nothing(conn, embedder):
    before = summary.topics(conn)
    with pytest.raises(NotFoundError, match="looks Spanish.*nothing saved"):
        summary.new(conn, embedder, "qué pasa después de cortar el cráneo del paciente", None)
    assert summary.topics(conn) == before


def test_no_passages_is_an_error_and_saves_nothing(conn, embedder):
    with pytest.raises(NotFoundError, match="do not seem to cover"):
        summary.new(conn, embedder, "quantum chromodynamics of gluon plasma")
    assert summary.topics(conn) == []


def test_unknown_book_is_an_error(conn, embedder):
    with pytest.raises(NotFoundError, match="no book"):
        summary.generate(conn, embedder, "aneurysms", opts=summary.SummaryOptions(book_ids=["nope"]))


# -- generation with a model ---------------------------------------------------------------------

def test_generation_with_fake_model_validates_citations(conn, embedder):
    reply = ("## Rupture\n- Rupture causes subarachnoid hemorrhage [S1]. Invented [S99].\n"
             "## Treatment\n- Clipping or coiling is used (S2, Source 3). See Ref 4.\n")
    fake = FakeChatModel(lambda m: reply if "Summarise what the passages say" in m[-1]["content"] else "aneurysm rupture")
    # a topic in lay words (one of the book's own terms, "aneurysms", is not rewritten)
    s = summary.new(conn, embedder, "bulging weak spots in brain arteries", fake,
                    summary.SummaryOptions(max_tokens=300))
    assert len(fake.calls) == 2 and s.params["expanded_query"] == "aneurysm rupture"  # rewrite, then summary
    assert s.number == 1 and s.kind == "generated"
    assert s.model == {"name": "fake", "backend": "fake"}
    assert s.params["max_tokens"] == 300 and s.params["grammar"] is False
    assert "[S99]" not in s.text and "[S1]" in s.text and "[S2][S3]" in s.text
    assert {r.text for r in s.removed_citations} >= {"[S99]"}
    assert {src.label for src in s.sources if src.cited} == {"S1", "S2", "S3"}
    call = fake.calls[-1]
    system, user = call["messages"][0]["content"], call["messages"][1]["content"]
    assert call["stream"] and call["max_tokens"] == 300
    assert system == prompt.SYSTEM_PROMPT
    # the rewrite began with the same message, so llama.cpp (or a server) re-uses its KV cache
    assert fake.calls[0]["messages"][0] == call["messages"][0]
    labels_line = user.split("Labels you may cite: ")[1].split("\n")[0]
    assert all(f"[{src.label}]" in labels_line and f"[{src.label}]" in user for src in s.sources)
    assert "Summarise what the passages say about: bulging weak spots in brain arteries" in user
    assert not any(c.text.startswith("#") or c.text in ("Rupture", "Treatment") for c in s.claims)
    back = summary.get(conn, "Bulging weak spots in brain arteries", 1)
    assert back.text == s.text and back.removed_citations == s.removed_citations
    assert [c.text for c in back.claims] == [c.text for c in s.claims]
    assert back.sources[0].text == s.sources[0].text and back.status == "ok"


def test_prompt_is_fitted_to_a_small_window(conn, embedder):
    fake = FakeChatModel("## A\n- Aneurysms rupture [S1].", context_size=1500)
    s = summary.new(conn, embedder, "aneurysms", fake, summary.SummaryOptions(max_tokens=200, expand=False))
    assert 1 <= s.params["in_prompt"] < s.params["retrieved"]
    assert len(s.sources) == s.params["in_prompt"]  # only what the model saw is saved
    prompt_tokens = sum(fake.count_tokens(m["content"]) for m in fake.calls[-1]["messages"])
    assert prompt_tokens <= 1500 - 200


def test_model_saying_nothing_saves_nothing(conn, embedder):
    fake = FakeChatModel("The provided passages do not answer this.")
    with pytest.raises(NotFoundError, match="nothing saved"):
        summary.new(conn, embedder, "aneurysms", fake)
    assert summary.topics(conn) == []


def test_cli_generation_with_real_llama_cpp(corpus_db, cli, tiny_gguf, tmp_path):
    pytest.importorskip("llama_cpp")
    forced = ("## Rupture\n- An aneurysm can rupture [S1]. It bleeds [S9] (p. 45).\n"
              "## Care\n- Clips [S2, S40].\n")
    grammar = tmp_path / "forced.gbnf"
    grammar.write_text(forced_text_grammar(forced))
    result = cli("summary", "new", "Aneurysms", "--json", "--model", tiny_gguf, "--grammar-file", grammar,
                 "--no-expand", "--max-tokens", "96", "--ctx", "2048", "-k", "8")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["number"] == 1 and data["kind"] == "generated"
    assert data["model"]["backend"] == "llama.cpp" and data["model"]["path"].endswith("tiny.gguf")
    assert data["model"]["n_ctx"] == 2048 and data["params"]["grammar"] is True
    given = {s["label"] for s in data["sources"]}
    assert set(LABEL.findall(data["text"])) <= given and "S1" in data["citations"]
    assert data["text"].startswith("## Rupture\n- An aneurysm can rupture [S1].")
    assert "S40" not in data["text"] and "(p. 45)" not in data["text"]
    removed = " ".join(r["text"] for r in data["removed_citations"])
    assert "S40" in removed and "(p. 45)" in removed
    shown = cli("summary", "show", "aneurysms", "1", "--json")
    assert json.loads(shown.stdout)["text"] == data["text"]


# -- read back, staleness --------------------------------------------------------------------------

def _no_models(monkeypatch):
    """`show`, `list` and `topics` must not load an embedding model or a chat model."""
    from ragcli.models import embed
    from ragcli.models import factory

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(embed, "get_embedder", refuse)
    monkeypatch.setattr(factory, "load_model", refuse)
    monkeypatch.setenv("RAGCLI_MODEL", str(Path("/nonexistent/model.gguf")))


def test_show_list_topics_need_no_model(conn, extractive, cli, monkeypatch):
    saved(conn, extractive, "Aneurysms")
    saved(conn, extractive, "aneurysms")
    _no_models(monkeypatch)
    shown = cli("summary", "show", "ANEURYSMS", "2")
    assert shown.exit_code == 0, shown.output
    assert "Summary #2" in shown.stdout and "extractive summary" in shown.stdout
    assert extractive.text.splitlines()[0] in shown.stdout
    assert "[S" in shown.stdout and "Sources" in shown.stdout
    listed = cli("summary", "list", "aneurysms")
    assert listed.exit_code == 0 and "extractive" in listed.stdout
    topics = cli("summary", "topics")
    assert topics.exit_code == 0 and "aneurysms" in topics.stdout


def test_stale_after_books_remove(conn, extractive, cli):
    saved(conn, extractive, "aneurysms")
    cited = sorted(src.label for src in extractive.sources if src.cited)
    assert {src.book_id for src in extractive.sources if src.cited} == {"primer"}
    assert cli("books", "remove", "primer").exit_code == 0
    data = json.loads(cli("summary", "show", "aneurysms", "1", "--json").stdout)
    assert data["status"] == "stale" and sorted(data["stale_sources"]) == cited
    for src in data["sources"]:
        if src["book_id"] == "primer":
            assert src["status"] == "gone" and src["reason"] == "book removed"
            assert src["current_passage_id"] is None
    human = cli("summary", "show", "aneurysms", "1")
    assert human.exit_code == 0 and "stale" in human.stdout and "book removed" in human.stdout
    assert extractive.text.splitlines()[1][:40] in human.stdout  # still printed
    listed = json.loads(cli("summary", "list", "aneurysms", "--json").stdout)
    assert listed["summaries"][0]["status"] == "stale"


def _changed_copy(tmp_path: Path) -> Path:
    """The sample book with one sentence changed ("3% of adults" -> "7% of adults")."""
    import pymupdf

    out = tmp_path / "primer-changed.pdf"
    with pymupdf.open(SAMPLE) as doc:
        for page in doc:
            for rect in page.search_for("3% of adults"):
                page.add_redact_annot(rect, text="7% of adults", fontname="helv", fontsize=9)
            page.apply_redactions()
        doc.save(out)
    return out


def test_stale_after_ingest_replace_names_the_changed_sources(conn, extractive, cli, tmp_path):
    saved(conn, extractive, "aneurysms")
    before = {src.label: src for src in extractive.sources}
    result = cli("ingest", _changed_copy(tmp_path), "--id", "primer", "--replace")
    assert result.exit_code == 0, result.output
    data = json.loads(cli("summary", "show", "aneurysms", "1", "--json").stdout)
    now = {src["label"]: src for src in data["sources"]}
    gone = {lab for lab, src in now.items() if src["status"] == "gone"}
    moved = {lab for lab, src in now.items() if src["status"] == "moved"}
    assert gone and moved  # one passage's text changed; the others came back under new ids
    assert all(now[lab]["reason"] == "text changed" for lab in gone)
    assert any("3% of adults" in before[lab].text for lab in gone)
    assert not any("3% of adults" in before[lab].text for lab in moved)
    for lab in moved:
        assert now[lab]["current_passage_id"] != before[lab].passage_id
    cited_gone = sorted(lab for lab in gone if before[lab].cited)
    assert sorted(data["stale_sources"]) == cited_gone
    assert data["status"] == ("stale" if cited_gone else "ok")


def test_unchanged_reingest_is_not_stale(conn, extractive):
    s = saved(conn, extractive, "aneurysms")
    assert summary.get(conn, "aneurysms", s.number).status == "ok"
    assert all(src.status == "ok" for src in summary.get(conn, "aneurysms", 1).sources)


# -- errors and JSON shapes ------------------------------------------------------------------------

def test_errors_have_clear_messages_and_exit_codes(conn, extractive, cli):
    none = cli("summary", "show", "aneurysms", "1")
    assert none.exit_code == 5 and "no summaries of 'aneurysms' yet" in none.stderr
    assert "summary new" in none.stderr
    saved(conn, extractive, "aneurysms")
    saved(conn, extractive, "aneurysms")
    out_of_range = cli("summary", "show", "aneurysms", "7")
    assert out_of_range.exit_code == 5
    assert "no summary #7" in out_of_range.stderr and "#1 to #2" in out_of_range.stderr
    assert cli("summary", "show", "aneurysms", "0").exit_code == 2
    assert cli("summary", "new", " ?? ").exit_code == 2
    off_topic = cli("summary", "new", "quantum chromodynamics of gluon plasma")
    assert off_topic.exit_code == 5 and "nothing saved" in off_topic.stderr
    assert cli("summary", "new", "aneurysms", "--book", "nope").exit_code == 5
    assert "Traceback" not in off_topic.output


def test_list_of_a_topic_with_none_suggests_new(cli, corpus_db):
    result = cli("summary", "list", "Vasospasm")
    assert result.exit_code == 0 and result.stdout == ""
    assert "no summaries of 'Vasospasm' yet" in result.stderr
    assert 'ragcli summary new "Vasospasm"' in " ".join(result.stderr.split())
    data = json.loads(cli("summary", "list", "Vasospasm", "--json").stdout)
    assert data == {"topic": "Vasospasm", "topic_key": "vasospasm", "count": 0, "summaries": []}
    assert json.loads(cli("summary", "topics", "--json").stdout) == []


SUMMARY_KEYS = {"topic", "topic_key", "number", "kind", "status", "stale_sources", "created_at", "text",
                "citations", "books", "model", "params", "claims", "removed_citations", "sources",
                "warnings", "supported_share"}
SOURCE_KEYS = {"label", "cited", "kind", "book_id", "book_title", "section_path", "page_label", "page",
               "page_end", "figure_number", "passage_id", "text_hash", "status", "reason",
               "current_passage_id", "text"}


def test_json_shapes(cli, corpus_db):
    new = cli("summary", "new", "Aneurysms", "--json")
    assert new.exit_code == 0, new.output
    data = json.loads(new.stdout)
    assert set(data) == SUMMARY_KEYS | {"saved"} and data["saved"] is True
    assert data["number"] == 1 and data["kind"] == "extractive" and data["model"] is None
    assert data["books"][0] == "primer" and data["status"] == "ok"
    assert all(set(src) == SOURCE_KEYS for src in data["sources"])
    assert all(re.fullmatch(r"[0-9a-f]{64}", src["text_hash"]) for src in data["sources"])
    assert all(set(c) >= {"text", "citations", "support"} for c in data["claims"])
    shown = json.loads(cli("summary", "show", "aneurysms", "1", "--json").stdout)
    assert set(shown) == SUMMARY_KEYS
    assert {k: shown[k] for k in ("text", "number", "topic_key", "citations", "created_at")} == \
        {k: data[k] for k in ("text", "number", "topic_key", "citations", "created_at")}
    listed = json.loads(cli("summary", "list", "aneurysms", "--json").stdout)
    assert set(listed) == {"topic", "topic_key", "count", "summaries"} and listed["count"] == 1
    assert set(listed["summaries"][0]) == {"number", "created_at", "kind", "model", "books", "sources",
                                           "cited", "status", "stale_sources", "warnings", "supported_share"}
    assert listed["summaries"][0]["cited"] == len(data["citations"])
    topics = json.loads(cli("summary", "topics", "--json").stdout)
    assert topics == [{"topic": "Aneurysms", "topic_key": "aneurysms", "count": 1, "latest_number": 1,
                       "latest_at": data["created_at"]}]


# -- schema ----------------------------------------------------------------------------------------

def test_migration_upgrades_a_file_without_summary_tables(tmp_path):
    path = tmp_path / "old.db"
    c = db.connect(path)
    c.execute("DROP TABLE summary_sources")
    c.execute("DROP TABLE summaries")
    c.execute("DELETE FROM migrations WHERE name = 'm004_summaries'")
    c.close()
    c = db.connect(path)
    names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"summaries", "summary_sources"} <= names
    assert "m004_summaries" in {r[0] for r in c.execute("SELECT name FROM migrations")}
    c.close()
