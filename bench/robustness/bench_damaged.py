"""Damaged PDFs: is every copy that lost text refused or warned about, and are intact copies left alone?

    python bench/robustness/bench_damaged.py --pdfs ../shared/data/pdfs [--out /tmp/damaged] [--json FILE]

For every real PDF of --pdfs, 15 damaged copies are made (seeded, so every run makes the same bytes):
  trunc-30 .. trunc-99.5   the file cut at 30%, 50%, 70%, 85%, 95% and 99.5% of its bytes
  flip-content-1/-3/-10%   20 bytes flipped in the middle of 1, 3 or 10% of the page content streams
  swap-content-1/-3/-10%   two 24-byte runs swapped inside 1, 3 or 10% of the page content streams
  flip-font, flip-image    20 bytes flipped in one embedded font / one image stream (a file without
                           such a stream gets it in a content stream instead)
  zero-xref, zero-xref-all the cross-reference section zeroed (startxref kept / zeroed too)

Each clean file, then each copy, is ingested by `ragcli.ingest.pipeline.ingest_file` (the function behind
`ragcli ingest`) into one temporary corpus per source file, with the default ingest embedder (a copy's
unchanged passages reuse the clean file's vectors, so only changed text is embedded). A copy *loses*
passages when it keeps fewer than the clean file, and *words* when the multiset of words of its
passages misses some of the clean file's (a count can stay equal while a page's text is gone).
Outcomes: refused (a RagcliError: what the CLI turns into a one-line error and exit 3), warned
(ingested with `warnings`), silent (ingested, no warning), traceback (any other exception, or over
120 s). Bars (issue 17): every copy losing >= 10% of the clean
passages refused or warned (recall 1.0); fewer than 1 in 10 copies that lose nothing warned; 0 tracebacks.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
import random
import re
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TIMEOUT = 600  # a copy still ingesting after this long counts as a hang


# -- making damaged copies -------------------------------------------------------------------------

def _stream_spans(data: bytes, xrefs: list[int]) -> list[tuple[int, int]]:
    """(start, end) byte spans of the raw data of these objects' streams."""
    spans = []
    for xref in xrefs:
        m = re.search(rb"(?<![0-9])%d\s+0\s+obj\b" % xref, data)
        if not m:
            continue
        s = re.compile(rb"stream\r?\n").search(data, m.end())
        e = data.find(b"endstream", s.end()) if s else -1
        if s and e > s.end() + 64 and e - m.end() < len(data):
            spans.append((s.end(), e))
    return spans


def _kinds(path: Path) -> dict[str, list[int]]:
    """xrefs of page content streams, embedded font files and images (from the clean file)."""
    import pymupdf

    doc = pymupdf.open(str(path))
    content, fonts, images = [], set(), set()
    for page in doc:
        content += page.get_contents()
        fonts.update(f[0] for f in page.get_fonts(full=True))
        images.update(i[0] for i in page.get_images(full=True))
    font_files = set()
    for xref in fonts:
        desc = doc.xref_get_key(xref, "FontDescriptor")
        if desc[0] == "xref":
            dx = int(desc[1].split()[0])
            for key in ("FontFile", "FontFile2", "FontFile3"):
                ff = doc.xref_get_key(dx, key)
                if ff[0] == "xref":
                    font_files.add(int(ff[1].split()[0]))
    doc.close()
    return {"content": sorted(set(content)), "font": sorted(font_files), "image": sorted(images)}


def _flip(data: bytearray, span: tuple[int, int], rng: random.Random, n: int = 20) -> None:
    start, end = span
    mid = start + (end - start) // 3 + rng.randrange(max(1, (end - start) // 3))
    for k in range(n):
        pos = min(end - 1, mid + k * 3)
        data[pos] ^= 0xFF


