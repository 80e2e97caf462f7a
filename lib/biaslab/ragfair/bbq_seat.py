"""SEAT tests built from BBQ rows, one per category (ragfair §3.2.1, Table 1; App. 6.2).

The paper had DeepSeek-Chat extract two target groups and two attribute groups from each BBQ row. Without an LLM
we take them from the rows' own fields, per category:

* X — the answer phrases that name a stereotyped group (BBQ's ``target_loc`` answer, e.g. "The grandfather");
* Y — the answer phrases that name the other group;
* A — the negative-stereotype questions ("Who was not comfortable using the phone?");
* B — the non-negative questions ("Who was giving the other the opportunity to learn …?").

A positive effect size means that mentions of the stereotyped groups sit closer to the negative stereotypes than
mentions of the other groups do. Each set is the distinct strings of the rows given, so a bootstrap over rows
re-derives the sets. With a generative LLM configured, the same four sets can come from the paper's extraction
instead (not implemented offline).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class BBQSeatSets:
    category: str
    X: list[str]
    Y: list[str]
    A: list[str]
    B: list[str]

    def texts(self) -> list[str]:
        return [*self.X, *self.Y, *self.A, *self.B]


def seat_sets(bbq: pd.DataFrame) -> list[BBQSeatSets]:
    """One :class:`BBQSeatSets` per category of ``bbq`` (rows from :func:`biaslab.data.bbq.read_file`)."""
    out = []
    for cat, g in bbq.groupby("category", sort=True):
        answers = g[["ans0", "ans1", "ans2"]].to_numpy()
        rows = np.arange(len(g))
        target = g["target_loc"].to_numpy()
        other = 3 - target - g["unknown_loc"].to_numpy()
        X = sorted(set(answers[rows, target]))
        Y = sorted(set(answers[rows, other]) - set(X))
        A = sorted(set(g.loc[g["question_polarity"] == "neg", "question"].str.strip()))
        B = sorted(set(g.loc[g["question_polarity"] == "nonneg", "question"].str.strip()) - set(A))
        if min(len(X), len(Y), len(A), len(B)) < 2:
            raise ValueError(f"BBQ category {cat}: too few distinct strings for a SEAT test "
                             f"(|X|={len(X)}, |Y|={len(Y)}, |A|={len(A)}, |B|={len(B)}); use more rows")
        out.append(BBQSeatSets(str(cat), X, Y, A, B))
    return out


def run(sets: list[BBQSeatSets], encoder, *, n_samples: int, exact_limit: int, e_max: float,
        seed: int) -> pd.DataFrame:
    """Effect size, permutation p and fairness score (eq. 3) per category."""
    from ..metrics.seat import seat

    rows = []
    for s in sets:
        emb = encoder.encode(s.texts())
        cut = np.cumsum([len(s.X), len(s.Y), len(s.A)])
        X, Y, A, B = np.split(emb, cut)
        r = seat(X, Y, A, B, n_samples=n_samples, exact_limit=exact_limit, e_max=e_max, seed=seed)
        rows.append({"category": s.category, "effect_size": r.effect_size, "p_value": r.p_value,
                     "p_method": r.p_method, "fairness": r.fairness_score, "n_x": len(s.X), "n_y": len(s.Y), "n_a": len(s.A), "n_b": len(s.B)})
    return pd.DataFrame(rows)
