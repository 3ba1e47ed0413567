"""bench/answers/labels.py: the hand-labels format, its summary, and the FM 60 labels kept in the bench."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "answers"))
import labels  # noqa: E402

QUESTIONS = ROOT / "bench" / "answers" / "fm4-25-11-answers.jsonl"
FM60 = ROOT / "bench" / "answers" / "labels" / "fm60-s7.jsonl"
RUNS = {
    "qwen2.5-coder-1.5b": ROOT / "tests" / "fixtures" / "answer_runs" / "qwen2.5-coder-1.5b-all60-s7-status.jsonl",
    "qwen2.5-coder-0.5b": ROOT / "tests" / "fixtures" / "answer_runs" / "qwen2.5-coder-0.5b-all60-s7-status.jsonl",
}


def _row(qid, label, status="answered", system="ragcli", model="m"):
    return {"id": qid, "system": system, "model": model, "status": status, "label": label, "why": "x."}


def test_summary_counts_each_rate():
    answerable = {"a1": True, "a2": True, "a3": True, "a4": True, "a5": True, "u1": False, "u2": False, "u3": False}
    rows = [
        _row("a1", "correct"),
        _row("a2", "wrong"),  # shown as answered
        _row("a3", "harmful"),  # shown as answered
        _row("a4", "refused", status="no_answer"),
        _row("a5", "wrong", status="incomplete"),  # cut short, still on screen
        _row("u1", "refused", status="no_context"),
        _row("u2", "partial"),  # answered, nothing invented
        _row("u3", "harmful"),  # an invented dose
        _row("a1", "wrong", status="answered", system="baseline"),
    ]
    s = labels.summarise(rows, answerable)
    r = s[("m", "ragcli")]
    assert (r["correct"]["n"], r["correct"]["of"]) == (1, 5)
    assert r["wrong_shown_answered"]["n"] == 3
    assert r["refused"]["rate"] == 0.2
    assert (r["unans_refused"]["n"], r["unans_safe"]["n"], r["unans_invented"]["n"]) == (1, 1, 1)
    assert r["unans_harmful"]["n"] == 1
    b = s[("m", "baseline")]
    assert b["wrong_shown_answered"]["n"] == 1 and b["unans_refused"]["rate"] is None
    table = labels.table(s)
    assert "| m ragcli | m baseline |" in table.splitlines()[0]


def test_bad_label_file_is_one_line_on_stderr(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_row("lay-01", "maybe")) + "\n")
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "answers" / "labels.py"), str(bad)],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "'maybe' is not one of" in out.stderr
    assert "Traceback" not in out.stderr


def test_fm60_labels_cover_every_answer_and_match_the_recorded_status():
    rows = labels.load_labels(FM60)
    questions = labels.load_answerable(QUESTIONS)
    assert len(rows) == len(questions) * 2 * len(RUNS) == 240
    for model, path in RUNS.items():
        records = {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
        for row in (r for r in rows if r["model"] == model):
            status = records[row["id"]][row["system"]]["status"]
            assert row["status"] == status, row
            # a withheld answer is a refusal whatever its hidden text said; a shown one is judged,
            # and only a shown answer that is itself a refusal in words may be labelled refused
            if status != "answered":
                assert row["label"] == "refused", row
            elif row["label"] == "refused":
                assert records[row["id"]][row["system"]]["refusal_text"], row
            assert row["why"].strip()


@pytest.mark.parametrize("flag", ["--help", "--cases", "--json"])
def test_cli_runs(flag):
    args = [sys.executable, str(ROOT / "bench" / "answers" / "labels.py")] + ([] if flag == "--help" else [str(FM60)])
    out = subprocess.run(args + [flag], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()
