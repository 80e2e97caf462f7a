"""ragcontrol's claims as computed verdicts, with the uncertainty behind them (Kim et al. 2025, appendix).

The unit of every interval is the test question (resampled with replacement; a question keeps all its settings
together, so a fitted slope is recomputed on the same questions for every setting), and for utility the judged TREC
DL query. Per question and setting: the embedder score 100·(bias1 − bias2) of the retrieved document (its mean is
the embedder bias), its expectation under sampling, and the reader's answer score (+100 / −100 / 0; its mean is the
RAG bias).

Claims (App. "Results", "Projecting and Sampling", "Fine-tuning vs. Projecting vs. Sampling"; the appendix gives
no effect sizes in its text, only figures, so every row is judged by sign and interval, with ``paper_effect``
empty):

* RAG bias rises linearly with embedder bias for the fine-tuned embedders (slope > 0), per task × reader;
* the same for projections (slope > 0);
* sampling barely moves the embedder bias (the widest sampling setting's expected embedder bias minus the base's
  within ±``sampling_bound`` points: an equivalence test);
* projecting costs more utility than fine-tuning (nDCG@k of the strongest projection minus that of the fully
  fine-tuned embedders, per judged query < 0);
* a check, not a finding: reverse-bias fine-tuning moves the embedder towards bias1 (fine-tuned at m = 1 minus
  base, per question > 0) — the mitigation acts.

Competence (:func:`competence`): a slope of RAG bias on embedder bias says something about the embedder only when
the reader follows its context. Per task × reader, over the retrieved documents that the data stage's judge put on
one side only, the share of the reader's answers that take that document's side (per question, then a Student-t
interval over questions) must clear ``follow_floor`` %; a slope claim of a reader that does not is ``untestable``.
The claims about the embedder alone (sampling, utility) need no reader.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import competence as comp
from .. import stats
from .tasks import GROUPS

NAN = float("nan")


def question_table(retrieved: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """Per (task, reader, method, setting, qid): ``emb`` (100 · (bias1 − bias2) of the retrieved document),
    ``emb_expected`` (its expectation under sampling) and ``rag`` (the answer's +100 / −100 / 0 score) — for the
    questions the reader answered. Base settings belong to the fine-tune family (their m = 0)."""
    ans = answers[answers["doc_id"] >= 0][["task", "reader", "qid", "doc_id", "side"]]
    t = retrieved.merge(ans, on=["task", "qid", "doc_id"], how="inner")
    t["emb"] = stats.flag_scores(t["bias1"], t["bias2"])
    t["emb_expected"] = 100.0 * (t["p_bias1"].to_numpy(float) - t["p_bias2"].to_numpy(float))
    rag = np.zeros(len(t))
    sides = t["side"].to_numpy()
    for task, idx in t.groupby("task").indices.items():
        rag[idx] = stats.side_scores(sides[idx], GROUPS[task])
    t["rag"] = rag
    t["family"] = t["method"].replace({"base": "fine-tune"})
    return t[["task", "reader", "method", "family", "setting", "qid", "emb", "emb_expected", "rag"]]


def _matrix(t: pd.DataFrame, value: str) -> tuple[np.ndarray, list[str], list[str]]:
    wide = t.pivot_table(index="qid", columns="setting", values=value, aggfunc="mean")
    return wide.to_numpy(float), list(wide.index), list(wide.columns)


def slope(t: pd.DataFrame, *, rounds: int, seed: int) -> cl.Evidence:
    """The fitted sensitivity (slope of per-setting RAG bias on per-setting embedder bias) of one task × reader ×
    family: a statistic of all settings at once, not a mean over questions, so its standard error comes from a
    bootstrap over questions (a question keeps all its settings) and the interval is the Wald-type t interval
    (:meth:`biaslab.claims.Evidence.from_se`)."""
    from scipy import stats as st

    emb, _, _ = _matrix(t, "emb")
    rag, _, _ = _matrix(t, "rag")

    def fn(ix: np.ndarray) -> float:
        x, y = np.nanmean(emb[ix], axis=0), np.nanmean(rag[ix], axis=0)
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.sum() < 3 or np.ptp(x[ok]) == 0:
            return float("nan")
        return float(st.linregress(x[ok], y[ok]).slope)

    n = emb.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample with a setting no question answered
        draws = np.array([fn(ix) for ix in stats.resample_indices(n, rounds, seed)])
    draws = draws[np.isfinite(draws)]
    return cl.Evidence.from_se(fn(np.arange(n)), float(draws.std(ddof=1)) if len(draws) > 1 else NAN, n,
                               "questions")


def context_following(retrieved: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """Per (task, reader, qid): ``follows`` — of the question's retrieved documents that the judge put on one side
    only, the share (%) whose answer takes that side — and ``documents``, their number (questions with none are
    left out)."""
    docs = retrieved[["task", "qid", "doc_id", "bias1", "bias2"]].drop_duplicates(["task", "qid", "doc_id"])
    t = answers[answers["doc_id"] >= 0].merge(docs, on=["task", "qid", "doc_id"], how="inner")
    t = t[t["bias1"].astype(bool) != t["bias2"].astype(bool)]
    doc_side = np.array([GROUPS[task][0 if b1 else 1] for task, b1 in zip(t["task"], t["bias1"], strict=True)])
    t = t.assign(follows=100.0 * (t["side"].to_numpy(object) == doc_side))
    return (t.groupby(["task", "reader", "qid"], sort=False)
            .agg(follows=("follows", "mean"), documents=("follows", "size")).reset_index())


def follow_check(task: str, reader: str) -> str:
    return f"{task}, reader {reader}: answers the side of a one-sided document"


def competence(following: pd.DataFrame, *, floor: float, level: float) -> pd.DataFrame:
    """One row per task × reader: the reader follows its context (:func:`context_following`) in at least
    ``floor`` % of the one-sided documents (the interval over questions above the floor)."""
    rows = [comp.beats(follow_check(task, rdr), "answers on the document's side (%)",
                       cl.Evidence.of(g["follows"], "questions"), floor=floor, level=level)
            for (task, rdr), g in following.groupby(["task", "reader"], sort=False)]
    return comp.table(rows)


def setting_intervals(t: pd.DataFrame, *, rounds: int, confidence: float, seed: int) -> pd.DataFrame:
    """Per (task, reader, method, setting): RAG bias and embedder bias with bootstrap intervals over questions."""
    rows = []
    for (task, rdr, method, setting), g in t.groupby(["task", "reader", "method", "setting"], sort=False):
        r = stats.ci_mean(g["rag"], rounds=rounds, confidence=confidence, seed=seed)
        e = stats.ci_mean(g["emb"], rounds=rounds, confidence=confidence, seed=seed)
        rows.append({"task": task, "reader": rdr, "method": method, "setting": setting, "questions": r.n,
                     "rag_bias": r.value, "rag_bias_ci_low": r.ci_low, "rag_bias_ci_high": r.ci_high,
                     "embedder_bias": e.value, "embedder_bias_ci_low": e.ci_low,
                     "embedder_bias_ci_high": e.ci_high})
    return pd.DataFrame(rows)


def _paired_settings(t: pd.DataFrame, a: list[str], b: str, value: str) -> cl.Evidence:
    """Per question: mean ``value`` over settings ``a`` minus ``value`` of setting ``b``, paired over questions."""
    wide = t.pivot_table(index="qid", columns="setting", values=value, aggfunc="mean")
    return cl.Evidence.paired(wide[a].mean(axis=1).to_numpy(), wide[b].to_numpy(), "questions")


def _max_setting(settings, pattern: str) -> str | None:
    """The setting whose numbers (the regex ``pattern``'s groups) are largest: the strongest projection α, the
    widest sampling (largest N, then τ)."""
    import re

    best, key = None, None
    for s in settings:
        m = re.fullmatch(pattern, s)
        if m:
            k = tuple(float(x) for x in m.groups())
            if key is None or k > key:
                best, key = s, k
    return best


def claims(t: pd.DataFrame, utility: pd.DataFrame, *, sampling_bound: float, rounds: int,
           seed: int) -> list[cl.Pending]:
    """The appendix's claims (module docstring), before :func:`biaslab.claims.finalize` judges them."""
    out: list[cl.Pending] = []
    for (task, rdr), g in t.groupby(["task", "reader"], sort=False):
        for fam, section in (("fine-tune", "App. 'Results' (Fig. training-full)"),
                             ("projection", "App. 'Projecting' (Fig. proj)")):
            f = g[g["family"] == fam]
            if f["setting"].nunique() >= 3:
                out.append(cl.effect(f"{task}, reader {rdr}: RAG bias rises with embedder bias ({fam}, slope > 0)",
                                     section, "> 0", slope(f, rounds=rounds, seed=seed), direction=1,
                                     requires=(follow_check(task, rdr),)))
    first_reader = t["reader"].iloc[0] if len(t) else None
    for task, g in t[t["reader"] == first_reader].groupby("task", sort=False):
        settings = set(g["setting"])
        full = sorted(s for s in settings if s.endswith("@m=1"))
        if full and "base" in settings:
            out.append(cl.effect(f"{task}: reverse-bias fine-tuning moves the embedder towards {GROUPS[task][0]} "
                                 "(fully fine-tuned − base, per question)", "App. 'Training'", "> 0",
                                 _paired_settings(g, full, "base", "emb"), direction=1, kind="check", requires=()))
        widest = _max_setting(settings, r"N=(\d+),tau=([\d.]+)")
        if widest and "base" in settings:
            out.append(cl.no_change(f"{task}: sampling ({widest}) leaves the expected embedder bias unchanged",
                                    "App. 'Sampling'", "no noticeable change",
                                    _paired_settings(g, [widest], "base", "emb_expected"), bound=sampling_bound,
                                    requires=()))
        u = utility[utility["task"] == task]
        strongest = _max_setting(set(u["setting"]), r"alpha=([\d.]+)")
        u_full = sorted(s for s in set(u["setting"]) if s.endswith("@m=1"))
        if strongest and u_full:
            wide = u.assign(unit=u["year"] + ":" + u["qid"].astype(str)).pivot_table(
                index="unit", columns="setting", values="ndcg", aggfunc="mean")
            out.append(cl.effect(f"{task}: projecting ({strongest}) costs more nDCG than fine-tuning (m = 1)",
                                 "App. 'Fine-tuning vs. Projecting vs. Sampling'", "projection lower",
                                 cl.Evidence.paired(wide[strongest].to_numpy(), wide[u_full].mean(axis=1).to_numpy(),
                                                    "judged queries"), direction=-1, requires=()))
    return out


def paper_claims(t: pd.DataFrame, utility: pd.DataFrame, following: pd.DataFrame, C, *, level: float, rounds: int,
                 seed: int) -> tuple[list[cl.Claim], pd.DataFrame]:
    """(claims table rows, competence table) with the settings ``C`` (``ragcontrol.claims``): what
    ragcontrol_analysis writes."""
    comp_table = competence(following, floor=C.follow_floor, level=level)
    pending = claims(t, utility, sampling_bound=C.sampling_bound, rounds=rounds, seed=seed)
    return cl.finalize(pending, level=level, competence_table=comp_table), comp_table
