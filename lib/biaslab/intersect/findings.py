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
* triplet strategies: hard negatives (SR-k4-UN) and LLM triplets (SR-k4+LLM) beat SR-k4 (App. A.6), when trained;
  and, as checks, each strategy mines triplets SR-k4 does not (:func:`triplet_checks`).

A claim against a baseline needs that baseline's competence checks (:func:`competence`): a classifier trained to
convergence that beats the majority label set, and scores unlike the other classifier; a zero-shot LLM that beats
the majority label set. A claim whose baseline fails one is ``untestable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

import pandas as pd

from .. import claims as cl
from .. import competence as comp
from .splits import MAJORITY
from .triplets import MODEL_NAMES

BASE_PREFIX = "S-BERT-Base"
LLM_PREFIX = "Zero-shot LLM"
LLM_GAP = 0.10  # the abstract's "up to 10 % more Jaccard over LLM-based classifiers on unseen categories"


def retriever_name(strategy: str) -> str:
    return f"BiasRetriever ({MODEL_NAMES[strategy]})"


def _units(a: pd.Series, b: pd.Series) -> cl.Evidence | None:
    """Paired Jaccard difference ``a − b`` on the (subset, paragraph) units both have (None under two)."""
    a, b = a.align(b, join="inner")
    both = a.notna() & b.notna()
    if both.sum() < 2:
        return None
    return cl.Evidence.paired(a[both].to_numpy(), b[both].to_numpy(), "paragraphs")


def _paired(per: pd.DataFrame, a: str, b: str, *, mask: str | None, domain: str, corpus: str,
            k: int) -> cl.Evidence | None:
    """Paired Jaccard difference of models ``a`` − ``b`` on the (subset, paragraph) units both were tested on."""
    sel = per[(per["k"] == k) & (per["domain"] == domain) & (per["test_corpus"] == corpus)]
    if mask:
        sel = sel[sel[mask]]
    wide = sel.pivot_table(index=["subset", "paragraph_id"], columns="model", values="jaccard", aggfunc="mean")
    if a not in wide or b not in wide:
        return None
    return _units(wide[a], wide[b])


def _name(per: pd.DataFrame, prefix: str) -> str | None:
    names = [m for m in per["model"].unique() if str(m).startswith(prefix)]
    return names[0] if names else None


def _depth(in_dom: pd.DataFrame, model: str, k_from: int, k_to: int) -> cl.Evidence | None:
    """Paired Jaccard difference of one model at ``k_to`` − at ``k_from``, per (subset, paragraph)."""
    sel = in_dom[in_dom["model"] == model]
    at = {k: sel[sel["k"] == k].set_index(["subset", "paragraph_id"])["jaccard"] for k in (k_to, k_from)}
    return _units(at[k_to], at[k_from])


def competence(per: pd.DataFrame, log: pd.DataFrame, *, level: float) -> pd.DataFrame:
    """intersect's competence table (``reports/intersect/results/competence.csv``). ``per``: the baselines'
    per-paragraph scores with the majority label set's (:func:`biaslab.intersect.baselines.classifier_grid`);
    ``log``: the classifiers' training log. Per classifier (corpus × model × subset):

    * trained to convergence — its last epoch moved the mean training loss by less than the tolerance it was trained
      with (``intersect.baselines.converge_tol``), or the paper's early stopping ended it (the validation loss stopped
      improving); a classifier that ran out of epochs still moving fails;
    * it beats the majority label set — Jaccard minus the constant classifier's, paired over the test paragraphs, the
      interval above 0 (a classifier predicting one label set scores what the majority does);

    per pair of classifiers on the same corpus and subset, that they score differently on at least one test paragraph
    (identical scores for two methods are a bug until shown otherwise); and per zero-shot LLM and corpus, that it beats
    the majority label set on the paragraphs it answered."""
    rows = []
    in_dom = per[per["domain"] == "in-domain"]

    def jaccard(model, corpus, subset):
        sel = in_dom[(in_dom["model"] == model) & (in_dom["train_corpus"] == corpus) & (in_dom["subset"] == subset)]
        return sel.set_index("paragraph_id")["jaccard"]

    def beats_majority(name, model, corpus, subsets):
        pairs = [jaccard(model, corpus, s).align(jaccard(MAJORITY, corpus, s), join="inner") for s in subsets]
        a, b = (pd.concat([p[i] for p in pairs]) for i in (0, 1))
        return comp.beats(name, "Jaccard minus the majority label set's (paired over test paragraphs)",
                          cl.Evidence.paired(a.to_numpy(), b.to_numpy(), "paragraphs"), level=level)

    for r in log.itertuples(index=False):
        who = f"{r.train_corpus}: {r.model} on {r.subset}"
        early = r.stopped_by == "early_stopping"
        row = comp.at_most(f"{who} is trained to convergence",
                           "relative change of the mean training loss over its last epoch"
                           + (" (ended by early stopping)" if early else f" ({r.epochs_run:g} epochs, {r.stopped_by})"),
                           float(r.last_change), floor=float(r.converge_tol))
        rows.append(row | {"passed": bool(row["passed"] or early)})
        rows.append(beats_majority(f"{who} beats the majority label set", r.model, r.train_corpus, [r.subset]))
    for (corpus, subset), g in log.groupby(["train_corpus", "subset"], sort=False):
        for a, b in combinations(list(g["model"]), 2):
            x, y = jaccard(a, corpus, subset).align(jaccard(b, corpus, subset), join="inner")
            rows.append(comp.at_least(f"{corpus}: {a} and {b} on {subset} score differently",
                                      "share of test paragraphs whose Jaccard differs", float((x != y).mean()),
                                      floor=1 / max(len(x), 1)))
    for corpus in dict.fromkeys(in_dom["train_corpus"]):
        if (llm := _name(in_dom[in_dom["train_corpus"] == corpus], LLM_PREFIX)) is not None:
            subsets = list(dict.fromkeys(in_dom.loc[(in_dom["model"] == llm) & (in_dom["train_corpus"] == corpus),
                                                    "subset"]))
            rows.append(beats_majority(f"{corpus}: {llm} beats the majority label set", llm, corpus, subsets))
    return comp.table(rows)


