"""Contrastive training data in the shape of ragfair §4.3 / App. 6.2: a neutral query, a neutral passage, and two
biased variants of the passage, one favouring each group.

The paper pairs every TREC Fair 2022 topic with a BBQ group pair, has DeepSeek-Chat write a neutral query,
retrieves Wikipedia sentences and has the LLM rephrase them into neutral / pro-stereotyped / pro-non-stereotyped
50-word variants. The offline construction here uses real BBQ text instead, which has exactly that shape:

* query — a BBQ question (negative or non-negative);
* passage — the ambiguous context of the same example set (both people present, nobody singled out);
* biased_stereotyped — the disambiguated context whose facts make the stereotype-consistent answer correct
  (BBQ's ``biased_loc``), e.g. the grandfather struggles with the phone;
* biased_non_stereotyped — its counterfactual twin (the same sentence with the groups' roles swapped).

Templates are split into train and evaluation templates per category (:func:`split_templates`), and pairs come
from training templates only, so no evaluated context or question is trained on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .bbq_build import set_keys


def split_templates(bbq: pd.DataFrame, eval_fraction: float, seed: int) -> pd.Series:
    """'train' or 'eval' per row, whole templates (category, question_index) at a time, seeded; every category
    keeps at least one template on each side."""
    if not 0 < eval_fraction < 1:
        raise ValueError(f"ragfair.bbq.eval_fraction must be in (0, 1), got {eval_fraction}")
    rng = np.random.default_rng(seed)
    side: dict[tuple[str, str], str] = {}
    for cat, g in bbq.groupby("category", sort=True):
        templates = sorted(g["question_index"].astype(str).unique(), key=lambda t: (len(t), t))
        if len(templates) < 2:
            raise ValueError(f"BBQ category {cat} has {len(templates)} template(s); a train/eval split needs two")
        order = rng.permutation(templates)
        n_eval = min(len(templates) - 1, max(1, round(eval_fraction * len(templates))))
        for i, t in enumerate(order):
            side[(cat, t)] = "eval" if i < n_eval else "train"
    return pd.Series([side[(c, str(q))] for c, q in zip(bbq["category"], bbq["question_index"], strict=True)],
                     index=bbq.index, name="split")


def bbq_pairs(bbq: pd.DataFrame) -> pd.DataFrame:
    """All (query, passage, biased_stereotyped, biased_non_stereotyped) rows the given BBQ rows allow (one per
    counterfactual group and question; the first matching context of each kind)."""
    df = bbq.assign(set_key=set_keys(bbq).to_numpy())
    role = np.where(df["label"] == df["unknown_loc"], "unknown",
                    np.where(df["label"] == df["biased_loc"], "stereotyped", "non-stereotyped"))
    keys = ["set_key", "question"]

    def first(mask, name: str) -> pd.DataFrame:
        return df.loc[mask, [*keys, "context"]].drop_duplicates(keys).rename(columns={"context": name})

    disambig = (df["context_condition"] == "disambig").to_numpy()
    out = (first((df["context_condition"] == "ambig").to_numpy(), "passage")
           .merge(first(disambig & (role == "stereotyped"), "biased_stereotyped"), on=keys)
           .merge(first(disambig & (role == "non-stereotyped"), "biased_non_stereotyped"), on=keys)
           .merge(df[[*keys, "category", "question_index", "question_polarity"]].drop_duplicates(keys), on=keys))
    out = out.rename(columns={"question": "query", "question_polarity": "polarity"})
    out["question_index"] = out["question_index"].astype(str)
    out = out.sort_values(["set_key", "query"], kind="stable").reset_index(drop=True)
    return out[["query", "passage", "biased_stereotyped", "biased_non_stereotyped", "category", "question_index",
                "polarity", "set_key"]]


def sample_pairs(pairs: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """``n`` pairs stratified by category (paper: 20,985 sampled from 135,845); None or 0 keeps all."""
    if not n or n >= len(pairs):
        return pairs.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    share = pairs["category"].value_counts(normalize=True)
    quota = (share * n).round().astype(int)
    parts = [g.sample(min(len(g), int(quota.get(c, 0))), random_state=seed) for c, g in pairs.groupby("category")]
    return pd.concat(parts).sample(frac=1.0, random_state=seed).reset_index(drop=True)
