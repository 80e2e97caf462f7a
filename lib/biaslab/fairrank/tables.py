"""fairrank's Tables 1–4 (percentage change vs the base ranker, paired tests over queries) and Figs. 1–2, built
from the per-query measures of :mod:`.findings`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .findings import TABLE_MEASURES, change, qualified_id, ranker_id

TABLE_QUERY_SETS = ("dl19_fair", "trecdl")  # per backbone, Tables 1 / 3 and 2 / 4


def paper_tables(pq: pd.DataFrame, query_sets: Mapping[str, Sequence[str]], rankers: Mapping, backbones: Sequence[str],
                 *, table_lambda: float, cutoffs: Sequence[int], mrr_cutoff: int, rounds: int, confidence: float,
                 seed: int) -> dict[int, tuple[str, str, pd.DataFrame]]:
    """Tables 1–4: number → (backbone, query set, :func:`table`). Per backbone, the fairness-sensitive queries then
    all queries; the rows are BM25 against the base ranker and every family of ``rankers`` (``fairrank.rankers``)
    at ``table_lambda`` (an unregularised family at 0) against its ``reference``."""
    scenario = [(n, s.reference) for n, s in rankers.items() if table_lambda in s.lambdas or s.mode == "none"]
    out = {}
    for b_i, backbone in enumerate(backbones):
        for q_i, qs in enumerate(TABLE_QUERY_SETS):
            rows = [("bm25", f"{backbone}|{ranker_id('base', 0.0)}")] if "base" in rankers else []
            rows += [(qualified_id(backbone, n, rankers[n].mode, table_lambda), f"{backbone}|{ranker_id(ref, 0.0)}")
                     for n, ref in scenario]
            rows = [(a, b) for a, b in rows if a != b]
            out[2 * b_i + q_i + 1] = (backbone, qs, table(pq, rows, qs, query_sets[qs], cutoffs, mrr_cutoff,
                                                          rounds=rounds, confidence=confidence, seed=seed))
    return out


def baselines_changes(pq: pd.DataFrame, query_sets: Mapping[str, Sequence[str]], rankers: Sequence[str], base: str,
                      *, cutoff: int, mrr_cutoff: int, rounds: int, confidence: float, seed: int) -> pd.DataFrame:
    """Fig. 2's data: each of ``rankers`` against ``base`` on every query set, at one cut-off (:func:`table`)."""
    return pd.concat([table(pq, [(r, base) for r in rankers], qs, qids, [cutoff], mrr_cutoff, rounds=rounds,
                            confidence=confidence, seed=seed) for qs, qids in query_sets.items()], ignore_index=True)


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