def checks_of(table: pd.DataFrame, corpus: str, model: str) -> tuple[str, ...]:
    """The competence checks (:func:`competence`) of one baseline on one corpus."""
    return tuple(c for c in table["check"] if c.startswith(f"{corpus}: ") and model in c)


def claims(per: pd.DataFrame, *, k: int, plateau_from: int, k_max: int, plateau_bound: float,
           competence_table: pd.DataFrame | None = None) -> list[cl.Pending]:
    """``per``: per-paragraph scores of retrievers, the frozen base (both from ``evaluate.paragraph_scores``) and the
    classifiers (in-domain, every k), with a ``train_corpus`` per row. A claim against a classifier or the zero-shot
    LLM requires that baseline's checks of ``competence_table`` (:func:`competence`); the others need none."""
    out: list[cl.Pending] = []
    base, bce, llm = _name(per, BASE_PREFIX), _name(per, "BERT-MultiLabel"), _name(per, LLM_PREFIX)
    srk4 = retriever_name("srk4")

    def add(text, section, paper, ev, requires=(), **kw):
        if ev is not None:
            out.append(cl.effect(text, section, paper, ev, requires=requires, **kw))

    def needs(corpus, model):
        return () if competence_table is None else checks_of(competence_table, corpus, model)

    for corpus in sorted(per["test_corpus"].unique()):
        in_dom = per[per["train_corpus"] == corpus]
        if base:
            add(f"{corpus}: BiasRetriever (SR-k4) beats its frozen base in-domain on D_test,N", "§5.2, Fig. 2",
                "higher Jaccard", _paired(in_dom, srk4, base, mask=None, domain="in-domain", corpus=corpus, k=k),
                direction=1)
        if bce:
            add(f"{corpus}: BiasRetriever beats the BCE classifier on unseen categories", "§5.2", "higher Jaccard",
                _paired(in_dom, srk4, bce, mask="test_unseen", domain="in-domain", corpus=corpus, k=k), direction=1,
                requires=needs(corpus, bce))
        if llm:
            add(f"{corpus}: BiasRetriever beats the zero-shot LLM classifier on unseen categories", "abstract, §5.2",
                f"up to +{LLM_GAP:g} Jaccard",
                _paired(in_dom, srk4, llm, mask="test_unseen", domain="in-domain", corpus=corpus, k=k), direction=1,
                paper_effect=LLM_GAP, requires=needs(corpus, llm))
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


def triplet_checks(triplets: Mapping[str, pd.DataFrame]) -> list[cl.Pending]:
    """The strategies act (``check`` rows, never reproductions): on each corpus (``triplets``: corpus → its
    ``triplets.parquet``), every strategy other than SR-k4 mines triplets SR-k4 does not — per anchor paragraph, the
    share of its (anchor, positive, negative) triplets absent from SR-k4's for that paragraph, averaged over the
    paragraphs (App. A.6 compares models trained on them; identical triplets would make that a comparison of
    seeds)."""
    out = []
    key = ["anchor", "positive", "negative"]
    for corpus, t in triplets.items():
        base = set(map(tuple, t.loc[t["strategy"] == "srk4", ["anchor_id", *key]].to_numpy().tolist()))
        for strategy in [s for s in dict.fromkeys(t["strategy"]) if s != "srk4"]:
            mine = t[t["strategy"] == strategy]
            new = [tuple(r) not in base for r in mine[["anchor_id", *key]].to_numpy().tolist()]
            share = pd.Series(new, index=mine.index, dtype=float).groupby(mine["anchor_id"], sort=False).mean()
            out.append(cl.effect(f"{corpus}: the {MODEL_NAMES[strategy]} strategy mines triplets SR-k4 does not",
                                 "App. A.6, Table 1", "a different triplet set per strategy",
                                 cl.Evidence.of(share.to_numpy(), "anchor paragraphs"), direction=1, kind="check",
                                 requires=()))
    return out
