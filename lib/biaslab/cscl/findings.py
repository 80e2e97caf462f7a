"""cscl's claims as verdicts computed from the test predictions of every seed (``reports/cscl/results/claims.csv``)
and its competence table (``competence.csv``).

A setting's statistic is its mean over seeds on the fixed test split. A comparison of settings is a contrast of
that statistic (:func:`contrast`) whose uncertainty has two sources: the test rows (a paired bootstrap, the same
resampled rows for every setting) and training (the spread over seeds). The verdicts come from
:func:`biaslab.claims.finalize` (Holm across the claims, t intervals); a claim comparing a setting that fails its
competence check (it predicts one class, or does not beat the majority class on macro-F1) is ``untestable``. The
trade-off value compared with λ = 0 is the grid's largest — fixed in advance, never picked on test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import competence as comp
from .. import stats
from ..claims import NAN
from ..metrics.fairness import eo_gaps
from .experiment import top_prediction_share


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


@lru_cache(maxsize=4)
def _resamples(n: int, rounds: int, seed: int) -> np.ndarray:
    """The bootstrap's row resamples, drawn once for every setting and claim that share (n, rounds, seed)."""
    out = stats.resample_indices(n, rounds, seed)
    out.flags.writeable = False
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
        self._draws: dict[tuple[str, int, int], np.ndarray] = {}

    def constant_share(self) -> float:
        """The smallest, over seeds, share of test rows given the seed's most frequent prediction (1.0 = every seed
        predicts one class for every row)."""
        return float(min(self.top_shares()))

    def top_shares(self) -> list[float]:
        """Per seed, the share of test rows given the seed's most frequent prediction."""
        return [top_prediction_share(col) for col in self.pred.T]

    def majority(self, label: int) -> _Setting:
        """The majority-class classifier on the same rows: ``label`` for every row, in one seed."""
        return _Setting(pd.DataFrame({"row": np.arange(len(self.y)), "seed": 0, "y": self.y, "a": self.a,
                                      "pred": np.full(len(self.y), label)}))

    def metric(self, name: str, ix: np.ndarray) -> float:
        """``eo_gap``, ``f1`` or ``macro_f1`` on rows ``ix``, averaged over seeds."""
        return float(np.mean(self.per_seed(name, ix)))

    def draws(self, name: str, rounds: int, seed: int) -> np.ndarray:
        """:meth:`metric` on each of the bootstrap's shared row resamples (:func:`_resamples`), computed once: a
        setting takes part in several claims."""
        key = (name, rounds, seed)
        if key not in self._draws:
            self._draws[key] = np.array([self.metric(name, ix) for ix in _resamples(len(self.y), rounds, seed)])
        return self._draws[key]

    def per_seed(self, name: str, ix: np.ndarray) -> np.ndarray:
        """The metric of every seed on rows ``ix``."""
        values = []
        y, g = self.y[ix], self.gidx[ix]
        for s in range(self.pred.shape[1]):
            p = self.pred[ix, s]
            if name == "eo_gap":
                tpr_gap, fpr_gap, _ = eo_gaps(y, p, g, len(self.names), self.classes)
                values.append(tpr_gap + fpr_gap)
            elif name == "f1":
                values.append(fast_f1(y, p, pos_label=self.classes[-1] if self.binary else None))
            elif name == "macro_f1":
                values.append(fast_f1(y, p))
            else:
                raise ValueError(f"unknown metric {name!r}: eo_gap, f1 or macro_f1")
        return np.asarray(values)


def settings(preds: pd.DataFrame) -> dict[tuple, _Setting]:
    """Every (task, method, value)'s predictions as a setting (value −1 for a method without one, as CE)."""
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


