"""`ragcli models pull` against a hostile endpoint (issue 44): a real server on 127.0.0.1
(tests/hub_server.py) that sends path-like ETags and commits, bodies without end, ignores Range and
cuts every response, sends more than it declared, answers 404 to the transfer, redirects to file://.

Whatever it does: nothing is written outside the cache, no file is taken into use (linked, made the
default) without a sha256 that matches the one expected, every pull ends within its limit, and each
failure is one line with its own message and exit code (docs/exit-codes.md). Also: a URL is fetched
from its own host (plain http only on loopback), with a sha256 given (--sha256) or computed and shown.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import pytest

from hub_server import COMMIT, FakeHub
from test_models_pull import REPO, _files, _pull, hub_env, tiny_bytes  # noqa: F401 (fixtures)


def _one_line(stderr: str) -> str:
    """The one line that is not a progress line (`NAME: 0.1 of 0.4 MB (14%)...`)."""
    lines = [line for line in stderr.splitlines() if line.strip() and not re.search(r" of .*\(\d+%\)", line)]
    assert len(lines) == 1, stderr
    return lines[0]


def _outside(root: Path, cache: Path) -> list[str]:
    """Files under `root` (the test's folder) that are not in the cache, the catalogue or the config."""
    keep = {"catalog.toml"}
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and cache not in p.parents and p.name not in keep
                  and "config" not in p.parts and "home" not in p.parts and "data" not in p.parts)


def _no_snapshot(cache: Path) -> bool:
    return not list(cache.glob("models--*/snapshots/**/*.gguf"))


def test_a_path_like_etag_writes_nothing_outside_the_cache_and_links_nothing(hub_env, tiny_bytes, tmp_path):
    env, cache = hub_env
    before = _outside(tmp_path, cache)
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.etag = "../../../../x/evil"
        hub_form = _pull(env, hub.url, f"{REPO}/tiny.gguf")  # the server's sha256 is all there is to check
        catalogued = _pull(env, hub.url, "tiny", "--json")  # the catalogue's sha256 is checked instead
    assert hub_form.returncode == 7 and "gives a sha256" in _one_line(hub_form.stderr)
    assert catalogued.returncode == 0, catalogued.stderr
    out = json.loads(catalogued.stdout)
    assert Path(out["path"]).read_bytes() == tiny_bytes and out["checked_against"] == "catalogue"
    assert _outside(tmp_path, cache) == before and not (tmp_path / "x").exists()
    assert all(cache in Path(p).parents for p in [out["path"], str(Path(out["path"]).resolve())])


def test_a_planted_file_named_by_the_etag_is_never_taken_as_the_model(hub_env, tiny_bytes, tmp_path):
    """7df4928 found the ETag's file "already there", checked nothing and made it the default model."""
    env, cache = hub_env
    evil = tmp_path / "x" / "evil"
    evil.parent.mkdir()
    evil.write_bytes(b"GGUF not the model")
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.etag = "../../../../x/evil"
        res = _pull(env, hub.url, "tiny", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["already"] is False and Path(out["path"]).read_bytes() == tiny_bytes
    assert evil.read_bytes() == b"GGUF not the model"
    assert str(evil) not in Path(out["config"]).read_text()


def test_a_path_like_commit_is_refused_before_any_byte(hub_env, tiny_bytes, tmp_path):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.commit = "../../../outside"
        res = _pull(env, hub.url, "tiny")
    assert res.returncode == 7 and "not 40 hexadecimal digits" in _one_line(res.stderr)
    assert not [r for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]]
    assert not (tmp_path / "outside").exists() and _no_snapshot(cache)


def test_a_cached_file_with_another_sha256_is_downloaded_again_not_used(hub_env, tiny_bytes):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        first = json.loads(_pull(env, hub.url, "tiny", "--json").stdout)
    blob = Path(first["path"]).resolve()
    blob.write_bytes(b"swapped in place" + tiny_bytes[16:])  # same name, other bytes
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        res = _pull(env, hub.url, "tiny", "--json")
    out = json.loads(res.stdout)
    assert res.returncode == 0 and out["already"] is False and out["downloaded"] == len(tiny_bytes)
    assert hashlib.sha256(Path(out["path"]).read_bytes()).hexdigest() == out["sha256"]


def test_an_endless_body_is_cut_at_the_declared_size_and_removed(hub_env, tiny_bytes, tmp_path):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.endless = True
        t0 = time.monotonic()
        res = _pull(dict(env, RAGCLI_PULL_TIMEOUT="60"), hub.url, "tiny")
        took = time.monotonic() - t0
    line = _one_line(res.stderr)
    assert res.returncode == 7 and "sent more than" in line and "removed" in line, line
    assert took < 60 and _no_snapshot(cache)
    sizes = [p.stat().st_size for p in cache.rglob("*") if p.is_file()]
    assert all(s <= len(tiny_bytes) for s in sizes) and not list(cache.rglob("*.incomplete"))


def test_more_bytes_than_declared_are_refused(hub_env, tiny_bytes):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.body = tiny_bytes + b"\0" * 200_000
        res = _pull(env, hub.url, "tiny")
    assert res.returncode == 7 and "sent more than" in _one_line(res.stderr) and _no_snapshot(cache)


