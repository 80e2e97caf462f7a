"""Evaluation of detectors (intersect §5, App. A.5): Jaccard and exact match per test set (seen / unseen / all),
per k, in-domain and cross-domain, with mean ± std over the category subsets C1–C3."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from ..metrics.detection import mean_scores
from .detect import Detector, predictions_over_k

TEST_SETS = {"test_seen": "seen", "test_unseen": "unseen", "test_all": "all"}


@dataclass
class CorpusData:
    paragraphs: pd.DataFrame
    reference: pd.DataFrame
    splits: pd.DataFrame


def evaluate_detector(encoder, *, model: str, train_corpus: str, subset: str, corpora: Mapping[str, CorpusData],
                      ks: Sequence[int], **agg) -> pd.DataFrame:
    """Rows (model, train_corpus, subset, test_corpus, test_set, k, jaccard, exact_match, n) for every corpus in
    ``corpora`` (the training corpus = in-domain, the others = cross-domain) on its ``subset`` test sets."""
    rows = []
    for test_corpus, data in corpora.items():
        sub = data.splits[data.splits["subset"] == subset]
        if sub.empty:
            continue
        sub = sub[sub["test_all"]].merge(data.paragraphs[["paragraph_id", "text", "labels"]], on="paragraph_id")
        det = Detector(encoder, data.reference)
        sims, ids = det.retrieve(sub["text"].tolist(), max(ks))
        labels_topk = data.reference["label"].to_numpy()[ids]
        preds = predictions_over_k(labels_topk, sims, ks, **agg)
        trues = [list(x) for x in sub["labels"]]
        for col, name in TEST_SETS.items():
            mask = sub[col].to_numpy()
            for k in ks:
                scores = mean_scores([t for t, m in zip(trues, mask, strict=True) if m],
                                     [p for p, m in zip(preds[k], mask, strict=True) if m])
                rows.append({"model": model, "train_corpus": train_corpus, "subset": subset,
                             "test_corpus": test_corpus,
                             "domain": "in-domain" if test_corpus == train_corpus else "cross-domain",
                             "test_set": name, "k": k, **scores})
    return pd.DataFrame(rows)


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

