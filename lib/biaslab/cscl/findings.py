"""cscl's claims as verdicts computed from the test predictions of every seed (``reports/cscl/results/claims.csv``)
and its competence table (``competence.csv``).

A comparison of settings is a contrast of their mean over seeds (:func:`biaslab.cscl.settings.contrast`: test rows
and seeds both in its uncertainty). The verdicts come from :func:`biaslab.claims.finalize` (Holm across the claims,
t intervals); a claim comparing a setting that fails its competence check (it predicts one class, or does not beat
the majority class on macro-F1) is ``untestable``. The trade-off value compared with λ = 0 is the grid's largest —
fixed in advance, never picked on test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import competence as comp
from . import sensitivity
from .settings import Setting, checks_of, contrast, settings, spread_ratio


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds of every metric per (task, method, value) — the paper's table format."""
    keys = ["task", "method", "mode", "value"]
    metrics = [m for m in ("f1", "macro_f1", "accuracy", "tpr_gap", "fpr_gap", "eo_gap", "top_pred_share",
                           "adv_active", "adv_group_accuracy", "group_majority") if m in results.columns]
    g = results.fillna({"value": -1}).groupby(keys, sort=False)[metrics]
    out = g.mean().add_suffix("_mean").join(g.std(ddof=1).add_suffix("_std")).join(g.size().rename("seeds"))
    out = out.reset_index()
    out["value"] = out["value"].replace(-1, np.nan)
    return out


def summary_records(summary: pd.DataFrame) -> list[dict]:
    """:func:`summary`'s rows as records without their empty cells (metrics.json): the ``adv_*`` columns only where
    a method has discriminators, ``value`` only where it has a grid."""
    return [{k: v for k, v in row.items() if not pd.isna(v)} for row in summary.to_dict("records")]


def _strongest(settings, task: str, method: str) -> float | None:
    values = [v for t, m, v in settings if t == task and m == method]
    return max(values) if values else None


def _sweep(sets, task: str, name: str):
    """(largest λ, its key, the λ = 0 key) of a CL method, or None without both."""
    top = _strongest(sets, task, name)
    if top is None or top == 0 or (task, name, 0.0) not in sets:
        return None
    return top, (task, name, top), (task, name, 0.0)


