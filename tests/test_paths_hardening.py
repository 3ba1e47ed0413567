"""Files a client names (issue 44): MCP `ingest` opens each file once and reads its hash and text from
that descriptor, so a file swapped for a link to an outside file between the check and the read is
never stored; a hard link to an outside file is refused; a 5,000-character path is a one-line error;
walking `.` calls the real `sub` folder by its name and the link to it the repeat; upload names are
reduced to a safe set and length and never replace a file.
"""
from __future__ import annotations

import os
import shutil
import threading

import pytest

from ragcli.errors import UsageError
from ragcli.ingest import paths

SECRET = "# Outside notes\n\nThe zorbliquant cipher is kept outside the allowed folder.\n"
INSIDE = "# Inside notes\n\nThe quillimorph valve sits inside the allowed folder.\n"


@pytest.fixture
def library(template_db, embedder, tmp_path):
    from ragcli.serve.library import Library

    db = tmp_path / "corpus.db"
    shutil.copyfile(template_db["path"], db)
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    return Library(db, embedder, ingest_root=allowed), allowed


def test_a_file_swapped_for_an_outside_link_is_never_read(library, tmp_path):
    """7df4928 stored the outside file's text in 3 of 40 tries (stat, hash and parse each opened the name)."""
    lib, allowed = library
    outside = tmp_path / "outside.md"
    outside.write_text(SECRET)
    stop = threading.Event()
    results = []

    def swap(n: int) -> None:
        target = allowed / f"notes{n}.md"
        while not stop.is_set():
            tmp = allowed / f".swap{n}"
            tmp.write_text(INSIDE + f"\nCopy {n}.\n")
            os.replace(tmp, target)
            link = allowed / f".link{n}"
            try:
                os.symlink(outside, link)
                os.replace(link, target)
            except FileExistsError:
                pass

    for n in range(40):
        stop.clear()
        t = threading.Thread(target=swap, args=(n,), daemon=True)
        t.start()
        try:
            results += lib.ingest(f"notes{n}.md")
        except Exception as exc:  # noqa: BLE001 - a refusal is a fine outcome here
            results.append({"status": "refused", "error": str(exc)})
        stop.set()
        t.join(5)
    hits = lib.search("zorbliquant cipher", mode="lexical", k=5)
    assert not any("zorbliquant" in h["text"] for h in hits), hits
    assert not any("outside.md" in (b.get("path") or "") for b in lib.books())
    added = [r for r in results if r.get("status") == "added"]
    assert all(str(allowed) in r["path"] for r in added), added
    print(f"swap race: {len(added)} of 40 ingested from inside, {len(results) - len(added)} refused or failed, "
          f"0 outside")


def test_a_swap_right_after_the_check_is_refused(library, tmp_path, monkeypatch):
    """The race made certain: the file becomes a link to an outside file just after its real path was
    checked (inside the folder), before anything is read. 7df4928 then read the outside file by name."""
    lib, allowed = library
    outside = tmp_path / "outside.md"
    outside.write_text(SECRET)
    target = allowed / "notes.md"
    target.write_text(INSIDE)
    checked = paths.real

    def real_then_swapped(path):
        found = checked(path)
        if os.path.basename(str(path)) == "notes.md" and not os.path.islink(target):
            link = allowed / ".swap"
            os.symlink(outside, link)
            os.replace(link, target)  # the attacker wins the race here
        return found

    monkeypatch.setattr(paths, "real", real_then_swapped)
    try:
        report = lib.ingest("notes.md")
    except UsageError as exc:  # refused as a whole: as good
        report = [{"status": "failed", "error": str(exc)}]
    assert [r["status"] for r in report] == ["failed"], report
    assert not any("zorbliquant" in h["text"] for h in lib.search("zorbliquant cipher", mode="lexical", k=5))


def test_a_hard_link_to_an_outside_file_is_refused(library, tmp_path):
    lib, allowed = library
    outside = tmp_path / "outside.md"
    outside.write_text(SECRET)
    os.link(outside, allowed / "linked.md")
    report = lib.ingest("linked.md")
    assert [r["status"] for r in report] == ["failed"] and "hard links" in report[0]["error"], report
    assert not any("zorbliquant" in h["text"] for h in lib.search("zorbliquant", mode="lexical", k=5))


