"""cscl's claims as verdicts computed from the test predictions of every seed (``reports/cscl/results/claims.csv``).

Units are the test rows: one bootstrap resample of the rows is applied to every seed's predictions, and a
setting's statistic is its mean over seeds (the splits are fixed; seeds change training). Differences between
two settings are paired (the same resampled rows for both). The trade-off value compared with λ = 0 is the grid's
largest — fixed in advance, never picked on test.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import stats
from ..metrics.fairness import eo_gaps


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds of every metric per (task, method, value) — the paper's table format."""
    keys = ["task", "method", "mode", "value"]
    metrics = [m for m in ("f1", "macro_f1", "accuracy", "tpr_gap", "fpr_gap", "eo_gap", "top_pred_share")
               if m in results.columns]
    g = results.fillna({"value": -1}).groupby(keys, sort=False)[metrics]
    out = g.mean().add_suffix("_mean").join(g.std(ddof=1).add_suffix("_std")).join(g.size().rename("seeds"))
    out = out.reset_index()
    out["value"] = out["value"].replace(-1, np.nan)
    return out


def fast_f1(y: np.ndarray, p: np.ndarray, *, pos_label=None) -> float:
    """sklearn's ``f1_score`` (``zero_division=0``) on integer labels — binary for ``pos_label``, else the macro mean
    over the labels present in ``y`` or ``p`` — from one confusion count (the bootstrap calls it ~10⁵ times;
    tested equal to sklearn)."""
    labels = np.union1d(y, p)
    k = len(labels)
    yi, pi = np.searchsorted(labels, y), np.searchsorted(labels, p)
    tp = np.bincount(yi[yi == pi], minlength=k).astype(np.float64)
    denom = np.bincount(yi, minlength=k) + np.bincount(pi, minlength=k)  # 2tp + fp + fn
    f1 = np.divide(2 * tp, denom, out=np.zeros(k), where=denom > 0)
    if pos_label is not None:
        i = np.searchsorted(labels, pos_label)
        return float(f1[i]) if i < k and labels[i] == pos_label else 0.0
    return float(f1.mean())


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
        self._memo: dict[tuple[str, bytes], float] = {}

    def constant_share(self) -> float:
        """The smallest, over seeds, share of test rows given the seed's most frequent prediction (1.0 = every seed
        predicts one class for every row)."""
        return float(min(np.unique(col, return_counts=True)[1].max() / len(col) for col in self.pred.T))

    def metric(self, name: str, ix: np.ndarray) -> float:
        """``eo_gap`` or ``f1`` on rows ``ix``, averaged over seeds. Memoised per (metric, rows): every claim
        resamples the same rows (one bootstrap seed), and a setting takes part in several claims."""
        key = (name, hashlib.blake2b(np.ascontiguousarray(ix).tobytes(), digest_size=16).digest())
        if key not in self._memo:
            self._memo[key] = self._metric(name, ix)
        return self._memo[key]

    def _metric(self, name: str, ix: np.ndarray) -> float:
        values = []
        y, g = self.y[ix], self.gidx[ix]
        for s in range(self.pred.shape[1]):
            p = self.pred[ix, s]
            if name == "eo_gap":
                tpr_gap, fpr_gap, _ = eo_gaps(y, p, g, len(self.names), self.classes)
                values.append(tpr_gap + fpr_gap)
            elif name == "f1":
                values.append(fast_f1(y, p, pos_label=self.classes[-1] if self.binary else None))
            else:
                raise ValueError(f"unknown metric {name!r}: eo_gap or f1")
        return float(np.mean(values))


def _settings(preds: pd.DataFrame) -> dict[tuple, _Setting]:
    key = preds["value"].fillna(-1)
    return {(t, m, v): _Setting(g) for (t, m, v), g in preds.assign(value=key).groupby(["task", "method", "value"])}


def _strongest(settings, task: str, method: str) -> float | None:
    values = [v for t, m, v in settings if t == task and m == method]
    return max(values) if values else None


