"""Where state lives and which settings apply: flags > environment > config file > defaults."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from ragcli.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI (a conditional dependency in pyproject.toml)
    import tomli as tomllib


def _xdg(var: str, fallback: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / fallback)


def data_dir() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share") / "ragcli"


def cache_dir() -> Path:
    if os.environ.get("RAGCLI_CACHE"):
        return Path(os.environ["RAGCLI_CACHE"])
    return _xdg("XDG_CACHE_HOME", ".cache") / "ragcli"


def config_path() -> Path:
    if os.environ.get("RAGCLI_CONFIG"):
        return Path(os.environ["RAGCLI_CONFIG"])
    return _xdg("XDG_CONFIG_HOME", ".config") / "ragcli" / "config.toml"


def db_path(flag: Optional[str] = None) -> Union[Path, str]:
    """--db PATH, else $RAGCLI_DB, else `db = "..."` in the config file, else the per-user data directory.
    A PostgreSQL address (postgresql://...) comes back as the string it is; a file as a Path."""
    chosen = flag or os.environ.get("RAGCLI_DB") or _configured_db()
    if not chosen:
        return data_dir() / "corpus.db"
    if chosen.strip().lower().startswith(("postgresql://", "postgres://")):
        return chosen.strip()
    return Path(chosen).expanduser()


def _configured_db() -> Optional[str]:
    value = load_file_settings().get("db") if config_path().exists() else None
    if value is not None and not isinstance(value, str):
        raise UsageError(f"db in {config_path()} must be a string (a file path or a postgresql:// address)")
    return value or None


def load_file_settings() -> dict:
    path = config_path()
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read config file {path}: {exc}") from exc


@dataclass
class ModelSettings:
    path: Optional[str] = None  # a GGUF file run in process
    url: Optional[str] = None  # or an OpenAI-compatible server
    name: Optional[str] = None  # the server's model (--model-name); default: the only one it serves
    profile: Optional[str] = None  # the [models.NAME] profile these settings came from
    api_key_env: Optional[str] = None  # the variable holding the server's key (else RAGCLI_API_KEY)
    structured: Optional[str] = None  # grammar | json_schema | none; default: what the server shows
    timeout: float = 300.0  # seconds to wait for a server
    n_ctx: Optional[int] = None  # None: the trained context capped by memory (or the server's)
    threads: Optional[int] = None  # None: the physical cores
    gpu_layers: Optional[int] = None  # None: every layer when llama.cpp offloads to a GPU, else 0
    seed: int = 0
    temperature: float = 0.2
    max_tokens: int = 512
    prefix_cache: bool = True  # save/load the system prompt's llama.cpp state (RAGCLI_PREFIX_CACHE=0: off)
    grammar_file: Optional[str] = None  # a GBNF file constraining every answer and summary (--grammar-file wins)

    @property
    def model_off(self) -> bool:
        """Did `--model none` turn a configured model off (not: no model configured)?"""
        return self.profile == NO_MODEL

    def api_key(self) -> Optional[str]:
        """The key from the environment only (never from a file, never saved or shown)."""
        return os.environ.get(self.api_key_env or "RAGCLI_API_KEY") or None


PROFILE_KEYS = {f for f in ModelSettings.__dataclass_fields__ if f != "profile"}

# What a setting left unset becomes, in words: the help of --ctx, --threads and --gpu-layers says
# these, and models/llama_setup.machine_defaults decides by the same rules (`ragcli info` shows the
# values on this machine, each with its reason).
UNSET_RULES = {
    "n_ctx": "the model's trained context, made smaller only when this machine's memory cannot hold it",
    "threads": "this machine's physical cores",
    "gpu_layers": "every layer when llama.cpp was built for a GPU, else none",
}
DEFAULTS = ModelSettings()  # the values of the fields above, for help texts
SUMMARY_MAX_TOKENS = 768  # a summary's longest (summary.py; above max_tokens: a summary runs longer than an answer)


def is_url(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


def _apply(settings: ModelSettings, values: dict, where: str) -> None:
    for key, value in values.items():
        if key not in PROFILE_KEYS:
            raise UsageError(f"unknown key {key!r} in {where} of {config_path()}; "
                             f"known: {', '.join(sorted(PROFILE_KEYS))}")
        setattr(settings, key, value)


def profiles(file_cfg: Optional[dict] = None) -> dict[str, dict]:
    """The [models.NAME] tables of the config file."""
    file_cfg = load_file_settings() if file_cfg is None else file_cfg
    table = file_cfg.get("models", {})
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise UsageError(f"[models] in {config_path()} must hold one table per profile, e.g. [models.local]")
    return table


def model_settings(**flags) -> ModelSettings:
    """Merge model options: explicit flags win, then RAGCLI_MODEL, then the config file's `default`
    profile, then its [model] table. `path` (--model) may name a GGUF file, a server URL or a
    profile; a profile's keys apply over [model]."""
    settings = ModelSettings()
    file_cfg = load_file_settings()
    base = file_cfg.get("model", {})
    spec = flags.get("path") or os.environ.get("RAGCLI_MODEL") or file_cfg.get("default")
    off = isinstance(spec, str) and spec.strip().lower() == NO_MODEL
    if off:  # `--model none`: no model whatever is configured; ask quotes the books
        spec, base = None, {k: v for k, v in base.items() if k not in ("path", "url")}
    named = profiles(file_cfg)
    if spec and spec in named and not (flags.get("path") and Path(spec).is_file()):
        _apply(settings, {k: v for k, v in base.items() if k not in ("path", "url")}, "[model]")
        _apply(settings, named[spec], f"[models.{spec}]")
        settings.profile = spec
        if not (settings.path or settings.url):
            raise UsageError(f"profile [models.{spec}] in {config_path()} needs a path or a url")
    else:
        _apply(settings, base, "[model]")
        if spec and is_url(spec):
            settings.url, settings.path = spec, None
        elif spec:
            settings.path, settings.url = spec, None
    for key, value in flags.items():
        if value is not None and key != "path" and hasattr(settings, key):
            setattr(settings, key, value)
    if off:
        settings.profile = NO_MODEL  # the settings came from `none`: the model is off, not missing
    return settings


NO_MODEL = "none"  # `--model none` / RAGCLI_MODEL=none (a file of that name is ./none)


def model_configured() -> bool:
    """Does a model come from RAGCLI_MODEL or the config file (`default`, or [model] path/url)?"""
    if os.environ.get("RAGCLI_MODEL"):
        return True
    file_cfg = load_file_settings()
    base = file_cfg.get("model", {})
    return bool(file_cfg.get("default") or (isinstance(base, dict) and (base.get("path") or base.get("url"))))


def set_default_model(model: str, note: str = "the model `ragcli models pull` fetched") -> Path:
    """Write `default = "MODEL"` (a model's name, a file, a URL or a profile) at the top of the
    config file, in place of the `default` it had (created if missing; top-level keys must come
    before the first table). Written to a temporary file and renamed, so a failure leaves the file
    as it was."""
    import json
    import re

    target = config_path()
    before = target.read_text(encoding="utf-8") if target.exists() else ""
    first_table = re.search(r"(?m)^[ \t]*\[", before)
    cut = first_table.start() if first_table else len(before)
    head = re.sub(r"(?m)^[ \t]*default[ \t]*=.*(\n|$)", "", before[:cut])  # the default it had
    line = f"default = {json.dumps(str(model))}  # {note}\n"
    _write_config(target, line + head + before[cut:])
    return target


def add_profile(name: str, path: str) -> Path:
    """Append a [models.NAME] profile naming the GGUF file `path` (`ragcli models add`). An existing
    profile of that name is refused."""
    import json

    if name in profiles():
        raise UsageError(f"a model named {name!r} is already in {config_path()}: choose another with --name")
    target = config_path()
    before = target.read_text(encoding="utf-8") if target.exists() else ""
    if before and not before.endswith("\n"):
        before += "\n"
    _write_config(target, f"{before}\n[models.{json.dumps(name)}]  # ragcli models add\npath = {json.dumps(path)}\n")
    return target


def _write_config(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tomllib.loads(tmp.read_text(encoding="utf-8"))
        os.replace(tmp, target)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write the model to {target}: {exc}") from exc


def log_enabled() -> bool:
    """Are asks saved as conversations? The config file's top-level `log` (default true)."""
    value = load_file_settings().get("log", True)
    if not isinstance(value, bool):
        raise UsageError(f"log in {config_path()} must be true or false")
    return value


RERANK_DEPTH = 20
NO_RERANK = ("none", "off")


def rerank_settings(spec: Optional[str] = None, depth: Optional[int] = None) -> tuple[Optional[str], int]:
    """The re-ranker (--rerank, else the config file's top-level `rerank`: a reranker GGUF, a server
    URL, a profile name or `llm`; `none` turns a configured one off) and how many hits it reads
    (--rerank-depth, else `rerank_depth`, else 20)."""
    file_cfg = load_file_settings() if spec is None or depth is None else {}
    if spec is not None and not spec.strip():
        raise UsageError("--rerank needs a reranker: a GGUF file, a server URL, a profile or llm")
    if spec is None:
        spec = file_cfg.get("rerank")
        if spec is not None and (not isinstance(spec, str) or not spec.strip()):
            raise UsageError(f"rerank in {config_path()} must name a reranker: a GGUF file, a URL, a profile or llm")
    if depth is None:
        depth = file_cfg.get("rerank_depth", RERANK_DEPTH)
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise UsageError(f"rerank_depth in {config_path()} must be a whole number of hits, at least 1")
    if spec is not None and spec.strip().lower() in NO_RERANK:
        spec = None
    return spec, depth
