"""fairrank's results from the rankers' runs: per-query measures, the paired change of one ranker against another,
the competence table and the claims as computed verdicts (Tables 1–4 and Figs. 1–2 are :mod:`.tables`).

Units are queries. A trained ranker's per-query value is its mean over seeds (the seeds change training, not the
queries); "X changes a measure" is the paired difference over the same queries (:func:`biaslab.stats.paired`:
bootstrap interval and sign-flip permutation p-value). The spread over seeds of each ranker's mean is reported
beside it (``summary``). BM25 is a ranker in every table (its given top-100 order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import stats
from .metrics import per_query

TABLE_MEASURES = ("MRR", "ARaB-tc", "ARaB-tf", "ARaB-bool", "GenderTerms", "NFaiRR")
LOWER_IS_BETTER = ("ARaB-tc", "ARaB-tf", "ARaB-bool", "GenderTerms")


def ranker_id(name: str, lam: float) -> str:
    """``name@λ`` (an unregularised family's only member is ``name@0``)."""
    return f"{name}@{lam:g}"


def qualified_id(backbone: str, name: str, mode: str, lam: float) -> str:
    """The id in the runs of family ``name`` (loss mode ``mode``) on ``backbone`` at λ = ``lam``; an unregularised
    family (mode ``none``) has λ = 0 whatever ``lam`` says."""
    return f"{backbone}|{ranker_id(name, 0.0 if mode == 'none' else lam)}"


def bm25_run(lists: pd.DataFrame) -> pd.DataFrame:
    """The BM25 ranker: its given order (score = −rank, so ties in BM25 score keep the file's rank)."""
    return lists.assign(score=-lists["rank"].astype(float))[["qid", "docid", "score"]]


def measure_runs(runs: pd.DataFrame, qrels: pd.DataFrame, terms: pd.DataFrame, query_sets: Mapping[str, Sequence[str]],
                 background: Mapping[str, Sequence[str]], *, cutoffs: Sequence[int], mrr_cutoff: int,
                 relevance: int) -> pd.DataFrame:
    """Per-query measures of every (``ranker``, ``seed``) run in ``runs`` (``ranker, seed, qid, docid, score``) on
    every query set: ``ranker, seed, query_set, qid, measure, value``."""
    out = []
    for (ranker, seed), run in runs.groupby(["ranker", "seed"], sort=False):
        for qs, qids in query_sets.items():
            m = per_query(run, qrels, terms, qids, background, cutoffs=cutoffs, mrr_cutoff=mrr_cutoff,
                          relevance=relevance)
            out.append(m.assign(ranker=ranker, seed=seed, query_set=qs))
    cols = ["ranker", "seed", "query_set", "qid", "measure", "value"]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


def over_seeds(per_seed: pd.DataFrame) -> pd.DataFrame:
    """One row per (ranker, query set, qid, measure): the mean over seeds (``per_query.csv``)."""
    keys = ["ranker", "query_set", "qid", "measure"]
    return per_seed.groupby(keys, sort=False, dropna=False)["value"].mean().reset_index()


def summary(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per (ranker, query set, measure): the mean over queries per seed, then mean ± std over seeds."""
    by_seed = per_seed.groupby(["ranker", "query_set", "measure", "seed"], sort=False)["value"].mean()
    g = by_seed.groupby(["ranker", "query_set", "measure"], sort=False)
    return pd.DataFrame({"mean": g.mean(), "std": g.std(ddof=1), "seeds": g.size()}).reset_index()


def headline(summ: pd.DataFrame, measures: Sequence[str]) -> dict[str, dict]:
    """``metrics.json``'s rankers: ``ranker|query_set|measure`` → mean, std and number of seeds (:func:`summary`)
    of each of ``measures``."""
    head = summ[summ["measure"].isin(measures)]
    return {f"{r.ranker}|{r.query_set}|{r.measure}": {"mean": r.mean, "std": r.std, "seeds": int(r.seeds)}
            for r in head.itertuples(index=False)}


def _vector(pq: pd.DataFrame, ranker: str, query_set: str, measure: str, qids: Sequence[str]) -> np.ndarray:
    s = pq[(pq["ranker"] == ranker) & (pq["query_set"] == query_set) & (pq["measure"] == measure)]
    s = s.set_index("qid")["value"]
    missing = [q for q in qids if q not in s.index]
    if missing:
        raise KeyError(f"ranker {ranker!r} has no {measure} for queries {missing[:3]} of {query_set}")
    return s.loc[list(qids)].to_numpy(dtype=np.float64)


def change(pq: pd.DataFrame, ranker: str, reference: str, query_set: str, measure: str, qids: Sequence[str], *,
           rounds: int, confidence: float, seed: int) -> dict:
    """``ranker`` vs ``reference`` on one measure: both means, the paired difference (interval, p-value) and the
    percentage change of the mean (the paper's table entry; NaN when the reference mean is 0)."""
    a, b = _vector(pq, ranker, query_set, measure, qids), _vector(pq, reference, query_set, measure, qids)
    est = stats.paired(a, b, rounds=rounds, confidence=confidence, seed=seed)
    ref = float(np.nanmean(b))
    return {"ranker": ranker, "reference": reference, "query_set": query_set, "measure": measure,
            "value": float(np.nanmean(a)), "reference_value": ref, "diff": est.value, "diff_ci_low": est.ci_low,
            "diff_ci_high": est.ci_high, "p_value": est.p_value,
            "pct_change": 100.0 * est.value / abs(ref) if ref else float("nan"),
            "significant": bool(est.p_value is not None and est.p_value < 1 - confidence)}


# Our query sets and the paper's columns: Table 1 is the 215 socially sensitive queries, Table 2 the 1,765 neutral ones
# (ours: every evaluated TREC DL query, both folds pooled).
PAPER_TABLES = {"dl19_fair": ("fairrank/results/table1.csv", "215 queries"),
                "trecdl": ("fairrank/results/table2.csv", "1,765 queries")}
BOUNDED = {"NFaiRR": (0.0, 1.0), "MRR": (0.0, 1.0), "nDCG": (0.0, 1.0)}  # a change cannot leave these ranges


def paper_changes(values: Mapping, query_set: str, cutoff: int) -> dict[tuple[str, str], float]:
    """The paper's percentage changes vs its base ranker (Tables 1–2, BERT-mini, λ = 1) for our ``query_set`` at
    ``cutoff``: (ranker family@λ, measure) → % change, read from ``reports/paper_values/fairrank.yaml`` (``values``),
    where the report's comparisons keep them — one place for the paper's numbers."""
    table_file = PAPER_TABLES[query_set][0]
    out = {}
    for art in values["artefacts"]:
        for cmp in art.get("compare", []):
            w = cmp.get("where", {})
            if cmp.get("file") == table_file and str(w.get("cutoff")) == str(cutoff) and cmp.get("ours") == "pct_change":
                for v in cmp["values"]:
                    ranker, measure = v["key"]
                    out[(ranker.split("|", 1)[-1], measure)] = float(v["value"])
    return out


def _effect(pct: float | None, base: float, measure: str) -> tuple[float | None, str]:
    """The paper's relative change as an absolute effect at our base value, and why it cannot be tested when it
    would take the measure out of its range (e.g. NFaiRR above 1)."""
    if pct is None or not np.isfinite(base):
        return None, ""
    eff = pct / 100.0 * abs(base)
    lo, hi = BOUNDED.get(measure.split("@")[0], (-np.inf, np.inf))
    if not lo <= base + eff <= hi:
        return eff, (f"the paper's {pct:+.1f} % would take {measure} from our base {base:.3g} to {base + eff:.3g}, "
                     f"outside [{lo:g}, {hi:g}]")
    return eff, ""


def competence(pq: pd.DataFrame, query_sets: Mapping[str, Sequence[str]], values: Mapping, *, base: str,
               pen_rel: str, mrr_name: str, ndcg_name: str, cutoff: int, level: float) -> pd.DataFrame:
    """fairrank's competence table (``competence.csv``): the base ranker beats the BM25 order it re-ranks on every
    evaluated query (``trecdl``; MRR@10 and nDCG@10, paired t interval over queries above 0), and on each query set
    the paper's ARaB-TC change (Tables 1–2, penalty on relevant documents), taken at our base ranker's ARaB, is at
    least the smallest change our queries detect (the MDE of the paired ARaB difference at 80 % power)."""
    from .. import competence as comp
    from ..stats import mde

    rows = []
    for m in (mrr_name, ndcg_name):
        q = query_sets["trecdl"]
        rows.append(comp.beats(f"base ranker beats BM25 ({m}, trecdl)", f"{m}: base − BM25",
                               cl.Evidence.paired(_vector(pq, base, "trecdl", m, q),
                                                  _vector(pq, "bm25", "trecdl", m, q), "queries"), level=level))
    arab = f"ARaB-tc@{cutoff}"
    for qs, qids in query_sets.items():
        pct = paper_changes(values, qs, cutoff).get((ranker_id("penalty_relevant", 1.0), arab))
        b = _vector(pq, base, qs, arab, qids)
        ev = cl.Evidence.paired(_vector(pq, pen_rel, qs, arab, qids), b, "queries")
        size = abs(pct / 100.0 * float(np.nanmean(b))) if pct is not None else float("nan")
        rows.append(comp.at_least(f"paper's {arab} change is measurable ({qs})",
                                  f"|paper's {pct}% x our base {arab}| against the MDE of the paired difference",
                                  size, floor=mde(ev.sd, ev.n, level=level)))
    return comp.table(rows)


def claims(pq: pd.DataFrame, query_sets: Mapping[str, Sequence[str]], values: Mapping, *, base: str, pen_rel: str,
           pen_irr: str, rew_irr: str, lam_low: str, lam_high: str, baselines: Sequence[str],
           pointwise_base: str | None, mrr_name: str, cutoff: int, mrr_tolerance: float,
           mitigation: pd.DataFrame | None = None) -> list[cl.Pending]:
    """The paper's claims (§4.3 RQ1, RQ3, RQ4; App. A; the abstract), each a paired comparison over the queries of
    each query set, with the paper's effect in our units (its % change of Tables 1–2 at our base ranker's value), and
    the check that the penalty acts on its own training data (:func:`mitigation_check` of ``mitigation``)."""
    out: list[cl.Pending] = []
    arab, nfairr = f"ARaB-tc@{cutoff}", f"NFaiRR@{cutoff}"
    for qs, qids in query_sets.items():
        paper = PAPER_TABLES.get(qs, ("", qs))[1]
        changes = paper_changes(values, qs, cutoff) if qs in PAPER_TABLES else {}

        def ev(a: str, b: str, m: str, qs=qs, qids=qids) -> cl.Evidence:
            return cl.Evidence.paired(_vector(pq, a, qs, m, qids), _vector(pq, b, qs, m, qids), "queries")

        def table_row(text, ranker, family, m, direction, check, qs=qs, qids=qids, paper=paper, changes=changes):
            pct = changes.get((ranker_id(family, 1.0), m))
            eff, why = _effect(pct, float(np.nanmean(_vector(pq, base, qs, m, qids))), m)
            return cl.effect(f"[{qs}] {text}", f"§4.3 RQ1, Tables 1-2 ({paper})",
                             "–" if pct is None else f"{pct:+.1f}%", ev(ranker, base, m), direction=direction,
                             paper_effect=eff, untestable=why, requires=check)

        bm25 = tuple(f"base ranker beats BM25 ({m}, trecdl)" for m in (mrr_name, mrr_name.replace("MRR", "nDCG")))
        measurable = (*bm25, f"paper's {arab} change is measurable ({qs})")
        out.append(table_row(f"penalising biased relevant documents lowers {arab} vs the base ranker", pen_rel,
                             "penalty_relevant", arab, -1, measurable))
        out.append(table_row(f"penalising biased relevant documents raises {mrr_name}", pen_rel, "penalty_relevant",
                             mrr_name, 1, bm25))
        out.append(table_row(f"penalising biased relevant documents raises {nfairr}", pen_rel, "penalty_relevant",
                             nfairr, 1, bm25))
        out.append(table_row(f"penalising biased irrelevant documents lowers {arab}", pen_irr, "penalty_irrelevant",
                             arab, -1, measurable))
        out.append(table_row(f"rewarding fair irrelevant documents lowers {arab}", rew_irr, "reward_irrelevant",
                             arab, -1, measurable))
        out.append(cl.no_change(f"[{qs}] the best configuration keeps {mrr_name} within ±{mrr_tolerance:g}",
                                f"abstract ({paper})", "MRR@10 within small to moderate deltas",
                                ev(pen_rel, base, mrr_name), bound=mrr_tolerance, requires=bm25))
        out.append(cl.effect(f"[{qs}] a larger λ raises {nfairr} ({lam_high} vs {lam_low})", "§4.3 RQ3, Fig. 1",
                             "rises with λ", ev(lam_high, lam_low, nfairr), direction=1, requires=bm25))
        out.append(cl.effect(f"[{qs}] a larger λ lowers {mrr_name} ({lam_high} vs {lam_low})", "§4.3 RQ3, Fig. 1",
                             "falls with λ", ev(lam_high, lam_low, mrr_name), direction=-1, requires=bm25))
        for b in baselines:
            out.append(cl.effect(f"[{qs}] the regularised ranker ({pen_rel}) has lower {arab} than {b}",
                                 f"§4.3 RQ4, Fig. 2 ({paper})", "lower than LWS and AdvBERT", ev(pen_rel, b, arab),
                                 direction=-1, requires=measurable))
        if pointwise_base:
            out.append(cl.effect(f"[{qs}] the pairwise base ranker has higher {mrr_name} than the pointwise one",
                                 "App. A, Tables 9-10", "pairwise > pointwise", ev(base, pointwise_base, mrr_name),
                                 direction=1, requires=bm25))
    if mitigation is not None:
        out.append(mitigation_check(mitigation))
    return out


def mitigation_rankers(backbones: Sequence[str], rankers: Mapping, lambda_figure: str) -> tuple[str, str]:
    """(base, penalised): the rankers :func:`mitigation_check` compares (``fairrank.backbones``, ``.rankers``,
    ``.eval.lambda_figure``): on the first backbone, the family ``lambda_figure`` (the paper's best scenario) at its
    largest λ, and that family's reference ranker. ``fairrank_train`` scores its training passages for these two
    only."""
    fam = rankers[lambda_figure]
    ref = rankers[fam.reference]
    return (qualified_id(backbones[0], fam.reference, ref.mode, max(ref.lambdas)),
            qualified_id(backbones[0], lambda_figure, fam.mode, max(fam.lambdas)))


def mitigation_table(train_scores: pd.DataFrame, terms: pd.DataFrame, pairs: pd.DataFrame, *, base: str,
                     penalised: str, psi_mode: str) -> pd.DataFrame:
    """The training positives the penalty on relevant documents acts on (Ψ > 0 under ``psi_mode``), per fold, with
    tanh Φ of the ``base`` and the ``penalised`` ranker of that fold, each the mean over seeds (``mitigation.csv``):
    the input of :func:`mitigation_check`. ``train_scores`` and ``pairs`` carry ``fold``
    (:class:`biaslab.fairrank.prepare.Folds`)."""
    from .bias import lookup, psi

    keys = ["fold", "qid", "docid"]
    pos = pairs.drop_duplicates(["fold", "qid", "pos"])[["fold", "qid", "pos"]].rename(columns={"pos": "docid"})
    docids = pos["docid"].tolist()
    pos = pos[psi(lookup(terms, docids, "def_f"), lookup(terms, docids, "def_m"), psi_mode) > 0].reset_index(drop=True)
    s = train_scores.assign(t=np.tanh(train_scores["score"].astype(np.float64))).groupby(["ranker", *keys])["t"].mean()
    idx = pd.MultiIndex.from_frame(pos[keys])
    return pos.assign(base=s.loc[base].reindex(idx).to_numpy(), penalised=s.loc[penalised].reindex(idx).to_numpy(),
                      base_ranker=base, penalised_ranker=penalised)


def mitigation_check(table: pd.DataFrame) -> cl.Pending:
    """A ``check``: at its largest λ, the penalty on biased relevant documents lowers the score (tanh Φ, what the
    hinge reads) of the training positives it penalises against the base ranker, paired over those passages
    (:func:`mitigation_table`). A penalty that does not move its own training data does not act."""
    base, pen = table["base_ranker"].iloc[0], table["penalised_ranker"].iloc[0]
    return cl.effect(f"the penalty ({pen}) lowers tanh Φ of its biased relevant training passages vs {base}",
                     "§3.3 eq. 17", "the penalty pushes biased relevant documents down",
                     cl.Evidence.paired(table["penalised"], table["base"], "training passages"), direction=-1,
                     kind="check")


def paper_claims(pq: pd.DataFrame, query_sets: Mapping[str, Sequence[str]], P, values: Mapping, *,
                 mitigation: pd.DataFrame | None = None) -> tuple[list[cl.Claim], pd.DataFrame]:
    """(claims table rows, competence table) with the rankers and settings of ``P`` (``fairrank`` and ``common``
    sections of params.yaml) and the paper's numbers ``values`` (``reports/paper_values/fairrank.yaml``): what
    ``fairrank_analysis`` writes, from the per-query measures (``per_query.csv``) and the mitigation check's input
    (``mitigation.csv``) alone, so it can be rebuilt from committed tables (tests/test_fairrank_lib.py). The
    Tables' λ picks each scenario's ranker; Fig. 1's family gives the low and high λ; the baselines are the LWS and
    AdvBERT rankers of Fig. 2."""
    C, E, U = P.fairrank, P.fairrank.eval, P.common.uncertainty
    first = C.backbones[0]
    fam = C.rankers[E.lambda_figure]
    ids = {n: qualified_id(first, n, s.mode, E.table_lambda) for n, s in C.rankers.items()}
    mrr_name = f"MRR@{E.mrr_cutoff}"
    comp = competence(pq, query_sets, values, base=ids["base"], pen_rel=ids["penalty_relevant"], mrr_name=mrr_name,
                      ndcg_name=f"nDCG@{E.mrr_cutoff}", cutoff=E.cutoffs[0], level=U.confidence)
    pending = claims(
        pq, query_sets, values, base=ids["base"], pen_rel=ids["penalty_relevant"], pen_irr=ids["penalty_irrelevant"],
        rew_irr=ids["reward_irrelevant"], lam_low=qualified_id(first, E.lambda_figure, fam.mode, min(fam.lambdas)),
        lam_high=qualified_id(first, E.lambda_figure, fam.mode, max(fam.lambdas)),
        baselines=[ids[n] for n in E.baselines_figure if C.rankers[n].sampling == "lws" or C.rankers[n].adv_lambda],
        pointwise_base=ids.get("pointwise_base"), mrr_name=mrr_name, cutoff=E.cutoffs[0],
        mrr_tolerance=C.claims.mrr_tolerance, mitigation=mitigation)
    return cl.finalize(pending, level=U.confidence, competence_table=comp), comp
