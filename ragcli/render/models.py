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
    if selected.get("error"):
        return selected["error"]
    if selected.get("url"):
        name = f" model {selected['name']}" if selected.get("name") else ""
        profile = f" (profile {selected['profile']})" if selected.get("profile") else ""
        return f"{selected['url']}{name}{profile}"
    label = selected.get("profile") or selected.get("name")
    return f"{label} ({selected['path']})" if label else str(selected["path"])


def print_models(out, data: dict, verbose: bool = False) -> None:
    """On a terminal: the model ask uses, then the models by name (name, size, quantisation, where);
    --verbose adds each file's path, architecture, parameters and trained context. Piped: one
    tab-separated line a model."""
    files = data["files"]
    if not out.is_terminal:
        out.print(f"ask uses\t{selected_line(data['selected'])}", markup=False, highlight=False)
        out.print("\t".join(["selected", "name", "kind", "size", "quant", "source", "where"]), highlight=False)
        for p in data["profiles"]:
            out.print("\t".join(["*" if p["selected"] else "", p["name"], "profile", "", "", p["backend"],
                                 str(p.get("url") or p.get("path") or "")]), markup=False, highlight=False)
        for f in files:
            out.print("\t".join(["*" if f["selected"] else "", f.get("short_name") or "", "file",
                                 str(f.get("size_bytes") or ""), str(f.get("quantization") or ""), f["source"],
                                 f["path"]]), markup=False, highlight=False)
        return
    from rich.table import Table

    out.print(f"[bold]ask uses:[/] {escape(selected_line(data['selected']))}")
    if data["profiles"]:
        table = Table(title="profiles (config file)", title_justify="left", show_edge=False, box=None)
        for col in ("", "name", "where", "serves"):
            table.add_column(col, overflow="fold")
        for p in data["profiles"]:
            server = p.get("server") or {}
            serves = ", ".join(server.get("models") or []) or server.get("error") or ""
            if server and not server.get("reachable"):
                serves = f"unreachable ({server.get('error')})"
            table.add_row("*" if p["selected"] else "", escape(p["name"]),
                          escape(str(p.get("url") or p.get("path") or "")), escape(serves))
        out.print(table)
    if files:
        table = Table(title="GGUF files (--model NAME takes the name)", title_justify="left", show_edge=False,
                      box=None)
        table.add_column("")
        table.add_column("name", no_wrap=True)
        table.add_column("size", justify="right", no_wrap=True)
        table.add_column("quant", no_wrap=True)
        table.add_column("from", no_wrap=True)
        if verbose:
            for col in ("arch", "params", "ctx"):
                table.add_column(col, no_wrap=True)
        for f in files:
            name = f.get("short_name") or f"[dim]{escape(f['name'])}[/]"
            if f.get("error"):
                table.add_row("", name, "", "unreadable", f["source"], *(["", "", ""] if verbose else []))
                continue
            kind = " (reranker)" if f.get("reranker") else ""
            row = ["*" if f["selected"] else "", escape(name) if f.get("short_name") else name,
                   human_size(f.get("size_bytes")), str(f.get("quantization") or "?") + kind, f["source"]]
            if verbose:
                row += [str(f.get("architecture")), human_count(f.get("parameters")), str(f.get("context_length") or "?")]
            table.add_row(*row)
        out.print(table)
        if verbose:
            for f in files:
                out.print(f"[dim]{escape(f.get('short_name') or f['name'])}: {escape(f['path'])}[/]", highlight=False)
        else:
            out.print("[dim]--verbose: paths, architectures, parameters, context[/]")
    else:
        out.print("no GGUF files found in ~/.ollama, ~/.lmstudio, the Hugging Face cache or ~/models: "
                  "`ragcli models pull` fetches one")
