"""The ``ragfair_evaluate`` stage (§3.3, §4.2–4.3): a bias card per checkpoint (Table 2's rows and the minus-one
ablations), Table 2 beside the paper's, and the intrinsic–extrinsic correlation across checkpoints with its
bootstrap interval (§3.3.1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from . import cards, debias, extrinsic, paper, perturb
from .config import RagfairCheckpoint

# minus-one ablations of §4.3: what each removes from the full framework, and the checkpoint that lacks it
ABLATIONS = {"Full framework": "Full framework", "− fairness term (α = 0)": "Full without fairness (alpha=0)",
             "− LoRA": "WiSE-FT + masking", "− WiSE-FT": "LoRA + masking", "− head masking": "LoRA + WiSE-FT"}


def checkpoint_list(checkpoints: Sequence[RagfairCheckpoint], runs: Mapping, include_all_runs: bool
                    ) -> list[RagfairCheckpoint]:
    """The listed checkpoints, plus every trained run unmasked when ``include_all_runs`` (the App. 6.1 grid)."""
    listed = {(c.run, c.mask) for c in checkpoints}
    extra = [RagfairCheckpoint(name=r, run=r) for r in runs if include_all_runs and (r, False) not in listed]
    return [*checkpoints, *extra]


def evaluate(checkpoints: Sequence[RagfairCheckpoint], *, base_dir, models_dir: Path, evaluation: pd.DataFrame,
             mask_sets, mask_fraction: float, seat_tests, card_args: Mapping, device: str, batch_size: int):
    """A bias card for every checkpoint (head masking applied where the checkpoint asks for it, heads ranked by
    ∂|SEAT|/∂m on ``mask_sets``). Returns (cards by name, masked heads by name, text → vector per checkpoint for
    the bootstrap's BBQ SEAT sets and the perturbation check: every SEAT text, question and context).
    ``card_args``: the measurement settings of :func:`.cards.bias_card`."""
    from ..embed import Encoder

    card_of, masked_heads, embed_of = {}, {}, {}
    texts = perturb.probe_texts(evaluation)
    for ck in checkpoints:
        model = cards.load_checkpoint(ck.run, base_dir, models_dir, device)
        if ck.mask:
            heads = debias.heads_to_mask(debias.head_importance(model, mask_sets, batch_size=batch_size),
                                         mask_fraction)
            debias.apply_head_mask(model, heads)
            masked_heads[ck.name] = heads
        enc = Encoder(model, device=device, batch_size=batch_size)
        card_of[ck.name] = cards.bias_card(enc, evaluation, seat_tests=seat_tests, **card_args)
        embed_of[ck.name] = dict(zip(texts, enc.encode(texts), strict=True))
        print(f"{ck.name}: " + ", ".join(f"{k} {v:.4f}" for k, v in card_of[ck.name].summary.items()))
    return card_of, masked_heads, embed_of


def acts(acts, runs: Mapping, *, checkpoints: Sequence[RagfairCheckpoint], card_of: Mapping, base_dir,
         models_dir: Path, evaluation: pd.DataFrame, acc_at_1: str, device: str, batch_size: int) -> list:
    """The check rows of :func:`.findings.acts_checks` for ``acts`` (``ragfair.evaluate.acts``; none when it is
    None): each of its two runs' retrieval decisions on the evaluation rows and its L_fair per training batch after
    training (``fair_terms_after`` in the checkpoint's ``biaslab_run.json``). A run that is also an unmasked
    checkpoint of :func:`evaluate` (``checkpoints``, ``card_of``) reuses its card's decisions, measured the same
    way; the others are measured here."""
    import json

    from ..embed import Encoder
    from .findings import acts_checks

    if acts is None:
        return []
    measured = {ck.run: card_of[ck.name].decisions for ck in checkpoints if ck.run is not None and not ck.mask}
    got = []
    for run in (acts.run, acts.control):
        if run not in measured:
            enc = Encoder(cards.load_checkpoint(run, base_dir, models_dir, device), device=device,
                          batch_size=batch_size)
            measured[run] = extrinsic.category_decisions(enc, evaluation, acc_at_1)
        record = json.loads((Path(models_dir) / run / "biaslab_run.json").read_text(encoding="utf-8"))
        got += [measured[run], record["summary"]["fair_terms_after"]]
    return acts_checks(*got, alpha=runs[acts.run].alpha, run=acts.run, control=acts.control)


def card_table(checkpoints: Sequence[RagfairCheckpoint], card_of: Mapping, masked_heads: Mapping) -> pd.DataFrame:
    """One row per checkpoint: its run, mask, number of masked heads and every summary measure of its card."""
    return pd.DataFrame([{"checkpoint": ck.name, "run": ck.run or "(base)", "mask": ck.mask,
                          "heads_masked": len(masked_heads.get(ck.name, [])), **card_of[ck.name].summary}
                         for ck in checkpoints])


def per_category(card_of: Mapping) -> pd.DataFrame:
    return pd.concat([c.per_category.assign(checkpoint=n) for n, c in card_of.items()], ignore_index=True)


def table2(cards_table: pd.DataFrame) -> pd.DataFrame:
    """Table 2's columns for our checkpoints, the paper's SPD / EOD / Acc@1 beside them where it has the row."""
    ours = cards_table[["checkpoint", "spd", "eod", "acc_at_1", "bbq_seat_abs_es", "seat_fairness"]]
    return ours.merge(paper.table2(), on="checkpoint", how="left")


def ablation(cards_table: pd.DataFrame) -> pd.DataFrame:
    """The minus-one ablations (§4.3) among the evaluated checkpoints."""
    by_name = cards_table.set_index("checkpoint")
    return pd.DataFrame([{"ablation": a, "checkpoint": c,
                          **by_name.loc[c, ["spd", "eod", "acc_at_1", "bbq_seat_abs_es"]].to_dict()}
                         for a, c in ABLATIONS.items() if c in by_name.index])


def correlations(card_of: Mapping, evaluation: pd.DataFrame, embed_of: Mapping, per_cat: pd.DataFrame, *,
                 rounds: int, seed: int, perturbed: Sequence[tuple[pd.DataFrame, pd.DataFrame]],
                 perturbation_cosine: float) -> dict:
    """Pearson / Spearman between the norms of per-category intrinsic (|BBQ SEAT ES|) and extrinsic (SPD, EOD)
    bias across checkpoints, z-scored per category as the paper does and on raw magnitudes (``_raw``), each with
    a ``rounds``-round bootstrap over question rows; the paper's intervals under ``paper_ci``. With ``perturbed``
    (the frames of :func:`.perturb.perturbation_check` at ``perturbation_cosine``; empty with 0 rounds), each also
    gets the range of r and ρ over those re-measurements, under ``perturbation``."""
    intr = per_cat[["checkpoint", "category", "bbq_seat_abs_es"]]
    extr = per_cat[["checkpoint", "category", "spd", "eod"]]
    rng = np.random.default_rng(seed)
    boot = [cards.bootstrap_frames(card_of, evaluation, embed_of, rng) for _ in range(rounds)]
    corr = {}
    for ext in ("spd", "eod"):
        for suffix, z in (("", True), ("_raw", False)):
            kw = {"value_int": "bbq_seat_abs_es", "value_ext": ext, "zscore": z}
            corr[f"{ext}{suffix}"] = c = extrinsic.correlate(intr, extr, boot=boot, **kw)
            if perturbed:
                p = extrinsic.correlate(intr, extr, boot=list(perturbed), **kw)
                c["perturbation"] = {"pearson_ci": p["pearson_ci"], "spearman_ci": p["spearman_ci"],
                                     "rounds": p["rounds"], "cosine": perturbation_cosine}
    corr["paper_ci"] = paper.CORRELATION_CI
    return corr


def norm_points(per_cat: pd.DataFrame) -> pd.DataFrame:
    """Per checkpoint, the norm of the per-category z-scores of |BBQ SEAT ES|, SPD and EOD (the points the
    correlation is computed on, for the scatter figure)."""
    return pd.DataFrame({"‖SEAT ES‖ (z)": extrinsic.z_norm(per_cat, "bbq_seat_abs_es"),
                         "‖SPD‖ (z)": extrinsic.z_norm(per_cat, "spd"), "‖EOD‖ (z)": extrinsic.z_norm(per_cat, "eod")})


def metrics(cards_table: pd.DataFrame, t2: pd.DataFrame, corr: Mapping, evaluation_rows: int) -> dict:
    return {"checkpoints": len(cards_table), "evaluation_rows": evaluation_rows,
            "table2": t2.set_index("checkpoint")[["spd", "eod", "acc_at_1", "bbq_seat_abs_es"]].round(4)
            .to_dict(orient="index"),
            "correlation": {k: {m: corr[k][m] for m in ("pearson_r", "spearman_rho", "pearson_ci", "spearman_ci")
                                if m in corr[k]} for k in ("spd", "eod", "spd_raw", "eod_raw")}}


def table2_figure(t2: pd.DataFrame, intervals: pd.DataFrame | None = None):
    """Fairness gaps (SPD, EOD) and Acc@1 per debiasing recipe; with ``intervals`` (:func:`.findings.intervals`),
    each value's bootstrap interval over the evaluation rows as an error bar."""
    import matplotlib.pyplot as plt
    import numpy as np

    names = t2["checkpoint"].tolist()
    y = np.arange(len(names))

    def err(measure: str, values: np.ndarray):
        if intervals is None:
            return None
        iv = intervals[intervals["measure"] == measure].set_index("checkpoint").reindex(names)
        return np.vstack([values - iv["ci_low"].to_numpy(float), iv["ci_high"].to_numpy(float) - values]).clip(min=0)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2, 1]})
    for k, m in enumerate(("spd", "eod")):
        v = t2[m].to_numpy(float)
        axes[0].barh(y + (k - 0.5) * 0.4, v, height=0.4, color=f"C{k}", label=m.upper(), xerr=err(m, v), capsize=2)
    axes[0].set(yticks=y, yticklabels=names, xlabel="group gap (0 = fair)")
    axes[0].legend(title="metric", loc="lower right")
    v = t2["acc_at_1"].to_numpy(float)
    axes[1].barh(y, v, color="grey", xerr=err("acc_at_1", v), capsize=2)
    axes[1].set(yticks=y, yticklabels=[], xlabel="Acc@1 (%)")
    for ax in axes:
        ax.invert_yaxis()
    what = "; bars: 95 % bootstrap intervals over the evaluation rows" if intervals is not None else ""
    fig.suptitle("Table 2 regenerated: retrieval fairness (SPD, EOD; lower is fairer) and Acc@1 per debiasing "
                 f"recipe{what}", fontsize=10)
    return fig


