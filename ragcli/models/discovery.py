"""Where people keep GGUF files, and what is in them (for `ragcli models`).

Ollama keeps a manifest per model (`manifests/<registry>/<namespace>/<model>/<tag>`, JSON whose
layer of media type `application/vnd.ollama.image.model` names the weights blob
`blobs/sha256-<hex>`); LM Studio keeps `<publisher>/<repo>/<file>.gguf` under `~/.lmstudio/models`
(older versions `~/.cache/lm-studio/models`); the Hugging Face cache keeps
`models--<org>--<name>/snapshots/<revision>/<file>.gguf`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator, Optional

from ragcli.errors import ModelError
from ragcli.models.gguf import gguf_facts
from ragcli.models.openai_http import api_base, http_library, safe_url

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def ollama_dirs() -> list[Path]:
    if os.environ.get("OLLAMA_MODELS"):
        return [Path(os.environ["OLLAMA_MODELS"])]
    return [_home() / ".ollama" / "models", Path("/usr/share/ollama/.ollama/models")]


def lmstudio_dirs() -> list[Path]:
    return [_home() / ".lmstudio" / "models", _home() / ".cache" / "lm-studio" / "models"]


def hf_dirs() -> list[Path]:
    if os.environ.get("HF_HUB_CACHE"):
        return [Path(os.environ["HF_HUB_CACHE"])]
    hf_home = Path(os.environ.get("HF_HOME") or _home() / ".cache" / "huggingface")
    return [hf_home / "hub"]


def plain_dirs() -> list[Path]:
    return [_home() / "models"]


def _ollama(root: Path) -> Iterator[tuple[str, Path]]:
    manifests = root / "manifests"
    if not manifests.is_dir():
        return
    for manifest in sorted(p for p in manifests.rglob("*") if p.is_file()):
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for layer in data.get("layers", []) if isinstance(data, dict) else []:
            if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER:
                digest = str(layer.get("digest", ""))
                blob = root / "blobs" / digest.replace(":", "-")
                parts = manifest.relative_to(manifests).parts  # registry, namespace, model, tag
                model, tag = parts[-2], parts[-1]
                namespace = parts[-3] if len(parts) >= 3 else "library"
                name = f"{model}:{tag}" if namespace == "library" else f"{namespace}/{model}:{tag}"
                if blob.is_file():
                    yield name, blob


def _gguf_files(root: Path) -> Iterator[tuple[str, Path]]:
    if not root.is_dir():
        return
    for path in sorted(root.rglob("*.gguf")):
        if path.is_file():
            yield str(path.relative_to(root)), path


def _hf(root: Path) -> Iterator[tuple[str, Path]]:
    if not root.is_dir():
        return
    for repo in sorted(root.glob("models--*")):
        name = repo.name[len("models--"):].replace("--", "/")
        for path in sorted((repo / "snapshots").glob("*/**/*.gguf")):
            if path.is_file():
                yield f"{name}/{path.name}", path


def discover() -> list[dict]:
    """Every GGUF file found in the usual places, with its header facts (unreadable files are
    listed with the reason). Each file once, even when two places link to it."""
    places = [("ollama", d, _ollama) for d in ollama_dirs()]
    places += [("lm-studio", d, _gguf_files) for d in lmstudio_dirs()]
    places += [("huggingface", d, _hf) for d in hf_dirs()]
    places += [("models-dir", d, _gguf_files) for d in plain_dirs()]
    found, seen = [], set()
    for source, root, walk in places:
        for name, path in walk(root):
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            entry = {"source": source, "name": name, "path": str(path)}
            try:
                facts = gguf_facts(real)
                entry.update({k: v for k, v in facts.items() if k not in ("path", "file", "name")})
                entry["model_name"] = facts["name"]  # general.name in the header
            except ModelError as exc:
                entry["error"] = str(exc)
            found.append(entry)
    return found


def server_models(url: str, api_key: Optional[str], timeout: float = 2.0) -> dict:
    """What a server lists at /v1/models, or why it could not be asked (a short timeout: `models`
    must not hang on a server that is down)."""
    httpx = http_library()
    base = api_base(url)
    try:
        r = httpx.get(base + "/models", timeout=timeout,
                      headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    except httpx.HTTPError as exc:
        return {"url": safe_url(base), "reachable": False, "error": type(exc).__name__}
    if r.status_code != 200:
        return {"url": safe_url(base), "reachable": True, "error": f"HTTP {r.status_code}"}
    try:
        data = r.json().get("data", [])
    except (ValueError, AttributeError):
        return {"url": safe_url(base), "reachable": True, "error": "not an OpenAI model list"}
    return {"url": safe_url(base), "reachable": True, "models": [m.get("id") for m in data if isinstance(m, dict)]}
