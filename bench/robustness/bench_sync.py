"""Folder sync bars (issue 27), on the shared PDFs, each part bounded to a few minutes:

  four       a folder synced, then one file changed (a page's text), one renamed, one deleted, one
             added: the changes the sync makes, vectors computed vs kept, then a second sync
  unchanged  1,000 files (the shared PDFs copied under 1,000 names) synced, then synced again
             unchanged: `ragcli sync` wall time beside the same sync with every mtime touched
             (content hashed) and a plan that hashes every file
  kill       kill -9 at 20 moments of a sync (the four changes + three more added files): every book before or
             after, never between; the next sync ends where an uninterrupted one does

  nice -n 10 python bench/robustness/bench_sync.py four|unchanged|kill|all ../shared/data/pdfs [--kills 20]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SMALL = ["faa-amt-handbook-sample.pdf", "malawi-quality-improvement-article.pdf",
         "heart-failure-programmes-article.pdf", "fm21-18-foot-marches.pdf"]
ADDED = "ace-inhibitors-article.pdf"
CPU: list[float] = []  # CPU seconds (user + system) of each ragcli run, in order


def ragcli(db: Path, *args, check: bool = True) -> tuple[float, dict | None, subprocess.CompletedProcess]:
    import resource

    env = {**os.environ, "RAGCLI_DB": str(db)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ragcli", *map(str, args)], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if check and proc.returncode != 0:
        raise SystemExit(f"ragcli {' '.join(map(str, args))} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    data = json.loads(proc.stdout) if "--json" in args and proc.stdout.strip() else None
    return seconds, data, proc


def change_a_page(path: Path, sentence: str = "Revised: structured programmes were reviewed again in the "
                                                "second edition.") -> None:
    """One page's text changed: a sentence added to page 2 (or 1) in place, as an editor would save it."""
    import pymupdf

    with pymupdf.open(path) as doc:
        doc[min(1, len(doc) - 1)].insert_text((60, 60), sentence, fontsize=8)
        data = doc.tobytes()
    path.write_bytes(data)


def four(data: Path, work: Path) -> dict:
    folder, db = work / "library", work / "four.db"
    folder.mkdir()
    for name in SMALL:
        shutil.copyfile(data / name, folder / name)
    t_first, first, _ = ragcli(db, "sync", folder, "--json")
    change_a_page(folder / "heart-failure-programmes-article.pdf")
    (folder / "malawi-quality-improvement-article.pdf").rename(folder / "malawi-renamed.pdf")
    (folder / "faa-amt-handbook-sample.pdf").unlink()
    shutil.copyfile(data / ADDED, folder / ADDED)
    t_second, second, _ = ragcli(db, "sync", folder, "--prune", "--json")
    t_third, third, _ = ragcli(db, "sync", "--json")
    changed = next(c for c in second["changes"] if c["action"] == "changed")
    out = {
        "first_sync": {"seconds": round(t_first, 1), "counts": first["counts"],
                       "vectors_computed": first["embedded"]},
        "second_sync": {"seconds": round(t_second, 1), "counts": second["counts"], "unchanged": second["unchanged"],
                        "hashed": second["hashed"],
                        "changes": [(c["action"], c["status"], Path(c["path"]).name, c["embedded"], c["reused"])
                                    for c in second["changes"]]},
        "changed_book": {"passages": changed["passages"], "re_embedded": changed["embedded"],
                         "kept_vectors": changed["reused"]},
        "third_sync": {"seconds": round(t_third, 2), "changes": len(third["changes"]), "hashed": third["hashed"],
                       "unchanged": third["unchanged"]},
    }
    print(json.dumps({"four": out}, indent=1))
    return out