def competence(sets: Mapping[tuple, Setting], majority: Mapping[str, int], *, degenerate_share: float,
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


def claims(sets: Mapping[tuple, Setting], methods: Mapping, *, f1_bound: float, eo_similar_share: float,
           biasbios_task: str, rounds: int, seed: int) -> list[cl.Pending]:
    """The paper's §4.2 claims, per task, before :func:`biaslab.claims.finalize` judges them. ``sets``: every seed's
    test predictions as settings (:func:`settings`); ``methods``: the ``cscl.methods`` section
    (names → mode). The paper gives its effects only in figures, so no claim has a paper effect: a verdict says
    whether the sign holds.

    RQ1 (Fig. 2): as λ grows the ΔEO of one- and two-stage CL shrinks (largest λ vs λ = 0) at the cost of F1; the
    change of ΔEO is larger in two-stage than in one-stage CL, whose F1 is "comparable or better" (non-inferiority:
    two-stage F1 minus one-stage F1 above −``f1_bound``). RQ2 (Fig. 3): CL at its largest λ has a lower ΔEO than CE
    and than each adversarial baseline at its largest λ_adv; INLP (its largest N_clf) too has a lower ΔEO than each
    adversarial baseline ("adversarial methods … consistently perform worse than CL-based methods and INLP"); two-stage
    CL's ΔEO varies less over seeds than INLP's ("more consistent results, i.e. lower variance":
    :func:`~biaslab.cscl.settings.spread_ratio`); and on ``biasbios_task`` (our stand-in for biasbios, where the
    paper finds the two "similar") two-stage CL and INLP reach the same ΔEO within ±``eo_similar_share`` of CE's ΔEO
    and the same F1 within ±``f1_bound`` (equivalence tests). Each claim requires the competence checks
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
        out += _inlp_claims(sets, task, by_mode, ev, needs, f1_bound=f1_bound, eo_similar_share=eo_similar_share,
                            similar=task == biasbios_task)
    return out


def _inlp_claims(sets, task: str, by_mode, ev, needs, *, f1_bound: float, eo_similar_share: float,
                 similar: bool) -> list[cl.Pending]:
    """:func:`claims`' rows on INLP (§4.2 RQ2, Fig. 3), each at the largest N_clf of the grid."""
    out = []
    for inlp in by_mode["inlp"]:
        if (top_n := _strongest(sets, task, inlp)) is None:
            continue
        b = (task, inlp, top_n)
        for adv in by_mode["adversarial"]:
            if (top_adv := _strongest(sets, task, adv)) is None:
                continue
            a = (task, adv, top_adv)
            out.append(cl.effect(f"{task}: INLP (N = {top_n:g}) has a lower ΔEO than {adv} (λ_adv = {top_adv:g})",
                                 "§4.2 RQ2, Fig. 3", "adversarial methods perform worse than CL and INLP",
                                 ev("eo_gap", (b, 1), (a, -1)), direction=-1, requires=needs(b, a)))
        for name in by_mode["contrastive"]:
            if (top := _strongest(sets, task, name)) is None:
                continue
            a = (task, name, top)
            out.append(cl.effect(f"{task}: two-stage CL (λ = {top:g}) varies less over seeds than INLP "
                                 f"(N = {top_n:g}): log ratio of their ΔEO variances", "§4.2 RQ2, Fig. 3",
                                 "two-stage CL achieves more consistent results (lower variance)",
                                 spread_ratio(sets[a], sets[b], "eo_gap"), direction=-1, requires=needs(a, b)))
            ce = [(task, n, -1) for n in by_mode["ce"] if (task, n, -1) in sets]
            if not similar or not ce:
                continue
            bound = eo_similar_share * sets[ce[0]].metric("eo_gap", np.arange(len(sets[ce[0]].y)))
            out.append(cl.no_change(f"{task}: two-stage CL (λ = {top:g}) and INLP (N = {top_n:g}) reach a similar "
                                    f"ΔEO, within {eo_similar_share:.0%} of CE's", "§4.2 RQ2",
                                    "similar performance and fairness trade-offs (biasbios)",
                                    ev("eo_gap", (a, 1), (b, -1)), bound=bound, requires=needs(a, b, ce[0])))
            out.append(cl.no_change(f"{task}: two-stage CL (λ = {top:g}) and INLP (N = {top_n:g}) reach a similar "
                                    f"F1, within ±{f1_bound:g}", "§4.2 RQ2",
                                    "similar performance and fairness trade-offs (biasbios)",
                                    ev("f1", (a, 1), (b, -1)), bound=f1_bound, requires=needs(a, b)))
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


def embedding_panels(methods: Mapping, panels: Sequence[str], tasks: Sequence[str]) -> dict[str, dict[str, str]]:
    """The t-SNE panels of App. C.2 (Fig. 10), per task: panel label → feature key (``task|method|value``). A CE
    method is one panel; any other method two, at its smallest and largest trade-off value."""
    out = {}
    for task in tasks:
        keys = {}
        for name in panels:
            m = methods[name]
            values = [None] if m.mode == "ce" else sorted({min(m.grid), max(m.grid)})
            keys |= {name if v is None else f"{name} λ={v:g}": f"{task}|{name}|{v}" for v in values}
        out[task] = keys
    return out


def panel_leakage(leakage: Leakage, seed: int, panels: Mapping[str, Mapping[str, str]]) -> pd.DataFrame:
    """``group_leakage.csv``: the group a probe reads within class (:class:`Leakage`) for every panel of
    :func:`embedding_panels`, at one seed — the number in each panel's title."""
    return pd.DataFrame([{"task": task, "setting": label, "group_read_over_chance": leakage(seed, key)}
                         for task, keys in panels.items() for label, key in keys.items()],
                        columns=["task", "setting", "group_read_over_chance"])


def group_geometry(features: np.ndarray, groups: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """App. C.2 reads Fig. 10 as: under CE, points of one group inside a class form small clusters; with CS-InfoNCE
    they mix. Two numbers say it without a t-SNE, from the cosine between every two test examples of one class:
    ``within_class_cosine``, its mean (how tight the class's cluster is; SupCon alone pulls it towards 1), and
    ``same_group_premium``, the mean cosine of two examples of the same group minus that of two of different groups
    (> 0: the groups cluster apart inside the class; 0: mixed), averaged over the classes that hold both groups."""
    x = np.asarray(features, dtype=float)
    x = x / np.linalg.norm(x, axis=1, keepdims=True).clip(1e-12)
    within, premium = [], []
    for c in np.unique(labels):
        m = labels == c
        if m.sum() < 2:
            continue
        sim, g = x[m] @ x[m].T, groups[m]
        other = ~np.eye(len(g), dtype=bool)
        within.append(sim[other].mean())
        same, cross = (g[:, None] == g[None, :]) & other, g[:, None] != g[None, :]
        if same.any() and cross.any():
            premium.append(sim[same].mean() - sim[cross].mean())
    nan = float("nan")
    return {"within_class_cosine": float(np.mean(within)) if within else nan,
            "same_group_premium": float(np.mean(premium)) if premium else nan}


def cs_negatives_per_anchor(train: pd.DataFrame, batch_size: int) -> float:
    """How many other examples of its own (y, a) cell, the only negatives CS-InfoNCE has (§3.2, eq. 2), an anchor
    meets on average in a uniformly shuffled batch of the training rows ``train`` (columns ``y``, ``a``):
    (B − 1) Σ_c n_c (n_c − 1) / (N (N − 1)). Below 1, most anchors contrast their two views with nothing else, and
    the term is log 1 = 0 for them."""
    cells = train.groupby(["y", "a"]).size().to_numpy()
    n = int(cells.sum())
    if n < 2:
        return 0.0
    return float((min(batch_size, n) - 1) * (cells * (cells - 1)).sum() / (n * (n - 1)))


def geometry(leakage: Leakage, train: Mapping[str, pd.DataFrame], *, batch_size: int) -> pd.DataFrame:
    """``geometry.csv``: why CS-InfoNCE acts on one task and not another (docs/cscl.md), per task, setting and seed
    of the analysis's test features (``leakage.features``): the group read within class (:class:`Leakage`, the
    checks' probe), :func:`group_geometry`, and the task's :func:`cs_negatives_per_anchor` over its training rows
    ``train`` (:func:`task_inputs`) at ``batch_size`` (``cscl.train.pretrain_batch_size``). ``setting``:
    ``method|value`` as the train stage keys it."""
    negatives = {task: cs_negatives_per_anchor(rows, batch_size) for task, rows in train.items()}
    out = []
    for s, features in leakage.features.items():
        for key, x in features.items():
            task, setting = key.split("|", 1)
            if task not in leakage.tests:
                continue
            test = leakage.tests[task]
            out.append({"task": task, "setting": setting, "seed": s, "group_read_over_chance": leakage(s, key),
                        **group_geometry(x, test["a"].to_numpy(), test["y"].to_numpy()),
                        "cs_negatives_per_anchor": negatives[task]})
    return pd.DataFrame(out, columns=["task", "setting", "seed", "group_read_over_chance", "within_class_cosine",
                                      "same_group_premium", "cs_negatives_per_anchor"])


def geometry_figure(table: pd.DataFrame, methods: Mapping):
    """:func:`geometry` against the trade-off value: per task (columns) the same-group premium and the group read
    within class (rows), mean ± std over seeds, one line per CL method (``cscl.methods`` of mode contrastive or
    one_stage) and CE dashed. Above CE's premium, the groups of a class cluster apart more than under CE."""
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(table["task"]))
    fig, axes = plt.subplots(2, len(tasks), figsize=(4.6 * len(tasks), 6.4), squeeze=False, sharex="col")
    parts = table["setting"].str.split("|", n=1, expand=True)
    table = table.assign(method=parts[0], value=pd.to_numeric(parts[1], errors="coerce"))
    for col, task in enumerate(tasks):
        t = table[table["task"] == task]
        for row, (metric, label) in enumerate((("same_group_premium", "same-group premium (cosine)"),
                                              ("group_read_over_chance", "group read within class"))):
            ax = axes[row, col]
            for name, m in methods.items():
                g = t[t["method"] == name]
                if g.empty:
                    continue
                if m.mode == "ce":
                    ax.axhline(g[metric].mean(), color="grey", linestyle="--", label=name)
                elif m.mode in ("contrastive", "one_stage"):
                    agg = g.groupby("value")[metric].agg(["mean", "std"])
                    ax.errorbar(agg.index, agg["mean"], yerr=agg["std"], marker="o", capsize=2, label=name)
            ax.axhline(0, color="black", linewidth=0.6)
            if col == 0:
                ax.set_ylabel(label)
            if row == 0:
                ax.set_title(task)
            else:
                ax.set_xlabel("λ (CS-InfoNCE weight)")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


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


def paper_claims(preds: pd.DataFrame, sens: Mapping[tuple[str, float], Setting], leakage: Leakage,
                 majority: Mapping[str, int], methods: Mapping, C, *, task: str, method: str, default: str,
                 level: float, rounds: int, seed: int) -> tuple[list[cl.Claim], pd.DataFrame]:
    """(claims table rows, competence table): what cscl_analysis writes. ``methods``: ``cscl.methods``; ``C``:
    ``cscl.claims``; ``sens`` (:func:`biaslab.cscl.sensitivity.sensitivity_settings`), ``task``, ``method`` and
    ``default``: the sensitivity study's (``task`` is also our biasbios); ``majority``: as :func:`competence`."""
    sets = settings(preds) | sensitivity.as_settings(sens, task, default)
    sets = dict(sorted(sets.items(), key=lambda kv: kv[0]))  # (task, method, value) order, as one groupby gives
    comp_table = competence(sets, majority, degenerate_share=C.degenerate_share, level=level, rounds=rounds,
                            seed=seed)
    pending = (claims(sets, methods, f1_bound=C.f1_bound, eo_similar_share=C.eo_similar_share, biasbios_task=task,
                      rounds=rounds, seed=seed)
               + sensitivity.sensitivity_claims(sens, task=task, method=method, default=default, f1_bound=C.f1_bound,
                                                rounds=rounds, seed=seed)
               + leakage_checks(leakage, methods))
    return cl.finalize(pending, level=level, competence_table=comp_table), comp_table


def task_inputs(tasks_dir, tasks) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Per task, its test rows (in the order the stages wrote predictions and features) and its training rows."""
    from pathlib import Path

    tests, train = {}, {}
    for task in tasks:
        rows = pd.read_parquet(Path(tasks_dir) / task / "rows.parquet")
        tests[task] = rows[rows["split"] == "test"].reset_index(drop=True)
        train[task] = rows[rows["split"] == "train"].reset_index(drop=True)
    return tests, train


def majority_labels(train: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    """Per task, the training split's most frequent label: the majority-class classifier of :func:`competence`."""
    return {task: int(rows["y"].value_counts().idxmax()) for task, rows in train.items()}


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
