"""cscl's hyper-parameter sensitivity study (§4.2 RQ3, Fig. 4): the main stage's default runs and the sensitivity
stage's varied settings in one frame, their F1 / ΔEO with intervals, the RQ3 claims and the figure."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import stats
from .settings import Setting, checks_of, contrast


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


def sensitivity_settings(frame: pd.DataFrame) -> dict[tuple[str, float], Setting]:
    """Every (variant, λ) of :func:`sensitivity_frame` as one :class:`Setting`, built once: the table, the claims and
    the competence checks read the same settings, so each draws its bootstrap resamples once
    (:meth:`Setting.draws`)."""
    return {(v, lam): Setting(g) for (v, lam), g in frame.groupby(["variant", "value"], sort=False)}


def sensitivity_results(sets: dict[tuple[str, float], Setting], *, rounds: int, confidence: float,
                        seed: int) -> pd.DataFrame:
    """Per (variant, λ) of :func:`sensitivity_settings`: F1 and ΔEO (mean over seeds) with percentile bootstrap
    intervals over the test rows (the resamples every claim shares, :meth:`Setting.draws`)."""
    out = []
    for (variant, value), s in sets.items():
        row = {"variant": variant, "value": value, "seeds": s.pred.shape[1], "min_top_pred_share": s.constant_share()}
        for metric in ("f1", "eo_gap"):
            lo, hi = stats.percentile_interval(s.draws(metric, rounds, seed), confidence)
            row |= {metric: s.metric(metric, np.arange(len(s.y))), f"{metric}_ci_low": lo, f"{metric}_ci_high": hi}
        out.append(row)
    return pd.DataFrame(out)


def sensitivity_claims(sets: dict[tuple[str, float], Setting], *, task: str, method: str, default: str,
                       f1_bound: float, rounds: int, seed: int) -> list[cl.Pending]:
    """RQ3 (§4.2, Fig. 4): "two-stage CL is stable under a wide range of parameter settings: the equalized odds gaps
    are consistently decreasing when λ = 5 and the F1 scores are relatively high". Per variant: ΔEO at the largest λ
    minus ΔEO at λ = 0 (expected < 0), and F1 at the largest λ against the default setting's (non-inferiority within
    −``f1_bound``); :func:`contrast` gives the evidence. ``sets``: :func:`sensitivity_settings`; ``method``: the
    varied method's name. Each requires its settings' competence checks (the default variant's are the main stage's
    settings)."""
    top, zero = max(lam for _, lam in sets), 0.0

    def key(variant, lam):
        return (task, method, lam) if variant == default else (task, f"two-stage CL, {variant}", lam)

    def needs(*pairs):
        return tuple(c for v, lam in pairs for c in checks_of(key(v, lam)))

    out = []
    for variant in dict.fromkeys(v for v, _ in sets):
        hi, lo = (variant, top), (variant, zero)
        if lo not in sets or hi not in sets or top == zero:
            continue
        out.append(cl.effect(f"{task}: two-stage CL, {variant}: λ = {top:g} lowers ΔEO vs λ = 0", "§4.2 RQ3, Fig. 4",
                             "ΔEO consistently decreasing with λ = 5",
                             contrast([(sets[hi], 1), (sets[lo], -1)], "eo_gap", rounds=rounds, seed=seed),
                             direction=-1, requires=needs(hi, lo)))
        if variant != default and (default, top) in sets:
            d = (default, top)
            out.append(cl.effect(f"{task}: two-stage CL, {variant}, λ = {top:g}: F1 stays within −{f1_bound:g} of "
                                 "the default setting's", "§4.2 RQ3, Fig. 4", "F1 relatively high",
                                 contrast([(sets[hi], 1), (sets[d], -1)], "f1", rounds=rounds, seed=seed),
                                 direction=1, null=-f1_bound, requires=needs(hi, d)))
    return out


def as_settings(sets: dict[tuple[str, float], Setting], task: str, default: str) -> dict[tuple, Setting]:
    """The sensitivity stage's varied settings keyed as the main stage's, (task, method, value) — method "two-stage
    CL, τ=0.5" — so :func:`biaslab.cscl.findings.competence` checks them too (the default variant's runs are the main
    stage's)."""
    return {(task, f"two-stage CL, {v}", lam): s for (v, lam), s in sets.items() if v != default}


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
