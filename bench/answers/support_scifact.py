"""SciFact calibration benchmark for the per-claim support scorer (ragcli.answer.support).

    python bench/answers/support_scifact.py --data ../shared/data/scifact --split validation --n 300

Measures ROC-AUC and precision/recall at the scorer's thresholds for
  (a) SUPPORT claim + its evidence abstract   vs   claim + hard-negative abstract
      (the most similar abstract by all-MiniLM-L6-v2, claim vs whole abstract, that is not one of the
      claim's evidence or cited documents), and
  (b) SUPPORT claim + evidence abstract       vs   CONTRADICT claim + its evidence abstract,
beside the plain baseline (max claim/sentence cosine) measured in the same run.

`--misplaced` only counts, without embedding anything, the SUPPORT and CONTRADICT claims (with their
evidence abstract) on which `support.misplaced_numbers` fires: the pairs the rule can move from
`supported` to `weak` (it never raises a level), so the full run's change is bounded by these counts.

`--no-hardneg` scores only the SUPPORT and CONTRADICT claims with their evidence abstracts (no
hard negatives, so no corpus embedding) and prints the levels.

`--fit` refits the logistic regression on the chosen split and prints constants to paste into
ragcli/support.py (do that on train only).

Embeddings are cached as .npy under --cache (default: $TMPDIR/ragcli_scifact_cache) between runs.
SciFact is CC BY-NC 2.0 (AllenAI): used here for evaluation only.
"""
from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import os
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ragcli.answer import support  # noqa: E402

csv.field_size_limit(10**8)


# ----------------------------------------------------------------------------------------- data
@dataclass
class Doc:
    doc_id: str
    title: str
    sentences: list[str]


@dataclass
class Pair:
    claim_id: str
    claim: str
    doc_id: str
    kind: str  # "support" | "hardneg" | "contradict"


def parse_sentences(literal: str) -> list[str]:
    """corpus.csv stores each abstract as a numpy-style repr: ['a'\\n 'b'] (no commas).

    ast.literal_eval would glue adjacent strings together, so read the string tokens one by one.
    """
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(literal).readline):
        if tok.type == tokenize.STRING:
            out.append(ast.literal_eval(tok.string).strip())
    return [s for s in out if s]


def load_corpus(data: Path) -> dict[str, Doc]:
    docs = {}
    with open(data / "corpus.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            docs[row["doc_id"]] = Doc(row["doc_id"], row["title"], parse_sentences(row["abstract"]))
    return docs


def _ids(literal: str) -> list[str]:
    return [t for t in literal.strip("[] ").replace(",", " ").split() if t]


def load_claims(data: Path, split: str) -> list[dict]:
    """One row per claim id: claim text, first SUPPORT / CONTRADICT doc, all evidence + cited docs."""
    claims: dict[str, dict] = {}
    with open(data / f"claims_{split}.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            c = claims.setdefault(row["id"], {"id": row["id"], "claim": row["claim"], "label": None,
                                              "doc": None, "related": set()})
            c["related"].update(_ids(row["cited_doc_ids"]))
            if row["evidence_doc_id"]:
                c["related"].add(row["evidence_doc_id"])
            if row["evidence_label"] in ("SUPPORT", "CONTRADICT") and c["doc"] is None:
                c["label"], c["doc"] = row["evidence_label"], row["evidence_doc_id"]
    return list(claims.values())


