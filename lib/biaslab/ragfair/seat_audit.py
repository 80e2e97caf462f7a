"""The SEAT audit of ragfair §3.2.1: every SEAT test of the data on one encoder, as a tidy table.

Texts of all tests are embedded together (each once, through the embedding cache), then each test is scored
with :func:`biaslab.metrics.seat.seat`. Each test gets its own permutation seed derived from the run seed and
the test name, so a test's p-value does not depend on which other tests ran.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from ..data.seat import SeatTest
from ..metrics.seat import seat
from ..runtime import progress

COLUMNS = ["test", "level", "X", "Y", "A", "B", "n_X", "n_Y", "n_A", "n_B", "effect_size", "abs_effect_size",
           "p_value", "p_method", "n_partitions", "n_resamples", "mean_s_x", "mean_s_y", "fairness_score",
           "significant"]


def test_seed(seed: int, name: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(name.encode())) % 2**32


def run_seat_tests(tests: list[SeatTest], encoder, *, n_samples: int, exact_limit: int,
                   e_max: float, alpha: float, seed: int) -> pd.DataFrame:
    texts = list(dict.fromkeys(t for test in tests for t in test.texts()))
    vectors = encoder.encode(texts, show_progress=True)
    row_of = {t: i for i, t in enumerate(texts)}

    def emb(ws) -> np.ndarray:
        return vectors[[row_of[t] for t in ws.examples]]

    rows = []
    for test in progress(tests, desc="SEAT tests"):
        r = seat(emb(test.X), emb(test.Y), emb(test.A), emb(test.B), n_samples=n_samples,
                 exact_limit=exact_limit, e_max=e_max, seed=test_seed(seed, test.name))
        rows.append({
            "test": test.name, "level": test.level, "X": test.X.category, "Y": test.Y.category,
            "A": test.A.category, "B": test.B.category, "n_X": len(test.X.examples), "n_Y": len(test.Y.examples),
            "n_A": len(test.A.examples), "n_B": len(test.B.examples), "effect_size": r.effect_size,
            "abs_effect_size": abs(r.effect_size), "p_value": r.p_value, "p_method": r.p_method,
            "n_partitions": r.n_partitions, "n_resamples": r.n_resamples, "mean_s_x": r.mean_s_x,
            "mean_s_y": r.mean_s_y, "fairness_score": r.fairness_score, "significant": r.p_value < alpha,
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def summarise(table: pd.DataFrame) -> dict:
    """Headline numbers for metrics.json."""
    def block(df: pd.DataFrame) -> dict:
        return {"n_tests": len(df), "mean_fairness_score": float(df["fairness_score"].mean()),
                "mean_abs_effect_size": float(df["abs_effect_size"].mean()),
                "n_significant": int(df["significant"].sum())}

    out = {"all": block(table)}
    for level, df in table.groupby("level"):
        out[str(level)] = block(df)
    return out


def plot_effect_sizes(table: pd.DataFrame, *, model: str, alpha: float, e_max: float):
    """Horizontal bars of the effect size per test (significant ones highlighted) beside the fairness score."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    df = table.sort_values("effect_size").assign(
        result=lambda d: np.where(d["significant"], f"p < {alpha:g}", f"p ≥ {alpha:g}"))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 0.22 * len(df) + 1.5), sharey=True,
                                   gridspec_kw={"width_ratios": [2, 1]})
    sns.barplot(data=df, y="test", x="effect_size", hue="result", dodge=False, ax=ax1,
                hue_order=[f"p < {alpha:g}", f"p ≥ {alpha:g}"], palette=["#c0392b", "#95a5a6"])
    ax1.axvline(0, color="black", lw=0.8)
    ax1.set(xlabel="SEAT effect size (Cohen's d)", ylabel="", title=f"SEAT effect sizes — {model}")
    ax1.legend(title="permutation test", loc="upper right", fontsize="small")
    sns.barplot(data=df, y="test", x="fairness_score", color="#2980b9", ax=ax2)
    ax2.set(xlim=(0, 1), xlabel=f"fairness score 1 − |ES|/{e_max:g}", ylabel="", title="ragfair eq. 3")
    ax1.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    return fig