def _sweep(sets, task: str, name: str):
    """(largest λ, its key, the λ = 0 key) of a CL method, or None without both."""
    top = _strongest(sets, task, name)
    if top is None or top == 0 or (task, name, 0.0) not in sets:
        return None
    return top, (task, name, top), (task, name, 0.0)


def claims(preds: pd.DataFrame, methods: Mapping, *, f1_bound: float, degenerate_share: float, rounds: int,
           confidence: float, seed: int) -> list[cl.Claim]:
    """The paper's §4.2 claims, per task. ``preds``: every seed's test predictions (task, method, value, seed, row,
    y, a, pred); ``methods``: the ``cscl.methods`` section (names → mode).

    RQ1 (Fig. 2): as λ grows the ΔEO of one- and two-stage CL shrinks (largest λ vs λ = 0) at the cost of F1; the
    change of ΔEO is larger in two-stage than in one-stage CL, whose F1 is "comparable or better" (non-inferiority:
    two-stage F1 minus one-stage F1 above −``f1_bound``). RQ2 (Fig. 3): CL at its largest λ has a lower ΔEO than CE
    and than each adversarial baseline at its largest λ_adv.

    A setting that gives one class to at least ``degenerate_share`` of the test rows in every seed is a constant
    classifier: its ΔEO is 0 by construction, not by fairness, so a claim comparing it is reported inconclusive
    (the rule column says so) whatever the interval."""
    sets = _settings(preds)
    by_mode = {mode: [n for n, m in methods.items() if m.mode == mode] for mode in
               ("ce", "contrastive", "one_stage", "adversarial", "inlp")}
    kw = {"rounds": rounds, "confidence": confidence, "seed": seed}
    out: list[cl.Claim] = []
    uses: list[tuple] = []  # the settings each claim compares

    def add(claim: cl.Claim, *keys) -> None:
        out.append(claim)
        uses.append(keys)

    for task in dict.fromkeys(t for t, _, _ in sets):
        n = len(next(s for (t, _, _), s in sets.items() if t == task).y)

        def diff(a, b, metric, n=n):
            return stats.paired_statistic(n, lambda ix: sets[a].metric(metric, ix),
                                          lambda ix: sets[b].metric(metric, ix), **kw)

        for mode, section in (("contrastive", "§4.2 RQ1, Fig. 2 (two-stage CL)"),
                              ("one_stage", "§4.2 RQ1, Fig. 2 (one-stage CL)")):
            for name in by_mode[mode]:
                if (sw := _sweep(sets, task, name)) is None:
                    continue
                top, hi, zero = sw
                add(cl.direction(f"{task}: {name} with λ = {top:g} lowers ΔEO vs λ = 0", section,
                                 "ΔEO shrinks as λ grows", diff(hi, zero, "eo_gap"), expected="less"), hi, zero)
                add(cl.direction(f"{task}: {name} with λ = {top:g} costs F1 vs λ = 0", section,
                                 "at the cost of F1", diff(hi, zero, "f1"), expected="less"), hi, zero)
        for two in by_mode["contrastive"]:
            for one in by_mode["one_stage"]:
                sw2, sw1 = _sweep(sets, task, two), _sweep(sets, task, one)
                if sw2 is None or sw1 is None:
                    continue
                (t2, hi2, z2), (t1, hi1, z1) = sw2, sw1
                change = stats.paired_statistic(
                    n, lambda ix, hi2=hi2, z2=z2: sets[hi2].metric("eo_gap", ix) - sets[z2].metric("eo_gap", ix),
                    lambda ix, hi1=hi1, z1=z1: sets[hi1].metric("eo_gap", ix) - sets[z1].metric("eo_gap", ix), **kw)
                add(cl.direction(f"{task}: ΔEO moves more with λ in two-stage ({two}, 0 → {t2:g}) than in "
                                 f"one-stage CL ({one}, 0 → {t1:g})", "§4.2 RQ1",
                                 "change more significant in two-stage", change, expected="less"), hi2, z2, hi1, z1)
                add(cl.direction(f"{task}: two-stage F1 (λ = {t2:g}) is comparable or better than one-stage "
                                 f"(λ = {t1:g}), within −{f1_bound:g}", "§4.2 RQ1", "comparable or better",
                                 diff(hi2, hi1, "f1"), expected="greater", null=-f1_bound), hi2, hi1)
        for ce_name in by_mode["ce"]:
            for name in by_mode["contrastive"] + by_mode["one_stage"]:
                top = _strongest(sets, task, name)
                if top is None or (task, ce_name, -1) not in sets:
                    continue
                kind = "two-stage" if methods[name].mode == "contrastive" else "one-stage"
                add(cl.direction(f"{task}: {kind} CL ({name}, λ = {top:g}) has a lower ΔEO than CE",
                                 "§4.2 RQ2, Fig. 3", "ΔEO lower",
                                 diff((task, name, top), (task, ce_name, -1), "eo_gap"), expected="less"),
                    (task, name, top), (task, ce_name, -1))
        for adv in by_mode["adversarial"]:
            top_adv = _strongest(sets, task, adv)
            for name in by_mode["contrastive"]:
                top = _strongest(sets, task, name)
                if top is None or top_adv is None:
                    continue
                add(cl.direction(f"{task}: two-stage CL (λ = {top:g}) has a lower ΔEO than {adv} "
                                 f"(λ_adv = {top_adv:g})", "§4.2 RQ2, Fig. 3", "ΔEO lower",
                                 diff((task, name, top), (task, adv, top_adv), "eo_gap"), expected="less"),
                    (task, name, top), (task, adv, top_adv))
    return [_guard(c, sets, used, degenerate_share) for c, used in zip(out, uses, strict=True)]


