"""One look for every figure of the project (seaborn), and atomic figure saving."""

from __future__ import annotations

import os
from pathlib import Path

PALETTE = "colorblind"


def set_style(context: str = "notebook") -> None:
    import matplotlib as mpl
    import seaborn as sns

    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    mpl.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 150, "savefig.bbox": "tight", "axes.titleweight": "bold",
        "axes.titlesize": "medium", "figure.autolayout": False,
        "svg.hashsalt": "biaslab",  # deterministic SVG ids
    })


def save_figure(fig, path: str | os.PathLike, *, caption: str | None = None) -> Path:
    """Save ``fig`` atomically (format from the suffix); a caption goes under the axes when given.
    PNG metadata is fixed so identical figures give identical files."""
    from .atomic import atomic_path

    if caption:
        fig.text(0.01, -0.02, caption, ha="left", va="top", fontsize="small", wrap=True)
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png",
                    metadata={"Software": None} if path.suffix == ".png" else None)
    return path


def loss_curve(summary: dict, *, ylabel: str, title: str):
    """The training loss curve of a run summary (``loss_curve``: (step, loss) pairs) as a small figure; the
    figure every training notebook shows and saves."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    if summary["loss_curve"]:
        ax.plot(*zip(*summary["loss_curve"], strict=True), marker="o")
    ax.set(xlabel="step", ylabel=ylabel, title=title)
    return fig
