"""cscl's claims as verdicts computed from the test predictions of every seed (``reports/cscl/results/claims.csv``).

Units are the test rows: one bootstrap resample of the rows is applied to every seed's predictions, and a
setting's statistic is its mean over seeds (the splits are fixed; seeds change training). Differences between
two settings are paired (the same resampled rows for both). The trade-off value compared with λ = 0 is the grid's
largest — fixed in advance, never picked on test.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import stats
from ..metrics.fairness import eo_gaps


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds of every metric per (task, method, value) — the paper's table format."""
    keys = ["task", "method", "mode", "value"]
    metrics = ["f1", "accuracy", "tpr_gap", "fpr_gap", "eo_gap"]
    g = results.fillna({"value": -1}).groupby(keys, sort=False)[metrics]
    out = g.mean().add_suffix("_mean").join(g.std(ddof=1).add_suffix("_std")).join(g.size().rename("seeds"))
    out = out.reset_index()
    out["value"] = out["value"].replace(-1, np.nan)
    return out


class _Setting:
    """One (task, method, value)'s test predictions, one column per seed, rows in test order."""

    def __init__(self, preds: pd.DataFrame):
        wide = preds.pivot_table(index="row", columns="seed", values="pred", aggfunc="first").sort_index()
        first = preds.drop_duplicates("row").set_index("row").sort_index()
        self.y, self.a, self.pred = first["y"].to_numpy(), first["a"].to_numpy(), wide.to_numpy()
        classes = np.unique(np.concatenate([self.y, self.pred.ravel()]))
        self.binary = len(classes) <= 2
        self.classes = classes[-1:] if self.binary else classes  # fixed on all rows, as equalized_odds_gaps does
        self.names, self.gidx = np.unique(self.a, return_inverse=True)

    def metric(self, name: str, ix: np.ndarray) -> float:
        """``eo_gap`` or ``f1`` on rows ``ix``, averaged over seeds."""
        from sklearn.metrics import f1_score

        values = []
        for s in range(self.pred.shape[1]):
            y, p = self.y[ix], self.pred[ix, s]
            if name == "eo_gap":
                tpr_gap, fpr_gap, _ = eo_gaps(y, p, self.gidx[ix], len(self.names), self.classes)
                values.append(tpr_gap + fpr_gap)
            elif name == "f1":
                values.append(f1_score(y, p, average="binary" if self.binary else "macro",
                                       pos_label=self.classes[-1], zero_division=0))
            else:
                raise ValueError(f"unknown metric {name!r}: eo_gap or f1")
        return float(np.mean(values))


def _settings(preds: pd.DataFrame) -> dict[tuple, _Setting]:
    key = preds["value"].fillna(-1)
    return {(t, m, v): _Setting(g) for (t, m, v), g in preds.assign(value=key).groupby(["task", "method", "value"])}


def _strongest(settings, task: str, method: str) -> float | None:
    values = [v for t, m, v in settings if t == task and m == method]
    return max(values) if values else None


def claims(preds: pd.DataFrame, methods: Mapping, *, f1_bound: float, rounds: int, confidence: float,
           seed: int) -> list[cl.Claim]:
    """``preds``: every seed's test predictions (task, method, value, seed, row, y, a, pred); ``methods``: the
    ``cscl.methods`` section (names → mode)."""
    sets = _settings(preds)
    by_mode = {mode: [n for n, m in methods.items() if m.mode == mode] for mode in
               ("ce", "contrastive", "one_stage", "adversarial", "inlp")}
    kw = {"rounds": rounds, "confidence": confidence, "seed": seed}
    out: list[cl.Claim] = []
    for task in dict.fromkeys(t for t, _, _ in sets):
        n = len(next(s for (t, _, _), s in sets.items() if t == task).y)

        def diff(a, b, metric, task=task, n=n):
            return stats.paired_statistic(n, lambda ix: sets[a].metric(metric, ix),
                                          lambda ix: sets[b].metric(metric, ix), **kw)

        for mode, section in (("contrastive", "§5 RQ1 (two-stage CL)"), ("one_stage", "§5 RQ1 (one-stage CL)")):
            for name in by_mode[mode]:
                top = _strongest(sets, task, name)
                if top is None or top == 0 or (task, name, 0.0) not in sets:
                    continue
                out.append(cl.direction(f"{task}: {name} with λ = {top:g} lowers ΔEO vs λ = 0", section,
                                        "ΔEO lower", diff((task, name, top), (task, name, 0.0), "eo_gap"),
                                        expected="less"))
                out.append(cl.negligible(f"{task}: {name} with λ = {top:g} keeps F1 (vs λ = 0)", section,
                                         "similar F1", diff((task, name, top), (task, name, 0.0), "f1"),
                                         bound=f1_bound))
        for ce_name in by_mode["ce"]:
            for name in by_mode["contrastive"]:
                top = _strongest(sets, task, name)
                if top is None or (task, ce_name, -1) not in sets:
                    continue
                out.append(cl.direction(f"{task}: two-stage CL ({name}, λ = {top:g}) has a lower ΔEO than CE",
                                        "§5 RQ2, Fig. 3", "ΔEO lower",
                                        diff((task, name, top), (task, ce_name, -1), "eo_gap"), expected="less"))
        for adv in by_mode["adversarial"]:
            top_adv = _strongest(sets, task, adv)
            for name in by_mode["contrastive"]:
                top = _strongest(sets, task, name)
                if top is None or top_adv is None:
                    continue
                out.append(cl.direction(f"{task}: two-stage CL (λ = {top:g}) has a lower ΔEO than {adv} "
                                        f"(λ_adv = {top_adv:g})", "§5 RQ2, Fig. 3", "ΔEO lower",
                                        diff((task, name, top), (task, adv, top_adv), "eo_gap"), expected="less"))
    return out


def tradeoff_figure(summary_rows: pd.DataFrame, task: str):
    """F1 against ΔEO for every method and trade-off value of one task, mean ± std over seeds (Figs. 2–3)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for method, g in summary_rows[summary_rows["task"] == task].groupby("method", sort=False):
        g = g.sort_values("value")
        ax.errorbar(g["eo_gap_mean"], g["f1_mean"], xerr=g["eo_gap_std"], yerr=g["f1_std"], marker="o",
                    capsize=2, linestyle="-" if len(g) > 1 else "none", label=method)
        for _, r in g.iterrows():
            if pd.notna(r["value"]):
                ax.annotate(f"{r['value']:g}", (r["eo_gap_mean"], r["f1_mean"]), fontsize=7,
                            xytext=(3, 3), textcoords="offset points")
    seeds = int(summary_rows["seeds"].max())
    ax.set(xlabel="ΔEO (lower is fairer)", ylabel="F1",
           title=f"{task}: F1 vs equalized-odds gap per method and trade-off value (mean ± std, {seeds} seeds)")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