# ----------------------------------------------------------------------------------- embeddings
class CachedEmbedder:
    """Wraps the real embedder with an on-disk cache keyed by text hash (one .npy per batch set)."""

    def __init__(self, embedder, cache_dir: Path):
        self.inner, self.name, self.dim = embedder, embedder.name, embedder.dim
        self.cache_dir = cache_dir
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.store: dict[str, np.ndarray] = {}
        self.calls = 0
        for f in sorted(cache_dir.glob("vecs_*.npy")):
            keys = json.loads(f.with_suffix(".json").read_text())
            vecs = np.load(f)
            self.store.update(zip(keys, vecs))

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        keys = [self.key(t) for t in texts]
        missing = list({k: t for k, t in zip(keys, texts) if k not in self.store}.items())
        if missing:
            t0 = time.time()
            vecs = self.inner.embed([t for _, t in missing])
            stamp = f"{int(time.time() * 1000)}_{os.getpid()}"
            np.save(self.cache_dir / f"vecs_{stamp}.npy", vecs)
            (self.cache_dir / f"vecs_{stamp}.json").write_text(json.dumps([k for k, _ in missing]))
            self.store.update(zip([k for k, _ in missing], vecs))
            print(f"  embedded {len(missing)} new texts in {time.time() - t0:.1f}s", file=sys.stderr)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.store[k] for k in keys]).astype(np.float32)


def abstract_text(doc: Doc) -> str:
    return doc.title + ". " + " ".join(doc.sentences)


def hard_negatives(claims: list[dict], docs: dict[str, Doc], emb: CachedEmbedder) -> dict[str, str]:
    """claim id -> the most similar abstract (whole-abstract embedding) not related to the claim."""
    ids = sorted(docs)
    doc_vecs = emb.embed([abstract_text(docs[i]) for i in ids])
    claim_vecs = emb.embed([c["claim"] for c in claims])
    sims = claim_vecs @ doc_vecs.T
    out = {}
    for c, row in zip(claims, sims):
        for j in np.argsort(-row):
            if ids[j] not in c["related"]:
                out[c["id"]] = ids[j]
                break
    return out


def build_pairs(data: Path, split: str, n: int, emb: CachedEmbedder):
    docs = load_corpus(data)
    claims = load_claims(data, split)
    sup = [c for c in claims if c["label"] == "SUPPORT" and c["doc"] in docs][:n]
    con = [c for c in claims if c["label"] == "CONTRADICT" and c["doc"] in docs][:n]
    neg = hard_negatives(sup, docs, emb)
    pairs = [Pair(c["id"], c["claim"], c["doc"], "support") for c in sup]
    pairs += [Pair(c["id"], c["claim"], neg[c["id"]], "hardneg") for c in sup]
    pairs += [Pair(c["id"], c["claim"], c["doc"], "contradict") for c in con]
    return pairs, docs


# ---------------------------------------------------------------------------------------- metrics
def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Mann-Whitney AUC with ties counted as half."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    allv = np.concatenate([pos, neg])[order]
    ranks = np.empty(len(allv))
    i = 0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1] == allv[i]:
            j += 1
        ranks[i:j + 1] = (i + j) / 2 + 1
        i = j + 1
    r = np.empty(len(allv))
    r[order] = ranks
    return float((r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def prec_rec(pred: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    tp = float((pred & (labels == 1)).sum())
    return (tp / max(pred.sum(), 1), tp / max((labels == 1).sum(), 1))


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1e-2, iters: int = 50,
                 offset: np.ndarray | None = None) -> np.ndarray:
    """Plain Newton-Raphson logistic regression (intercept first); no sklearn needed.

    offset: a fixed part of the linear score per row (a coefficient that is set, not fitted).
    """
    offset = np.zeros(len(X)) if offset is None else offset
    A = np.hstack([np.ones((len(X), 1)), X])
    w = np.zeros(A.shape[1])
    reg = l2 * np.eye(A.shape[1])
    reg[0, 0] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(A @ w + offset)))
        grad = A.T @ (p - y) + reg @ w
        hess = (A * (p * (1 - p))[:, None]).T @ A + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


# -------------------------------------------------------------------------------------- scoring
def score_pairs(pairs: list[Pair], docs: dict[str, Doc], emb: CachedEmbedder, title: bool = False):
    """Features and SupportResults for every pair, through the public score_claims (one embed call)."""
    def sents(p):
        d = docs[p.doc_id]
        return ([d.title] if title else []) + d.sentences

    results = support.score_claims([(p.claim, [sents(p)]) for p in pairs], emb)
    return [r[0] for r in results]


