"""Models by name, as llm's model registry: every chat model on this machine has a short name that
`--model NAME`, `default = "NAME"` and `ragcli models default NAME` take.

A name is, in this order:
- a profile of the config file ([models.NAME]; `ragcli models add FILE` writes one for a local GGUF),
  resolved by `config.model_settings`, not here;
- a catalogue name (models/catalog.toml: `qwen2.5-coder-0.5b`): its file in the Hugging Face cache
  once pulled;
- the short name of a GGUF file found where people keep them (models/discovery): the catalogue name
  when the file is a catalogue entry's, an Ollama model's `name:tag`, else the file name without
  `.gguf`, lower-cased (`qwen2.5-1.5b-instruct-q4_k_m`); the first file found keeps a name two
  files share.
A path to an existing file is taken as it is, before any name.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ragcli.errors import ModelError


def _catalogue() -> list:
    from ragcli.models.catalogue import entries

    try:
        return entries()
    except Exception:  # noqa: BLE001 - an unreadable RAGCLI_CATALOG: names come from the files alone
        return []


def short_names(files: list[dict], catalogue: Optional[list] = None) -> list[dict]:
    """`files` (discovery.discover's) each given `short_name` (None for an unreadable file or a name
    another file already took)."""
    catalogue = _catalogue() if catalogue is None else catalogue
    by_file = {(e.repo.lower(), e.file.lower()): e.name for e in catalogue}
    by_basename = {Path(e.file).name.lower(): e.name for e in catalogue}
    taken: set[str] = set()
    for f in files:
        name = None
        if f.get("source") == "huggingface":
            repo, _, file = f["name"].rpartition("/")
            name = by_file.get((repo.lower(), file.lower()))
        elif f.get("source") == "ollama":
            name = f["name"]
        if name is None:
            name = by_basename.get(Path(f["path"]).name.lower()) or Path(f["path"]).name.lower().removesuffix(".gguf")
        f["short_name"] = None if f.get("error") or name in taken else name
        if f["short_name"]:
            taken.add(name)
    return files


def _files() -> list[dict]:
    from ragcli.models.discovery import discover

    return short_names(discover())


def resolve(spec: str) -> str:
    """The GGUF file `spec` names: an existing path as it is, else a catalogue name or a found file's
    short name. ModelError naming what it could be when nothing matches."""
    path = Path(spec).expanduser()
    if path.exists() or "/" in spec or spec.lower().endswith(".gguf"):
        return str(path)  # a path (missing or not: llama.cpp says why it cannot open it)
    key = spec.strip().lower()
    catalogue = _catalogue()
    files = _files()
    for f in files:
        if f.get("short_name") and f["short_name"].lower() == key:
            return f["path"]
    names = {e.name.lower(): e.name for e in catalogue}
    if key in names:
        raise ModelError(f"{names[key]} is a catalogue model not pulled yet: `ragcli models pull {names[key]}` "
                         f"fetches it")
    from ragcli.config import config_path

    known = sorted({f["short_name"] for f in files if f.get("short_name")})
    hint = f"models here: {', '.join(known[:8])}" if known else "no GGUF file found: `ragcli models pull` fetches one"
    raise ModelError(f"model {spec!r} is not a file, a server URL or a profile of {config_path()}, nor the name "
                     f"of a model on this machine ({hint}; `ragcli models` lists them)")


def name_for(path: str) -> Optional[str]:
    """The short name of the GGUF file at `path`, when it has one."""
    real = Path(path).expanduser().resolve()
    for f in _files():
        if f.get("short_name") and Path(f["path"]).resolve() == real:
            return f["short_name"]
    return None