def test_fewer_bytes_than_declared_end_within_the_retry_bound(hub_env, tiny_bytes):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.body = tiny_bytes[: len(tiny_bytes) // 3]  # Content-Length says so; X-Linked-Size says more
        res = _pull(env, hub.url, "tiny")
        gets = [r for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]]
    line = _one_line(res.stderr)
    assert res.returncode == 7 and "tries in a row" in line and "resume" in line, line
    assert len(gets) <= 7 and _no_snapshot(cache)


def test_a_server_that_ignores_range_and_cuts_every_response_stops_soon(hub_env, tiny_bytes):
    """7df4928: 117 GETs over 120 s."""
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.ignore_range_cut = len(tiny_bytes) // 2
        t0 = time.monotonic()
        res = _pull(env, hub.url, "tiny")
        took = time.monotonic() - t0
        gets = [r for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]]
    line = _one_line(res.stderr)
    assert res.returncode == 7 and "tries in a row" in line, line
    assert len(gets) <= 7 and took < 30, (len(gets), took)
    assert _no_snapshot(cache)
    partial = list(cache.rglob("*.incomplete"))
    assert all(p.stat().st_size <= len(tiny_bytes) for p in partial)


def test_the_time_limit_ends_a_pull(hub_env, tiny_bytes):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.stall_at = len(tiny_bytes) // 2  # sends half, then nothing (a read would wait 30 s)
        t0 = time.monotonic()
        res = _pull(dict(env, RAGCLI_PULL_TIMEOUT="3"), hub.url, "tiny")
        took = time.monotonic() - t0
        hub.release.set()
    line = _one_line(res.stderr)
    assert res.returncode == 7 and "time limit" in line and "resume" in line, line
    # the limit ended it, not the stalled read's 30 s timeout (starting Python takes seconds on a busy machine)
    assert took < 30, took


def test_a_404_and_a_redirect_to_file_are_not_called_a_cut(hub_env, tiny_bytes, tmp_path):
    env, cache = hub_env
    secret = tmp_path / "secret.gguf"
    secret.write_bytes(tiny_bytes)
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.get_status = 404
        missing = _pull(env, hub.url, "tiny")
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        hub.redirect = f"file://{secret}"
        redirected = _pull(env, hub.url, "tiny")
    assert missing.returncode == 5 and "HTTP 404" in _one_line(missing.stderr)
    assert "resume" not in missing.stderr
    line = _one_line(redirected.stderr)
    assert redirected.returncode == 7 and "redirected the download to 'file://" in line and "resume" not in line
    assert _no_snapshot(cache) and not list(cache.rglob("*.incomplete"))


def test_names_that_climb_out_are_usage_errors(hub_env, tiny_bytes):
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as hub:
        climbing = _pull(env, hub.url, "../../x.gguf")
        in_file = _pull(env, hub.url, f"{REPO}/../../../x.gguf")
        in_url = _pull(env, hub.url, f"{hub.url}/{REPO}/resolve/main/..%2F..%2Fx.gguf")
    for res in (climbing, in_file):
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        _one_line(res.stderr)
    assert in_url.returncode in (2, 5) and "internal error" not in in_url.stderr
    assert _files(cache) == []


def test_a_url_is_fetched_from_its_own_host(hub_env, tiny_bytes):
    """HF_ENDPOINT names one server; the URL names another: the bytes come from the URL's."""
    env, cache = hub_env
    with FakeHub({"tiny.gguf": tiny_bytes}) as named, FakeHub({"tiny.gguf": b"not this one"}) as endpoint:
        res = _pull(env, endpoint.url, f"{named.url}/{REPO}/resolve/main/tiny.gguf", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert Path(out["path"]).read_bytes() == tiny_bytes and out["source"] == named.url
    assert [r for r in named.requests if r[0] == "GET" and "/resolve/" in r[1]]
    assert not [r for r in endpoint.requests if "/resolve/" in r[1]]


def test_a_plain_url_with_and_without_sha256(hub_env, tiny_bytes):
    env, cache = hub_env
    sha = hashlib.sha256(tiny_bytes).hexdigest()
    with FakeHub({}) as host:
        host.plain["/files/tiny.gguf"] = tiny_bytes
        url = f"{host.url}/files/tiny.gguf"
        computed = _pull(env, host.url, url)
        checked = _pull(env, host.url, url, "--sha256", sha, "--json")
        wrong = _pull(env, host.url, url, "--sha256", "0" * 64)
        bad = _pull(env, host.url, url, "--sha256", "xyz")
    assert computed.returncode == 0, computed.stderr
    assert f"sha256 {sha}" in computed.stderr and "nothing to check it against" in computed.stderr
    out = json.loads(checked.stdout)
    assert checked.returncode == 0 and out["checked_against"] == "given" and out["sha256"] == sha
    assert Path(out["path"]).read_bytes() == tiny_bytes
    assert wrong.returncode == 7 and "the one given with --sha256" in _one_line(wrong.stderr)
    assert bad.returncode == 2 and "64 hexadecimal digits" in _one_line(bad.stderr)


@pytest.mark.parametrize("url", ["http://example.org/ORG/NAME/resolve/main/x.gguf", "ftp://127.0.0.1/x.gguf",
                                 "file:///etc/passwd"])
def test_plain_http_off_loopback_and_other_schemes_are_refused(hub_env, url):
    env, cache = hub_env
    res = _pull(env, "http://127.0.0.1:9", url)
    assert res.returncode == 2 and "only https URLs" in _one_line(res.stderr)
    assert _files(cache) == []
