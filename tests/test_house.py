"""The house rules of the repository's own files (issue 45): the provenance of every label file is recorded."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "bench" / "answers" / "labels"


def test_every_label_file_has_its_provenance_in_the_manifest():
    rows = [json.loads(line) for line in (LABELS / "MANIFEST.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    listed = [r["file"] for r in rows]
    on_disk = sorted(p.name for p in LABELS.glob("*.jsonl") if p.name != "MANIFEST.jsonl")
    assert len(listed) == len(set(listed)), "a file listed twice in MANIFEST.jsonl"
    assert sorted(listed) == on_disk, "labels/ and MANIFEST.jsonl disagree: add or remove the file's row"
    for r in rows:
        assert r["kind"] in {"labels", "run", "graded-texts"}, r
        assert len(r["added_in"]) >= 7 and all(c in "0123456789abcdef" for c in r["added_in"]), r
        assert len(r["date"]) == 10 and r["date"][4] == "-", r
        assert r["set"] and r["config"], r
        if r["kind"] != "graded-texts":
            assert r["models"], r