def _guard(claim: cl.Claim, sets, used: tuple, share: float) -> cl.Claim:
    constant = [k for k in used if sets[k].constant_share() >= share]
    if not constant:
        return claim
    names = ", ".join(f"{m} ({'-' if v == -1 else f'{v:g}'})" for _, m, v in constant)
    return replace(claim, verdict="inconclusive",
                   rule=f"{claim.rule}; inconclusive: {names} predicts one class for ≥ {share:.0%} of the test rows "
                        "in every seed (a constant classifier's ΔEO is 0 by construction)")


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


def group_leakage(features: np.ndarray, groups: np.ndarray, labels: np.ndarray, *, folds: int, seed: int) -> float:
    """How much of the protected attribute a linear probe reads from the features *within* each class (the
    equalized-odds view of leakage, as INLP's by-class probes): cross-validated logistic-regression accuracy for a,
    fitted per class and pooled over rows, minus the majority-group share (0 = no more than chance). Classes with
    fewer than ``folds`` rows of either group are skipped."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    hits, majority, n = 0.0, 0.0, 0
    for c in np.unique(labels):
        m = labels == c
        g = groups[m]
        counts = np.bincount(g, minlength=2)
        if len(counts) > 2 or counts.min() < folds:
            continue
        cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
        pred = cross_val_predict(LogisticRegression(max_iter=1000), features[m], g, cv=cv)
        hits += float((pred == g).sum())
        majority += float(counts.max())
        n += int(m.sum())
    return float("nan") if n == 0 else (hits - majority) / n


def embedding_figure(panels: list[tuple[str, np.ndarray]], rows: pd.DataFrame, task: str, *, perplexity: float,
                     seed: int, leakage: Mapping[str, float]):
    """t-SNE of the test features of several settings side by side (App. C.2, Fig. 10): colour = task label,
    marker = protected group. A fair representation mixes the two markers inside each colour's cluster."""
    import matplotlib.pyplot as plt
    from sklearn.manifold import TSNE

    y, a = rows["y"].to_numpy(), rows["a"].to_numpy()
    a_names = rows.drop_duplicates("a").set_index("a")["a_name"].to_dict()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False)
    for ax, (label, feats) in zip(axes[0], panels, strict=True):
        xy = TSNE(perplexity=min(perplexity, (len(feats) - 1) / 3), random_state=seed, init="pca").fit_transform(feats)
        for g, marker in ((0, "o"), (1, "^")):
            m = a == g
            ax.scatter(xy[m, 0], xy[m, 1], c=y[m], cmap="tab20" if y.max() > 1 else "coolwarm", marker=marker, s=10,
                       alpha=0.7, vmin=0, vmax=max(1, int(y.max())), label=a_names.get(g, str(g)))
        ax.set(xticks=[], yticks=[], title=f"{label}\ngroup read within class: {leakage[label]:+.2f} over chance")
        ax.title.set_fontsize(8)
    axes[0][0].legend(fontsize=7, title="marker = group", title_fontsize=7)
    fig.suptitle(f"{task}: t-SNE of test-set encoder features (colour = task label)", fontsize=9)
    fig.tight_layout()
    return fig


