"""What `ragcli models pull` does against a hostile Hub on 127.0.0.1 (tests/hub_server.py): a server that
ignores Range and cuts every response, one that sends a chunked body without end, one that stalls
half-way (with RAGCLI_PULL_TIMEOUT=3). Prints per case the exit code, the GETs made, the seconds the
`python -m ragcli models pull` process took (Python's start included) and the files found outside the
cache. Issue 44, docs/benchmarks/hardening.md.

    python bench/hostile_pull.py
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from hub_server import FakeHub
from tinymodel import write_tiny_gguf
tmp = Path(tempfile.mkdtemp())
data = write_tiny_gguf(tmp / "t.gguf", seed=5).read_bytes()
sha = hashlib.sha256(data).hexdigest()
cat = tmp / "cat.toml"
cat.write_text(f'[[model]]\nname = "tiny"\ntitle = "t"\nrepo = "tiny-org/Tiny-GGUF"\nfile = "tiny.gguf"\nrevision = "main"\nsha256 = "{sha}"\nsize_gb = 0.0004\nmemory_gb = 0.01\nlicence = "MIT"\nmeasured = "x"\n')
for fault in ("ignore_range_cut", "endless", "stall"):
    env = dict(os.environ, HF_HOME=str(tmp / fault), RAGCLI_CATALOG=str(cat), PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(tmp / "cfg"))
    env.pop("HF_HUB_OFFLINE", None)
    with FakeHub({"tiny.gguf": data}) as hub:
        if fault == "ignore_range_cut": hub.ignore_range_cut = len(data) // 2
        if fault == "endless": hub.endless = True
        if fault == "stall": hub.stall_at = len(data) // 2; env["RAGCLI_PULL_TIMEOUT"] = "3"
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "ragcli", "models", "pull", "tiny", "--json"], capture_output=True, text=True, env=dict(env, HF_ENDPOINT=hub.url), cwd=ROOT)
        took = time.monotonic() - t0
        hub.release.set()
        gets = sum(1 for q in hub.requests if q[0] == "GET" and "/resolve/" in q[1])
    outside = [p for p in tmp.rglob("*") if p.is_file() and "hub" not in p.parts and p.suffix not in (".toml", ".gguf")]
    print(f"{fault}: exit {r.returncode}, {gets} GETs, {took:.1f} s, files outside cache {len(outside)}: {r.stderr.strip().splitlines()[-1]}")