def baseline(res) -> np.ndarray:
    return np.array([r.features["cos_max"] for r in res])


def evaluate(res, kinds: np.ndarray) -> dict:
    """AUC of the scorer and the baseline for (a) and (b); precision/recall at the two thresholds."""
    score = np.array([r.score for r in res])
    level = np.array([r.level for r in res])
    out = {}
    for name, neg in (("a_support_vs_hardneg", "hardneg"), ("b_support_vs_contradict", "contradict")):
        m = (kinds == "support") | (kinds == neg)
        y = (kinds[m] == "support").astype(int)
        row = {"n_pos": int(y.sum()), "n_neg": int(len(y) - y.sum()),
               "auc": roc_auc(score[m], y), "baseline_auc": roc_auc(baseline(res)[m], y)}
        for lv, pred in (("supported", level[m] == "supported"),
                         ("weak_or_better", level[m] != "unsupported")):
            p, r = prec_rec(pred, y)
            row[lv] = {"precision": p, "recall": r}
        out[name] = row
    out["levels"] = {k: {lv: int(((kinds == k) & (level == lv)).sum()) for lv in support.LEVELS}
                     for k in ("support", "hardneg", "contradict")}
    return out


def fit(res, kinds: np.ndarray) -> None:
    """Fit FEATURES on SUPPORT vs hard negatives; print constants and thresholds for support.py.

    The negation coefficient is not fitted here: hard negatives carry no negation signal, so it is
    fixed at support.NEGATION_COEF (what a fit with CONTRADICT claims as negatives gives).
    """
    m = (kinds == "support") | (kinds == "hardneg")
    free = [f for f in support.FEATURES if f != "neg_mismatch"]
    X = np.array([[r.features[f] for f in free] for r in res])[m]
    neg = np.array([r.features["neg_mismatch"] for r in res])[m] * support.NEGATION_COEF
    y = (kinds[m] == "support").astype(float)
    w = fit_logistic(X, y, offset=neg)
    p = 1.0 / (1.0 + np.exp(-(X @ w[1:] + w[0] + neg)))
    cands = np.unique(np.round(p, 3))
    sup_at = min(t for t in cands if prec_rec(p >= t, y)[0] >= 0.90 and (p >= t).sum() >= 10)
    weak_at = float(np.round(np.quantile(p[y == 1], 0.05), 3))  # 95% of SUPPORT at or above
    print("FEATURES =", tuple(free) + ("neg_mismatch",))
    print("COEFS =", tuple(round(float(c), 3) for c in w[1:]) + (support.NEGATION_COEF,))
    print("INTERCEPT =", round(float(w[0]), 3))
    print(f"SUPPORTED_AT = {sup_at}  # precision >= 0.90 on train (a)")
    print(f"WEAK_AT = {weak_at}  # 95% of train SUPPORT pairs at or above")


def render(split: str, n: int, ev: dict, seconds: float, n_pairs: int) -> str:
    lines = [f"SciFact {split}, first {n} SUPPORT and first {n} CONTRADICT claims "
             f"({n_pairs} pairs, scored in {seconds:.1f}s)",
             f"thresholds: supported >= {support.SUPPORTED_AT}, weak >= {support.WEAK_AT}"]
    for name in ("a_support_vs_hardneg", "b_support_vs_contradict"):
        r = ev[name]
        lines.append(f"{name}: pos {r['n_pos']} neg {r['n_neg']}  AUC {r['auc']:.3f}  "
                     f"(baseline max-sentence cosine {r['baseline_auc']:.3f})")
        for lv in ("supported", "weak_or_better"):
            lines.append(f"    {lv:15s} precision {r[lv]['precision']:.3f}  recall {r[lv]['recall']:.3f}")
    for k, counts in ev["levels"].items():
        lines.append(f"  {k:10s} " + "  ".join(f"{lv} {c}" for lv, c in counts.items()))
    return "\n".join(lines)


