"""`ragcli models` on a terminal: the selected model, the profiles, the files found."""
from __future__ import annotations

from typing import Optional

from rich.markup import escape

# rich.table is imported where the table is drawn: `models --json` never loads it.


def human_size(n: Optional[int]) -> str:
    if not n:
        return "?"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return "?"


def human_count(n: Optional[int]) -> str:
    if not n:
        return "?"
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def selected_line(selected: Optional[dict]) -> str:
    if not selected:
        return ("no chat model configured: ask answers extractively (get one with `ragcli models pull`, or set "
                "--model, RAGCLI_MODEL or a profile)")
    where = selected.get("url") or selected.get("path")
    name = f" model {selected['name']}" if selected.get("name") else ""
    profile = f" (profile {selected['profile']})" if selected.get("profile") else ""
    return f"{selected['backend']} {where}{name}{profile}"


def print_models(out, data: dict) -> None:
    from rich.table import Table

    out.print(f"[bold]ask uses:[/] {escape(selected_line(data['selected']))}")
    if data["profiles"]:
        table = Table(title="profiles", title_justify="left", show_edge=False)
        for col in ("", "name", "backend", "where", "serves"):
            table.add_column(col)
        for p in data["profiles"]:
            server = p.get("server") or {}
            serves = ", ".join(server.get("models") or []) or server.get("error") or ""
            if server and not server.get("reachable"):
                serves = f"unreachable ({server.get('error')})"
            table.add_row("*" if p["selected"] else "", escape(p["name"]), p["backend"],
                          escape(str(p.get("url") or p.get("path") or "")), escape(serves))
        out.print(table)
    if data["files"]:
        table = Table(title="GGUF files", title_justify="left", show_edge=False)
        for col in ("", "source", "name", "arch", "params", "quant", "ctx", "size"):
            table.add_column(col)
        for f in data["files"]:
            if f.get("error"):
                table.add_row("", f["source"], escape(f["name"]), "unreadable", "", "", "", "")
                continue
            kind = " (reranker)" if f.get("reranker") else ""
            table.add_row("*" if f["selected"] else "", f["source"], escape(f["name"]),
                          f"{f.get('architecture')}{kind}", human_count(f.get("parameters")),
                          str(f.get("quantization") or "?"), str(f.get("context_length") or "?"),
                          human_size(f.get("size_bytes")))
        out.print(table)
    else:
        out.print("no GGUF files found in ~/.ollama, ~/.lmstudio, the Hugging Face cache or ~/models: "
                  "`ragcli models pull` fetches one")
