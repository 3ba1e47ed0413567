"""Where state lives and which settings apply: flags > environment > config file > defaults."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

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


def db_path(flag: Optional[str] = None) -> Path:
    """--db PATH, else $RAGCLI_DB, else the per-user data directory."""
    if flag:
        return Path(flag).expanduser()
    if os.environ.get("RAGCLI_DB"):
        return Path(os.environ["RAGCLI_DB"]).expanduser()
    return data_dir() / "corpus.db"


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
    path: Optional[str] = None
    n_ctx: Optional[int] = None  # None: 4096, capped at the model's trained context
    threads: Optional[int] = None
    gpu_layers: int = 0
    seed: int = 0
    temperature: float = 0.2
    max_tokens: int = 512


def model_settings(**flags) -> ModelSettings:
    """Merge model options: explicit flags win, then RAGCLI_MODEL, then the config file."""
    settings = ModelSettings()
    file_cfg = load_file_settings().get("model", {})
    for key, value in file_cfg.items():
        if hasattr(settings, key):
            setattr(settings, key, value)
    if os.environ.get("RAGCLI_MODEL"):
        settings.path = os.environ["RAGCLI_MODEL"]
    for key, value in flags.items():
        if value is not None and hasattr(settings, key):
            setattr(settings, key, value)
    return settings
