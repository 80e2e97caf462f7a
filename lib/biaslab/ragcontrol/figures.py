"""The ragcontrol figures (one function per figure; the notebooks show and save them)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def _subplots(rows: int, cols: int, width: float, height: float):
    import matplotlib.pyplot as plt

    return plt.subplots(rows, cols, squeeze=False, figsize=(width * cols, height * rows))


def bias_vs_utility(summary: pd.DataFrame, tasks: Sequence[str], k: int):
    """Embedder bias vs TREC DL nDCG@k per setting, one panel per task."""
    import seaborn as sns

    fig, axes = _subplots(1, len(tasks), 5.5, 3.6)
    for ax, task in zip(axes[0], tasks, strict=True):
        d = summary[summary["task"] == task]
        sns.scatterplot(data=d, x="embedder_bias", y="ndcg", hue="method", style="method", s=60, ax=ax)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set(title=task, xlabel="embedder bias (%)", ylabel=f"TREC DL nDCG@{k}")
    fig.suptitle("Embedder bias vs utility per setting (cf. the appendix's utility tables)")
    return fig


def _scatter_fit(ax, g: pd.DataFrame, fit, title: str) -> None:
    import seaborn as sns

    sns.scatterplot(data=g, x="embedder_bias", y="rag_bias", hue="method", style="method", s=55, ax=ax)
    if np.isfinite(fit["slope"]):
        xs = np.linspace(g["embedder_bias"].min(), g["embedder_bias"].max(), 2)
        ax.plot(xs, fit["slope"] * xs + fit["intercept"], color="black", lw=1,
                label=f"s = {fit['slope']:.2f} [{fit['slope_lo']:.2f}, {fit['slope_hi']:.2f}], R² = {fit['r2']:.2f}")
    ax.axhline(0, color="grey", lw=0.6)
    ax.axvline(0, color="grey", lw=0.6)
    ax.set(xlabel="embedder bias (%)", ylabel="RAG bias (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def rag_vs_embedder(data: pd.DataFrame, fits: pd.DataFrame, family: str, readers: Sequence[str],
                    tasks: Sequence[str], caption: str):
    """RAG bias vs embedder bias of one control family with its fitted line, one panel per reader × task."""
    fig, axes = _subplots(len(readers), len(tasks), 5.2, 3.8)
    for i, rdr in enumerate(readers):
        for j, task in enumerate(tasks):
            g = data[(data["task"] == task) & (data["reader"] == rdr) & (data["family"] == family)]
            f = fits[(fits["task"] == task) & (fits["reader"] == rdr) & (fits["method"] == family)]
            _scatter_fit(axes[i, j], g, f.iloc[0] if len(f) else {"slope": np.nan}, f"{task}\nreader {rdr}")
    fig.suptitle(f"RAG bias vs embedder bias, {family} (cf. the appendix's {caption})", y=1.02)
    return fig


def sensitivity(sens: pd.DataFrame, readers: Sequence[str], tasks: Sequence[str]):
    """The fitted slope with its 95 % CI per reader, training vs projection (App. "All 6 LLMs")."""
    fig, axes = _subplots(1, len(tasks), max(4.0, 1.4 * len(readers) + 2.5), 3.6)
    for j, task in enumerate(tasks):
        ax = axes[0, j]
        for k, (fam, marker) in enumerate((("fine-tune", "o"), ("projection", "s"))):
            g = sens[(sens["task"] == task) & (sens["method"] == fam)].set_index("reader").reindex(readers)
            x = np.arange(len(readers)) + (k - 0.5) * 0.2
            ax.errorbar(x, g["slope"], yerr=[g["slope"] - g["slope_lo"], g["slope_hi"] - g["slope"]], fmt=marker,
                        capsize=3, label=fam)
        ax.axhline(0, color="grey", lw=0.6)
        ax.set_xticks(np.arange(len(readers)), readers)
        ax.set_xlim(-0.5, len(readers) - 0.5)
        ax.set(title=task, xlabel="reader", ylabel="sensitivity s (slope, 95 % CI)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def alpha_sampling(proj: pd.DataFrame, samp: pd.DataFrame, tasks: Sequence[str]):
    """Embedder and RAG bias against the projection strength α (top) and the sampling temperature τ (bottom)."""
    fig, axes = _subplots(2, len(tasks), 5.2, 3.5)
    for j, task in enumerate(tasks):
        ax = axes[0, j]
        g = proj[proj["task"] == task]
        ax.plot(g["alpha"], g["embedder_bias"], "k--", marker="o", label="embedder")
        for rdr, h in g.groupby("reader"):
            ax.plot(h["alpha"], h["rag_bias"], marker="s", label=f"RAG ({rdr})")
        ax.set(title=f"{task}: projection (Fig. 'alpha')", xlabel="α", ylabel="bias (%)")
        ax.legend(fontsize=7)
        ax = axes[1, j]
        g = samp[samp["task"] == task]
        for n, h in g.groupby("N"):
            ax.plot(h["tau"], h["embedder_bias_expected"], "--", marker="o", label=f"embedder, N={n:g} (expected)")
            for rdr, r in h.groupby("reader"):
                ax.plot(r["tau"], r["rag_bias"], marker="s", label=f"RAG, N={n:g} ({rdr})")
        ax.set(title=f"{task}: sampling (Fig. 'sampling')", xlabel="τ", ylabel="bias (%)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def pareto(util: pd.DataFrame, fronts: pd.DataFrame, readers: Sequence[str], tasks: Sequence[str]):
    """|RAG bias| vs nDCG of every setting with its Pareto frontier, one panel per reader × task."""
    import seaborn as sns

    fig, axes = _subplots(len(readers), len(tasks), 5.2, 3.8)
    for i, rdr in enumerate(readers):
        for j, task in enumerate(tasks):
            g = util[(util["task"] == task) & (util["reader"] == rdr)]
            front = fronts[(fronts["task"] == task) & (fronts["reader"] == rdr)]
            ax = axes[i, j]
            sns.scatterplot(data=g.assign(abs_rag=g["rag_bias"].abs()), x="abs_rag", y="ndcg", hue="method", ax=ax)
            ax.plot(front["rag_bias"].abs(), front["ndcg"], "k-", lw=1, label="Pareto frontier")
            ax.set(xlabel="|RAG bias| (%)", ylabel="TREC DL nDCG")
            ax.set_title(f"{task}\nreader {rdr}", fontsize=9)
            ax.legend(fontsize=7)
    fig.suptitle("Bias–utility trade-off and its Pareto frontier (cf. the appendix's frontier figures)", y=1.02)
    return fig
