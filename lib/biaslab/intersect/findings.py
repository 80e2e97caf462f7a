"""intersect's claims as computed verdicts (BiasRetriever, §5.2, App. A.5–A.6), with the uncertainty behind them.

The unit is a held-out paragraph of one category subset C_i (its Jaccard at the evaluation k); comparisons are paired
on the same (subset, paragraph) units: Student-t intervals and Holm across the claims (:func:`biaslab.claims.finalize`).
Claims:

* in-domain, BiasRetriever beats its frozen base on D_test,N (Fig. 2) and the BCE classifier on the unseen categories
  D_test,N−Ci (§5.2), and the LLM-based (zero-shot) classifier there by up to 0.10 Jaccard (abstract: "up to 10 %
  more Jaccard over LLM-based classifiers on unseen intersectional categories");
* cross-domain, BiasRetriever beats the frozen base on the other corpus (Fig. 3);
* retrieval depth (App. A.5): "increasing k generally improves performance … the gains diminish beyond k = 15" —
  Jaccard rises from the evaluation k to ``plateau_from``, and changes by less than ±``plateau_bound`` from there to
  the largest k of the sweep;
* triplet strategies: hard negatives (SR-k4-UN) and LLM triplets (SR-k4+LLM) beat SR-k4 (App. A.6), when trained.
"""

from __future__ import annotations

import pandas as pd

from .. import claims as cl
from .triplets import MODEL_NAMES

BASE_PREFIX = "S-BERT-Base"
LLM_PREFIX = "Zero-shot LLM"
LLM_GAP = 0.10  # the abstract's "up to 10 % more Jaccard over LLM-based classifiers on unseen categories"


def retriever_name(strategy: str) -> str:
    return f"BiasRetriever ({MODEL_NAMES[strategy]})"


def _paired(per: pd.DataFrame, a: str, b: str, *, mask: str | None, domain: str, corpus: str,
            k: int) -> cl.Evidence | None:
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
    return cl.Evidence.paired(wide[a].to_numpy(), wide[b].to_numpy(), "paragraphs")


def _name(per: pd.DataFrame, prefix: str) -> str | None:
    names = [m for m in per["model"].unique() if str(m).startswith(prefix)]
    return names[0] if names else None


def _depth(in_dom: pd.DataFrame, model: str, k_from: int, k_to: int) -> cl.Evidence | None:
    sel = in_dom[in_dom["model"] == model]
    a = sel[sel["k"] == k_to].set_index(["subset", "paragraph_id"])["jaccard"]
    b = sel[sel["k"] == k_from].set_index(["subset", "paragraph_id"])["jaccard"]
    if not (len(a) and len(b)):
        return None
    a, b = a.align(b, join="inner")
    return cl.Evidence.paired(a.to_numpy(), b.to_numpy(), "paragraphs")


def claims(per: pd.DataFrame, *, k: int, plateau_from: int, k_max: int, plateau_bound: float) -> list[cl.Pending]:
    """``per``: per-paragraph scores of retrievers, the frozen base (both from ``evaluate.paragraph_scores``) and the
    classifiers (in-domain, every k), with a ``train_corpus`` per row. No competence floors yet: every row needs
    none (``requires=()``)."""
    out: list[cl.Pending] = []
    base, bce, llm = _name(per, BASE_PREFIX), _name(per, "BERT-MultiLabel"), _name(per, LLM_PREFIX)
    srk4 = retriever_name("srk4")

    def add(text, section, paper, ev, **kw):
        if ev is not None:
            out.append(cl.effect(text, section, paper, ev, requires=(), **kw))

    for corpus in sorted(per["test_corpus"].unique()):
        in_dom = per[per["train_corpus"] == corpus]
        if base:
            add(f"{corpus}: BiasRetriever (SR-k4) beats its frozen base in-domain on D_test,N", "§5.2, Fig. 2",
                "higher Jaccard", _paired(in_dom, srk4, base, mask=None, domain="in-domain", corpus=corpus, k=k),
                direction=1)
        if bce:
            add(f"{corpus}: BiasRetriever beats the BCE classifier on unseen categories", "§5.2", "higher Jaccard",
                _paired(in_dom, srk4, bce, mask="test_unseen", domain="in-domain", corpus=corpus, k=k), direction=1)
        if llm:
            add(f"{corpus}: BiasRetriever beats the zero-shot LLM classifier on unseen categories", "abstract, §5.2",
                f"up to +{LLM_GAP:g} Jaccard",
                _paired(in_dom, srk4, llm, mask="test_unseen", domain="in-domain", corpus=corpus, k=k), direction=1,
                paper_effect=LLM_GAP)
        cross = per[(per["train_corpus"] != corpus) & (per["domain"] == "cross-domain")]
        if base and len(cross):
            # the frozen base's cross-domain rows are its scores on this corpus (evaluate.base_scores)
            add(f"{corpus}: BiasRetriever trained on the other corpus beats the frozen base (cross-domain)",
                "§5.2, Fig. 3", "higher Jaccard",
                _paired(cross, srk4, base, mask=None, domain="cross-domain", corpus=corpus, k=k), direction=1)
        if plateau_from > k:
            add(f"{corpus}: a deeper retrieval raises Jaccard (k = {k} to {plateau_from})", "App. A.5, Figs. 4-5",
                "increasing k generally improves performance", _depth(in_dom, srk4, k, plateau_from), direction=1)
        if k_max > plateau_from:
            ev = _depth(in_dom, srk4, plateau_from, k_max)
            if ev is not None:
                out.append(cl.no_change(f"{corpus}: beyond k = {plateau_from} Jaccard changes little (k = {plateau_from} "
                                        f"to {k_max}, within ±{plateau_bound:g})", "App. A.5, Figs. 4-5",
                                        "gains diminish beyond k = 15", ev, bound=plateau_bound, requires=()))
        for strategy, label in (("srk4un", "hard negatives (SR-k4-UN)"), ("srk4llm", "LLM triplets (SR-k4+LLM)")):
            add(f"{corpus}: {label} beat SR-k4", "App. A.6, Fig. 6", "higher Jaccard",
                _paired(in_dom, retriever_name(strategy), srk4, mask=None, domain="in-domain", corpus=corpus, k=k),
                direction=1)
    return out
