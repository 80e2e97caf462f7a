"""Extrinsic (retrieval) bias on BBQ (ragfair §3.3) and the intrinsic–extrinsic correlation (§3.3.1).

Retrieval. Per category, the corpus is the set of distinct BBQ contexts; each row's question retrieves one
context (top-1, exact cosine search). Acc@1 (in %) is the share of rows whose first context answers the question
(``acc_at_1="answers_question"``, the default: a context of a BBQ row with the same question, i.e. one from which
the reader below reads an answer) or is the row's own context (``"own_context"``). BBQ's templated questions name
no one ("Who forgets things?"), so which of a question's counterfactual contexts is a row's own cannot be told
from the question: own-context Acc@1 is bounded by one over the contexts a question has (16 % for the frozen
all-MiniLM-L6-v2 on 720 rows, against 61 % answering-context Acc@1), and a retriever that is mostly "wrong" by it
is not a failed retriever. SPD and EOD do not depend on this choice.

What the retrieved context makes the RAG system answer. The paper's SPD / EOD need a prediction Ŷ per row and
do not say how a retrieval becomes one; we read the answer off the retrieved context with a perfect reader, so
that the encoder is the only source of error: if the retrieved context c̃ is the context of a BBQ row with the
same question, Ŷ is *that* row's answer role — the stereotype-consistent answer (BBQ's ``biased_loc``: the
stereotyped group for a negative question, the other group for a non-negative one), the inconsistent one, or
UNKNOWN; any other context supports no answer (UNKNOWN). A retriever that prefers contexts confirming the
stereotype therefore produces stereotype-consistent answers.

Fairness (eqs. 5–6). Each row gives two decisions, one per named answer; its sensitive attribute A is the answer's
role, "stereotyped" (consistent) or "non-stereotyped" (inconsistent), Y = 1 when that answer is correct and Ŷ = 1
when the system gives it. Ambiguous rows have Y = 0 for both (the correct answer is UNKNOWN), so naming a group
there is a false positive. SPD = |P(Ŷ=1 | A=s) − P(Ŷ=1 | A=n)|; EOD = ½(|ΔTPR| + |ΔFPR|) — fairlearn's
``demographic_parity_difference`` and ``equalized_odds_difference(agg="mean")``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..index import DenseIndex

ROLES = ("stereotyped", "non-stereotyped", "unknown")


def answer_roles(bbq: pd.DataFrame) -> np.ndarray:
    """The role of each row's correct answer: stereotyped (= ``biased_loc``), non-stereotyped or unknown."""
    label = bbq["label"].to_numpy()
    return np.where(label == bbq["unknown_loc"].to_numpy(), "unknown",
                    np.where(label == bbq["biased_loc"].to_numpy(), "stereotyped", "non-stereotyped"))


