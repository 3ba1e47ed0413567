"""Search hits on a terminal (`ragcli search`): a header line, the text with the query's words
highlighted, the scores with --verbose. The JSON of the same data is `render/data.py`."""
from __future__ import annotations

import re
import textwrap

from rich.text import Text

from ragcli.render.console import terminal_safe
from ragcli.render.links import linked
from ragcli.render.terminal import _escape, snippet
from ragcli.types import Hit


def highlight(text: str, query: str):
    from ragcli.text import STOPWORDS

    out = Text(terminal_safe(text))
    words = {w.lower() for w in re.findall(r"\w{3,}", query) if w.lower() not in STOPWORDS}
    for w in words:
        out.highlight_regex(re.compile(rf"\b{re.escape(w)}\w*", re.I), "bold yellow")
    return out


SNIPPET_LINES = 2  # a hit on a terminal: a header line, two lines of text, the scores with --verbose


def print_hits(console, hits: list[Hit], query: str, verbose: bool = False) -> None:
    """One hit in at most 4 lines at 80 columns: rank, book id, printed page (figure) and the tail
    of the section; a snippet of the text; with `verbose`, the scores. In a pipe each part is one
    unwrapped line."""
    terminal = console.is_terminal
    width = console.width if terminal else None
    for h in hits:
        console.print(hit_header(h, width), highlight=False)
        text = " ".join(h.text.split())
        if width:
            lines = _wrap(text, width - 5, SNIPPET_LINES)
        else:
            lines = [snippet(text, 300)]
        for line in lines:
            out = highlight(line, query)
            out.pad_left(5)
            console.print(out)
        if verbose:
            console.print(f"     [dim]{hit_scores(h)}[/]", highlight=False)


def hit_header(h: Hit, width: int | None = None) -> str:
    """`  3. fm4-25-11 · p. 2-25 · Figure 2-31 · … › Tourniquet` (the section cut from the left)."""
    head = f"{h.rank:>3}. " + linked(f"[bold]{_escape(h.book_id)}[/] · p. {_escape(h.page_label)}", h.path,
                                     h.page_start)
    plain = len(f"{h.rank:>3}. {h.book_id} · p. {h.page_label}")
    if h.kind == "figure" and h.figure_number:
        head += f" · [magenta]Figure {_escape(h.figure_number)}[/]"
        plain += len(f" · Figure {h.figure_number}")
    if h.text_kind and h.text_kind not in ("exposition", ""):  # a drill, an exam question, an index...
        head += f" · [yellow]{_escape(h.text_kind)}[/]"
        plain += len(f" · {h.text_kind}")
    section = h.section_str
    if section and width:
        section = section_tail(h.section_path, width - plain - 3)
    if section:
        head += f" · [dim]{_escape(section)}[/]"
    return head


def section_tail(path: list[str], room: int) -> str:
    """The last parts of a section path that fit in `room` characters ("… › 2-20. Tourniquet"),
    cut at a word when even the last part is too long."""
    parts: list[str] = []
    for part in reversed(path):
        candidate = " › ".join([part, *parts])
        if len(candidate) + (2 if part is not path[0] else 0) > room:
            break
        parts.insert(0, part)
    if not parts:
        if room < 12 or not path:
            return ""
        last = path[-1]
        return "…" + last[len(last) - (room - 1):].split(" ", 1)[-1] if len(last) > room else last
    text = " › ".join(parts)
    return text if len(parts) == len(path) else "… › " + text


def hit_scores(h: Hit) -> str:
    """What the fused score is made of, in words."""
    parts = [f"score {h.score:.4f}"]
    parts.append(f"words #{h.lexical_rank}" if h.lexical_rank else "words: not found")
    parts.append(f"meaning #{h.dense_rank}" if h.dense_rank else "meaning: not in the top")
    if h.dense_score is not None:
        parts.append(f"similarity {h.dense_score:.2f}")
    return " · ".join(parts)


def _wrap(text: str, width: int, max_lines: int) -> list[str]:
    """Word-boundary lines; the last one ends in … when text is left over."""
    lines = textwrap.wrap(text, max(width, 20), break_long_words=True, break_on_hyphens=False)
    if len(lines) <= max_lines:
        return lines
    kept = lines[:max_lines]
    last = kept[-1]
    if len(last) + 1 > width:
        last = last[:width - 1].rsplit(" ", 1)[0]
    kept[-1] = last + "…"
    return kept