def contrast(terms: list[tuple[_Setting, float]], metric: str, *, rounds: int, seed: int) -> cl.Evidence:
    """Σ coef · ``metric`` of the settings in ``terms`` (e.g. [(a, 1), (b, −1)]: a − b), as
    :class:`biaslab.claims.Evidence` with both sources of its uncertainty (Bouthillier et al. 2021, "Accounting for
    variance in machine learning benchmarks"):

    * the test rows — a paired bootstrap over rows (``rounds`` resamples, the same rows for every setting), of the
      seed-mean contrast: the standard error of the statistic for these trained models. ΔEO is a sum of absolute
      gaps, biased upward under resampling, so the bootstrap gives only the spread (never a percentile interval,
      which would miss its own estimate);
    * training — the spread over the k seeds of the per-seed contrast on all rows, s / √k.

    se = √(se_rows² + s² / k), and the interval is the t interval on the Welch–Satterthwaite degrees of freedom of
    that sum (n − 1 for the rows, k − 1 for the seeds; Satterthwaite 1946): close to k − 1 when the seeds dominate,
    to n − 1 when the rows do. The evidence's ``n`` is then the effective units, df + 1 (what the interval, the
    p-value and the MDE use). With one seed, the rows alone: n − 1 degrees of freedom."""
    first = terms[0][0]
    n = len(first.y)
    full = np.arange(n)
    per_seed = [s.per_seed(metric, full) for s, _ in terms]
    k = max(len(v) for v in per_seed)
    seedwise = sum(c * (v if len(v) == k else np.full(k, v.mean())) for (_, c), v in zip(terms, per_seed, strict=True))
    value = float(np.mean(seedwise))
    draws = sum(c * s.draws(metric, rounds, seed) for s, c in terms)
    draws = draws[np.isfinite(draws)]
    rows = float(draws.var(ddof=1)) if len(draws) > 1 else NAN
    if k == 1:
        return cl.Evidence.from_se(value, math.sqrt(rows), n, "test rows (bootstrap)")
    seeds = float(np.var(seedwise, ddof=1)) / k
    total = rows + seeds
    denom = rows ** 2 / (n - 1) + seeds ** 2 / (k - 1)
    df = total ** 2 / denom if denom > 0 else float(n - 1)
    return cl.Evidence.from_se(value, math.sqrt(total), int(df) + 1,
                               f"effective units (Welch–Satterthwaite: {k} seeds, {n} test rows)")


def _label(key: tuple) -> str:
    _, method, value = key
    return method if value == -1 else f"{method} (λ = {value:g})"


def checks_of(key: tuple) -> tuple[str, str]:
    """The names of a setting's two competence checks: it predicts more than one class, it beats the majority."""
    task = key[0]
    return (f"{task}: {_label(key)} predicts more than one class", f"{task}: {_label(key)} beats the majority class")


def competence(sets: Mapping[tuple, _Setting], majority: Mapping[str, int], *, degenerate_share: float,
               level: float, rounds: int, seed: int) -> pd.DataFrame:
    """cscl's competence table (``reports/cscl/results/competence.csv``), two rows per setting of ``sets``
    (:func:`settings`):

    * it predicts more than one class — the largest share of test rows one seed gives one class stays below
      ``degenerate_share`` (a constant classifier's ΔEO is 0 by construction, not by fairness);
    * it beats the majority-class classifier (``majority``: task → the training split's most frequent label) on
      macro-F1, the interval of the difference (:func:`contrast`) above 0."""
    rows = []
    for key, s in sets.items():
        not_constant, beats = checks_of(key)
        rows.append(comp.at_most(not_constant, "largest share of test rows one seed gives one class",
                                 max(s.top_shares()), floor=degenerate_share))
        rows.append(comp.beats(beats, "macro-F1 minus the majority-class classifier's",
                               contrast([(s, 1.0), (s.majority(majority[key[0]]), -1.0)], "macro_f1", rounds=rounds,
                                        seed=seed), level=level))
    return comp.table(rows)


NO_SIZE = "the paper shows this in a figure and gives no number"