def test_a_long_path_and_a_nul_are_one_line_usage_errors(library):
    lib, allowed = library
    for path in ("a" * 5000 + ".pdf", "/".join(["b" * 200] * 30), "x" * 300 + ".md"):
        with pytest.raises(UsageError, match="too long"):
            lib.ingest(path)


def test_walking_dot_names_the_real_folder_not_the_link(tmp_path):
    root = tmp_path / "books"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.pdf").write_bytes(b"%PDF-1.4")
    os.symlink("sub", root / "a-link")  # sorts before `sub`
    walked = paths.walk(root, [root])
    assert [os.path.relpath(f, root) for f, _ in walked.files] == ["sub/a.pdf"]
    assert [os.path.basename(d) for d in walked.loops] == ["a-link"], walked.loops


def test_opened_checks_the_descriptor(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.md").write_text(INSIDE)
    (tmp_path / "out.md").write_text(SECRET)
    os.symlink(tmp_path / "out.md", root / "out-link.md")
    with paths.opened(root / "a.md", [root]) as one:
        assert one.read_from.read_text() == INSIDE and one.read_from.name == "a.md"
        os.replace(tmp_path / "out.md", root / "a.md")  # swapped after the open: the descriptor still reads the old
        assert one.read_from.read_text() == INSIDE
    with pytest.raises(UsageError, match="outside"):
        with paths.opened(root / "out-link.md", [root]):
            pass
    os.mkfifo(root / "pipe.md")
    with pytest.raises(UsageError, match="regular"):
        with paths.opened(root / "pipe.md", [root]):
            pass


@pytest.mark.parametrize("name, safe", [
    ("notes.md", "notes.md"), ("../../escape.md", "escape.md"), ("\nnotes.md", "notes.md"),
    ("%0a.md".replace("%0a", "\n"), "upload.md"), ("Über Bücher.PDF", "Uber Bucher.pdf"),
    ("a\x00b.md", "a_b.md"), ("x" * 300 + ".md", "x" * 117 + ".md"), ("-rf .md", "rf.md"), (".md", "upload.md"),
    ("\x1b]0;title\x07.md", "0_title.md"), ("C:\\Windows\\evil.txt", "evil.txt"),
])
def test_upload_names_are_reduced_to_a_safe_set(name, safe):
    assert paths.safe_upload_name(name, (".md", ".pdf", ".txt")) == safe


@pytest.mark.parametrize("name", ["", "run.sh", "notes", "\x00", "...."])
def test_upload_names_without_a_known_suffix_are_refused(name):
    with pytest.raises(UsageError):
        paths.safe_upload_name(name, (".md", ".pdf"))


def test_create_exclusive_never_replaces(tmp_path):
    (tmp_path / "a.md").write_text("first")
    (tmp_path / ".part").write_text("second")
    with pytest.raises(UsageError, match="already in"):
        paths.create_exclusive(tmp_path, "a.md", tmp_path / ".part")
    assert (tmp_path / "a.md").read_text() == "first"
    made = paths.create_exclusive(tmp_path, "b.md", tmp_path / ".part")
    assert made.read_text() == "second" and not (tmp_path / ".part").exists() and os.stat(made).st_nlink == 1


def test_a_pdf_whose_name_is_not_utf8_is_refused_in_one_line(run_module, tmp_path):
    """7df4928: "cannot be read as a PDF" (MuPDF takes names as UTF-8), and storing the name failed. The
    corpus keeps paths as text: such a name is refused with exit 3 and the advice to rename it, never
    an internal error; the PDF itself opens (pdf.mupdf_open reads it from its bytes)."""
    from conftest import FIXTURE_PDFS
    from ragcli.ingest import pdf

    folder = tmp_path / "books"
    folder.mkdir()
    name = os.fsdecode(b"\xffhandbook.pdf")
    shutil.copyfile(FIXTURE_PDFS["faa"], folder / name)
    assert pdf.parse(folder / name, ocr="never").sections
    res = run_module("ingest", str(folder / name), "--db", str(tmp_path / "c.db"))
    line = [x for x in res.stderr.splitlines() if x.startswith("error")]
    assert res.returncode == 3 and len(line) == 1 and "not valid UTF-8; rename" in line[0], res.stderr
    assert "\\xffhandbook.pdf" in line[0]
