"""The house rules of the repository's own files (issue 45).

The project speaks of itself by commits, dates, issue numbers and repository-relative paths: docs,
bench and tests never name how the work was organised (numbered working rounds, the checkouts they ran
in) nor a machine's absolute paths (data is `../shared/data/...`, a corpus a placeholder like `cert.db`).
A chat session, an HTTP session or pytest's session scope are the product's and the tools' words, and
stay. And every label file in bench/answers/labels/ has its provenance row in MANIFEST.jsonl."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "bench" / "answers" / "labels"

# Each pattern is written so that its own source text does not match it (this file is scanned too).
FORBIDDEN = re.compile("|".join(f"(?:{p})" for p in (
    r"\bsessions?[- ]\d",                                    # a numbered working round
    r"\b(?:this|past|previous|earlier|later|next|two|three|four|five|several)\s+sessions?\b",
    r"\bend of the session\b",
    r"\bwork[t]rees?\b",                                     # a checkout of the working process
    r"\bwt\d+[a-z]?\b",                                      # its names
    r"\(helpers?\)|\bhelpers?\s+(?:wt|session|engineer|agent)",
    r"(?<![\w.~-])/(?:work|root|home|Users|mnt)/",           # a machine's absolute paths
)), re.I)


def scanned() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    for folder in ("bench", "tests"):
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in (".md", ".py"))
    return [f for f in files if f.is_file()]


def test_the_project_speaks_of_itself():
    found = [f"{f.relative_to(ROOT)}:{i}: {m.group(0)!r}"
             for f in scanned() for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             for m in FORBIDDEN.finditer(line)]
    assert not found, ("say it with a commit, a date, an issue number or a repository-relative path:\n  "
                       + "\n  ".join(found))


def test_the_pattern_is_precise():
    word = "sess" + "ion"
    caught = [f"the {word} 13 run", f"{word}-7 records", f"{word}s 4-7", f"this {word}'s labels",
              f"twice in two {word}s", f"the end of the {word}", "helper " + "w" + "t34b", "the " + "work" + "tree",
              "/" + "work/shared/data",
              "/" + "root/models", "/" + "home/me/books.db"]
    allowed = [f"a chat {word}", f"an HTTP {word}", f'scope="{word}"', f"one {word} for the whole run",
               f"the {word} cache", "one GGUF save helper", "tests/serve_helpers.py", "../shared/data/pdfs",
               "/usr/bin/chromedriver", "/v1/chat/completions", f"Prompt{word.capitalize()}"]
    assert [s for s in caught if not FORBIDDEN.search(s)] == []
    assert [s for s in allowed if FORBIDDEN.search(s)] == []


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