def _swap(data: bytearray, span: tuple[int, int], rng: random.Random, n: int = 24) -> None:
    start, end = span
    if end - start < 4 * n:
        return _flip(data, span, rng)
    a = start + rng.randrange((end - start) // 2 - n)
    b = start + (end - start) // 2 + rng.randrange((end - start) // 2 - n)
    data[a:a + n], data[b:b + n] = data[b:b + n], data[a:a + n]


def _zero_xref(data: bytearray, startxref_too: bool) -> None:
    """Zero the last cross-reference section (a table from `xref` to `trailer`, or an xref stream)."""
    m = list(re.finditer(rb"startxref\s+(\d+)", data))
    if not m:
        return
    off = int(m[-1].group(1))
    if 0 < off < len(data):
        end = data.find(b"trailer", off)
        if end < 0 or end - off > 5_000_000:  # an xref stream: zero its object
            end = data.find(b"endobj", off)
        end = end if end > off else min(len(data), off + 2000)
        data[off:end] = bytes(end - off)
    if startxref_too:
        s, e = m[-1].span(1)
        data[s:e] = b"0" * (e - s)


def damaged_copies(src: Path, out: Path) -> list[tuple[str, Path]]:
    """The 15 damaged copies of one PDF (seeded by its name)."""
    data = src.read_bytes()
    kinds = _kinds(src)
    rng = random.Random(src.name)
    made: list[tuple[str, bytes]] = []
    for frac in (0.30, 0.50, 0.70, 0.85, 0.95, 0.995):
        made.append((f"trunc-{frac * 100:g}", data[: int(len(data) * frac)]))
    content = _stream_spans(data, kinds["content"])
    for name, count in (("flip-content-1", 1), ("flip-content-3", 3),
                        ("flip-content-10%", max(1, len(content) // 10))):
        buf = bytearray(data)
        for span in rng.sample(content, min(count, len(content))):
            _flip(buf, span, rng)
        made.append((name, bytes(buf)))
    for name, count in (("swap-content-1", 1), ("swap-content-3", 3),
                        ("swap-content-10%", max(1, len(content) // 10))):
        buf = bytearray(data)
        for span in rng.sample(content, min(count, len(content))):
            _swap(buf, span, rng)
        made.append((name, bytes(buf)))
    for name, kind in (("flip-font", "font"), ("flip-image", "image")):
        spans = _stream_spans(data, kinds[kind]) or content
        buf = bytearray(data)
        _flip(buf, rng.choice(spans), rng)
        made.append((name, bytes(buf)))
    for name, both in (("zero-xref", False), ("zero-xref-all", True)):
        buf = bytearray(data)
        _zero_xref(buf, both)
        made.append((name, bytes(buf)))
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, blob in made:
        p = out / f"{src.stem}--{name}.pdf"
        p.write_bytes(blob)
        paths.append((name, p))
    return paths


# -- ingesting ---------------------------------------------------------------------------------------

def _words(conn, book_id: str) -> Counter:
    """Every word of a book's passages (a multiset): text lost by a copy is missing from it."""
    rows = conn.execute("SELECT text FROM passages WHERE book_id = ?", (book_id,)).fetchall()
    return Counter(w for (text,) in rows for w in re.findall(r"\w+", text.lower()))


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout()


def ingest_one(conn, path: Path, embedder, book_id: str) -> dict:
    from ragcli.errors import RagcliError
    from ragcli.ingest import pipeline

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    t0 = time.perf_counter()
    try:
        r = pipeline.ingest_file(conn, path, embedder, book_id=book_id)
        words = _words(conn, r.book_id)
        out = {"words": words, "outcome": "warned" if getattr(r, "warnings", None) else "silent", "passages": r.passages,
               "pages": r.pages, "warnings": list(getattr(r, "warnings", []) or []),
               "unreadable_pages": list(getattr(r, "unreadable_pages", []) or [])}
    except RagcliError as exc:
        out = {"outcome": "refused", "passages": 0, "error": str(exc)}
    except _Timeout:
        out = {"outcome": "traceback", "passages": 0, "error": f"over {TIMEOUT} s"}
    except Exception as exc:  # a bug: the CLI would print "internal error", exit 70
        out = {"outcome": "traceback", "passages": 0, "error": f"{type(exc).__name__}: {exc}",
               "trace": traceback.format_exc(limit=6)}
    finally:
        signal.alarm(0)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


class CachedEmbedder:
    """The real embedder, each distinct text embedded once (copies share most of their text)."""

    def __init__(self, inner):
        self.inner, self.name, self.dim, self.cache = inner, inner.name, inner.dim, {}

    def embed(self, texts):
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.inner.embed(todo)))
        return np.stack([self.cache[t] for t in texts]) if texts else self.inner.embed([])

    def __getattr__(self, name):
        return getattr(self.inner, name)


def run(pdfs: list[Path], out: Path) -> list[dict]:
    from ragcli.models import embed
    from ragcli.store import db

    embedder = CachedEmbedder(embed.get_embedder(embed.DEFAULT_MODEL, bulk=True))
    rows = []
    for src in pdfs:
        copies = damaged_copies(src, out / "copies")
        conn = db.connect(out / f"{src.stem}.db", create=True)
        clean = ingest_one(conn, src, embedder, "clean")
        clean.setdefault("words", Counter())
        print(f"{src.name}: clean {clean['outcome']}, {clean['passages']} passages, "
              f"{clean['seconds']} s", file=sys.stderr, flush=True)
        for n, (name, path) in enumerate(copies):
            r = ingest_one(conn, path, embedder, f"copy{n}")
            lost = 1 - r["passages"] / clean["passages"] if clean["passages"] else 0.0
            total = sum(clean["words"].values())
            words_lost = sum((clean["words"] - r.pop("words", Counter())).values()) / total if total else 0.0
            if r["outcome"] == "refused":
                lost = words_lost = 1.0
            row = {"file": src.name, "damage": name, "clean_passages": clean["passages"],
                   "clean_outcome": clean["outcome"], "lost": round(max(0.0, lost), 3),
                   "words_lost": round(words_lost, 4), **r}
            rows.append(row)
            print(f"  {name:18s} {r['outcome']:9s} {r['passages']:5d} passages  lost {row['lost']:.0%} "
                  f"(words {row['words_lost']:.1%})  "
                  f"{(r.get('warnings') or [r.get('error', '')])[0][:110] if (r.get('warnings') or r.get('error')) else ''}",
                  file=sys.stderr, flush=True)
        conn.close()
    return rows


def report(rows: list[dict], cleans: dict[str, str]) -> str:
    ingested = [r for r in rows if r["outcome"] in ("silent", "warned")]
    big = [r for r in rows if r["lost"] >= 0.10 and r["outcome"] != "refused"]
    caught = [r for r in big if r["outcome"] == "warned"]
    nothing = [r for r in ingested if r["passages"] >= r["clean_passages"]]
    false_warn = [r for r in nothing if r["outcome"] == "warned"]
    some = [r for r in ingested if 0 < r["lost"] < 0.10]
    big_words = [r for r in ingested if r["words_lost"] >= 0.10]
    intact = [r for r in ingested if r["words_lost"] == 0]
    intact_warned = [r for r in intact if r["outcome"] == "warned"]
    tracebacks = [r for r in rows if r["outcome"] == "traceback"]
    refused = [r for r in rows if r["outcome"] == "refused"]
    recall = (len(caught) + 0) / len(big) if big else 1.0
    lines = [
        f"copies: {len(rows)} of {len(cleans)} PDFs; refused {len(refused)}, ingested {len(ingested)}, "
        f"tracebacks {len(tracebacks)}",
        f"clean files warned: {sum(v == 'warned' for v in cleans.values())} of {len(cleans)}",
        f"ingested copies losing >= 10% of the clean passages: {len(big)}; warned {len(caught)} "
        f"-> recall {recall:.3f} (bar 1.0; refused copies count as caught and are not in this set)",
        f"ingested copies losing 0 passages: {len(nothing)}; warned {len(false_warn)} -> "
        f"{(len(false_warn) / len(nothing) if nothing else 0):.3f} (bar < 0.10)",
        f"ingested copies losing 1-9%: {len(some)}; warned {sum(r['outcome'] == 'warned' for r in some)}",
        f"by text: ingested copies missing >= 10% of the clean words: {len(big_words)}; warned "
        f"{sum(r['outcome'] == 'warned' for r in big_words)}",
        f"by text: ingested copies missing no word of the clean text: {len(intact)}; warned "
        f"{len(intact_warned)} -> {(len(intact_warned) / len(intact) if intact else 0):.3f}",
    ]
    for r in big:
        if r["outcome"] != "warned":
            lines.append(f"  MISSED {r['file']} {r['damage']}: {r['passages']} of {r['clean_passages']}")
    for r in false_warn:
        lines.append(f"  WARNED, NO PASSAGE LOST {r['file']} {r['damage']} (words lost {r['words_lost']:.2%}): "
                     f"{r['warnings'][0][:150]}")
    for r in intact_warned:
        lines.append(f"  WARNED, NO WORD LOST {r['file']} {r['damage']}: {r['warnings'][0][:150]}")
    for r in tracebacks:
        lines.append(f"  TRACEBACK {r['file']} {r['damage']}: {r['error']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdfs", default=str(ROOT.parent / "shared" / "data" / "pdfs"))
    ap.add_argument("--out", default=None, help="folder for the copies and corpora (default: a temp dir)")
    ap.add_argument("--json", default=None, help="write every row here")
    ap.add_argument("--only", default=None, help="only PDFs whose name contains this")
    args = ap.parse_args()
    pdfs = sorted(p for p in Path(args.pdfs).glob("*.pdf") if not args.only or args.only in p.name)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-damaged-") as tmp:
        out = Path(args.out) if args.out else Path(tmp)
        rows = run(pdfs, out)
    cleans = {r["file"]: r["clean_outcome"] for r in rows}
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(report(rows, cleans))
    print(f"wall time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
