"""One rule for what ragcli reads under a folder (ingest/paths.py), checked through each of its users:
`ingest FOLDER`, `sync`, `sync --watch` and MCP `ingest` (tests/test_serve_mcp.py). The escapes and
loops are built here in a temporary folder: a symlink to a file outside (the system's hostname file,
a PDF), a symlink to a folder outside, two loops (`ln -s . a; ln -s . b`)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from conftest import FIXTURE_PDFS

pymupdf = pytest.importorskip("pymupdf")


def escapes(tmp_path: Path) -> tuple[Path, Path]:
    """allowed/ with one real PDF, links leaving it (a file, a PDF, a folder) and two loops; outside/."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "sub").mkdir(parents=True)
    outside.mkdir()
    shutil.copyfile(FIXTURE_PDFS["malawi"], allowed / "sub" / "inside.pdf")
    shutil.copyfile(FIXTURE_PDFS["heart"], outside / "secret.pdf")
    (outside / "secret.html").write_text("<html><body><p>" + "hostname-secret-words " * 40 + "</p></body></html>")
    os.symlink(outside / "secret.html", allowed / "sub" / "host.html")
    os.symlink(outside / "secret.pdf", allowed / "sub" / "link-out.pdf")
    os.symlink(outside, allowed / "sub" / "outdir")
    os.symlink(".", allowed / "a")
    os.symlink(".", allowed / "b")
    os.symlink(allowed / "sub" / "inside.pdf", allowed / "same-book.pdf")  # inside: followed
    return allowed, outside


def test_walk_skips_links_leaving_the_root_and_visits_each_folder_once(tmp_path):
    from ragcli.ingest.paths import walk

    allowed, outside = escapes(tmp_path)
    t0 = time.perf_counter()
    walked = walk(allowed, [allowed])
    assert time.perf_counter() - t0 < 5  # two loops: linear, not 2^depth
    names = sorted(os.path.relpath(p, allowed) for p, _ in walked.files)
    assert names == ["same-book.pdf", "sub/inside.pdf"], names
    assert sorted(Path(link).name for link, _ in walked.escaped) == ["host.html", "link-out.pdf", "outdir"]
    assert all(not target.startswith(str(allowed)) for _, target in walked.escaped)
    assert sorted(Path(d).name for d in walked.loops) == ["a", "b"]  # each loop seen once and cut
    assert len(walked.notes()) == 5


def test_walk_refuses_a_start_outside_the_root(tmp_path):
    from ragcli.ingest.paths import walk

    allowed, outside = escapes(tmp_path)
    with pytest.raises(ValueError):
        walk(allowed / "sub" / "outdir", [allowed])


def test_ingest_folder_reads_nothing_outside_it(cli, tmp_path):
    allowed, outside = escapes(tmp_path)
    res = cli("ingest", allowed, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    paths = [r["path"] for r in report]
    assert not any("host.html" in p or "link-out" in p or "outdir" in p for p in paths), paths
    assert "links outside the allowed folder" in res.stderr and "a symlink loop" in res.stderr
    res = cli("search", "hostname-secret-words", "--json")
    assert "hostname-secret-words" not in res.stdout


def test_sync_with_two_loops_and_escapes_ends_at_once(cli, tmp_path):
    allowed, outside = escapes(tmp_path)
    t0 = time.perf_counter()
    res = cli("sync", allowed, "--json")
    assert time.perf_counter() - t0 < 120
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    paths = sorted(os.path.relpath(c["path"], allowed) for c in report["changes"])
    assert paths == ["same-book.pdf", "sub/inside.pdf"], paths  # no a/a/b/... copies, nothing outside
    assert report["counts"]["added"] == 1 and report["counts"]["linked"] == 1
    assert len(report["skipped"]) == 5
    assert res.stderr.count("links outside the allowed folder") == 3


def test_dry_run_does_not_plan_what_the_real_sync_fails_on(cli, tmp_path):
    folder = tmp_path / "library"
    folder.mkdir()
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "not-a-pdf.pdf").write_text("just some text, renamed")
    real = cli("sync", folder, "--json")  # first: a dry run needs a corpus already there
    dry = cli("sync", folder, "--dry-run", "--json")
    planned = {Path(c["path"]).name: c["status"] for c in json.loads(dry.stdout)["changes"]}
    done = {Path(c["path"]).name: c["status"] for c in json.loads(real.stdout)["changes"]}
    assert planned == done == {"empty.pdf": "failed", "not-a-pdf.pdf": "failed"}, (planned, done)
    assert dry.exit_code == real.exit_code == 3


def test_watch_says_when_its_folder_goes_and_syncs_it_when_it_is_back(tmp_path, embedder):
    from test_sync import make_pdf
    from test_sync_watch import Watcher

    pytest.importorskip("watchfiles")
    folder = tmp_path / "library"
    folder.mkdir()
    make_pdf(folder / "first.pdf", "first")
    watcher = Watcher(folder)
    try:
        watcher.wait_for(lambda: watcher.done("first.pdf"), what="the first file")
        shutil.rmtree(folder)
        watcher.wait_for(lambda: any(e.get("status") == "missing" for e in watcher.events), timeout=30,
                         what="the folder reported missing")
        assert any("the folder is gone" in line for line in watcher.stderr)
        folder.mkdir()
        make_pdf(tmp_path / "second.pdf", "second")
        os.replace(tmp_path / "second.pdf", folder / "second.pdf")
        watcher.wait_for(lambda: watcher.done("second.pdf"), timeout=60, what="a file in the re-created folder")
        assert any(e.get("status") == "back" for e in watcher.events)
        make_pdf(tmp_path / "third.pdf", "third")
        os.replace(tmp_path / "third.pdf", folder / "third.pdf")
        watcher.wait_for(lambda: watcher.done("third.pdf"), timeout=60, what="the new folder watched again")
        watcher.proc.send_signal(signal.SIGINT)
        assert watcher.proc.wait(timeout=60) == 0
    finally:
        if watcher.proc.poll() is None:
            watcher.proc.kill()
    assert "Traceback" not in "".join(watcher.stderr)