def unchanged(data: Path, work: Path, n: int = 1000) -> dict:
    folder, db = work / "thousand", work / "thousand.db"
    sources = [data / s for s in SMALL[:3]]
    for i in range(n):  # ten sub-folders of 100, as a library is
        src = sources[i % len(sources)]
        target = folder / f"shelf-{i // 100}" / f"{src.stem}-{i:04d}.pdf"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    t_first, first, _ = ragcli(db, "sync", folder, "--json")
    runs, cpu = [], []
    for _ in range(5):
        runs.append(ragcli(db, "sync", "--json"))
        cpu.append(CPU[-1])
    plain = sorted(r[0] for r in runs)[2]
    assert all(r[1]["changes"] == [] and r[1]["hashed"] == 0 for r in runs)
    for f in folder.rglob("*.pdf"):  # same bytes, new mtime: every file must be hashed
        os.utime(f, ns=(time.time_ns(), time.time_ns()))
    t_touched, touched, _ = ragcli(db, "sync", "--json")
    t_after, after, _ = ragcli(db, "sync", "--json")
    startup, _, _ = ragcli(db, "--version")
    out = {"files": n, "first_sync_seconds": round(t_first, 1), "first_counts": first["counts"],
           "unchanged_sync_wall_seconds_each": [round(r[0], 2) for r in runs],
           "unchanged_sync_seconds_median_of_5": round(plain, 3),
           "unchanged_sync_cpu_seconds_median_of_5": round(sorted(cpu)[2], 3),
           "unchanged_sync_core_seconds_each (plan+apply, in the process)": [r[1]["seconds"] for r in runs],
           "load_average_1min": os.getloadavg()[0],
           "python_startup_seconds (ragcli --version)": round(startup, 3),
           "all_mtimes_touched_seconds": round(t_touched, 3), "touched_hashed": touched["hashed"],
           "touched_changes": len(touched["changes"]),
           "after_touch_seconds": round(t_after, 3), "after_touch_hashed": after["hashed"],
           "ratio_hash_everything_over_stat_only": round(t_touched / plain, 2),
           "bar_2s": "met" if plain <= 2.0 else "NOT met"}
    print(json.dumps({"unchanged": out}, indent=1))
    return out


def book_states(db: Path) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_sync import book_states as states

    return states(db)


def kill(data: Path, work: Path, kills: int = 20, seed: int = 27) -> dict:
    folder, db = work / "killed", work / "kill.db"
    folder.mkdir()
    for name in SMALL:
        shutil.copyfile(data / name, folder / name)
    ragcli(db, "sync", folder)
    change_a_page(folder / "heart-failure-programmes-article.pdf")
    (folder / "malawi-quality-improvement-article.pdf").rename(folder / "malawi-renamed.pdf")
    (folder / "faa-amt-handbook-sample.pdf").unlink()
    shutil.copyfile(data / ADDED, folder / ADDED)
    for i, extra in enumerate(SMALL[:3]):  # three more added books (a sentence makes each new bytes)
        target = folder / f"extra-{i}-{extra}"
        shutil.copyfile(data / extra, target)
        change_a_page(target, f"Extra copy {i} for the kill bench.")
    pristine = work / "kill-before.db"
    shutil.copyfile(db, pristine)
    before = book_states(pristine)
    t_full, _, _ = ragcli(db, "sync", "--prune")
    after = book_states(db)
    rng = random.Random(seed)
    env = {**os.environ, "RAGCLI_DB": str(db)}
    results = []
    for k in range(kills):
        shutil.copyfile(pristine, db)
        for extra in ("-wal", "-shm"):
            Path(str(db) + extra).unlink(missing_ok=True)
        delay = rng.uniform(0.05, 0.98) * t_full
        proc = subprocess.Popen([sys.executable, "-m", "ragcli", "sync", "--prune"], env=env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        try:
            now = book_states(db)
            bad = [b for b in set(before) | set(after) if now.get(b) not in (before.get(b), after.get(b))]
            bad += [b for b, s in now.items() if not s[3]]
        except AssertionError:
            bad, now = ["integrity_check failed"], {}
        applied = sum(1 for b in set(before) | set(after) if before.get(b) != after.get(b)
                      and now.get(b) == after.get(b))
        ragcli(db, "sync", "--prune")
        resumed_equal = book_states(db) == after
        results.append({"delay_s": round(delay, 2), "changes_applied_at_kill": applied, "bad_books": bad,
                        "next_sync_reaches_after": resumed_equal})
        print(json.dumps(results[-1]), flush=True)
    total_changes = sum(1 for b in set(before) | set(after) if before.get(b) != after.get(b))
    out = {"kills": kills, "full_sync_seconds": round(t_full, 1), "book_changes_in_the_sync": total_changes,
           "corrupt_or_partial": sum(1 for r in results if r["bad_books"]),
           "kills_with_some_changes_applied": sum(1 for r in results if 0 < r["changes_applied_at_kill"] < total_changes),
           "kills_before_any_change": sum(1 for r in results if r["changes_applied_at_kill"] == 0),
           "kills_after_all_changes": sum(1 for r in results if r["changes_applied_at_kill"] == total_changes),
           "next_sync_reaches_after": sum(1 for r in results if r["next_sync_reaches_after"])}
    print(json.dumps({"kill": out}, indent=1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=["four", "unchanged", "kill", "all"])
    ap.add_argument("data", type=Path, help="the shared PDFs (../shared/data/pdfs)")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--files", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        work = Path(tmp)
        if args.part in ("four", "all"):
            four(args.data, work)
        if args.part in ("unchanged", "all"):
            unchanged(args.data, work, args.files)
        if args.part in ("kill", "all"):
            kill(args.data, work, args.kills)


if __name__ == "__main__":
    main()
