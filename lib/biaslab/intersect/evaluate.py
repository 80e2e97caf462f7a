"""Evaluation of detectors (intersect §5, App. A.5): Jaccard and exact match per test set (seen / unseen / all),
per k, in-domain and cross-domain, with mean ± std over the category subsets C1–C3."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..metrics.detection import exact_match, jaccard
from .detect import Detector, predictions_over_k
from .splits import TEST_SETS


@dataclass
class CorpusData:
    paragraphs: pd.DataFrame
    reference: pd.DataFrame
    splits: pd.DataFrame


def paragraph_scores(encoder, *, model: str, train_corpus: str, subset: str, corpora: Mapping[str, CorpusData],
                     ks: Sequence[int], split: str = "test_all", **agg) -> pd.DataFrame:
    """One row per (test corpus, held-out paragraph of ``subset``, k): its Jaccard and exact match and the test sets
    it belongs to — the units every interval and paired test of the findings resamples. ``split="val"`` scores the
    subset's validation paragraphs instead (for :func:`select_k`)."""
    frames = []
    for test_corpus, data in corpora.items():
        sub = data.splits[data.splits["subset"] == subset]
        if sub.empty:
            continue
        sub = sub[sub[split]].merge(data.paragraphs[["paragraph_id", "text", "labels"]], on="paragraph_id")
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


def select_k(val_rows: pd.DataFrame) -> tuple[int, pd.DataFrame]:
    """The retrieval depth with the highest mean Jaccard over validation paragraphs (:func:`paragraph_scores` with
    ``split="val"``, every trained retriever pooled; ties go to the smaller k) — k is chosen on data that is neither
    trained nor tested on. Returns (k, the per-k table with ``chosen`` marked)."""
    if val_rows.empty:
        raise ValueError("no validation paragraphs to choose k on: set intersect.splits.validation > 0 (and rerun "
                         "the splits), or fix intersect.evaluate.k to a number")
    table = (val_rows.groupby("k").agg(jaccard=("jaccard", "mean"), exact_match=("exact_match", "mean"),
                                       paragraphs=("jaccard", "size")).reset_index().sort_values("k"))
    best = int(table.loc[table["jaccard"].idxmax(), "k"])  # idxmax returns the first (smallest k) of ties
    return best, table.assign(chosen=table["k"] == best).reset_index(drop=True)


def base_scores(encoder, *, model: str, runs: Sequence[tuple[str, str]], corpora: Mapping[str, CorpusData],
                ks: Sequence[int], **agg) -> pd.DataFrame:
    """The frozen base retriever's rows beside every trained retriever (training corpus, subset) of ``runs``:
    in-domain on that corpus, and — since the base has no training corpus — its scores on each other corpus's
    test sets of the same subset as the cross-domain bar (``train_corpus`` = the retriever's training corpus,
    ``test_corpus`` = the other one). Each (corpus, subset) is scored once."""
    runs = sorted({(c, s) for c, s in runs if c in corpora})
    needed = sorted(set(runs) | {(b, s) for c, s in runs for b in corpora if b != c})
    scored = {(c, s): paragraph_scores(encoder, model=model, train_corpus=c, subset=s, corpora={c: corpora[c]},
                                       ks=ks, **agg) for c, s in needed}
    frames = [scored[(c, s)] for c, s in runs]
    frames += [scored[(b, s)].assign(train_corpus=c, domain="cross-domain")
               for c, s in runs for b in corpora if b != c and len(scored[(b, s)])]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def score_runs(runs: Sequence[str], corpora: Mapping[str, CorpusData], *, models_dir, base_dir, base_name: str,
               ks: Sequence[int], device: str, batch_size: int, **agg) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every trained retriever of ``runs`` (``CORPUS-STRATEGY-SUBSET``, its model in ``models_dir / run``) on the
    test paragraphs of every corpus and on its own corpus's validation paragraphs, then the frozen base
    (``base_dir``) beside them (:func:`base_scores`). Returns (test rows, validation rows) of
    :func:`paragraph_scores`; the validation rows choose k (:func:`evaluation_depth`)."""
    from pathlib import Path

    from ..embed import Encoder
    from .triplets import MODEL_NAMES

    frames, val_frames = [], []
    for run in runs:
        corpus, strategy, subset = run.split("-")
        enc = Encoder(Path(models_dir) / run, device=device, batch_size=batch_size)
        name = f"BiasRetriever ({MODEL_NAMES[strategy]})"
        frames.append(paragraph_scores(enc, model=name, train_corpus=corpus, subset=subset, corpora=corpora, ks=ks,
                                       **agg))
        val_frames.append(paragraph_scores(enc, model=name, train_corpus=corpus, subset=subset,
                                           corpora={corpus: corpora[corpus]}, ks=ks, split="val", **agg))
    base = Encoder(base_dir, device=device, batch_size=batch_size)
    frames.append(base_scores(base, model=f"S-BERT-Base (frozen {base_name})",
                              runs=[(r.split("-")[0], r.split("-")[2]) for r in runs], corpora=corpora, ks=ks, **agg))
    return pd.concat(frames, ignore_index=True), pd.concat(val_frames, ignore_index=True)


def evaluation_depth(k, val_rows: pd.DataFrame) -> tuple[int, pd.DataFrame, str]:
    """The k every table and claim is read at: ``k`` itself when it is a number (``intersect.evaluate.k``), else the
    best mean validation Jaccard (:func:`select_k`). Returns (k, the per-k validation table, how it was fixed:
    ``fixed`` or ``validation``)."""
    k_best, table = select_k(val_rows)
    return (k, table, "fixed") if isinstance(k, int) else (k_best, table, "validation")


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

