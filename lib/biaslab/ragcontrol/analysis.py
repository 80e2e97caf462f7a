"""The ``ragcontrol_analysis`` stage (Kim et al. 2025, App. "All 6 LLMs", "Fine-tuning vs. Projecting vs. Sampling",
"Measuring Utility"): RAG bias against embedder bias per task × reader × control method, the linear fits (the
sensitivity is the slope), utility changes, the Pareto frontier of |RAG bias| vs utility, and the method
comparison with its checks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from . import control

UTILITY_COLUMNS = ["task", "reader", "setting", "embedder_bias", "rag_bias", "ndcg", "ndcg_change", "task_accuracy"]


def joined(embedders: pd.DataFrame, rag: pd.DataFrame) -> pd.DataFrame:
    """Every reader's RAG bias per setting beside the setting's embedder bias (all questions), utility and task
    accuracy; ``family`` groups the base embedder with the fine-tuned ones (it is their m = 0)."""
    data = rag.merge(embedders[["task", "method", "setting", "embedder_bias", "ndcg", "task_accuracy"]]
                     .rename(columns={"embedder_bias": "embedder_bias_all"}), on=["task", "method", "setting"],
                     how="left")
    data["family"] = data["method"].replace({"base": "fine-tune"})
    return data


def _fit_row(g: pd.DataFrame, confidence: float, **keys) -> dict:
    return {**keys, **control.linear_fit(g["embedder_bias"], g["rag_bias"], confidence),
            "embedder_bias_min": g["embedder_bias"].min(), "embedder_bias_max": g["embedder_bias"].max()}


def fits(data: pd.DataFrame, *, confidence: float) -> pd.DataFrame:
    """RAG bias = sensitivity × embedder bias + offset, per (task, reader, method family) and over all settings, with
    the slope's t interval at ``confidence`` (over settings; ``findings.slope`` resamples questions instead)."""
    d = data[data["method"] != "no document"]
    rows = [_fit_row(g, confidence, task=t, reader=r, method=f)
            for (t, r, f), g in d.groupby(["task", "reader", "family"])]
    rows += [_fit_row(g, confidence, task=t, reader=r, method="all settings")
             for (t, r), g in d.groupby(["task", "reader"])]
    return pd.DataFrame(rows)


def utility(data: pd.DataFrame) -> pd.DataFrame:
    """The base, fine-tuned and projected settings with their nDCG change from the base embedder."""
    base = data[data["method"] == "base"].set_index(["task", "reader"])["ndcg"]
    util = data[data["method"].isin(["base", "fine-tune", "projection"])].copy()
    util["ndcg_change"] = util["ndcg"] - [base[(t, r)] for t, r in zip(util["task"], util["reader"], strict=True)]
    return util


def pareto(util: pd.DataFrame) -> pd.DataFrame:
    """The Pareto frontier of |RAG bias| (lower is better) vs nDCG (higher) per (task, reader)."""
    fronts = []
    for _, g in util.groupby(["task", "reader"], sort=False):
        g = g.reset_index(drop=True)
        fronts.append(g.loc[control.pareto_front(g["rag_bias"], g["ndcg"])].assign(frontier=True))
    return pd.concat(fronts, ignore_index=True)


def comparison(data: pd.DataFrame, fit_table: pd.DataFrame) -> pd.DataFrame:
    """Per (task, reader, method family): how far the method moves embedder and RAG bias, its sensitivity and R²,
    and its least-biased setting with that setting's nDCG change (App. "Fine-tuning vs. Projecting vs. Sampling")."""
    base = data[data["method"] == "base"].set_index(["task", "reader"])["ndcg"]
    rows = []
    for (task, rdr, fam), g in data[data["method"] != "no document"].groupby(["task", "reader", "family"]):
        best = g.loc[g["rag_bias"].abs().idxmin()]
        f = fit_table[(fit_table["task"] == task) & (fit_table["reader"] == rdr) & (fit_table["method"] == fam)].iloc[0]
        rows.append({"task": task, "reader": rdr, "method": fam,
                     "embedder_bias_range": g["embedder_bias"].max() - g["embedder_bias"].min(),
                     "rag_bias_range": g["rag_bias"].max() - g["rag_bias"].min(), "sensitivity": f["slope"],
                     "r2": f["r2"], "least_biased_setting": best["setting"], "its_rag_bias": best["rag_bias"],
                     "its_ndcg_change": (best["ndcg"] - base[(task, rdr)]) if fam != "sampling" else 0.0})
    return pd.DataFrame(rows)


def checks(data: pd.DataFrame, comp: pd.DataFrame, util: pd.DataFrame) -> dict[str, dict]:
    """The appendix's findings as numbers per "task | reader": no-document RAG bias, fine-tuning and projection
    slopes, whether sampling moves embedder bias less than fine-tuning, and the worst nDCG change per method."""
    no_doc = data[data["method"] == "no document"].set_index(["task", "reader"])["rag_bias"]
    out = {}
    for (task, rdr), g in comp.groupby(["task", "reader"]):
        c = g.set_index("method")
        drop = util[(util["task"] == task) & (util["reader"] == rdr)].groupby("method")["ndcg_change"].min()
        out[f"{task} | {rdr}"] = {
            "no_document_rag_bias": float(no_doc[(task, rdr)]),
            "fine_tune_slope": float(c.loc["fine-tune", "sensitivity"]), "fine_tune_r2": float(c.loc["fine-tune", "r2"]),
            "projection_slope": float(c.loc["projection", "sensitivity"]),
            "sampling_moves_embedder_bias_less_than_fine_tuning": bool(
                c.loc["sampling", "embedder_bias_range"] < c.loc["fine-tune", "embedder_bias_range"]),
            "worst_ndcg_change_fine_tune": float(drop.get("fine-tune", np.nan)),
            "worst_ndcg_change_projection": float(drop.get("projection", np.nan)),
        }
    return out


def projection_sweep(data: pd.DataFrame) -> pd.DataFrame:
    """Projection settings with their α as a number."""
    proj = data[data["method"] == "projection"].copy()
    proj["alpha"] = proj["setting"].str.removeprefix("alpha=").astype(float)
    return proj


def sampling_sweep(data: pd.DataFrame) -> pd.DataFrame:
    """Sampling settings with their N and τ as numbers."""
    samp = data[data["method"] == "sampling"].copy()
    samp[["N", "tau"]] = samp["setting"].str.extract(r"N=(\d+),tau=([\d.]+)").astype(float)
    return samp


def sensitivity(fit_table: pd.DataFrame, readers: Sequence[str]) -> pd.DataFrame:
    """The fine-tune and projection fits, for the per-reader sensitivity figure."""
    return fit_table[fit_table["method"].isin(["fine-tune", "projection"]) & fit_table["reader"].isin(readers)]