def sensitivity_frame(main_preds: pd.DataFrame, sens_preds: pd.DataFrame, *, task: str, method: str,
                      lambdas, seeds, default: str) -> pd.DataFrame:
    """The test predictions of RQ3's study (§4.2, Fig. 4) in one frame with a ``variant`` column: the main stage's
    runs of ``method`` on ``task`` at ``lambdas`` and ``seeds`` as the ``default`` variant, then every varied
    setting of the sensitivity stage. Fails naming what is missing when a default run is absent."""
    base = main_preds[(main_preds["task"] == task) & (main_preds["method"] == method)
                      & main_preds["value"].isin(list(lambdas)) & main_preds["seed"].isin(list(seeds))]
    have = set(zip(base["value"], base["seed"], strict=True))
    missing = [(v, s) for v in lambdas for s in seeds if (v, s) not in have]
    if missing:
        raise ValueError(f"the main cscl_train runs lack {method} on {task} at (λ, seed) {missing}: the sensitivity "
                         "study's default setting is read from them (cscl.sensitivity.lambdas / seeds must be in "
                         "cscl.methods grid / cscl.seeds)")
    cols = ["task", "method", "variant", "value", "seed", "row", "y", "a", "pred"]
    return pd.concat([base.assign(variant=default)[cols], sens_preds[cols]], ignore_index=True)


def sensitivity_results(frame: pd.DataFrame, *, rounds: int, confidence: float, seed: int) -> pd.DataFrame:
    """Per (variant, λ): F1 and ΔEO (mean over seeds) with percentile bootstrap intervals over the test rows."""
    out = []
    for (variant, value), g in frame.groupby(["variant", "value"], sort=False):
        s = _Setting(g)
        row = {"variant": variant, "value": value, "seeds": s.pred.shape[1], "min_top_pred_share": s.constant_share()}
        for metric in ("f1", "eo_gap"):
            est = stats.ci_statistic(len(s.y), lambda ix, s=s, metric=metric: s.metric(metric, ix), rounds=rounds,
                                     confidence=confidence, seed=seed)
            row |= {metric: est.value, f"{metric}_ci_low": est.ci_low, f"{metric}_ci_high": est.ci_high}
        out.append(row)
    return pd.DataFrame(out)


