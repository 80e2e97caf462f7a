"""fairrank's results from the rankers' runs: per-query measures, Tables 1–4 (percentage change vs the base
ranker with paired tests over queries), Figs. 1–2 and the claims as computed verdicts.

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


def table(pq: pd.DataFrame, rows: Sequence[tuple[str, str]], query_set: str, qids: Sequence[str],
          cutoffs: Sequence[int], mrr_cutoff: int, *, rounds: int, confidence: float, seed: int) -> pd.DataFrame:
    """One of Tables 1–4: for each (ranker, reference) of ``rows``, every measure at every cut-off (MRR at its own)
    as a percentage change vs the reference, with the paired test."""
    out = []
    for ranker, reference in rows:
        for c in cutoffs:
            for m in TABLE_MEASURES:
                name = f"MRR@{mrr_cutoff}" if m == "MRR" else f"{m}@{c}"
                out.append({"cutoff": c, **change(pq, ranker, reference, query_set, name, qids, rounds=rounds,
                                                  confidence=confidence, seed=seed)})
    return pd.DataFrame(out)


def table_wide(tab: pd.DataFrame) -> pd.DataFrame:
    """The paper's layout: one row per ranker and cut-off, one column per measure, "−12.3%*" (* = p < 0.05 of the
    paired test); the reference rows carry absolute values."""
    cells = tab.assign(cell=[
        ("–" if not np.isfinite(p) else f"{p:+.1f}%") + ("*" if s else "")
        for p, s in zip(tab["pct_change"], tab["significant"], strict=True)])
    cells["measure"] = cells["measure"].str.replace(r"@\d+$", "", regex=True)
    wide = cells.pivot_table(index=["cutoff", "ranker"], columns="measure", values="cell", aggfunc="first",
                             sort=False)
    refs = tab.drop_duplicates(["cutoff", "reference", "measure"]).assign(
        measure=lambda d: d["measure"].str.replace(r"@\d+$", "", regex=True))
    base = refs.pivot_table(index=["cutoff", "reference"], columns="measure", values="reference_value",
                            aggfunc="first", sort=False).map(lambda v: f"{v:.3f}")
    base.index = base.index.set_names(["cutoff", "ranker"])
    out = pd.concat([base, wide]).reindex(columns=[m for m in TABLE_MEASURES if m in wide.columns])
    return out.sort_index(level=0, sort_remaining=False)


def table_figure(wide: pd.DataFrame, title: str):
    """A table as a figure (the PNG beside the CSV), sized to its rows."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.4 * (len(wide.columns) + 3), 0.24 * (len(wide) + 1) + 0.5))
    ax.axis("off")
    labels = [f"@{c} {r}" for c, r in wide.index]
    t = ax.table(cellText=wide.fillna("").to_numpy(), rowLabels=labels, colLabels=list(wide.columns),
                 bbox=[0.22, 0.0, 0.78, 1.0])
    t.auto_set_font_size(False)
    t.set_fontsize(8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def lambda_figure(summ: pd.DataFrame, family: str, lambdas: Sequence[float], cutoff: int, mrr_cutoff: int):
    """Fig. 1: every measure at ``cutoff`` vs λ for one ranker family, one line per query set (mean ± std over
    seeds)."""
    import matplotlib.pyplot as plt

    names = [f"MRR@{mrr_cutoff}"] + [f"{m}@{cutoff}" for m in TABLE_MEASURES[1:]]
    fig, axes = plt.subplots(1, len(names), figsize=(3.0 * len(names), 3.0))
    for ax, name in zip(axes, names, strict=True):
        for qs, g in summ[summ["measure"] == name].groupby("query_set", sort=False):
            rows = [g[g["ranker"] == ranker_id(family, lam)] for lam in lambdas]
            ok = [(lam, r["mean"].iloc[0], r["std"].iloc[0]) for lam, r in zip(lambdas, rows, strict=True) if len(r)]
            if ok:
                x, y, e = map(np.asarray, zip(*ok, strict=True))
                ax.errorbar(x, y, yerr=np.nan_to_num(e), marker="o", capsize=3, label=qs)
        ax.set_xscale("log")
        ax.set_xlabel("λ")
        ax.set_title(name, fontsize=9)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{family}: measures vs λ (mean ± std over seeds)", fontsize=10)
    fig.tight_layout()
    return fig


def baselines_figure(changes: pd.DataFrame, cutoff: int, mrr_cutoff: int):
    """Fig. 2: the change vs the base ranker of each compared ranker, per measure, with its 95 % paired-bootstrap
    interval over queries (one panel per query set and measure). Absolute differences, not the paper's percentages:
    our base rankers' ARaB is close to 0, where a percentage change is dominated by the denominator (the tables keep
    the percentages)."""
    import matplotlib.pyplot as plt

    names = [f"MRR@{mrr_cutoff}"] + [f"{m}@{cutoff}" for m in TABLE_MEASURES[1:]]
    sets = list(dict.fromkeys(changes["query_set"]))
    rankers = list(dict.fromkeys(changes["ranker"]))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(len(sets), len(names), figsize=(2.3 * len(names), 0.45 * len(rankers) + 1.4 * len(sets)),
                             squeeze=False, sharey=True)
    for row, qs in zip(axes, sets, strict=True):
        for ax, name in zip(row, names, strict=True):
            g = changes[(changes["query_set"] == qs) & (changes["measure"] == name)].set_index("ranker").reindex(rankers)
            y = np.arange(len(rankers))
            err = np.vstack([g["diff"] - g["diff_ci_low"], g["diff_ci_high"] - g["diff"]])
            ax.errorbar(g["diff"], y, xerr=np.nan_to_num(err), fmt="none", ecolor="grey", capsize=2)
            for yi, (d, sig) in enumerate(zip(g["diff"], g["significant"].fillna(False), strict=True)):
                c = colours[yi % len(colours)]
                ax.plot(d, yi, "o", color=c, mfc=c if sig else "white")
            ax.axvline(0, color="black", lw=0.8)
            ax.set_title(f"{name} ({qs})", fontsize=8)
            ax.tick_params(labelsize=7)
        row[0].set_yticks(np.arange(len(rankers)), rankers, fontsize=7)
        row[0].invert_yaxis()
    fig.suptitle("Difference from the base ranker (mean over queries, 95 % CI; filled: paired test p < 0.05)",
                 fontsize=10)
    fig.tight_layout()
    return fig


# Our query sets and the paper's columns: Table 1 is the 215 socially sensitive queries, Table 2 the 1,765 neutral ones.
PAPER_TABLES = {"dl19_fair": ("fairrank/results/table1.csv", "215 queries"),
                "dl19": ("fairrank/results/table2.csv", "1,765 queries")}
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
    """fairrank's competence table (``competence.csv``): the base ranker beats the BM25 order it re-ranks on DL19
    (MRR@10 and nDCG@10, paired t interval over queries above 0), and on each query set the paper's ARaB-TC change
    (Tables 1–2, penalty on relevant documents), taken at our base ranker's ARaB, is at least the smallest change our
    queries detect (the MDE of the paired ARaB difference at 80 % power)."""
    from .. import competence as comp
    from ..stats import mde

    rows = []
    for m in (mrr_name, ndcg_name):
        q = query_sets["dl19"]
        rows.append(comp.beats(f"base ranker beats BM25 ({m}, dl19)", f"{m}: base − BM25",
                               cl.Evidence.paired(_vector(pq, base, "dl19", m, q), _vector(pq, "bm25", "dl19", m, q),
                                                  "queries"), level=level))
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

        bm25 = tuple(f"base ranker beats BM25 ({m}, dl19)" for m in (mrr_name, mrr_name.replace("MRR", "nDCG")))
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


def mitigation_table(train_scores: pd.DataFrame, terms: pd.DataFrame, pairs: pd.DataFrame, *, base: str,
                     penalised: str, psi_mode: str) -> pd.DataFrame:
    """The training positives the penalty on relevant documents acts on (Ψ > 0 under ``psi_mode``) with tanh Φ of
    the ``base`` and the ``penalised`` ranker, each the mean over seeds (``mitigation.csv``): the input of
    :func:`mitigation_check`."""
    from .bias import lookup, psi

    pos = pairs.drop_duplicates(["qid", "pos"])[["qid", "pos"]].rename(columns={"pos": "docid"})
    docids = pos["docid"].tolist()
    pos = pos[psi(lookup(terms, docids, "def_f"), lookup(terms, docids, "def_m"), psi_mode) > 0].reset_index(drop=True)
    s = train_scores.assign(t=np.tanh(train_scores["score"].astype(np.float64))).groupby(
        ["ranker", "qid", "docid"])["t"].mean()
    idx = pd.MultiIndex.from_frame(pos[["qid", "docid"]])
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