def correlation_figure(points: pd.DataFrame, corr: Mapping):
    """‖SEAT ES‖ against ‖SPD‖ and ‖EOD‖ across checkpoints (z-scored per category), with r and ρ."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, ext in zip(axes, ("‖SPD‖ (z)", "‖EOD‖ (z)"), strict=True):
        sns.regplot(data=points, x="‖SEAT ES‖ (z)", y=ext, ax=ax, ci=None)
        key = "spd" if "SPD" in ext else "eod"
        ax.set_title(f"Pearson r = {corr[key]['pearson_r']:.2f}, Spearman ρ = {corr[key]['spearman_rho']:.2f}")
    fig.suptitle("Intrinsic (BBQ SEAT) vs extrinsic (retrieval SPD / EOD) bias across encoder checkpoints (§4.2)")
    return fig


def perturbation_figure(stability: pd.DataFrame, rounds: int, cosine: float):
    """Each checkpoint's SPD and EOD (dot) and their range over the perturbation rounds (bar)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 0.9 + 0.38 * len(stability)), sharey=True)
    y = np.arange(len(stability))
    for ax, m in zip(axes, ("spd", "eod"), strict=True):
        v = stability[m].to_numpy()
        ax.errorbar(v, y, xerr=[v - stability[f"{m}_min"], stability[f"{m}_max"] - v], fmt="o", capsize=3)
        ax.set(xlabel=f"{m.upper()} (mean over categories)", yticks=y, yticklabels=stability["checkpoint"])
    axes[0].invert_yaxis()
    fig.suptitle(f"Retrieval SPD / EOD per checkpoint and their range when every vector is moved to cosine {cosine:g} "
                 f"with itself ({rounds} rounds)" if rounds else
                 "Retrieval SPD / EOD per checkpoint (no perturbation rounds: ragfair.evaluate.perturbation_rounds = 0)")
    return fig