def claims(sets: Mapping[tuple, _Setting], methods: Mapping, *, f1_bound: float, rounds: int,
           seed: int) -> list[cl.Pending]:
    """The paper's §4.2 claims, per task, before :func:`biaslab.claims.finalize` judges them. ``sets``: every seed's
    test predictions as settings (:func:`settings`); ``methods``: the ``cscl.methods`` section
    (names → mode). The paper gives its effects only in figures, so no claim has a paper effect: a verdict says
    whether the sign holds.

    RQ1 (Fig. 2): as λ grows the ΔEO of one- and two-stage CL shrinks (largest λ vs λ = 0) at the cost of F1; the
    change of ΔEO is larger in two-stage than in one-stage CL, whose F1 is "comparable or better" (non-inferiority:
    two-stage F1 minus one-stage F1 above −``f1_bound``). RQ2 (Fig. 3): CL at its largest λ has a lower ΔEO than CE
    and than each adversarial baseline at its largest λ_adv. Each claim requires the competence checks
    (:func:`competence`) of the settings it compares."""
    by_mode = {mode: [n for n, m in methods.items() if m.mode == mode] for mode in
               ("ce", "contrastive", "one_stage", "adversarial", "inlp")}
    out: list[cl.Pending] = []

    def ev(metric, *terms):
        return contrast([(sets[k], c) for k, c in terms], metric, rounds=rounds, seed=seed)

    def needs(*keys):
        return tuple(c for k in keys for c in checks_of(k))

    for task in dict.fromkeys(t for t, _, _ in sets):
        for mode, section in (("contrastive", "§4.2 RQ1, Fig. 2 (two-stage CL)"),
                              ("one_stage", "§4.2 RQ1, Fig. 2 (one-stage CL)")):
            for name in by_mode[mode]:
                if (sw := _sweep(sets, task, name)) is None:
                    continue
                top, hi, zero = sw
                out.append(cl.effect(f"{task}: {name} with λ = {top:g} lowers ΔEO vs λ = 0", section,
                                     "ΔEO shrinks as λ grows", ev("eo_gap", (hi, 1), (zero, -1)), direction=-1,
                                     requires=needs(hi, zero)))
                out.append(cl.effect(f"{task}: {name} with λ = {top:g} costs F1 vs λ = 0", section,
                                     "at the cost of F1", ev("f1", (hi, 1), (zero, -1)), direction=-1,
                                     requires=needs(hi, zero)))
        for two in by_mode["contrastive"]:
            for one in by_mode["one_stage"]:
                sw2, sw1 = _sweep(sets, task, two), _sweep(sets, task, one)
                if sw2 is None or sw1 is None:
                    continue
                (t2, hi2, z2), (t1, hi1, z1) = sw2, sw1
                out.append(cl.effect(f"{task}: ΔEO moves more with λ in two-stage ({two}, 0 → {t2:g}) than in "
                                     f"one-stage CL ({one}, 0 → {t1:g})", "§4.2 RQ1",
                                     "change more significant in two-stage",
                                     ev("eo_gap", (hi2, 1), (z2, -1), (hi1, -1), (z1, 1)), direction=-1,
                                     requires=needs(hi2, z2, hi1, z1)))
                out.append(cl.effect(f"{task}: two-stage F1 (λ = {t2:g}) is comparable or better than one-stage "
                                     f"(λ = {t1:g}), within −{f1_bound:g}", "§4.2 RQ1", "comparable or better",
                                     ev("f1", (hi2, 1), (hi1, -1)), direction=1, null=-f1_bound,
                                     requires=needs(hi2, hi1)))
        for ce_name in by_mode["ce"]:
            for name in by_mode["contrastive"] + by_mode["one_stage"]:
                top = _strongest(sets, task, name)
                ce = (task, ce_name, -1)
                if top is None or ce not in sets:
                    continue
                kind = "two-stage" if methods[name].mode == "contrastive" else "one-stage"
                out.append(cl.effect(f"{task}: {kind} CL ({name}, λ = {top:g}) has a lower ΔEO than CE",
                                     "§4.2 RQ2, Fig. 3", "ΔEO lower", ev("eo_gap", ((task, name, top), 1), (ce, -1)),
                                     direction=-1, requires=needs((task, name, top), ce)))
        for adv in by_mode["adversarial"]:
            top_adv = _strongest(sets, task, adv)
            for name in by_mode["contrastive"]:
                top = _strongest(sets, task, name)
                if top is None or top_adv is None:
                    continue
                a, b = (task, name, top), (task, adv, top_adv)
                out.append(cl.effect(f"{task}: two-stage CL (λ = {top:g}) has a lower ΔEO than {adv} "
                                     f"(λ_adv = {top_adv:g})", "§4.2 RQ2, Fig. 3", "ΔEO lower",
                                     ev("eo_gap", (a, 1), (b, -1)), direction=-1, requires=needs(a, b)))
    return out


class Leakage:
    """:func:`group_leakage` of the stage's test features, computed once per (seed, setting) and read by the checks
    and the embedding figure alike. ``features``: seed → the stage's test features (keys ``task|method|value``);
    ``tests``: task → its test rows (``y``, ``a``) in feature order."""

    def __init__(self, features: Mapping[int, Mapping[str, np.ndarray]], tests: Mapping[str, pd.DataFrame], *,
                 folds: int, seed: int):
        self.features, self.tests, self.folds, self.seed = features, tests, folds, seed
        self._memo: dict[tuple[int, str], float] = {}

    def __call__(self, seed: int, key: str) -> float:
        if (seed, key) not in self._memo:
            test = self.tests[key.split("|")[0]]
            self._memo[seed, key] = group_leakage(self.features[seed][key], test["a"].to_numpy(), test["y"].to_numpy(),
                                                  folds=self.folds, seed=self.seed)
        return self._memo[seed, key]


