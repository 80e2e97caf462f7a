"""intersect's claims as computed verdicts (BiasRetriever, §5.2, App. A.5–A.6), with the uncertainty behind them.

The unit is a held-out paragraph of one category subset C_i (its Jaccard at the evaluation k); comparisons are paired
on the same (subset, paragraph) units and resampled within subsets. Claims:

* in-domain, BiasRetriever beats its frozen base on D_test,N (Fig. 2), and beats the BCE classifier on the unseen
  categories D_test,N−Ci (§5.2, "up to 10 % more Jaccard");
* cross-domain, BiasRetriever beats the frozen base on the other corpus (Fig. 3);
* retrieval depth: the gain from k to the largest k of the sweep is negligible (plateau after k = 15, App. A.5);
* triplet strategies: hard negatives (SR-k4-UN) and LLM triplets (SR-k4+LLM) beat SR-k4 (App. A.6), when trained.
"""

from __future__ import annotations

import pandas as pd

from .. import claims as cl
from .. import stats
from .triplets import MODEL_NAMES

BASE_PREFIX = "S-BERT-Base"


def retriever_name(strategy: str) -> str:
    return f"BiasRetriever ({MODEL_NAMES[strategy]})"


def _paired(per: pd.DataFrame, a: str, b: str, *, mask: str | None, domain: str, corpus: str, k: int, **kw):
    """Paired Jaccard difference of models ``a`` − ``b`` on the (subset, paragraph) units both were tested on."""
    sel = per[(per["k"] == k) & (per["domain"] == domain) & (per["test_corpus"] == corpus)]
    if mask:
        sel = sel[sel[mask]]
    wide = sel.pivot_table(index=["subset", "paragraph_id"], columns="model", values="jaccard", aggfunc="mean")
    if a not in wide or b not in wide:
        return None
    wide = wide[[a, b]].dropna()
    if len(wide) < 2:
        return None
    strata = wide.index.get_level_values("subset").to_numpy()
    x, y = wide[a].to_numpy(), wide[b].to_numpy()
    return stats.paired_statistic(len(wide), lambda ix: x[ix].mean(), lambda ix: y[ix].mean(), strata=strata, **kw)


def _base_name(per: pd.DataFrame) -> str | None:
    names = [m for m in per["model"].unique() if str(m).startswith(BASE_PREFIX)]
    return names[0] if names else None


def claims(per: pd.DataFrame, *, k: int, k_max: int, plateau_bound: float, rounds: int, confidence: float,
           seed: int) -> list[cl.Claim]:
    """``per``: per-paragraph scores of retrievers, the frozen base (both from ``evaluate.paragraph_scores``) and the
    classifiers (in-domain, every k), with a ``train_corpus`` per row."""
    kw = {"rounds": rounds, "confidence": confidence, "seed": seed}
    out: list[cl.Claim] = []
    base = _base_name(per)
    srk4 = retriever_name("srk4")
    bce = next((m for m in per["model"].unique() if str(m).startswith("BERT-MultiLabel")), None)
    for corpus in sorted(per["test_corpus"].unique()):
        in_dom = per[per["train_corpus"] == corpus]
        if base:
            est = _paired(in_dom, srk4, base, mask=None, domain="in-domain", corpus=corpus, k=k, **kw)
            if est is not None:
                out.append(cl.direction(f"{corpus}: BiasRetriever (SR-k4) beats its frozen base in-domain on D_test,N",
                                        "§5.2, Fig. 2", "higher Jaccard", est, expected="greater"))
        if bce:
            est = _paired(in_dom, srk4, bce, mask="test_unseen", domain="in-domain", corpus=corpus, k=k, **kw)
            if est is not None:
                out.append(cl.direction(f"{corpus}: BiasRetriever beats the BCE classifier on unseen categories",
                                        "§5.2, abstract", "up to +0.10 Jaccard", est, expected="greater"))
        cross = per[(per["train_corpus"] != corpus) & (per["domain"] == "cross-domain")]
        if base and len(cross):
            # the frozen base's cross-domain rows are its scores on this corpus (evaluate.base_scores)
            est = _paired(cross, srk4, base, mask=None, domain="cross-domain", corpus=corpus, k=k, **kw)
            if est is not None:
                out.append(cl.direction(f"{corpus}: BiasRetriever trained on the other corpus beats the frozen base "
                                        "(cross-domain)", "§5.2, Fig. 3", "higher Jaccard", est, expected="greater"))
        if k_max > k:
            sel = in_dom[in_dom["model"] == srk4]
            a = sel[sel["k"] == k_max].set_index(["subset", "paragraph_id"])["jaccard"]
            b = sel[sel["k"] == k].set_index(["subset", "paragraph_id"])["jaccard"]
            if len(a) and len(b):
                a, b = a.align(b, join="inner")
                est = stats.paired(a.to_numpy(), b.to_numpy(), **kw)
                out.append(cl.negligible(f"{corpus}: going from k = {k} to k = {k_max} changes Jaccard little "
                                         "(plateau)", "App. A.5, Figs. 4-5", "plateau beyond k = 15", est,
                                         bound=plateau_bound))
        for strategy, label in (("srk4un", "hard negatives (SR-k4-UN)"), ("srk4llm", "LLM triplets (SR-k4+LLM)")):
            est = _paired(in_dom, retriever_name(strategy), srk4, mask=None, domain="in-domain", corpus=corpus, k=k,
                          **kw)
            if est is not None:
                out.append(cl.direction(f"{corpus}: {label} beat SR-k4", "App. A.6, Fig. 6", "higher Jaccard", est,
                                        expected="greater"))
    return out
