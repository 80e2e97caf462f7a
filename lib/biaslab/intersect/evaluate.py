"""Evaluation of detectors (intersect §5, App. A.5): Jaccard and exact match per test set (seen / unseen / all),
per k, in-domain and cross-domain, with mean ± std over the category subsets C1–C3."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..metrics.detection import exact_match, jaccard
from .detect import Detector, predictions_over_k

TEST_SETS = {"test_seen": "seen", "test_unseen": "unseen", "test_all": "all"}


@dataclass
class CorpusData:
    paragraphs: pd.DataFrame
    reference: pd.DataFrame
    splits: pd.DataFrame


def paragraph_scores(encoder, *, model: str, train_corpus: str, subset: str, corpora: Mapping[str, CorpusData],
                     ks: Sequence[int], **agg) -> pd.DataFrame:
    """One row per (test corpus, held-out paragraph of ``subset``, k): its Jaccard and exact match and the test sets
    it belongs to — the units every interval and paired test of the findings resamples."""
    frames = []
    for test_corpus, data in corpora.items():
        sub = data.splits[data.splits["subset"] == subset]
        if sub.empty:
            continue
        sub = sub[sub["test_all"]].merge(data.paragraphs[["paragraph_id", "text", "labels"]], on="paragraph_id")
        det = Detector(encoder, data.reference)
        sims, ids = det.retrieve(sub["text"].tolist(), max(ks))
        preds = predictions_over_k(data.reference["label"].to_numpy()[ids], sims, ks, **agg)
        trues = [list(x) for x in sub["labels"]]
        for k in ks:
            frames.append(pd.DataFrame({
                "model": model, "train_corpus": train_corpus, "subset": subset, "test_corpus": test_corpus,
                "domain": "in-domain" if test_corpus == train_corpus else "cross-domain", "k": k,
                "paragraph_id": sub["paragraph_id"].to_numpy(), "test_seen": sub["test_seen"].to_numpy(),
                "test_unseen": sub["test_unseen"].to_numpy(),
                "jaccard": [jaccard(t, p) for t, p in zip(trues, preds[k], strict=True)],
                "exact_match": [exact_match(t, p) for t, p in zip(trues, preds[k], strict=True)]}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def base_scores(encoder, *, model: str, runs: Sequence[tuple[str, str]], corpora: Mapping[str, CorpusData],
                ks: Sequence[int], **agg) -> pd.DataFrame:
    """The frozen base retriever's rows for every (training corpus, subset) of ``runs``: in-domain on that corpus,
    and — since it has no training corpus — the same scores on each other corpus stand as its cross-domain bar
    (``train_corpus`` = the corpus a retriever was trained on, ``test_corpus`` = the other one). Each (corpus,
    subset) is scored once."""
    frames = []
    for corpus, subset in sorted({(c, s) for c, s in runs if c in corpora}):
        rows = paragraph_scores(encoder, model=model, train_corpus=corpus, subset=subset,
                                corpora={corpus: corpora[corpus]}, ks=ks, **agg)
        frames.append(rows)
        for other in sorted({c for c, s in runs if s == subset and c != corpus}):
            frames.append(rows.assign(train_corpus=other, domain="cross-domain"))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def aggregate(per: pd.DataFrame) -> pd.DataFrame:
    """Means per (model, train_corpus, subset, test_corpus, test_set, k) of :func:`paragraph_scores` rows."""
    rows = []
    keys = ["model", "train_corpus", "subset", "test_corpus", "domain"]
    for key, g in per.groupby(keys, sort=False):
        for col, name in TEST_SETS.items():
            for k, h in g.groupby("k", sort=False):
                sel = h if col == "test_all" else h[h[col].to_numpy()]
                rows.append({**dict(zip(keys, key, strict=True)), "test_set": name, "k": k,
                             "jaccard": float(np.mean(sel["jaccard"].to_numpy())) if len(sel) else float("nan"),
                             "exact_match": float(np.mean(sel["exact_match"].to_numpy())) if len(sel) else float("nan"),
                             "n": len(sel)})
    out = pd.DataFrame(rows)
    return out[["model", "train_corpus", "subset", "test_corpus", "domain", "test_set", "k", "jaccard",
                "exact_match", "n"]] if len(out) else out


def evaluate_detector(encoder, *, model: str, train_corpus: str, subset: str, corpora: Mapping[str, CorpusData],
                      ks: Sequence[int], **agg) -> pd.DataFrame:
    """Rows (model, train_corpus, subset, test_corpus, domain, test_set, k, jaccard, exact_match, n) for every corpus
    in ``corpora`` (the training corpus = in-domain, the others = cross-domain) on its ``subset`` test sets."""
    return aggregate(paragraph_scores(encoder, model=model, train_corpus=train_corpus, subset=subset, corpora=corpora,
                                      ks=ks, **agg))


def summarise(results: pd.DataFrame, k: int) -> pd.DataFrame:
    """Mean ± std over subsets at one k (the paper's error bars are the std over C1–C3)."""
    at_k = results[results["k"] == k]
    keys = ["model", "train_corpus", "test_corpus", "domain", "test_set"]
    agg = at_k.groupby(keys).agg(jaccard_mean=("jaccard", "mean"), jaccard_std=("jaccard", "std"),
                                 exact_match_mean=("exact_match", "mean"), exact_match_std=("exact_match", "std"),
                                 subsets=("subset", "nunique")).reset_index()
    return agg.fillna({"jaccard_std": 0.0, "exact_match_std": 0.0})


def headline(summary: pd.DataFrame) -> dict:
    """{train→test corpus: {model: {seen, unseen, all}}} Jaccard means for metrics.json."""
    out: dict = {}
    for r in summary.itertuples(index=False):
        key = f"{r.train_corpus}->{r.test_corpus}"
        out.setdefault(key, {}).setdefault(r.model, {})[r.test_set] = round(float(r.jaccard_mean), 4)
    return out


def sweep_frame(results: pd.DataFrame, test_set: str = "all") -> pd.DataFrame:
    """Mean Jaccard over subsets per (model, domain, k) for the k-sweep figure (App. A.5)."""
    r = results[results["test_set"] == test_set]
    return r.groupby(["model", "train_corpus", "test_corpus", "domain", "k"])["jaccard"].mean().reset_index()

