"""The layout rule (docs/decisions.md "Layout"), read from the source with `ast`.

Layers, highest first; a module imports only from lower layers (and from its own package):

    cli/  ->  serve/  ->  conversation.py  ->  ask.py, summary.py, evaluate.py, followup.py  ->  search/, answer/, ingest/
          ->  models/, store/
          ->  types.py, errors.py, text.py, config.py, language.py

serve/ (the MCP and HTTP servers) is a front end as cli/ is, under it: cli/ starts it, it calls the
pipelines and renders with render/data.py; nothing below it imports it.
render/ sits beside the pipelines (only cli/ and serve/ import it) and imports only types, errors and text.
Packages of one layer do not import each other (search/ never imports answer/, summary.py never
imports ask.py). No two modules import each other, directly or round a loop, counting imports inside
functions. Every import counts: module level, inside functions, under TYPE_CHECKING.

All SQL (`.execute` and friends) is in store/.

KNOWN and SQL_ELSEWHERE list what breaks the rule today, each with who is fixing it. The tests fail
on anything else, and on a listed import or SQL that is gone (delete its line when you fix it).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "ragcli"

BASE = {"types", "errors", "text", "config", "language", "system_prompt"}
PIPELINES = {"ask", "summary", "evaluate"}
# conversation.py runs a turn over ask.py (a pipeline over a pipeline), so it sits above them
# followup.py (a follow-up made standalone) sits beside the pipelines: conversation.py uses it
RANK = {"base": 0, "models": 1, "store": 1, "search": 2, "answer": 2, "ingest": 2, "pipeline": 3,
        "render": 3, "followup": 3, "conversation": 3.5, "serve": 4, "cli": 5}
FRONT_ENDS = {"cli", "serve"}  # the only importers of render/
RENDER_MAY_IMPORT = {"render", "base"}

# SQL outside store/: module -> who moves it.
SQL_ELSEWHERE: dict[str, str] = {}
# (importer, imported) -> who removes it. Modules are dotted names under ragcli.
KNOWN: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def group(mod: str) -> str:
    """The layer group of a module: a package name, 'pipeline', 'base' or 'cli'."""
    parts = mod.split(".")
    if len(parts) == 1:  # the ragcli package itself
        return "base"
    head = parts[1]
    if head in ("cli", "__main__"):
        return "cli"
    if head in PIPELINES:
        return "pipeline"
    if head in BASE:
        return "base"
    if head in RANK:
        return head
    raise AssertionError(f"{mod}: not placed in a layer; add it to tests/test_layout.py and docs/decisions.md")


def unit(mod: str) -> str:
    """What 'the same package' means: ragcli.search.legs -> ragcli.search; a top-level module is its own
    (ragcli.__main__ belongs to cli/)."""
    return "ragcli.cli" if mod == "ragcli.__main__" else ".".join(mod.split(".")[:2])


def imports(mod: str, path: Path, known: set[str]) -> set[str]:
    """Every ragcli module `mod` imports, anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from ragcli.store import corpus` imports the submodule ragcli.store.corpus
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in known and name != mod and name.startswith("ragcli"):
                out.add(name)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: imports(m, p, known) for m, p in mods.items()}


def violations(edges: dict[str, set[str]]) -> dict[tuple[str, str], str]:
    found = {}
    for a, targets in edges.items():
        ga = group(a)
        for b in targets:
            gb = group(b)
            if unit(a) == unit(b) or b == "ragcli":
                continue  # inside one package (its own cycles are checked below)
            if ga == "render" and gb not in RENDER_MAY_IMPORT:
                found[(a, b)] = f"render/ imports only types, errors and text, not {gb}"
            elif gb == "render" and ga not in FRONT_ENDS:
                found[(a, b)] = "only cli/ and serve/ import render/"
            elif RANK[gb] > RANK[ga]:
                found[(a, b)] = f"a lower layer ({ga}) imports a higher one ({gb})"
            elif RANK[gb] == RANK[ga] and ga != "base":
                found[(a, b)] = f"packages of one layer do not import each other ({ga} -> {gb})"
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer():
    for mod in modules():
        group(mod)


def test_no_module_imports_a_higher_layer_or_a_sibling_package():
    edges = graph()
    found = violations(edges)
    new = {edge: why for edge, why in found.items() if edge not in KNOWN}
    assert not new, "layout rule broken:\n" + "\n".join(f"  {a} -> {b}: {why}" for (a, b), why in sorted(new.items()))
    gone = sorted((a, b) for a, b in KNOWN if b not in edges.get(a, ()))
    assert not gone, f"fixed, so delete from KNOWN in tests/test_layout.py: {gone}"


def test_no_import_cycles():
    edges = graph()
    for a, b in KNOWN:  # a known wrong edge may close a loop until it is fixed
        edges[a] = edges[a] - {b}
    assert cycles(edges) == []


def runs_sql(path: Path) -> bool:
    """Does the file call .execute/.executemany/.executescript (a connection or cursor)?"""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in ("execute", "executemany", "executescript") for n in ast.walk(tree))


def test_all_sql_is_in_store():
    found = {m for m, p in modules().items() if group(m) != "store" and runs_sql(p)}
    assert found - set(SQL_ELSEWHERE) == set(), "SQL outside store/ (put it in store/corpus.py or a sibling)"
    assert set(SQL_ELSEWHERE) - found == set(), "moved, so delete from SQL_ELSEWHERE in tests/test_layout.py"


def test_the_checker_sees_function_level_imports_and_cycles(tmp_path):
    """The checker itself: an import inside a function counts, and a loop is found."""
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from ragcli.store import db\n    import ragcli.ask\n", encoding="utf-8")
    known = {"ragcli.store", "ragcli.store.db", "ragcli.ask"}
    assert imports("ragcli.store.migrations", src, known) == {"ragcli.store.db", "ragcli.ask"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert violations({"ragcli.store.corpus": {"ragcli.ask"}}) == {
        ("ragcli.store.corpus", "ragcli.ask"): "a lower layer (store) imports a higher one (pipeline)"}


def test_serve_sits_between_cli_and_the_pipelines():
    """serve/ may use the pipelines and render/; the core never imports serve/, nor serve/ the CLI."""
    assert group("ragcli.serve.http") == "serve"
    assert violations({"ragcli.serve.http": {"ragcli.ask", "ragcli.render.data", "ragcli.store.corpus"}}) == {}
    assert violations({"ragcli.ask": {"ragcli.serve.library"}}) == {
        ("ragcli.ask", "ragcli.serve.library"): "a lower layer (pipeline) imports a higher one (serve)"}
    assert violations({"ragcli.serve.mcp": {"ragcli.cli.common"}}) == {
        ("ragcli.serve.mcp", "ragcli.cli.common"): "a lower layer (serve) imports a higher one (cli)"}
    edges = graph()
    assert not [a for a, targets in edges.items() if group(a) not in FRONT_ENDS
                and any(group(b) == "serve" for b in targets)], "only cli/ starts serve/"


# ------------------------------------------------------------------------------ the whole tree (issue 45)
# Outside ragcli/, scripts import by plain name what sits beside them (a script's folder is the first
# entry of sys.path) or a test helper (tests/ put on sys.path); ragcli by its dotted name. A bench script
# never imports a script of another bench/ folder: what several scripts share goes in a helper module of
# its folder (bench/answers/common.py). No file imports in a circle, anywhere.
REPO = ROOT.parent
TREE_DIRS = ("ragcli", "bench", "tests", "corpus")


def tree_files() -> dict[str, Path]:
    return {p.relative_to(REPO).as_posix(): p for d in TREE_DIRS for p in sorted((REPO / d).rglob("*.py"))}


def tree_graph() -> dict[str, set[str]]:
    """Every repository file -> the repository files it imports (module level or inside functions)."""
    files = tree_files()
    mods = modules()
    by_module = {m: p.relative_to(REPO).as_posix() for m, p in mods.items()}
    edges: dict[str, set[str]] = {f: set() for f in files}
    for mod, targets in graph().items():
        edges[by_module[mod]] |= {by_module[t] for t in targets}
    for rel, path in files.items():
        if rel.startswith("ragcli/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                target = resolve(name, path, mods)
                if target and target != rel:
                    edges[rel].add(target)
    return edges


def resolve(name: str, importer: Path, mods: dict[str, Path], repo: Path = REPO) -> str | None:
    """The repository file an absolute import names, seen from `importer` (None: not ours)."""
    if name.split(".")[0] == "ragcli":
        while name not in mods and "." in name:
            name = name.rsplit(".", 1)[0]
        return mods[name].relative_to(repo).as_posix() if name in mods else None
    head = name.split(".")[0]
    for folder in (importer.parent, repo / "tests"):
        if (folder / f"{head}.py").is_file():
            return (folder / f"{head}.py").relative_to(repo).as_posix()
    elsewhere = sorted((repo / "bench").rglob(f"{head}.py"))
    return elsewhere[0].relative_to(repo).as_posix() if elsewhere else None


def test_no_import_cycle_anywhere_in_the_tree():
    edges = tree_graph()
    assert edges["bench/answers/bench_answers.py"] >= {"bench/answers/common.py", "bench/answers/gen_cache.py",
                                                        "bench/answers/answer_variants.py"}  # the checker sees them
    assert cycles(edges) == []


def test_bench_scripts_import_only_ragcli_test_helpers_and_their_own_folder():
    edges = tree_graph()
    wrong = sorted((a, b) for a, targets in edges.items() if a.startswith("bench/") and a.count("/") == 2
                   for b in targets if not (b.startswith("ragcli/") or b.startswith("tests/")
                                            or b.rsplit("/", 1)[0] == a.rsplit("/", 1)[0]))
    assert not wrong, f"a bench script imports another folder's script (move the helper beside it): {wrong}"
    assert not [a for a, targets in edges.items() if a.startswith("ragcli/")
                and any(not b.startswith("ragcli/") for b in targets)], "ragcli imports nothing of bench/ or tests/"


def test_the_tree_checker_finds_a_loop_between_two_scripts(tmp_path):
    """Two scripts of one folder importing each other (one inside a function), and a helper of another
    folder: each import is resolved to its file, and the loop is found."""
    (tmp_path / "bench" / "x").mkdir(parents=True)
    (tmp_path / "bench" / "y").mkdir()
    (tmp_path / "tests").mkdir()
    a, b = tmp_path / "bench" / "x" / "a.py", tmp_path / "bench" / "x" / "b.py"
    (tmp_path / "bench" / "y" / "c.py").write_text("", encoding="utf-8")
    a.write_text("import b\n", encoding="utf-8")
    b.write_text("def f():\n    from a import x\n", encoding="utf-8")
    assert resolve("b", a, {}, tmp_path) == "bench/x/b.py"
    assert resolve("a", b, {}, tmp_path) == "bench/x/a.py"
    assert resolve("c", a, {}, tmp_path) == "bench/y/c.py"
    assert resolve("numpy", a, {}, tmp_path) is None
    edges = {"bench/x/a.py": {"bench/x/b.py"}, "bench/x/b.py": {"bench/x/a.py"}}
    assert cycles(edges) == [["bench/x/a.py", "bench/x/b.py"]]