def sensitivity_claims(frame: pd.DataFrame, *, task: str, default: str, f1_bound: float, degenerate_share: float,
                       rounds: int, confidence: float, seed: int) -> list[cl.Claim]:
    """RQ3 (§4.2, Fig. 4): "two-stage CL is stable under a wide range of parameter settings: the equalized odds gaps
    are consistently decreasing when λ = 5 and the F1 scores are relatively high". Per variant: ΔEO at the largest λ
    minus ΔEO at λ = 0 (paired over the test rows, expected < 0), and F1 at the largest λ against the default
    setting's (non-inferiority within −``f1_bound``). Constant classifiers make a claim inconclusive, as in
    :func:`claims`."""
    sets = {(v, lam): _Setting(g) for (v, lam), g in frame.groupby(["variant", "value"], sort=False)}
    top, zero = max(frame["value"]), 0.0
    n = len(next(iter(sets.values())).y)
    kw = {"rounds": rounds, "confidence": confidence, "seed": seed}
    out, uses = [], []
    for variant in dict.fromkeys(frame["variant"]):
        hi, lo = (variant, top), (variant, zero)
        if lo not in sets or hi not in sets or top == zero:
            continue
        est = stats.paired_statistic(n, lambda ix, hi=hi: sets[hi].metric("eo_gap", ix),
                                     lambda ix, lo=lo: sets[lo].metric("eo_gap", ix), **kw)
        out.append(cl.direction(f"{task}: two-stage CL, {variant}: λ = {top:g} lowers ΔEO vs λ = 0",
                                "§4.2 RQ3, Fig. 4", "ΔEO consistently decreasing with λ = 5", est, expected="less"))
        uses.append((hi, lo))
        if variant != default and (default, top) in sets:
            d = (default, top)
            est = stats.paired_statistic(n, lambda ix, hi=hi: sets[hi].metric("f1", ix),
                                         lambda ix, d=d: sets[d].metric("f1", ix), **kw)
            out.append(cl.direction(f"{task}: two-stage CL, {variant}, λ = {top:g}: F1 stays within −{f1_bound:g} of "
                                    "the default setting's", "§4.2 RQ3, Fig. 4", "F1 relatively high", est,
                                    expected="greater", null=-f1_bound))
            uses.append((hi, d))
    constant = {k for k, s in sets.items() if s.constant_share() >= degenerate_share}
    guarded = []
    for c, used in zip(out, uses, strict=True):
        bad = [k for k in used if k in constant]
        if bad:
            names = ", ".join(f"{v} λ={lam:g}" for v, lam in bad)
            c = replace(c, verdict="inconclusive", rule=f"{c.rule}; inconclusive: {names} predicts one class for ≥ "
                        f"{degenerate_share:.0%} of the test rows in every seed")
        guarded.append(c)
    return guarded


def sensitivity_figure(results: pd.DataFrame, task: str):
    """Fig. 4's layout: F1 and ΔEO of two-stage CL per setting, one bar per λ, 95 % bootstrap intervals."""
    import matplotlib.pyplot as plt

    variants = list(dict.fromkeys(results["variant"]))
    lambdas = sorted(results["value"].unique())
    width = 0.8 / len(lambdas)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, metric, label in ((axes[0], "f1", "F1"), (axes[1], "eo_gap", "ΔEO (lower is fairer)")):
        for k, lam in enumerate(lambdas):
            g = results[results["value"] == lam].set_index("variant").reindex(variants)
            x = np.arange(len(variants)) + (k - (len(lambdas) - 1) / 2) * width
            ax.bar(x, g[metric], width, label=f"λ = {lam:g}")
            # the interval as a line from its low to its high end, not as ± errors: a percentile interval of ΔEO (a
            # sum of absolute gaps, biased upward under resampling) may lie entirely above the point estimate
            ax.vlines(x, g[f"{metric}_ci_low"], g[f"{metric}_ci_high"], color="black", linewidth=1)
        ax.set_xticks(np.arange(len(variants)), variants, rotation=30, ha="right", fontsize=8)
        ax.set(ylabel=label)
    axes[1].legend(fontsize=8)
    seeds = int(results["seeds"].max())
    fig.suptitle(f"{task}: two-stage CL at λ = 0 and λ = {max(lambdas):g} with τ, the pre-training batch or the "
                 "augmentation varied "
                 f"(mean of {seeds} seed{'s' if seeds > 1 else ''}, 95 % bootstrap CI over test rows)", fontsize=9)
    fig.tight_layout()
    return fig