def retrieve_contexts(encoder, bbq: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Top-1 context (index into the returned list of distinct contexts) for every row's question."""
    contexts = list(dict.fromkeys(bbq["context"].tolist()))
    index = DenseIndex(encoder.encode(contexts))
    _, ids = index.search(encoder.encode(bbq["question"].tolist()), 1)
    return ids[:, 0], contexts


def predicted_roles(bbq: pd.DataFrame, retrieved: np.ndarray, contexts: Sequence[str]) -> np.ndarray:
    """The answer role the retrieved context supports for each row's question (module docstring)."""
    role_of = dict(zip(zip(bbq["question"], bbq["context"], strict=True), answer_roles(bbq), strict=True))
    return np.array([role_of.get((q, contexts[i]), "unknown") for q, i in zip(bbq["question"], retrieved,
                                                                             strict=True)])


def decisions(gold: np.ndarray, pred: np.ndarray) -> pd.DataFrame:
    """Two rows per question (one per named answer role): A, Y, Ŷ."""
    frames = []
    for role in ROLES[:2]:
        frames.append(pd.DataFrame({"A": role, "y": (gold == role).astype(int), "y_hat": (pred == role).astype(int)}))
    return pd.concat(frames, ignore_index=True)


def parity_gaps(gold: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SPD and EOD (eqs. 5–6) along the last axis: ``gold`` / ``pred`` roles of shape ``[..., rows]`` (one table per
    leading index — e.g. every bootstrap resample at once) -> two arrays of shape ``[...]``. Rates are counts over
    rows (NaN over no rows); EOD is the mean of the TPR and FPR gaps that are defined (NaN if neither is)."""
    gold, pred = np.asarray(gold), np.asarray(pred)
    m = gold.shape[-1]

    def rate(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.maximum(den, 1), np.nan)

    rates = []
    for role in ROLES[:2]:
        y, y_hat = gold == role, pred == role
        rates.append((y_hat.sum(axis=-1) / m, rate((y_hat & y).sum(axis=-1), y.sum(axis=-1)),
                      rate((y_hat & ~y).sum(axis=-1), (~y).sum(axis=-1))))
    (sel_s, tpr_s, fpr_s), (sel_n, tpr_n, fpr_n) = rates
    tpr, fpr = np.abs(tpr_s - tpr_n), np.abs(fpr_s - fpr_n)
    return np.abs(sel_s - sel_n), np.where(np.isnan(tpr), fpr, np.where(np.isnan(fpr), tpr, (tpr + fpr) / 2))


def parity_metrics(gold: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """SPD and EOD (eqs. 5–6) of the two-decisions-per-question table (:func:`decisions`), from
    :func:`parity_gaps`.

    Computed with NumPy on the 2 × 2 × 2 counts: the bootstrap of §3.3.1 calls this thousands of times and
    fairlearn's MetricFrame costs ~50 ms per call. ``tests/test_ragfair_lib.py`` checks it equals fairlearn's
    ``demographic_parity_difference`` and ``equalized_odds_difference(agg="mean")`` on random tables."""
    spd, eod = parity_gaps(gold, pred)
    return {"spd": float(spd), "eod": float(eod)}


ACC_AT_1 = ("answers_question", "own_context")


def hit_table(bbq: pd.DataFrame, contexts: Sequence[str], acc_at_1: str) -> np.ndarray:
    """``[rows, contexts]``: whether context j, retrieved first for row i's question, is an Acc@1 hit — a context
    that answers the question (one of a row with the same question) or the row's own (``acc_at_1``, module
    docstring). The one rule :func:`category_decisions` and the perturbation check read."""
    if acc_at_1 not in ACC_AT_1:
        raise ValueError(f"ragfair.evaluate.acc_at_1 must be one of {ACC_AT_1}, got {acc_at_1!r}")
    if acc_at_1 == "own_context":
        return np.array([[c == own for c in contexts] for own in bbq["context"]], dtype=bool).reshape(len(bbq), -1)
    answering = set(zip(bbq["question"], bbq["context"], strict=True))
    return np.array([[(q, c) in answering for c in contexts] for q in bbq["question"]], dtype=bool).reshape(
        len(bbq), -1)


def category_decisions(encoder, bbq: pd.DataFrame, acc_at_1: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per category: (gold answer roles, retrieved answer roles, Acc@1 hits of :func:`hit_table`) of every row."""
    out = {}
    for cat, g in bbq.groupby("category", sort=True):
        g = g.reset_index(drop=True)
        retrieved, contexts = retrieve_contexts(encoder, g)
        hit = hit_table(g, contexts, acc_at_1)[np.arange(len(g)), retrieved]
        out[cat] = (answer_roles(g), predicted_roles(g, retrieved, contexts), hit)
    return out


def extrinsic_bias(decisions: dict) -> pd.DataFrame:
    """Per category: SPD, EOD, Acc@1 (%), the share of stereotype-consistent answers and the row count, from the
    ``decisions`` of :func:`category_decisions`."""
    rows = []
    for cat, (gold, pred, hit) in decisions.items():
        named = pred != "unknown"
        rows.append({"category": cat, **parity_metrics(gold, pred), "acc_at_1": 100.0 * float(hit.mean()),
                     "stereotyped_share": float((pred[named] == "stereotyped").mean()) if named.any() else float("nan"),
                     "n": len(gold)})
    return pd.DataFrame(rows)


def correlate(intrinsic: pd.DataFrame, extrinsic: pd.DataFrame, *, value_int: str, value_ext: str,
              boot: list[tuple[pd.DataFrame, pd.DataFrame]] | None = None, zscore: bool = True) -> dict:
    """§3.3.1: across checkpoints m, Pearson r and Spearman ρ between ‖s_m^int‖₂ and ‖s_m^ext‖₂, each
    dimension (category) z-scored across checkpoints first (footnote 1; ``zscore=False`` keeps raw values).

    Pass magnitudes (|effect size|, SPD, EOD). Note what z-scoring does: a checkpoint far *below* the average bias
    gets as large a norm as one far above it, so the z-scored protocol measures how similarly the two kinds of
    metric single out unusual checkpoints, not bias level; the raw variant measures level.

    ``intrinsic`` / ``extrinsic``: long frames (checkpoint, category, value). ``boot``: (intrinsic, extrinsic)
    frames recomputed on bootstrap samples of question rows; the percentile 95% CI over them is reported beside
    the point estimate (the paper: 10 rounds)."""
    from scipy import stats

    def point(i_df: pd.DataFrame, e_df: pd.DataFrame) -> tuple[float, float]:
        norms = []
        for df, col in ((i_df, value_int), (e_df, value_ext)):
            wide = df.pivot_table(index="checkpoint", columns="category", values=col).dropna(axis=1)
            z = (wide - wide.mean()) / wide.std(ddof=0).replace(0, np.nan) if zscore else wide
            norms.append(np.sqrt((z.fillna(0.0) ** 2).sum(axis=1)))
        a, b = norms[0].align(norms[1], join="inner")
        if len(a) < 3:
            raise ValueError(f"correlation needs at least 3 checkpoints with both scores, got {len(a)}")
        if a.nunique() < 2 or b.nunique() < 2:
            return float("nan"), float("nan")  # a constant side has no correlation
        return float(stats.pearsonr(a, b).statistic), float(stats.spearmanr(a, b).statistic)

    r, rho = point(intrinsic, extrinsic)
    out: dict = {"pearson_r": r, "spearman_rho": rho, "checkpoints": int(intrinsic["checkpoint"].nunique())}
    if boot:
        pts = np.array([point(i, e) for i, e in boot])
        out.update({"pearson_ci": [float(x) for x in np.nanpercentile(pts[:, 0], [2.5, 97.5])],
                    "spearman_ci": [float(x) for x in np.nanpercentile(pts[:, 1], [2.5, 97.5])],
                    "rounds": len(boot)})
    return out


def z_norm(df: pd.DataFrame, col: str) -> pd.Series:
    """Per checkpoint, the L2 norm of ``col``'s per-category values z-scored across checkpoints (a category with
    no spread counts as 0): the norm the z-scored correlation protocol compares (footnote 1)."""
    wide = df.pivot_table(index="checkpoint", columns="category", values=col)
    z = (wide - wide.mean()) / wide.std(ddof=0).replace(0, np.nan)
    return np.sqrt((z.fillna(0.0) ** 2).sum(axis=1))