def levels_without_hardneg(data: Path, split: str, n: int, cache: Path) -> int:
    from ragcli.models.embed import get_embedder

    docs = load_corpus(data)
    claims = load_claims(data, split)
    pairs = [Pair(c["id"], c["claim"], c["doc"], kind) for label, kind in (("SUPPORT", "support"),
                                                                           ("CONTRADICT", "contradict"))
             for c in [c for c in claims if c["label"] == label and c["doc"] in docs][:n]]
    runtime = get_embedder()
    res = score_pairs(pairs, docs, CachedEmbedder(runtime, cache / getattr(runtime, "backend", "st")))
    for kind in ("support", "contradict"):
        levels = [r.level for p, r in zip(pairs, res) if p.kind == kind]
        print(f"{kind}: {len(levels)} pairs, " + ", ".join(f"{lv} {levels.count(lv)}" for lv in support.LEVELS))
    return 0


def count_misplaced(data: Path, split: str, n: int) -> int:
    docs = load_corpus(data)
    claims = load_claims(data, split)
    for label in ("SUPPORT", "CONTRADICT"):
        rows = [c for c in claims if c["label"] == label and c["doc"] in docs][:n]
        with_numbers = [c for c in rows if support.numbers(c["claim"])]
        text = {c["id"]: " ".join(docs[c["doc"]].sentences) for c in rows}
        fired = [c for c in rows if support.misplaced_numbers(c["claim"], text[c["id"]])]
        new = [c for c in fired if not support.missing_numbers(c["claim"], text[c["id"]])]
        print(f"{label}: {len(rows)} claims, {len(with_numbers)} with a number, misplaced-number rule fires "
              f"on {len(fired)}, {len(new)} of them with no number missing (the only ones it can change)")
        for c in fired:
            print(f"  {c['id']}: {c['claim'][:110]}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the scifact folder (corpus.csv, claims_*.csv)")
    ap.add_argument("--split", choices=("train", "validation"), default="train")
    ap.add_argument("--n", type=int, default=300, help="first N SUPPORT (and N CONTRADICT) claims")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ragcli_scifact_cache")
    ap.add_argument("--out", type=Path, default=None, help="JSON results (default: print only + cache dir)")
    ap.add_argument("--fit", action="store_true", help="refit coefficients (train only) and print them")
    ap.add_argument("--misplaced", action="store_true", help="count the pairs the misplaced-number rule fires on")
    ap.add_argument("--no-hardneg", action="store_true",
                    help="levels of the SUPPORT and CONTRADICT pairs only (no corpus embedding: minutes less)")
    args = ap.parse_args(argv)
    if args.misplaced:
        return count_misplaced(args.data, args.split, args.n)
    if args.no_hardneg:
        return levels_without_hardneg(args.data, args.split, args.n, args.cache)

    from ragcli.models.embed import get_embedder

    runtime = get_embedder()
    # hard negatives: whole-abstract embeddings (cached once); scoring: the run-time backend's vectors
    pairs, docs = build_pairs(args.data, args.split, args.n, CachedEmbedder(runtime, args.cache))
    backend = getattr(runtime, "backend", "st")
    emb = CachedEmbedder(runtime, args.cache / backend)
    kinds = np.array([p.kind for p in pairs])
    t0 = time.time()
    res = score_pairs(pairs, docs, emb)
    seconds = time.time() - t0
    if args.fit:
        fit(res, kinds)
    ev = evaluate(res, kinds)
    print(f"embedder: {runtime.name} ({backend})")
    print(render(args.split, args.n, ev, seconds, len(pairs)))
    out = args.out or args.cache / f"support_scifact_{args.split}_{args.n}.json"
    out.write_text(json.dumps({"split": args.split, "n": args.n, "embedder": [runtime.name, backend],
                               "results": ev,
                               "thresholds": [support.SUPPORTED_AT, support.WEAK_AT],
                               "coefs": list(support.COEFS), "intercept": support.INTERCEPT}, indent=2))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