def leakage_checks(leakage: Leakage, methods: Mapping) -> list[cl.Pending]:
    """The mitigation acts (a ``check``, never a reproduction): for every CL method and task, CS-InfoNCE at the
    largest λ lowers how much of the protected group a linear probe reads from the test features within each class
    (:class:`Leakage`), against λ = 0 — paired over seeds."""
    out = []
    for task in leakage.tests:
        for name, m in methods.items():
            if m.mode not in ("contrastive", "one_stage") or not m.grid or max(m.grid) == 0 or 0 not in m.grid:
                continue
            top, zero = max(m.grid), next(v for v in m.grid if v == 0)  # the keys as the train stage wrote them
            diffs = [leakage(s, f"{task}|{name}|{top}") - leakage(s, f"{task}|{name}|{zero}")
                     for s in leakage.features]
            out.append(cl.effect(f"{task}: {name}'s CS-InfoNCE (λ = {top:g}) lowers the group read within class "
                                 "from the test features vs λ = 0", "§3.2, App. C.2 (Fig. 10)",
                                 "representations closer to Z ⊥ A | Y", cl.Evidence.of(diffs, "seeds"), direction=-1,
                                 kind="check", requires=()))
    return out


def paper_claims(preds: pd.DataFrame, sens: pd.DataFrame, leakage: Leakage, majority: Mapping[str, int],
                 methods: Mapping, C, *, task: str, default: str, level: float, rounds: int,
                 seed: int) -> tuple[list[cl.Claim], pd.DataFrame]:
    """(claims table rows, competence table): what cscl_analysis writes. ``methods``: ``cscl.methods``; ``C``:
    ``cscl.claims``; ``sens`` (:func:`sensitivity_frame`), ``task`` and ``default``: the sensitivity study's;
    ``majority``: as :func:`competence`."""
    sets = settings(pd.concat([preds, _sens_as_settings(sens, task, default)], ignore_index=True))
    comp_table = competence(sets, majority, degenerate_share=C.degenerate_share, level=level, rounds=rounds,
                            seed=seed)
    pending = (claims(sets, methods, f1_bound=C.f1_bound, rounds=rounds, seed=seed)
               + sensitivity_claims(sens, task=task, default=default, f1_bound=C.f1_bound, rounds=rounds, seed=seed)
               + leakage_checks(leakage, methods))
    return cl.finalize(pending, level=level, competence_table=comp_table), comp_table


def task_inputs(tasks_dir, tasks) -> tuple[dict[str, pd.DataFrame], dict[str, int]]:
    """Per task, its test rows (in the order the stages wrote predictions and features) and the training split's
    most frequent label (the majority-class classifier of :func:`competence`)."""
    from pathlib import Path

    tests, majority = {}, {}
    for task in tasks:
        rows = pd.read_parquet(Path(tasks_dir) / task / "rows.parquet")
        tests[task] = rows[rows["split"] == "test"].reset_index(drop=True)
        majority[task] = int(rows.loc[rows["split"] == "train", "y"].value_counts().idxmax())
    return tests, majority


def _sens_as_settings(sens: pd.DataFrame, task: str, default: str) -> pd.DataFrame:
    """The sensitivity stage's varied settings as (task, method, value) predictions — method "two-stage CL, τ=0.5"
    — so :func:`competence` checks them too (the default variant's runs are the main stage's)."""
    varied = sens[sens["variant"] != default]
    return varied.assign(task=task, method="two-stage CL, " + varied["variant"])


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


def sensitivity_claims(frame: pd.DataFrame, *, task: str, default: str, f1_bound: float, rounds: int,
                       seed: int) -> list[cl.Pending]:
    """RQ3 (§4.2, Fig. 4): "two-stage CL is stable under a wide range of parameter settings: the equalized odds gaps
    are consistently decreasing when λ = 5 and the F1 scores are relatively high". Per variant: ΔEO at the largest λ
    minus ΔEO at λ = 0 (expected < 0), and F1 at the largest λ against the default setting's (non-inferiority within
    −``f1_bound``); :func:`contrast` gives the evidence. Each requires its settings' competence checks (the default
    variant's are the main stage's settings)."""
    sets = {(v, lam): _Setting(g) for (v, lam), g in frame.groupby(["variant", "value"], sort=False)}
    top, zero = max(frame["value"]), 0.0
    method = frame["method"].iloc[0]

    def key(variant, lam):
        return (task, method, lam) if variant == default else (task, f"two-stage CL, {variant}", lam)

    def needs(*pairs):
        return tuple(c for v, lam in pairs for c in checks_of(key(v, lam)))

    out = []
    for variant in dict.fromkeys(frame["variant"]):
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
