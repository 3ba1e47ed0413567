"""docs/json.md's table of `--json` shapes is what the commands print: list or object, and the same fields.

Every command of the table runs once on a small corpus (the one-page FAA fixture), no model needed."""
from __future__ import annotations

import json
import re

from conftest import FIXTURE_PDFS, ROOT


def json_doc_shapes() -> dict[str, tuple[str, list[str]]]:
    """{"summary list": ("object", ["topic", ...]), ...} from the table in docs/json.md."""
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    table = text.split("| command | prints | fields (of each item of a list) |", 1)[1].split("\n\n", 1)[0]
    shapes = {}
    for row in table.strip().splitlines()[1:]:
        command, prints, fields = [c.strip() for c in row.strip("|").split("|")]
        fields = re.sub(r"\(and .*?\)", "", fields)  # optional fields are named in brackets
        for name in re.findall(r"`([^`]+)`", command):
            shapes[name] = (prints.split(",")[0], re.findall(r"`([^`]+)`", fields))
    return shapes


def test_readme_json_table_matches_every_command(cli, tmp_path, monkeypatch):
    shapes = json_doc_shapes()
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"question": "torque wrench", "book": "faa-amt-handbook-sample",
                                   "pages": [1]}) + "\n")
    folder = tmp_path / "library"
    folder.mkdir()
    (folder / "faa.pdf").write_bytes(FIXTURE_PDFS["faa"].read_bytes())
    monkeypatch.setenv("RAGCLI_VIEWER", "true {file}")

    def passage_id() -> str:
        return str(json.loads(cli("search", "torque wrench", "--json").stdout)[0]["passage_id"])

    runs = {
        "ingest": ["ingest", FIXTURE_PDFS["faa"]],
        "books": ["books"],
        "search": ["search", "torque wrench"],
        "ask": ["ask", "how is a torque wrench used?"],
        "info": ["info"],
        "models": ["models"],
        "summary new": ["summary", "new", "torque"],
        "summary show": ["summary", "show", "torque", "1"],
        "summary list": ["summary", "list", "torque"],
        "summary topics": ["summary", "topics"],
        "eval retrieval": ["eval", "retrieval", "--queries", queries],
        "reembed": ["reembed", "--embed-model", "sentence-transformers/all-MiniLM-L6-v2"],
        "sync": ["sync", folder],
        "show": lambda: ["show", passage_id()],
        "open": lambda: ["open", passage_id()],
        "ask -c": ["ask", "how is a torque wrench used?", "-c"],
        "conversations show": ["conversations", "show", "1"],
        "conversations list": ["conversations", "list"],
        "conversations export": ["conversations", "export", "1"],
        "books remove": ["books", "remove", "faa-amt-handbook-sample"],
    }
    assert set(runs) == set(shapes), "a command of the docs/json.md table is not run here, or the reverse"
    for name, args in runs.items():
        args = args() if callable(args) else args
        res = cli(*args, "--json")
        assert res.exit_code == 0, (name, res.stderr)
        data = json.loads(res.stdout)
        prints, fields = shapes[name]
        if prints == "list":
            assert isinstance(data, list) and data, name
            for item in data:
                assert list(item) == fields, name
        else:
            assert prints == "object" and isinstance(data, dict), name
            assert list(data) == fields, name
