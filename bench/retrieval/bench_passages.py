"""Passages against the book's structure, and the kinds of text, per book (issue 34). No model, no db.

    python bench/retrieval/bench_passages.py BOOK.pdf [BOOK.pdf ...] [--sample N] [--kinds]

For each PDF: parse and chunk it with the code on PYTHONPATH (run it once on the old code and once on
the new for a before/after), then count
- passages, median and largest word count;
- mid-list starts: a passage that opens with a numbered or lettered item other than the first
  ("3.", "c)"), or with a bullet while the passage before it (same section) holds a bullet too,
  and that does not repeat the list's lead-in;
- procedures split: two neighbouring passages of one section where the first holds item n and the
  second opens with item n+1 (`lead-in carried`: the second part opens with the list's lead-in);
- furniture: passages whose innermost section, or whose text, is a line printed in the top or bottom
  band of 3 or more pages (running headers, footers: "JANUARY 2011 3-13"), or a table's header row
  (a short bold line of cells apart: "Step  Action");
- with --kinds: passages per text kind (ingest/kinds.py) and, with --sample N, N passages of each
  non-exposition kind printed for reading (precision is read, not computed).
"""
from __future__ import annotations

import argparse
import collections
import random
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

NUM_ITEM = re.compile(r"^\s*\(?(\d{1,2}|[a-zA-Z])[.)]?\s+(?=\S)")
BULLET = re.compile(r"^\s*[•·▪◦●○■□➢►\u2022\u25aa\uf000-\uf0ff]")
ITEM_AT = re.compile(r"(?:^|(?<=[.:!?\"”]\s))\(?(\d{1,2})[.)]?\s+[A-Z\uf000-\uf0ff•]")


def _key(text: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"\s+", " ", text.strip().lower()))


def furniture(path: Path) -> set[str]:
    """Keys of band lines on 3+ pages and of short bold table-header rows, read from the raw PDF."""
    import pymupdf

    counts: collections.Counter = collections.Counter()
    headers: set[str] = set()
    doc = pymupdf.open(str(path))
    for page in doc:
        h = page.rect.height
        keys = set()
        for b in page.get_text("dict", flags=0)["blocks"]:
            for line in b.get("lines", []):
                spans = [s for s in line["spans"] if s["text"].strip()]
                if not spans:
                    continue
                text = "".join(s["text"] for s in spans).strip()
                y0, y1 = line["bbox"][1], line["bbox"][3]
                if y1 < h * 0.08 + 12 or y0 > h * 0.92 - 12:
                    keys.add(_key(text))
                size = max(s["size"] for s in spans)
                bold = all(s["flags"] & 16 or "bold" in s["font"].lower() for s in spans)
                apart = any(b2["bbox"][0] - a["bbox"][2] > 2.5 * size for a, b2 in zip(spans, spans[1:]))
                if bold and apart and len(text.split()) <= 6:
                    headers.add(_key(text))
        counts.update(keys)
    doc.close()
    band = {k for k, n in counts.items() if n >= 3 and len(k) >= 6 and re.search(r"[a-z]{3}", k)}
    return band | headers


def first_item(text: str) -> tuple[str, bool]:
    m = NUM_ITEM.match(text)
    if m and (m.group(1).isdigit() or len(text.split()[0]) <= 3):
        return m.group(1), True
    return "", bool(BULLET.match(text))


def measure(path: Path, sample: int, show_kinds: bool) -> dict:
    from ragcli.ingest import chunking, pdf

    book = pdf.parse(path)
    passages = chunking.chunk_book(book.sections, book.figures)
    text_passages = [p for p in passages if p.kind == "passage"]
    words = [len(p.text.split()) for p in text_passages]
    keys = furniture(path)
    mid = split = split_lead = furn_sec = furn_text = 0
    for prev, p in zip([None] + text_passages[:-1], text_passages):
        same = prev is not None and prev.section_path == p.section_path
        marker, is_item = first_item(p.text)
        if marker and marker not in ("1", "a", "A") and is_item:
            mid += 1
        elif not marker and is_item and same and re.search(r"[•▪\u2022\uf000-\uf0ff]", prev.text):
            mid += 1
        if same:
            a = {int(n) for n in ITEM_AT.findall(prev.text)}
            b = [int(n) for n in ITEM_AT.findall(p.text)]
            if a and b and b[0] == max(a) + 1 and b[0] > 1:
                split += 1
                split_lead += not NUM_ITEM.match(p.text)
        if _key(p.section_path[-1] if p.section_path else "") in keys:
            furn_sec += 1
        norm = _key(p.text)
        if any(len(k) >= 10 and k in norm for k in keys):
            furn_text += 1
    out = {"book": path.name, "passages": len(text_passages), "figures": len(passages) - len(text_passages),
           "median_words": statistics.median(words) if words else 0, "max_words": max(words, default=0),
           "mid_list_starts": mid, "procedures_split": split, "split_with_lead_in": split_lead,
           "furniture_section": furn_sec, "furniture_text": furn_text}
    if show_kinds:
        kinds = collections.Counter(getattr(p, "text_kind", "?") for p in passages)
        out["kinds"] = dict(kinds)
        if sample:
            rnd = random.Random(7)
            for kind in sorted(kinds):
                if kind == "exposition":
                    continue
                picked = [p for p in passages if p.text_kind == kind]
                for p in rnd.sample(picked, min(sample, len(picked))):
                    print(f"--- {path.name} [{kind}] p{p.page_start} {' › '.join(p.section_path)[-70:]}\n"
                          f"    {p.text[:300]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pdfs", nargs="+", type=Path)
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--kinds", action="store_true")
    args = ap.parse_args()
    for path in args.pdfs:
        print(measure(path, args.sample, args.kinds), flush=True)


if __name__ == "__main__":
    main()
